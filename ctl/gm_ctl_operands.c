/*
 * gm_ctl_operands.c - a job's operands for gemmctl submit: .npy headers
 * checked first, then the data read either into memory of its own (the
 * plain path) or with one read() straight into its place in a region of
 * the job's own, converted there only when its dtype or order is not the
 * job's. See gm_ctl_operands.h.
 */
#include "gm_ctl_operands.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gm_ctl.h"
#include "gm_proto.h"

void gm_ctl_operands_free(struct gm_ctl_operands *o)
{
	struct gm_ctl_operand *op[] = {&o->a, &o->b, &o->c};
	int i;

	for (i = 0; i < 3; i++) {
		gm_npy_close(&op[i]->in);
		gm_npy_free(&op[i]->m);
		free(op[i]->packed);
	}
	free(o->out);
}

static int read_failed(int rv, const char *msg)
{
	return gm_ctl_fail("read", rv, rv == GM_ENOMEM ? EXIT_JOB : EXIT_FILE,
			   "%s", msg);
}

/* Opens path's header, or reads stdin whole. */
static int open_operand(const char *path, struct gm_ctl_operand *op)
{
	char msg[512];
	int rc;

	if (strcmp(path, GM_CTL_STDIO) == 0) {
		if ((rc = gm_ctl_read_npy(path, &op->m)) != 0)
			return rc;
		op->in.m = op->m;
		op->in.m.data = NULL;
		return 0;
	}
	if ((rc = gm_npy_open(path, &op->in, msg, sizeof(msg))) != 0)
		return read_failed(rc, msg);
	return 0;
}

/* Reads op's data into dst, its place, and closes its file. */
static int read_into(struct gm_ctl_operand *op, void *dst)
{
	char msg[512];
	int rv = gm_npy_read_data(&op->in, dst, msg, sizeof(msg));

	gm_npy_close(&op->in);
	return rv != 0 ? read_failed(rv, msg) : 0;
}

/* Reads op's data into memory of its own, unless it is there. */
static int read_memory(struct gm_ctl_operand *op)
{
	gm_npy m = op->in.m;

	if (op->m.data != NULL)
		return 0;
	if ((m.data = malloc((size_t)op->in.bytes)) == NULL)
		return gm_ctl_fail("read", GM_ENOMEM, EXIT_JOB,
				   "%s: %" PRIu64 " bytes: out of memory",
				   op->in.name, op->in.bytes);
	op->m = m;
	return read_into(op, m.data);
}

static int check_dim(const char *what, uint64_t v, uint32_t *out)
{
	if (v == 0 || v > GEMMD_MAX_DIM) {
		return gm_ctl_fail("shape", GM_EDIM, EXIT_USAGE,
				   "%s = %" PRIu64 ": must be 1..%u", what, v,
				   GEMMD_MAX_DIM);
	}
	*out = (uint32_t)v;
	return 0;
}

/* M, N, K from the shapes; the inner dimensions and C must agree. */
static int job_shape(const struct gm_ctl_operands *o, gemmd_job *j)
{
	const gm_npy *a = &o->a.in.m, *b = &o->b.in.m, *c = &o->c.in.m;
	uint64_t m = j->trans_a ? a->cols : a->rows;
	uint64_t k = j->trans_a ? a->rows : a->cols;
	uint64_t kb = j->trans_b ? b->cols : b->rows;
	uint64_t n = j->trans_b ? b->rows : b->cols;
	int rc;

	if (k != kb)
		return gm_ctl_fail("shape", GM_EINVAL, EXIT_USAGE,
				   "inner dimensions differ: op(A) is %" PRIu64
				   "x%" PRIu64 ", op(B) is %" PRIu64 "x%" PRIu64
				   " (K %" PRIu64 " vs %" PRIu64 ")",
				   m, k, kb, n, k, kb);
	if (o->has_c && (c->rows != m || c->cols != n))
		return gm_ctl_fail("shape", GM_EINVAL, EXIT_USAGE,
				   "C is %" PRIu64 "x%" PRIu64
				   ", op(A)*op(B) is %" PRIu64 "x%" PRIu64,
				   c->rows, c->cols, m, n);
	if ((rc = check_dim("M", m, &j->m)) ||
	    (rc = check_dim("N", n, &j->n)) || (rc = check_dim("K", k, &j->k)))
		return rc;
	return 0;
}

int gm_ctl_operands_open(struct gm_ctl_operands *o, const char *a,
			 const char *b, const char *c, bool dtype_set,
			 gemmd_job *j)
{
	int rc;

	o->has_c = c != NULL;
	if ((rc = open_operand(a, &o->a)) || (rc = open_operand(b, &o->b)) ||
	    (o->has_c && (rc = open_operand(c, &o->c))))
		return rc;
	if (!dtype_set)
		j->dtype = o->a.in.m.dtype;
	j->layout = o->a.in.m.fortran ? GEMMD_COL_MAJOR : GEMMD_ROW_MAJOR;
	return job_shape(o, j);
}

/* Whether data of file dtype is sent as it is (tf32 is fp32 data). */
static bool sent_as_is(int file_dtype, int dtype)
{
	return file_dtype == dtype ||
	       (file_dtype == GM_FP32 && dtype == GM_TF32);
}

/* What is sent for m: its own data when those bytes already are the
 * job's dtype, else a converted copy in *copy. */
