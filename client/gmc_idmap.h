/*
 * gmc_idmap.h - private to the client library: request id -> what is in
 * flight under it, so that a reply frame finds its request in constant
 * time however many are in flight (a request of 4096 jobs answers with
 * 4096 frames). Open addressing with linear probing; deletion shifts
 * later entries back, so there are no tombstones. Not locked: the
 * client's lock guards it.
 */
#ifndef GMC_IDMAP_H
#define GMC_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gmc_idmap_slot {
	uint64_t id; /* 0: empty */
	void *value;
} gmc_idmap_slot;

typedef struct gmc_idmap {
	gmc_idmap_slot *slots;
	size_t cap, n; /* cap a power of two, or 0 */
} gmc_idmap;

/* Adds id (not 0, not present) -> value. GM_OK or GM_ENOMEM. */
int gmc_idmap_put(gmc_idmap *m, uint64_t id, void *value);

/* The value of id, or NULL. */
void *gmc_idmap_get(const gmc_idmap *m, uint64_t id);

/* Removes id when present. */
void gmc_idmap_del(gmc_idmap *m, uint64_t id);

/* Frees the table (not the values). */
void gmc_idmap_free(gmc_idmap *m);

#endif
