/*
 * gm_proto.c - gemmd wire format v2: job arithmetic, the frame header
 * and the job header (GEMM requests are in gm_proto_gemm.c, replies and
 * errors in gm_proto_reply.c).
 *
 * Decoders trust no length they have
 * not compared with the bytes actually present, check in the order that
 * PROTOCOL.md specifies (so each defect maps to one code), and allocate
 * nothing: the daemon sizes its allocations from what a passed check
 * returned. Failure messages are built only on failure, never per job.
 */
#include "gm_proto.h"
#include "gm_proto_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(double) == 8, "f64 fields are IEEE-754 binary64");

__attribute__((format(printf, 4, 5))) int
gm_proto_fail(int code, char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	if (msg == NULL || msglen == 0)
		return code;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return code;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* ---- dtypes and job arithmetic ---- */

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
    [GM_FP64] = {"fp64", 8}, [GM_FP32] = {"fp32", 4}, [GM_TF32] = {"tf32", 4},
    [GM_FP16] = {"fp16", 2}, [GM_BF16] = {"bf16", 2},
};

#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

size_t gm_dtype_size(int dtype)
{
	if (dtype < 0 || (size_t)dtype >= NDTYPES)
		return 0;
	return dtypes[dtype].size;
}

const char *gm_dtype_name(int dtype)
{
	if (dtype < 0 || (size_t)dtype >= NDTYPES)
		return NULL;
	return dtypes[dtype].name;
}

int gm_dtype_parse(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < NDTYPES; i++)
		if (dtypes[i].name != NULL && strcmp(dtypes[i].name, name) == 0)
			return (int)i;
	return 0;
}

/* rows * cols * es bytes; nonzero when that does not fit in 64 bits. */
static int matrix_bytes(uint32_t rows, uint32_t cols, uint64_t es,
			uint64_t *out)
{
	return __builtin_mul_overflow((uint64_t)rows * cols, es, out);
}

int gm_job_sizes_of(const gm_job_desc *d, gm_job_sizes *out)
{
	uint64_t es = gm_dtype_size(d->dtype);
	uint64_t sum;

	memset(out, 0, sizeof(*out));
	if (es == 0)
		return GM_EDTYPE;
	if (matrix_bytes(d->m, d->k, es, &out->a) ||
	    matrix_bytes(d->k, d->n, es, &out->b) ||
	    matrix_bytes(d->m, d->n, es, &out->out))
		return GM_EOVERFLOW;
	out->c = (d->flags & GM_JOB_HAS_C) ? out->out : 0;
	/* Checked here so that every caller may add a + b + c freely. */
	if (__builtin_add_overflow(out->a, out->b, &sum) ||
	    __builtin_add_overflow(sum, out->c, &sum))
		return GM_EOVERFLOW;
	return GM_OK;
}

double gm_job_flops(const gm_job_desc *d)
{
	return 2.0 * d->m * d->n * d->k;
}

static int check_dtype(const gm_job_desc *d, char *msg, size_t msglen)
{
	if (gm_dtype_size(d->dtype) == 0)
		return gm_proto_fail(
		    GM_EDTYPE, msg, msglen,
		    "dtype=%u, must be 1..5 (fp64 fp32 tf32 fp16 bf16)",
		    d->dtype);
	return GM_OK;
}

static int check_fields(const gm_job_desc *d, char *msg, size_t msglen)
{
	if (d->trans_a > 1)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "trans_a=%u, must be 0..1", d->trans_a);
	if (d->trans_b > 1)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "trans_b=%u, must be 0..1", d->trans_b);
	if (d->layout > GM_COL_MAJOR)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "layout=%u, must be 0..1", d->layout);
	if (d->kernel > GM_KERNEL_TILED)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "kernel=%u, must be 0..2", d->kernel);
	if (d->flags & ~(GM_JOB_HAS_C | GM_JOB_REGIONS))
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "flags=0x%02x, only bits 0 (has C) and 1 "
				     "(regions) are defined",
				     d->flags);
	if (!isfinite(d->alpha))
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "alpha=%g, must be finite", d->alpha);
	if (!isfinite(d->beta))
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "beta=%g, must be finite", d->beta);
	return GM_OK;
}

