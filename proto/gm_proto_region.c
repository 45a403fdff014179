/*
 * gm_proto_region.c - the region descriptor of GM_JOB_REGIONS jobs and
 * the records of the hand-off socket; see gm_proto_region.h.
 *
 * What can be checked from the bytes alone is checked here (offsets of
 * inline operands, alignment, 64-bit overflow, the result overlapping an
 * input); whether a region exists, whose it is and whether an operand
 * fits in it is the daemon's to check, since only it knows the regions.
 */
#include "gm_proto_region.h"
#include "gm_proto_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const operand_names[GM_OPND_COUNT] = {"A", "B", "C", "OUT"};

const char *gm_operand_name(int op)
{
	return op >= 0 && op < GM_OPND_COUNT ? operand_names[op] : "?";
}

uint64_t gm_operand_bytes(const gm_job_sizes *z, int op)
{
	switch (op) {
	case GM_OPND_A:
		return z->a;
	case GM_OPND_B:
		return z->b;
	case GM_OPND_C:
		return z->c;
	default:
		return z->out;
	}
}

uint64_t gm_proto_inline_bytes(const gm_job_sizes *z,
			       const gm_region_ref ref[GM_OPND_COUNT])
{
	uint64_t n = 0;

	for (int op = GM_OPND_A; op < GM_OPND_OUT; op++)
		if (!gm_ref_in_region(ref, op))
			n += gm_operand_bytes(z, op);
	return n;
}

int gm_proto_job_payload(const gm_job_desc *d, const gm_region_ref *ref,
			 uint64_t *bytes)
{
	gm_job_sizes z;
	int rv;

	*bytes = 0;
	if ((rv = gm_job_sizes_of(d, &z)) != GM_OK)
		return rv;
	if (!(d->flags & GM_JOB_REGIONS) || ref == NULL)
		*bytes = z.a + z.b + z.c;
	else
		*bytes = gm_proto_inline_bytes(&z, ref);
	return GM_OK;
}

/* Only operands that are in regions reach the checks after the first. */
static int check_inline(const gm_job_desc *d,
			const gm_region_ref ref[GM_OPND_COUNT], char *msg,
			size_t msglen)
{
	for (int op = 0; op < GM_OPND_COUNT; op++) {
		if (op == GM_OPND_C && !(d->flags & GM_JOB_HAS_C) &&
		    gm_ref_in_region(ref, op))
			return gm_proto_fail(GM_EFIELD, msg, msglen,
					     "C: region 0x%" PRIx64
					     " named, but flags have no C",
					     ref[op].region);
		if (!gm_ref_in_region(ref, op) && ref[op].offset != 0)
			return gm_proto_fail(
			    GM_EFIELD, msg, msglen,
			    "%s: inline (region 0) with offset=%" PRIu64
			    ", must be 0",
			    operand_names[op], ref[op].offset);
	}
	return GM_OK;
}

static int check_offsets(const gm_job_sizes *z, uint64_t es,
			 const gm_region_ref ref[GM_OPND_COUNT], char *msg,
			 size_t msglen)
{
	uint64_t end;

	for (int op = 0; op < GM_OPND_COUNT; op++)
		if (gm_ref_in_region(ref, op) && ref[op].offset % es != 0)
			return gm_proto_fail(GM_EFIELD, msg, msglen,
					     "%s: offset=%" PRIu64
					     ", must be a multiple of %" PRIu64
					     " (the element size)",
					     operand_names[op], ref[op].offset,
					     es);
	for (int op = 0; op < GM_OPND_COUNT; op++)
		if (gm_ref_in_region(ref, op) &&
		    __builtin_add_overflow(ref[op].offset,
					   gm_operand_bytes(z, op), &end))
			return gm_proto_fail(GM_EBOUNDS, msg, msglen,
					     "%s: offset=%" PRIu64 " + %" PRIu64
					     " bytes overflows 64 bits",
					     operand_names[op], ref[op].offset,
					     gm_operand_bytes(z, op));
	return GM_OK;
}

/* The engines compute in place only over exactly C (a BLAS update of
 * C); a result written over part of an input it is still reading from
 * would be garbage on the CPU engine and racy on the GPU. */
