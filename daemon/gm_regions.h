/*
 * gm_regions.h - the shared-memory regions gemmd has mapped, and the
 * checking and binding of the jobs that name them.
 *
 * A region is a sealed memfd a local client handed over through the
 * hand-off socket (gm_region_srv.h), mapped MAP_SHARED and registered
 * with the engine once. It belongs to its client's uid and hand-off
 * connection and is found by a random 64-bit id. A GEMM request may name
 * a region only when it came over ipc:// from a peer with the owner's
 * uid. Each job holds a reference on every region it points into, so a
 * region that its owner released, or whose connection closed, stays
 * mapped until its last job is back; only then is it retired
 * (unregistered and unmapped), by a hook that does it off the loop
 * thread, or here when none is set.
 *
 * Everything here runs on the loop thread, except gm_regions_unmap.
 */
#ifndef GM_REGIONS_H
#define GM_REGIONS_H

#include <stddef.h>
#include <stdint.h>

#include "gm_engine.h"
#include "gm_net.h"
#include "gm_proto_region.h"
#include "gm_stats.h"

typedef struct gm_regions gm_regions;

typedef struct gm_region {
	uint64_t id;	/* random, never 0 */
	uint32_t uid;	/* the owner's */
	void *owner;	/* its hand-off connection; NULL once released */
	uint8_t *base;	/* mapped MAP_SHARED */
	uint64_t size;	/* bytes mapped, the memfd's size */
	unsigned refs;	/* one while the owner holds it, one per job */
	int published;	/* findable by id: registered and announced */
	int registered; /* with the engine (gm_engine_register) */
	struct gm_region *next, *hnext; /* all regions; its hash bucket */
} gm_region;

/* Unregisters and unmaps r, then must call gm_regions_retired(rs, r) on
 * the loop thread, now or later. */
typedef void (*gm_region_retire_fn)(gm_regions *rs, gm_region *r, void *arg);

/* Creates an empty table for engine e (which stays the caller's). */
int gm_regions_create(gm_engine *e, gm_regions **out);

/* Unmaps every region left, here and now, and frees rs (NULL is fine).
 * The engine must still be open. */
void gm_regions_destroy(gm_regions *rs);

/* Sets the hook that retires regions (NULL: retired synchronously). */
void gm_regions_set_retire(gm_regions *rs, gm_region_retire_fn fn, void *arg);

gm_engine *gm_regions_engine(const gm_regions *rs);

/*
 * Adds a region of uid and owner, mapped at base (size bytes), with a
 * fresh random id; not findable until gm_regions_publish. It holds one
 * reference, the owner's. GM_ENOMEM, or GM_EIO when no random id can be
 * had.
 */
int gm_regions_add(gm_regions *rs, uint32_t uid, void *owner, void *base,
		   uint64_t size, gm_region **out);

/* Makes r findable by id; registered: gm_engine_register succeeded. */
void gm_regions_publish(gm_regions *rs, gm_region *r, int registered);

/* The published region with id, or NULL. */
gm_region *gm_regions_find(gm_regions *rs, uint64_t id);

/* Regions uid has mapped (released ones still held count too) and their
 * bytes: what the quotas limit. */
void gm_regions_usage(const gm_regions *rs, uint32_t uid, uint64_t *count,
		      uint64_t *bytes);

/* The owner lets r go: no longer findable; retired once no job holds
 * it. */
void gm_regions_release(gm_regions *rs, gm_region *r);

/* Releases every published region of owner (its connection closed);
 * one still being registered is left to its registration. */
void gm_regions_release_owner(gm_regions *rs, void *owner);

/* Called by the retire hook when r is unmapped: forgets and frees it. */
void gm_regions_retired(gm_regions *rs, gm_region *r);

/* Unregisters r from e (when registered) and unmaps it. Any thread. */
void gm_regions_unmap(gm_engine *e, gm_region *r);

/* Counts for the stats document (connections and refused are the
 * hand-off socket's, left 0 here). */
void gm_regions_counts(const gm_regions *rs, gm_stats_regions *out);

/* Counts one refused hand-off request. */
void gm_regions_refused(gm_regions *rs);

/* ---- requests ---- */

/*
 * Checks every operand that a job of the request h (head and desc
 * already accepted by gm_proto_check_head and gm_proto_check_descs)
 * names in a region, job by job in order, each in the order A, B, C,
 * OUT: the request came over ipc:// from a peer whose credentials were
 * read (GM_EACCES), the region exists (GM_ENOTFOUND), the peer has its
 * owner's uid (GM_EACCES), the operand lies inside it (GM_EBOUNDS). On
 * success *nrefs is the number of region operands (0: the request names
 * no region). On failure msg names the job, operand and value.
 */
int gm_regions_check_req(gm_regions *rs, const gm_peer *peer, const gm_hdr *h,
			 const uint8_t *head, const uint8_t *desc,
			 uint32_t *nrefs, char *msg, size_t msglen);

/* A request's references on regions. */
typedef struct gm_region_holds {
	uint32_t n, cap;
	gm_region *r[];
} gm_region_holds;

/* Room for cap references; NULL when out of memory. */
gm_region_holds *gm_regions_holds_new(uint32_t cap);

/* Points the operands of j that ops names in regions (all checked by
 * gm_regions_check_req, with nothing run on the loop in between) into
 * their regions, taking a reference on each in h (which has room), and
 * counts the job. Returns the GM_PLACED bits (gm_slab.h) of those
 * operands. */
unsigned gm_regions_bind(gm_regions *rs, const gm_job_operands *ops, gm_job *j,
			 gm_region_holds *h);

/* Drops every reference in h and frees h (NULL is fine); regions no
 * longer held by anyone are retired. */
void gm_regions_holds_drop(gm_regions *rs, gm_region_holds *h);

#endif
