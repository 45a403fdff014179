/*
 * gmc_encode.c - jobs and control requests as request frames; see
 * gmc_encode.h.
 */
#include "gmc_encode.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "gmc_error.h"
#include "gmc_shm.h"

/* ---- jobs naming regions ---- */

int gmc_encode_refs(const gemmd_job *j, gm_region_ref ref[GM_OPND_COUNT])
{
	const gemmd_region_ref *in[GM_OPND_COUNT] = {&j->a_ref, &j->b_ref,
						     &j->c_ref, &j->out_ref};
	int any = 0;

	for (int op = 0; op < GM_OPND_COUNT; op++) {
		ref[op].region = in[op]->region ? in[op]->region->id : 0;
		ref[op].offset = in[op]->region ? in[op]->offset : 0;
		any |= in[op]->region != NULL;
	}
	return any;
}

/* Checks that each of A, B and (with need_out) the result of j is given
 * once, as a pointer or in a region, and C at most once: GM_EINVAL with
 * detail. */
static int given_once(const gemmd_job *j, int need_out, char *detail,
		      size_t len)
{
	const gemmd_region *r[GM_OPND_COUNT] = {
	    j->a_ref.region, j->b_ref.region, j->c_ref.region,
	    j->out_ref.region};
	const void *ptr[GM_OPND_COUNT] = {j->a, j->b, j->c, j->out};

	for (int op = 0; op < GM_OPND_COUNT; op++) {
		if (r[op] != NULL && ptr[op] != NULL) {
			snprintf(detail, len,
				 "%s given twice: a pointer and a region",
				 gm_operand_name(op));
			return GM_EINVAL;
		}
		if (r[op] == NULL && ptr[op] == NULL && op != GM_OPND_C &&
		    (op != GM_OPND_OUT || need_out)) {
			snprintf(detail, len, "%s",
				 need_out ? "a, b and out are required"
					  : "a and b are required");
			return GM_EINVAL;
		}
	}
	return GM_OK;
}

/* Checks j's region operands as the daemon will, in its order, for a
 * job d that passed gm_job_check: gm_proto_check_refs, then each inside
 * its region (GM_EBOUNDS). */
static int in_regions(const gemmd_job *j, const gm_job_desc *d, char *detail,
		      size_t len)
{
	const gemmd_region_ref *in[GM_OPND_COUNT] = {&j->a_ref, &j->b_ref,
						     &j->c_ref, &j->out_ref};
	gm_region_ref ref[GM_OPND_COUNT];
	gm_job_sizes z;
	int rv;

	if (!gmc_encode_refs(j, ref))
		return GM_OK;
	gm_job_sizes_of(d, &z);
	if ((rv = gm_proto_check_refs(d, &z, ref, detail, len)) != GM_OK)
		return rv;
	for (int op = 0; op < GM_OPND_COUNT; op++) {
		const gemmd_region *r = in[op]->region;
		uint64_t bytes = gm_operand_bytes(&z, op);

		if (r != NULL && (in[op]->offset > r->size ||
				  bytes > r->size - in[op]->offset)) {
			snprintf(detail, len,
				 "%s: offset %" PRIu64 " + %" PRIu64
				 " bytes, the region has %" PRIu64,
				 gm_operand_name(op), in[op]->offset, bytes,
				 r->size);
			return GM_EBOUNDS;
		}
	}
	return GM_OK;
}

/* ---- jobs ---- */

/* Out-of-range ints become 255, which every check refuses. */
static uint8_t u8(int v)
{
	return v < 0 || v > 255 ? 255 : (uint8_t)v;
}

static void to_desc(const gemmd_job *j, gm_job_desc *d)
{
	d->dtype = u8(j->dtype);
	d->trans_a = u8(j->trans_a);
	d->trans_b = u8(j->trans_b);
	d->layout = u8(j->layout);
	d->kernel = u8(j->kernel);
	d->flags = j->c != NULL || j->c_ref.region != NULL ? GM_JOB_HAS_C : 0;
	if (j->a_ref.region || j->b_ref.region || j->c_ref.region ||
	    j->out_ref.region)
		d->flags |= GM_JOB_REGIONS;
	d->m = j->m;
	d->n = j->n;
	d->k = j->k;
	d->alpha = j->alpha;
	d->beta = j->beta;
}