static int check_overlap(const gm_job_sizes *z,
			 const gm_region_ref ref[GM_OPND_COUNT], char *msg,
			 size_t msglen)
{
	const gm_region_ref *out = &ref[GM_OPND_OUT];

	if (!gm_ref_in_region(ref, GM_OPND_OUT))
		return GM_OK;
	for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
		const gm_region_ref *in = &ref[op];
		uint64_t len = gm_operand_bytes(z, op);

		if (!gm_ref_in_region(ref, op) || in->region != out->region)
			continue;
		if (op == GM_OPND_C && in->offset == out->offset)
			continue;
		if (in->offset < out->offset + z->out &&
		    out->offset < in->offset + len)
			return gm_proto_fail(
			    GM_EFIELD, msg, msglen,
			    "OUT [%" PRIu64 ", +%" PRIu64
			    ") overlaps %s [%" PRIu64 ", +%" PRIu64
			    ") in region 0x%" PRIx64,
			    out->offset, z->out, operand_names[op], in->offset,
			    len, in->region);
	}
	return GM_OK;
}

int gm_proto_check_refs(const gm_job_desc *d, const gm_job_sizes *z,
			const gm_region_ref ref[GM_OPND_COUNT], char *msg,
			size_t msglen)
{
	uint64_t es = gm_dtype_size(d->dtype);
	int rv;

	if ((rv = check_inline(d, ref, msg, msglen)) != 0 ||
	    (rv = check_offsets(z, es, ref, msg, msglen)) != 0)
		return rv;
	return check_overlap(z, ref, msg, msglen);
}

void gm_proto_get_refs(const uint8_t *p, gm_region_ref ref[GM_OPND_COUNT])
{
	for (int op = 0; op < GM_OPND_COUNT; op++) {
		ref[op].region = get_u64(p + 16 * op);
		ref[op].offset = get_u64(p + 16 * op + 8);
	}
}

void gm_proto_put_refs(uint8_t *p, const gm_region_ref ref[GM_OPND_COUNT])
{
	for (int op = 0; op < GM_OPND_COUNT; op++) {
		put_u64(p + 16 * op, ref[op].region);
		put_u64(p + 16 * op + 8, ref[op].offset);
	}
}

void gm_proto_put_job_refs(uint8_t *p, const gm_job_desc *d,
			   const gm_region_ref *ref)
{
	uint64_t payload;

	gm_proto_put_job(p, d);
	if (gm_proto_job_payload(d, ref, &payload) == GM_OK)
		put_u64(p + 40, payload);
}

void gm_proto_jobs_begin(gm_job_iter *it, const gm_hdr *h, const uint8_t *head,
			 const uint8_t *desc, const uint8_t *payload)
{
	it->job = head + GM_BATCH_SIZE;
	it->desc = desc;
	it->payload = payload;
	it->off = 0;
	it->left = h->count;
}

int gm_proto_jobs_next(gm_job_iter *it, gm_job_desc *d, gm_job_operands *ops)
{
	gm_job_sizes z;

	if (it->left == 0)
		return GM_ENOTFOUND;
	gm_proto_parse_job(it->job, d);
	gm_job_sizes_of(d, &z);
	memset(ops, 0, sizeof(*ops));
	if (d->flags & GM_JOB_REGIONS) {
		gm_proto_get_refs(it->desc, ops->ref);
		it->desc += GM_REGION_DESC_SIZE;
	}
	ops->inline_off = it->off;
	for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
		uint64_t len = gm_operand_bytes(&z, op);

		if (len == 0 || gm_ref_in_region(ops->ref, op))
			continue;
		ops->off[op] = it->off;
		if (it->payload != NULL)
			ops->data[op] = it->payload + it->off;
		ops->inline_bytes += len;
		it->off += len;
	}
	it->job += GM_JOB_HDR_SIZE;
	it->left--;
	return GM_OK;
}

/* ---- hand-off records ---- */

int gm_handoff_path(const char *ipc_path, char *out, size_t len)
{
	static const char ext[] = ".sock";
	size_t n = strlen(ipc_path), e = sizeof(ext) - 1;

	if (n >= e && strcmp(ipc_path + n - e, ext) == 0)
		n -= e;
	return snprintf(out, len, "%.*s-regions.sock", (int)n, ipc_path);
}

