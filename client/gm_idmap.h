/*
 * gm_idmap.h - private to the client library: request id -> what is in
 * flight under it, so that a reply frame finds its request in constant
 * time however many are in flight (a request of 4096 jobs answers with
 * 4096 frames). Open addressing with linear probing; deletion shifts
 * later entries back, so there are no tombstones. Not locked: the
 * client's lock guards it.
 */
#ifndef GM_IDMAP_H
#define GM_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gm_idmap_slot {
	uint64_t id; /* 0: empty */
	void *value;
} gm_idmap_slot;

typedef struct gm_idmap {
	gm_idmap_slot *slots;
	size_t cap, n; /* cap a power of two, or 0 */
} gm_idmap;

/* Adds id (not 0, not present) -> value. GM_OK or GM_ENOMEM. */
int gm_idmap_put(gm_idmap *m, uint64_t id, void *value);

/* The value of id, or NULL. */
void *gm_idmap_get(const gm_idmap *m, uint64_t id);

/* Removes id when present. */
void gm_idmap_del(gm_idmap *m, uint64_t id);

/* Frees the table (not the values). */
void gm_idmap_free(gm_idmap *m);

#endif
