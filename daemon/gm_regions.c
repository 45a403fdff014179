/*
 * gm_regions.c - the table of mapped regions, and the checking and
 * binding of the jobs that name them; see gm_regions.h.
 *
 * Regions are few (a quota per uid), but a request may name one per
 * operand of thousands of jobs, so published regions are also hashed by
 * id; the ids are random, so their low bits are a fine hash.
 */
#include "gm_regions.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gm_id.h"
#include "gm_log.h"
#include "gm_slab.h"

#define NBUCKETS 256 /* a power of two */

struct gm_regions {
	gm_engine *eng;
	gm_region *all; /* every region not yet retiring */
	gm_region *bucket[NBUCKETS];
	gm_region_retire_fn retire;
	void *retire_arg;
	gm_stats_regions n; /* connections left 0: the server's */
};

int gm_regions_create(gm_engine *e, gm_regions **out)
{
	gm_regions *rs = calloc(1, sizeof(*rs));

	*out = rs;
	if (rs == NULL)
		return GM_ENOMEM;
	rs->eng = e;
	return GM_OK;
}

gm_engine *gm_regions_engine(const gm_regions *rs)
{
	return rs->eng;
}

void gm_regions_set_retire(gm_regions *rs, gm_region_retire_fn fn, void *arg)
{
	rs->retire = fn;
	rs->retire_arg = arg;
}

void gm_regions_unmap(gm_engine *e, gm_region *r)
{
	if (r->registered)
		gm_engine_unregister(e, r->base);
	munmap(r->base, r->size);
}

void gm_regions_retired(gm_regions *rs, gm_region *r)
{
	rs->n.count--;
	rs->n.mapped_bytes -= r->size;
	if (r->registered)
		rs->n.registered_bytes -= r->size;
	GM_LOG(GM_LOG_DEBUG,
	       "region 0x%016" PRIx64 " of uid %" PRIu32 ": unmapped", r->id,
	       r->uid);
	free(r);
}

void gm_regions_destroy(gm_regions *rs)
{
	gm_region *r, *next;

	if (rs == NULL)
		return;
	for (r = rs->all; r != NULL; r = next) {
		next = r->next;
		gm_regions_unmap(rs->eng, r);
		gm_regions_retired(rs, r);
	}
	free(rs);
}

static gm_region **bucket_of(gm_regions *rs, uint64_t id)
{
	return &rs->bucket[id & (NBUCKETS - 1)];
}

/* Takes r out of the list whose head is *head, linked through next or
 * hnext. */
static void unlink_from(gm_region **head, gm_region *r, int hashed)
{
	gm_region **pp = head;

	while (*pp != NULL && *pp != r)
		pp = hashed ? &(*pp)->hnext : &(*pp)->next;
	if (*pp != NULL)
		*pp = hashed ? r->hnext : r->next;
}

/* Whether a region not yet retiring has id; a region's id is all that
 * names it, so a new one must not be guessable from another client's. */
static int id_taken(const void *set, uint64_t id)
{
	const gm_regions *rs = set;

	for (const gm_region *r = rs->all; r != NULL; r = r->next)
		if (r->id == id)
			return 1;
	return 0;
}

int gm_regions_add(gm_regions *rs, uint32_t uid, void *owner, void *base,
		   uint64_t size, gm_region **out)
{
	gm_region *r = calloc(1, sizeof(*r));
	int rv;

	*out = NULL;
	if (r == NULL)
		return GM_ENOMEM;
	if ((rv = gm_id_fresh(UINT64_MAX, id_taken, rs, &r->id)) != GM_OK) {
		free(r);
		return rv;
	}
	r->uid = uid;
	r->owner = owner;
	r->base = base;
	r->size = size;
	r->refs = 1;
	r->next = rs->all;
	rs->all = r;
	rs->n.count++;
	rs->n.mapped_bytes += size;
	*out = r;
	return GM_OK;
}

void gm_regions_publish(gm_regions *rs, gm_region *r, int registered)
{
	gm_region **b = bucket_of(rs, r->id);

	r->registered = registered;
	if (registered)
		rs->n.registered_bytes += r->size;
	r->published = 1;
	r->hnext = *b;
	*b = r;
	rs->n.created++;
}

gm_region *gm_regions_find(gm_regions *rs, uint64_t id)
{
	gm_region *r;

	for (r = *bucket_of(rs, id); r != NULL; r = r->hnext)
		if (r->id == id)
			return r;
	return NULL;
}

void gm_regions_usage(const gm_regions *rs, uint32_t uid, uint64_t *count,
		      uint64_t *bytes)
{
	*count = *bytes = 0;
	for (const gm_region *r = rs->all; r != NULL; r = r->next) {
		if (r->uid != uid)
			continue;
		(*count)++;
		*bytes += r->size;
	}
}