static int as_sent(const gm_npy *m, int dtype, void **copy, const void **sent)
{
	if (sent_as_is(m->dtype, dtype)) {
		*sent = m->data;
		return GM_OK;
	}
	if (gm_npy_pack(m, dtype, copy) != GM_OK)
		return GM_ENOMEM;
	*sent = *copy;
	return GM_OK;
}

int gm_ctl_operands_plain(struct gm_ctl_operands *o, gemmd_job *j)
{
	size_t out_bytes = (size_t)j->m * j->n * gm_dtype_size(j->dtype);
	int fortran = j->layout == GEMMD_COL_MAJOR;
	int rc;

	if ((rc = read_memory(&o->a)) || (rc = read_memory(&o->b)) ||
	    (o->has_c && (rc = read_memory(&o->c))))
		return rc;
	if (gm_npy_reorder(&o->b.m, fortran) != 0 ||
	    (o->has_c && gm_npy_reorder(&o->c.m, fortran) != 0) ||
	    as_sent(&o->a.m, j->dtype, &o->a.packed, &j->a) != 0 ||
	    as_sent(&o->b.m, j->dtype, &o->b.packed, &j->b) != 0 ||
	    (o->has_c &&
	     as_sent(&o->c.m, j->dtype, &o->c.packed, &j->c) != 0) ||
	    (j->out = o->out = malloc(out_bytes)) == NULL)
		return gm_ctl_fail("pack", GM_ENOMEM, EXIT_JOB,
				   "out of memory");
	return 0;
}

/* Puts op's data at dst in the region: read straight there when its
 * bytes are what is sent, else read, reordered and converted there. */
static int place(struct gm_ctl_operand *op, const gemmd_job *j, void *dst)
{
	int fortran = j->layout == GEMMD_COL_MAJOR;
	const gm_npy *h = &op->in.m;
	int rc;

	if (op->m.data == NULL && sent_as_is(h->dtype, j->dtype) &&
	    !h->fortran == !fortran)
		return read_into(op, dst);
	if ((rc = read_memory(op)) != 0)
		return rc;
	if (gm_npy_reorder(&op->m, fortran) != 0 ||
	    gm_npy_pack_to(&op->m, j->dtype, dst) != 0)
		return gm_ctl_fail("pack", GM_ENOMEM, EXIT_JOB,
				   "out of memory");
	return 0;
}

/* Reserves bytes of r for one operand; GM_CTL_NO_REGION if they do
 * not fit. */
static int reserve(gemmd_region *r, uint64_t bytes, gemmd_region_ref *ref)
{
	ref->region = r;
	return gemmd_region_alloc(r, bytes, 0, &ref->offset) == GM_OK
		   ? 0
		   : GM_CTL_NO_REGION;
}

/* Room for A, B, C and the result, each at a 256-byte boundary (the
 * allocator's). */
static uint64_t region_bytes(const gemmd_job *j, bool has_c, bool in_place)
{
	uint64_t es = gm_dtype_size(j->dtype), mn = (uint64_t)j->m * j->n;
	uint64_t sz[] = {(uint64_t)j->m * j->k * es, (uint64_t)j->k * j->n * es,
			 has_c ? mn * es : 0, in_place ? 0 : mn * es};
	uint64_t total = 0;
	int i;

	for (i = 0; i < 4; i++)
		total += (sz[i] + 255) / 256 * 256;
	return total;
}

int gm_ctl_operands_region(struct gm_ctl_operands *o, gemmd_client *cl,
			   gemmd_job *j, bool keep_c, int timeout_ms)
{
	bool in_place = o->has_c && !keep_c;
	uint64_t es = gm_dtype_size(j->dtype), mn = (uint64_t)j->m * j->n;
	char *base;
	int rv;

	rv = gemmd_region_create_timeout(
	    cl, region_bytes(j, o->has_c, in_place), &o->region, timeout_ms);
	if (rv == GM_ETIMEDOUT)
		return gm_ctl_failed("region", 0, rv, NULL);
	if (rv != GM_OK) {
		o->region = NULL;
		return GM_CTL_NO_REGION;
	}
	if (reserve(o->region, (uint64_t)j->m * j->k * es, &j->a_ref) ||
	    reserve(o->region, (uint64_t)j->k * j->n * es, &j->b_ref) ||
	    (o->has_c && reserve(o->region, mn * es, &j->c_ref)))
		return GM_CTL_NO_REGION;
	if (in_place)
		j->out_ref = j->c_ref;
	else if (reserve(o->region, mn * es, &j->out_ref))
		return GM_CTL_NO_REGION;
	base = gemmd_region_ptr(o->region);
	if ((rv = place(&o->a, j, base + j->a_ref.offset)) ||
	    (rv = place(&o->b, j, base + j->b_ref.offset)) ||
	    (o->has_c && (rv = place(&o->c, j, base + j->c_ref.offset))))
		return rv;
	return 0;
}

void gm_ctl_operands_drop_region(struct gm_ctl_operands *o, gemmd_job *j)
{
	gemmd_region_ref none = {NULL, 0};

	j->a_ref = j->b_ref = j->c_ref = j->out_ref = none;
	if (o->region != NULL)
		gemmd_region_release(o->region);
	o->region = NULL;
}

void gm_ctl_operands_view(const struct gm_ctl_operands *o, gemmd_job *j)
{
	char *base = gemmd_region_ptr(o->region);

	j->a = base + j->a_ref.offset;
	j->b = base + j->b_ref.offset;
	j->c = o->has_c ? base + j->c_ref.offset : NULL;
	j->out = base + j->out_ref.offset;
}