int gmc_encode_job(const gemmd_job *j, bool need_out, gm_job_desc *d,
		   char *detail, size_t len)
{
	const gm_limits lim = {GM_MAX_JOBS, GM_MAX_DIM, UINT64_MAX, UINT64_MAX,
			       UINT64_MAX};
	int rv;

	to_desc(j, d);
	if ((rv = given_once(j, need_out, detail, len)) == GM_OK &&
	    (rv = gm_job_check(d, &lim, detail, len)) == GM_OK)
		rv = in_regions(j, d, detail, len);
	return rv;
}

/* ---- frames ---- */

/* The pieces of a frame, counted (fill NULL) or written. */
struct builder {
	gmc_frame *f;
	uint8_t *fill; /* the built part's next byte; NULL: counting */
	size_t built;  /* bytes of the built part so far */
	bool open;     /* the last piece is of the built part */
};

/* Appends len bytes to the built part, copied from src when given. */
static uint8_t *put_built(struct builder *bd, const void *src, size_t len)
{
	uint8_t *p = bd->fill ? bd->fill + bd->built : NULL;

	if (!bd->open) {
		if (p != NULL)
			bd->f->segs[bd->f->nsegs] = (gmc_seg){p, 0, false};
		bd->f->nsegs++;
		bd->open = true;
	}
	if (p != NULL) {
		if (src != NULL)
			memcpy(p, src, len);
		bd->f->segs[bd->f->nsegs - 1].len += len;
	}
	bd->built += len;
	return p;
}

/* Job j's own pointer to operand op: A, B or C. */
static const void *operand(const gemmd_job *j, int op)
{
	return op == GM_OPND_A ? j->a : op == GM_OPND_B ? j->b : j->c;
}

/* Appends an operand: copied when small, else a piece of its own. */
static void put_operand(struct builder *bd, const void *src, uint64_t len)
{
	if (len < GM_ENCODE_COALESCE) {
		put_built(bd, src, (size_t)len);
		return;
	}
	if (bd->fill != NULL)
		bd->f->segs[bd->f->nsegs] = (gmc_seg){src, (size_t)len, true};
	bd->f->nsegs++;
	bd->open = false;
}

/* Where job i's operands are (refs, four per job), and *di, d[i] with
 * GM_JOB_REGIONS as they say. */
static const gm_region_ref *job_refs(const gm_job_desc *d, uint32_t i,
				     const gm_region_ref *refs, gm_job_desc *di,
				     int *regions)
{
	const gm_region_ref *ref = refs + GM_OPND_COUNT * i;

	*regions = 0;
	for (int op = 0; op < GM_OPND_COUNT; op++)
		*regions |= gm_ref_in_region(ref, op);
	*di = d[i];
	di->flags = (uint8_t)((di->flags & ~GM_JOB_REGIONS) |
			      (*regions ? GM_JOB_REGIONS : 0));
	return ref;
}

static void build_gemm(struct builder *bd, const gemmd_job *jobs,
		       const gm_job_desc *d, uint32_t n, const gm_batch *b,
		       uint64_t id, const gm_region_ref *refs)
{
	uint8_t *p = put_built(bd, NULL, GM_HDR_SIZE + GM_BATCH_SIZE);
	const gm_region_ref *ref;
	gm_job_desc di;
	int regions;

	if (p != NULL) {
		gm_proto_put_hdr(p, GM_MSG_GEMM, id, n,
				 bd->f->bytes - GM_HDR_SIZE);
		gm_proto_put_batch(p + GM_HDR_SIZE, b);
	}
	for (uint32_t i = 0; i < n; i++) {
		ref = job_refs(d, i, refs, &di, &regions);
		p = put_built(bd, NULL, GM_JOB_HDR_SIZE);
		if (p != NULL)
			gm_proto_put_job_refs(p, &di, regions ? ref : NULL);
	}
	/* The descriptors follow every job header, in job order. */
	for (uint32_t i = 0; i < n; i++) {
		ref = job_refs(d, i, refs, &di, &regions);
		if (regions && (p = put_built(bd, NULL, GM_REGION_DESC_SIZE)))
			gm_proto_put_refs(p, ref);
	}
	for (uint32_t i = 0; i < n; i++) {
		gm_job_sizes sz;

		ref = refs + GM_OPND_COUNT * i;
		gm_job_sizes_of(&d[i], &sz);
		/* Only what is not in a region travels. */
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++)
			if (gm_operand_bytes(&sz, op) != 0 &&
			    !gm_ref_in_region(ref, op))
				put_operand(bd, operand(&jobs[i], op),
					    gm_operand_bytes(&sz, op));
	}
}

