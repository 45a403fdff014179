/*
 * gm_poolq.h - requests waiting for room in the host pool, first come
 * first served.
 *
 * A GEMM request reserves its whole slab (gm_slab.h) once its head and
 * descriptors are checked, before its payload is read. When the pool has
 * no room for it now, it waits here, and its connection is not read
 * meanwhile (the client's writes block: back-pressure). Waiters are
 * served in the order they came, and the one at the head blocks those
 * behind it, even those that would fit, so that a large request is never
 * starved by a stream of small ones. Whoever frees a slab gives it back
 * through gm_poolq_put, which serves the waiters that fit now. Nothing
 * is allocated per waiter: the caller embeds a gm_poolq_wait. Loop
 * thread only, like the pool.
 */
#ifndef GM_POOLQ_H
#define GM_POOLQ_H

#include <stdint.h>

#include "gm_pool.h"

typedef struct gm_poolq gm_poolq;
typedef struct gm_poolq_wait gm_poolq_wait;

/* A waiter was given its slab (w->slab). Called from gm_poolq_put and
 * gm_poolq_cancel; it may call them in turn. */
typedef void (*gm_poolq_fn)(gm_poolq_wait *w, void *arg);

/* The caller's, embedded in its request: it sets bytes. */
struct gm_poolq_wait {
	uint64_t bytes; /* 1 .. the pool's size */
	void *slab;	/* set when granted */
	struct gm_poolq_wait *next, *prev;
};

/* A queue in front of pool p (which stays the caller's); fn with arg
 * is told of each grant. GM_ENOMEM. */
int gm_poolq_create(gm_pool *p, gm_poolq_fn fn, void *arg, gm_poolq **out);
void gm_poolq_destroy(gm_poolq *q);

/* Asks for w->bytes. GM_OK: granted now, w->slab is set and fn is not
 * called. GM_EBUSY: w waits (someone waits before it, or there is no
 * room now) and fn is called once it is granted. GM_ETOOBIG: it could
 * never fit. */
int gm_poolq_get(gm_poolq *q, gm_poolq_wait *w);

/* Takes a waiting w out of the queue; those behind it may now be
 * served. */
void gm_poolq_cancel(gm_poolq *q, gm_poolq_wait *w);

/* Gives slab back to the pool and serves the waiters that now fit. */
void gm_poolq_put(gm_poolq *q, void *slab);

/* Requests waiting, and the bytes they wait for. */
uint64_t gm_poolq_waiting(const gm_poolq *q);
uint64_t gm_poolq_waiting_bytes(const gm_poolq *q);

#endif
