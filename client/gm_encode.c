/*
 * gm_encode.c - jobs and control requests as request messages; see
 * gm_encode.h.
 */
#include "gm_encode.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gm_client.h"
#include "gm_error_nng.h"
#include "gm_proto_region.h"
#include "gm_shm.h"

/* ---- jobs naming regions ---- */

/* Fills ref[] from j's region operands (ids and offsets; inline ones
 * 0); returns whether any operand is in a region. */
static int region_refs(const gemmd_job *j, gm_region_ref ref[GM_OPND_COUNT])
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

	if (!region_refs(j, ref))
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

int gm_encode_job(const gemmd_job *j, bool need_out, gm_job_desc *d,
		  char *detail, size_t len)
{
	const gm_limits lim = {GM_MAX_JOBS, GM_MAX_DIM, UINT64_MAX};
	int rv;

	to_desc(j, d);
	if ((rv = given_once(j, need_out, detail, len)) == GM_OK &&
	    (rv = gm_job_check(d, &lim, detail, len)) == GM_OK)
		rv = in_regions(j, d, detail, len);
	return rv;
}

static void fill_gemm(uint8_t *p, const gemmd_job *jobs, const gm_job_desc *d,
		      uint32_t n, const gm_batch *b, uint64_t id)
{
	gm_region_ref ref[GM_OPND_COUNT];
	gm_job_sizes sz;
	uint32_t i;

	gm_proto_put_hdr(p, GM_MSG_GEMM, id, n);
	gm_proto_put_batch(p + GM_HDR_SIZE, b);
	p += GM_HDR_SIZE + GM_BATCH_SIZE;
	for (i = 0; i < n; i++) {
		const void *src[GM_OPND_OUT] = {jobs[i].a, jobs[i].b,
						jobs[i].c};
		int regions = region_refs(&jobs[i], ref);

		gm_job_sizes_of(&d[i], &sz);
		gm_proto_put_job_refs(p, &d[i], regions ? ref : NULL);
		p += GM_JOB_HDR_SIZE;
		if (regions) {
			gm_proto_put_refs(p, ref);
			p += GM_REGION_DESC_SIZE;
		}
		/* Only what is not in a region travels. */
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
			uint64_t len = gm_operand_bytes(&sz, op);

			if (len == 0 || gm_ref_in_region(ref, op))
				continue;
			memcpy(p, src[op], len);
			p += len;
		}
	}
}

/* Bytes of the request for jobs d[0..n-1]: headers, descriptors and
 * whatever of the operands is inline. */
static int request_size(const gemmd_job *jobs, const gm_job_desc *d, uint32_t n,
			uint64_t *size)
{
	gm_region_ref ref[GM_OPND_COUNT];
	uint64_t payload;

	*size = GM_HDR_SIZE + GM_BATCH_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		region_refs(&jobs[i], ref);
		if (gm_proto_job_payload(&d[i], ref, &payload) != GM_OK ||
		    __builtin_add_overflow(*size, GM_JOB_HDR_SIZE, size) ||
		    __builtin_add_overflow(*size, payload, size))
			return GM_EOVERFLOW;
	}
	return GM_OK;
}

/* The whole request in one message of exactly its size, each operand
 * copied once. */
int gm_encode_gemm(const gemmd_job *jobs, const gm_job_desc *d, uint32_t n,
		   const gm_batch *b, uint64_t id, nng_msg **out)
{
	uint64_t size;
	int nrv;

	if (request_size(jobs, d, n, &size) != 0 || size > SIZE_MAX)
		return gm_client_seterr(GM_EOVERFLOW, "request size overflows");
	if ((nrv = nng_msg_alloc(out, (size_t)size)) != 0)
		return gm_client_seterr(gm_error_nng(nrv),
					"%" PRIu64 "-byte request: %s", size,
					nng_strerror(nrv));
	fill_gemm(nng_msg_body(*out), jobs, d, n, b, id);
	return GM_OK;
}

int gm_encode_ctrl(const char *request, uint64_t id, nng_msg **out)
{
	size_t len = strlen(request);
	int nrv;

	if (len > UINT32_MAX)
		return gm_client_seterr(GM_ETOOBIG, "request of %zu bytes",
					len);
	if ((nrv = nng_msg_alloc(out, GM_HDR_SIZE + len)) != 0)
		return gm_client_seterr(gm_error_nng(nrv), "%s",
					nng_strerror(nrv));
	gm_proto_put_hdr(nng_msg_body(*out), GM_MSG_CTRL, id, (uint32_t)len);
	memcpy((uint8_t *)nng_msg_body(*out) + GM_HDR_SIZE, request, len);
	return GM_OK;
}