/* Zero dims first, then overflow with the raw dims (a limit check first
 * would make GM_EOVERFLOW unreachable), then the configured limit on
 * dims; the one on bytes is check_job_bytes, since a job with regions
 * carries only some of its operands. */
static int check_dims(const gm_job_desc *d, const gm_limits *lim,
		      gm_job_sizes *sz, char *msg, size_t msglen)
{
	const uint32_t dims[3] = {d->m, d->n, d->k};
	const char names[3] = {'m', 'n', 'k'};
	uint32_t max_dim = min_u32(lim->max_dim, GM_MAX_DIM);
	int i;

	for (i = 0; i < 3; i++)
		if (dims[i] == 0)
			return gm_proto_fail(GM_EDIM, msg, msglen,
					     "%c=0, must be 1..%" PRIu32,
					     names[i], max_dim);
	if (gm_job_sizes_of(d, sz) != GM_OK)
		return gm_proto_fail(GM_EOVERFLOW, msg, msglen,
				     "m=%" PRIu32 " n=%" PRIu32 " k=%" PRIu32
				     " %s: operand bytes overflow 64 bits",
				     d->m, d->n, d->k, gm_dtype_name(d->dtype));
	for (i = 0; i < 3; i++)
		if (dims[i] > max_dim && max_dim < GM_MAX_DIM)
			return gm_proto_fail(GM_EDIM, msg, msglen,
					     "%c=%" PRIu32
					     ", more than max_dim=%" PRIu32,
					     names[i], dims[i], max_dim);
		else if (dims[i] > max_dim)
			return gm_proto_fail(GM_EDIM, msg, msglen,
					     "%c=%" PRIu32
					     ", more than the protocol's "
					     "%" PRIu32,
					     names[i], dims[i], max_dim);
	return GM_OK;
}

int gm_proto_check_job_bytes(uint64_t bytes, const gm_limits *lim,
			     const char *what, char *msg, size_t msglen)
{
	char has[GM_SIZE_TEXT], max[GM_SIZE_TEXT];

	if (bytes > lim->max_job_bytes)
		return gm_proto_fail(GM_ETOOBIG, msg, msglen,
				     "%s of %s, more than max_message_bytes=%s",
				     what, gm_size_text(bytes, has),
				     gm_size_text(lim->max_job_bytes, max));
	return GM_OK;
}

int gm_job_check(const gm_job_desc *d, const gm_limits *lim, char *msg,
		 size_t msglen)
{
	gm_job_sizes sz;
	int rv;

	if ((rv = check_dtype(d, msg, msglen)) != 0)
		return rv;
	if ((rv = check_fields(d, msg, msglen)) != 0)
		return rv;
	if ((rv = check_dims(d, lim, &sz, msg, msglen)) != 0)
		return rv;
	return gm_proto_check_job_bytes(sz.a + sz.b + sz.c, lim, "A+B+C", msg,
					msglen);
}

/* ---- frame header ---- */

void gm_proto_put_hdr(uint8_t *p, uint16_t type, uint64_t id, uint32_t count,
		      uint64_t length)
{
	put_u32(p, GM_PROTO_MAGIC);
	put_u16(p + 4, GM_PROTO_VERSION);
	put_u16(p + 6, type);
	put_u64(p + 8, id);
	put_u32(p + 16, count);
	put_u32(p + 20, 0);
	put_u64(p + 24, length);
}

/* The id is filled first so that a refusal can echo it. */
/* The magic's bytes in the order they come on the wire. */
static const uint8_t magic_bytes[4] = {0x47, 0x45, 0x4D, 0x4D};