/* Bytes of the request for jobs d[0..n-1]: headers, descriptors and
 * whatever of the operands is inline. */
static int request_size(const gm_job_desc *d, uint32_t n,
			const gm_region_ref *refs, uint64_t *size)
{
	const gm_region_ref *ref;
	uint64_t payload;
	gm_job_desc di;
	int regions;

	*size = GM_HDR_SIZE + GM_BATCH_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		ref = job_refs(d, i, refs, &di, &regions);
		if (gm_proto_job_payload(&di, ref, &payload) != GM_OK ||
		    __builtin_add_overflow(*size, GM_JOB_HDR_SIZE, size) ||
		    __builtin_add_overflow(*size, payload, size) ||
		    (regions &&
		     __builtin_add_overflow(*size, GM_REGION_DESC_SIZE, size)))
			return GM_EOVERFLOW;
	}
	return GM_OK;
}

int gmc_encode_gemm(const gemmd_job *jobs, const gm_job_desc *d, uint32_t n,
		    const gm_batch *b, uint64_t id, const gm_region_ref *refs,
		    gmc_frame *f)
{
	struct builder bd = {.f = f};
	gm_region_ref *own = NULL;
	int rv = GM_OK;

	*f = (gmc_frame){0};
	/* The jobs' own refs, read once: every pass below reads them, and
	 * a gemmd_job is large beside them. */
	if (refs == NULL) {
		if ((own = calloc(n ? n : 1, GM_OPND_COUNT * sizeof(*own))) ==
		    NULL)
			return gmc_error_set(GM_ENOMEM,
					     "no memory for %" PRIu32
					     " jobs' operand places",
					     n);
		for (uint32_t i = 0; i < n; i++)
			gmc_encode_refs(&jobs[i], own + GM_OPND_COUNT * i);
		refs = own;
	}
	if (request_size(d, n, refs, &f->bytes) != 0 || f->bytes > SIZE_MAX) {
		rv = gmc_error_set(GM_EOVERFLOW, "request size overflows");
		goto done;
	}
	/* Counted first, so that each part is allocated once. */
	build_gemm(&bd, jobs, d, n, b, id, refs);
	f->segs = calloc(f->nsegs, sizeof(*f->segs));
	f->built = malloc(bd.built);
	if (f->segs == NULL || f->built == NULL) {
		gmc_frame_free(f);
		rv = gmc_error_set(
		    GM_ENOMEM, "no memory for a request of %" PRIu64 " bytes",
		    f->bytes);
		goto done;
	}
	bd = (struct builder){.f = f, .fill = f->built};
	f->nsegs = 0;
	build_gemm(&bd, jobs, d, n, b, id, refs);
done:
	free(own);
	return rv;
}

int gmc_encode_ctrl(const char *request, uint64_t id, gmc_frame *f)
{
	size_t len = strlen(request);

	*f = (gmc_frame){0};
	if (len > UINT32_MAX)
		return gmc_error_set(GM_ETOOBIG, "request of %zu bytes", len);
	f->bytes = GM_HDR_SIZE + len;
	f->built = malloc(f->bytes);
	f->segs = calloc(1, sizeof(*f->segs));
	if (f->built == NULL || f->segs == NULL) {
		gmc_frame_free(f);
		return gmc_error_set(GM_ENOMEM, "out of memory");
	}
	gm_proto_put_hdr(f->built, GM_MSG_CTRL, id, 0, len);
	memcpy(f->built + GM_HDR_SIZE, request, len);
	f->segs[0] = (gmc_seg){f->built, (size_t)f->bytes, false};
	f->nsegs = 1;
	return GM_OK;
}

void gmc_frame_free(gmc_frame *f)
{
	free(f->built);
	free(f->segs);
	*f = (gmc_frame){0};
}