void gm_handoff_put_req(uint8_t *p, const gm_handoff_req *r)
{
	memset(p, 0, GM_HANDOFF_REQ_SIZE);
	put_u32(p, GM_HANDOFF_MAGIC);
	put_u16(p + 4, GM_HANDOFF_VERSION);
	put_u16(p + 6, r->op);
	put_u64(p + 8, r->size);
	put_u64(p + 16, r->region);
}

/* Length, magic and version: what requests and replies share. */
static int check_record(const uint8_t *p, size_t len, size_t want, char *msg,
			size_t msglen)
{
	if (len < want)
		return gm_proto_fail(GM_ETRUNC, msg, msglen,
				     "record of %zu bytes, must be %zu", len,
				     want);
	if (len > want)
		return gm_proto_fail(GM_ETRAILING, msg, msglen,
				     "record of %zu bytes, must be %zu", len,
				     want);
	if (get_u32(p) != GM_HANDOFF_MAGIC)
		return gm_proto_fail(GM_EMAGIC, msg, msglen,
				     "magic=0x%08" PRIx32
				     ", must be 0x%08x (\"GMRG\")",
				     get_u32(p), GM_HANDOFF_MAGIC);
	if (get_u16(p + 4) != GM_HANDOFF_VERSION)
		return gm_proto_fail(GM_EVERSION, msg, msglen,
				     "version=%u, this side speaks %d",
				     get_u16(p + 4), GM_HANDOFF_VERSION);
	return GM_OK;
}

int gm_handoff_get_req(const uint8_t *p, size_t len, gm_handoff_req *r,
		       char *msg, size_t msglen)
{
	int rv;

	memset(r, 0, sizeof(*r));
	if ((rv = check_record(p, len, GM_HANDOFF_REQ_SIZE, msg, msglen)) != 0)
		return rv;
	r->op = get_u16(p + 6);
	r->size = get_u64(p + 8);
	r->region = get_u64(p + 16);
	if (r->op != GM_HANDOFF_REGISTER && r->op != GM_HANDOFF_RELEASE)
		return gm_proto_fail(GM_EMSGTYPE, msg, msglen,
				     "op=%u, must be 1 (register) or 2 "
				     "(release)",
				     r->op);
	if (get_u64(p + 24) != 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "flags and reserved bytes 24..31 must "
				     "be 0");
	if (r->op == GM_HANDOFF_REGISTER && (r->size == 0 || r->region != 0))
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "register: size=%" PRIu64
				     " region=0x%" PRIx64
				     ", must be size > 0 and region 0",
				     r->size, r->region);
	if (r->op == GM_HANDOFF_RELEASE && (r->size != 0 || r->region == 0))
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "release: size=%" PRIu64
				     " region=0x%" PRIx64
				     ", must be size 0 and a region id",
				     r->size, r->region);
	return GM_OK;
}

void gm_handoff_put_rep(uint8_t *p, const gm_handoff_rep *r)
{
	memset(p, 0, GM_HANDOFF_REP_SIZE);
	put_u32(p, GM_HANDOFF_MAGIC);
	put_u16(p + 4, GM_HANDOFF_VERSION);
	put_u16(p + 6, r->op);
	put_u32(p + 8, r->status);
	put_u64(p + 16, r->region);
	put_u64(p + 24, r->size);
	put_text(p + 32, r->message[0] || r->status == GM_OK
			     ? r->message
			     : gm_strerror((int)r->status));
}

int gm_handoff_get_rep(const uint8_t *p, size_t len, gm_handoff_rep *r,
		       char *msg, size_t msglen)
{
	int rv;

	memset(r, 0, sizeof(*r));
	if ((rv = check_record(p, len, GM_HANDOFF_REP_SIZE, msg, msglen)) != 0)
		return rv;
	r->op = get_u16(p + 6);
	r->status = get_u32(p + 8);
	r->region = get_u64(p + 16);
	r->size = get_u64(p + 24);
	get_text(p + 32, r->message);
	if (get_u32(p + 12) != 0)
		return gm_proto_fail(GM_EFIELD, msg, msglen,
				     "reserved bytes 12..15 must be 0");
	return GM_OK;
}