int gm_proto_get_hdr(const void *buf, size_t len, gm_hdr *h, char *msg,
		     size_t msglen)
{
	const uint8_t *p = buf;

	memset(h, 0, sizeof(*h));
	if (len >= 8)
		h->version = get_u16(p + 4), h->type = get_u16(p + 6);
	if (len >= 16)
		h->id = get_u64(p + 8);
	if (len >= 24)
		h->count = get_u32(p + 16), h->flags = get_u32(p + 20);
	if (len >= GM_HDR_SIZE)
		h->length = get_u64(p + 24);
	/* Each field is judged as soon as its bytes are in, the magic from
	 * its first byte on: a peer that sends anything else learns it at
	 * once, not when 32 bytes have come. */
	if (len > 0 && memcmp(p, magic_bytes, len < 4 ? len : 4) != 0)
		return len >= 4 ? gm_proto_fail(GM_EMAGIC, msg, msglen,
						"magic=0x%08" PRIx32
						", must be 0x%08x (\"GEMM\")",
						get_u32(p), GM_PROTO_MAGIC)
				: gm_proto_fail(GM_EMAGIC, msg, msglen,
						"the magic's first %zu "
						"byte(s) are not those of "
						"0x%08x (\"GEMM\")",
						len, GM_PROTO_MAGIC);
	if (len >= 6 && get_u16(p + 4) != GM_PROTO_VERSION)
		return gm_proto_fail(GM_EVERSION, msg, msglen,
				     "version=%u, this side speaks %d",
				     get_u16(p + 4), GM_PROTO_VERSION);
	if (len >= 8 && (h->type < GM_MSG_GEMM || h->type > GM_MSG_ERROR))
		return gm_proto_fail(GM_EMSGTYPE, msg, msglen,
				     "type=%u, must be 1..5", h->type);
	if (len >= 24 && h->flags != 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "header flags=0x%" PRIx32 ", must be 0",
				     h->flags);
	if (len < GM_HDR_SIZE)
		return gm_proto_fail(GM_ETRUNC, msg, msglen,
				     "%zu bytes, a header needs %d", len,
				     GM_HDR_SIZE);
	return GM_OK;
}

int gm_proto_is_sp(const void *buf, size_t len)
{
	static const uint8_t sp[4] = {0x00, 'S', 'P', 0x00};

	return len >= sizeof(sp) && memcmp(buf, sp, sizeof(sp)) == 0;
}

int gm_proto_want_type(const gm_hdr *h, uint16_t type, char *msg, size_t msglen)
{
	if (h->type != type)
		return gm_proto_fail(GM_EMSGTYPE, msg, msglen,
				     "type=%u, expected %u", h->type, type);
	return GM_OK;
}

uint64_t gm_proto_head_size(const gm_hdr *h)
{
	return GM_BATCH_SIZE + (uint64_t)h->count * GM_JOB_HDR_SIZE;
}

static int check_ctrl_hdr(const gm_hdr *h, const gm_limits *lim, char *msg,
			  size_t msglen)
{
	char has[GM_SIZE_TEXT], max[GM_SIZE_TEXT];

	/* The length first, as for GEMM: a frame refused for its count is
	 * read to its end and discarded, which its length must bound. */
	if (h->length > lim->max_ctrl)
		return gm_proto_fail(GM_ETOOBIG, msg, msglen,
				     "CTRL body of %s, more than "
				     "max_ctrl_bytes=%s",
				     gm_size_text(h->length, has),
				     gm_size_text(lim->max_ctrl, max));
	if (h->count != 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "CTRL count=%" PRIu32 ", must be 0",
				     h->count);
	return GM_OK;
}

