/*
 * gm_id.h - ids that name something a client holds (a detached job, a
 * region): drawn at random from getrandom(2), so that one client cannot
 * guess another's from its own, and never one that is in use. Any
 * thread; taken is called on the caller's.
 */
#ifndef GM_ID_H
#define GM_ID_H

#include <stdint.h>

/* Whether id is in use in set. */
typedef int (*gm_id_taken_fn)(const void *set, uint64_t id);

/* A random id in 1..max (max + 1 a power of two, or max UINT64_MAX)
 * that taken says is free, into *id. GM_EIO when the kernel gives no
 * random bytes, or (vanishingly unlikely) every one of a few draws is
 * taken. Does not block once the kernel's pool is initialized, which
 * it is from early boot. */
int gm_id_fresh(uint64_t max, gm_id_taken_fn taken, const void *set,
		uint64_t *id);

#endif