static void drop(gm_regions *rs, gm_region *r)
{
	if (--r->refs != 0)
		return;
	unlink_from(&rs->all, r, 0);
	if (rs->retire != NULL) {
		rs->retire(rs, r, rs->retire_arg);
		return;
	}
	gm_regions_unmap(rs->eng, r);
	gm_regions_retired(rs, r);
}

void gm_regions_release(gm_regions *rs, gm_region *r)
{
	if (r->owner == NULL)
		return;
	r->owner = NULL;
	if (r->published) {
		unlink_from(bucket_of(rs, r->id), r, 1);
		r->published = 0;
	}
	if (r->refs > 1)
		GM_LOG(GM_LOG_DEBUG,
		       "region 0x%016" PRIx64 " released; %u job(s) still "
		       "use it",
		       r->id, r->refs - 1);
	drop(rs, r);
}

void gm_regions_release_owner(gm_regions *rs, void *owner)
{
	gm_region *r, *next;

	for (r = rs->all; r != NULL; r = next) {
		next = r->next;
		if (r->owner == owner && r->published)
			gm_regions_release(rs, r);
	}
}

void gm_regions_counts(const gm_regions *rs, gm_stats_regions *out)
{
	*out = rs->n;
}

void gm_regions_refused(gm_regions *rs)
{
	rs->n.refused++;
}

/* ---- requests ---- */

static int check_ref(gm_regions *rs, const gm_region_ref *ref, uint64_t len,
		     const gm_peer *peer, char *msg, size_t msglen)
{
	gm_region *r;

	if (peer->kind != GM_URL_IPC || !peer->has_cred) {
		snprintf(msg, msglen, "regions can be named over ipc:// only");
		return GM_EACCES;
	}
	if ((r = gm_regions_find(rs, ref->region)) == NULL) {
		snprintf(msg, msglen, "no region 0x%016" PRIx64, ref->region);
		return GM_ENOTFOUND;
	}
	if (r->uid != peer->uid) {
		snprintf(msg, msglen,
			 "region 0x%016" PRIx64 " belongs to another user",
			 ref->region);
		return GM_EACCES;
	}
	if (ref->offset > r->size || len > r->size - ref->offset) {
		snprintf(msg, msglen,
			 "offset %" PRIu64 " + %" PRIu64
			 " bytes, region 0x%016" PRIx64 " has %" PRIu64,
			 ref->offset, len, ref->region, r->size);
		return GM_EBOUNDS;
	}
	return GM_OK;
}

int gm_regions_check_req(gm_regions *rs, const gm_peer *peer, const gm_hdr *h,
			 const uint8_t *head, const uint8_t *desc,
			 uint32_t *nrefs, char *msg, size_t msglen)
{
	char detail[2 * GM_MSG_TEXT];
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc d;
	gm_job_sizes z;
	uint32_t i;
	int rv;

	*nrefs = 0;
	gm_proto_jobs_begin(&it, h, head, desc, NULL);
	for (i = 0; gm_proto_jobs_next(&it, &d, &ops) == GM_OK; i++) {
		if (!(d.flags & GM_JOB_REGIONS))
			continue;
		gm_job_sizes_of(&d, &z);
		for (int op = 0; op < GM_OPND_COUNT; op++) {
			if (!gm_ref_in_region(ops.ref, op))
				continue;
			rv = check_ref(rs, &ops.ref[op],
				       gm_operand_bytes(&z, op), peer, detail,
				       sizeof(detail));
			if (rv != GM_OK) {
				snprintf(msg, msglen, "job %" PRIu32 ": %s: %s",
					 i, gm_operand_name(op), detail);
				return rv;
			}
			(*nrefs)++;
		}
	}
	return GM_OK;
}

gm_region_holds *gm_regions_holds_new(uint32_t cap)
{
	gm_region_holds *h = malloc(sizeof(*h) + (size_t)cap * sizeof(h->r[0]));

	if (h != NULL) {
		h->n = 0;
		h->cap = cap;
	}
	return h;
}

unsigned gm_regions_bind(gm_regions *rs, const gm_job_operands *ops, gm_job *j,
			 gm_region_holds *h)
{
	void **at[GM_OPND_COUNT] = {&j->a, &j->b, &j->c, &j->out};
	unsigned placed = 0;

	for (int op = 0; op < GM_OPND_COUNT; op++) {
		gm_region *r;

		if (!gm_ref_in_region(ops->ref, op))
			continue;
		r = gm_regions_find(rs, ops->ref[op].region);
		*at[op] = r->base + ops->ref[op].offset;
		r->refs++;
		h->r[h->n++] = r;
		placed |= GM_PLACED(op);
	}
	if (placed != 0)
		rs->n.jobs++;
	return placed;
}

void gm_regions_holds_drop(gm_regions *rs, gm_region_holds *h)
{
	if (h == NULL)
		return;
	for (uint32_t i = 0; i < h->n; i++)
		drop(rs, h->r[i]);
	free(h);
}