int gm_proto_check_request(const gm_hdr *h, const gm_limits *lim, char *msg,
			   size_t msglen)
{
	char has[GM_SIZE_TEXT], max[GM_SIZE_TEXT];
	uint32_t max_jobs = min_u32(lim->max_jobs, GM_MAX_JOBS);

	if (h->type != GM_MSG_GEMM && h->type != GM_MSG_CTRL)
		return gm_proto_fail(GM_EMSGTYPE, msg, msglen,
				     "type=%u is not a request (1 GEMM, 3 "
				     "CTRL)",
				     h->type);
	if (h->type == GM_MSG_CTRL)
		return check_ctrl_hdr(h, lim, msg, msglen);
	if (h->length > lim->max_frame)
		return gm_proto_fail(GM_ETOOBIG, msg, msglen,
				     "frame of %s, more than "
				     "max_message_bytes=%s",
				     gm_size_text(h->length, has),
				     gm_size_text(lim->max_frame, max));
	if (h->count == 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "count=0, must be 1..%" PRIu32, max_jobs);
	if (h->count > max_jobs)
		return gm_proto_fail(
		    GM_ETOOMANY, msg, msglen,
		    "count=%" PRIu32 " jobs, more than %s%" PRIu32, h->count,
		    max_jobs < GM_MAX_JOBS ? "max_jobs_per_request="
					   : "the protocol's ",
		    max_jobs);
	/* Refuses a lying count before any of the head is read. */
	if (h->length < gm_proto_head_size(h))
		return gm_proto_fail(
		    GM_ETRUNC, msg, msglen,
		    "count=%" PRIu32 " jobs need at least %" PRIu64
		    " body bytes, length=%" PRIu64,
		    h->count, gm_proto_head_size(h), h->length);
	return GM_OK;
}

/* ---- job header ---- */

/* payload_bytes is written as 0 when d has no computable size (unknown
 * dtype, overflow); a reader rejects such a job before it looks there. */
void gm_proto_put_job(uint8_t *p, const gm_job_desc *d)
{
	gm_job_sizes sz;

	memset(p, 0, GM_JOB_HDR_SIZE);
	p[0] = d->dtype;
	p[1] = d->trans_a;
	p[2] = d->trans_b;
	p[3] = d->layout;
	p[4] = d->kernel;
	p[5] = d->flags;
	put_u32(p + 8, d->m);
	put_u32(p + 12, d->n);
	put_u32(p + 16, d->k);
	put_f64(p + 24, d->alpha);
	put_f64(p + 32, d->beta);
	if (gm_job_sizes_of(d, &sz) == GM_OK)
		put_u64(p + 40, sz.a + sz.b + sz.c);
}

void gm_proto_parse_job(const uint8_t *p, gm_job_desc *d)
{
	d->dtype = p[0];
	d->trans_a = p[1];
	d->trans_b = p[2];
	d->layout = p[3];
	d->kernel = p[4];
	d->flags = p[5];
	d->m = get_u32(p + 8);
	d->n = get_u32(p + 12);
	d->k = get_u32(p + 16);
	d->alpha = get_f64(p + 24);
	d->beta = get_f64(p + 32);
}

static int check_job_reserved(const uint8_t *p, char *msg, size_t msglen)
{
	if (get_u16(p + 6) != 0 || get_u32(p + 20) != 0)
		return gm_proto_fail(
		    GM_EFIELD, msg, msglen,
		    "reserved bytes 6..7 and 20..23 must be 0");
	return GM_OK;
}

int gm_proto_check_job_head(const uint8_t *p, const gm_limits *lim, char *msg,
			    size_t msglen)
{
	gm_job_desc d;
	gm_job_sizes sz;
	int rv;

	gm_proto_parse_job(p, &d);
	if ((rv = check_dtype(&d, msg, msglen)) != 0 ||
	    (rv = check_job_reserved(p, msg, msglen)) != 0 ||
	    (rv = check_fields(&d, msg, msglen)) != 0)
		return rv;
	return check_dims(&d, lim, &sz, msg, msglen);
}
