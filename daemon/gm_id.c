/*
 * gm_id.c - random ids nobody holds; see gm_id.h.
 */
#include "gm_id.h"

#include <sys/random.h>
#include <sys/types.h>

#include "gm_error.h"

/* Draws before giving up: with a table far from full, more than one is
 * already a rare event. */
#define TRIES 8

int gm_id_fresh(uint64_t max, gm_id_taken_fn taken, const void *set,
		uint64_t *id)
{
	for (int i = 0; i < TRIES; i++) {
		if (getrandom(id, sizeof(*id), 0) != (ssize_t)sizeof(*id))
			return GM_EIO;
		*id &= max;
		if (*id != 0 && !taken(set, *id))
			return GM_OK;
	}
	return GM_EIO;
}
