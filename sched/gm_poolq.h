/*
 * gm_poolq.h - requests waiting for room in the host pool: first come
 * first served, with a bounded bypass, and a share per principal.
 *
 * A GEMM request reserves its whole slab (gm_slab.h) once its head and
 * descriptors are checked, before its payload is read. When the pool has
 * no room for it now, it waits here, and its connection is not read
 * meanwhile (the client's writes block: back-pressure). Waiters are
 * served in the order they came, except that:
 *
 * - one that does not fit the room left does not hold back those behind
 *   it that do, for a while: later waiters that fit are granted past it
 *   until it has been passed bypass_max times or has waited bypass_ms
 *   (aging). From then on it blocks those behind it, so that the room
 *   freed piles up for it and a large request is never starved by a
 *   stream of small ones; and a client that sends a request too large
 *   for the room left cannot stall everyone else with it;
 * - a request that would take its principal (gm_share.h) past
 *   share_bytes of the pool is passed over unless its principal holds
 *   nothing or has the pool to itself (no other principal holds room or
 *   waits for it, nor asked for or gave back any within bypass_ms:
 *   alone, a principal may take the whole pool). Such a request is
 *   granted when it fits, but never blocks those behind it, however
 *   long it waits: otherwise one client could keep the pool to itself,
 *   one large request waited for after another.
 *
 * Whoever frees a slab gives it back through gm_poolq_put, which serves
 * the waiters that may go now. Nothing is allocated per waiter: the
 * caller embeds a gm_poolq_wait. Loop thread only, like the pool.
 */
#ifndef GM_POOLQ_H
#define GM_POOLQ_H

#include <stdint.h>

#include "gm_pool.h"
#include "gm_share.h"

typedef struct gm_poolq gm_poolq;
typedef struct gm_poolq_wait gm_poolq_wait;

/* A waiter was given its slab (w->slab). Called from gm_poolq_put and
 * gm_poolq_cancel; it may call them in turn. */
typedef void (*gm_poolq_fn)(gm_poolq_wait *w, void *arg);

/* The caller's, embedded in its request: it sets bytes and who. */
struct gm_poolq_wait {
	uint64_t bytes; /* 1 .. the pool's size */
	gm_share *who;	/* counted in its pool and waiting; NULL: none */
	void *slab;	/* set when granted */
	/* The queue's. */
	double since_us; /* when it began to wait */
	uint32_t passed; /* later waiters granted before it */
	struct gm_poolq_wait *next, *prev;
};

typedef struct gm_poolq_limits {
	uint32_t bypass_max;  /* grants past one waiter; 0: strict order */
	uint32_t bypass_ms;   /* ... for at most this long after it came */
	uint64_t share_bytes; /* one principal's share; 0: no cap */
} gm_poolq_limits;

/* A queue in front of pool p (which stays the caller's) under lim; fn
 * with arg is told of each grant. The waiters' shares come from shares,
 * which must outlive the queue: it holds the two principals it saw last
 * (asking for room or giving it back) until it sees others, so that a
 * principal all of whose holders went is still itself when it comes
 * back within bypass_ms. GM_ENOMEM. */
int gm_poolq_create(gm_pool *p, gm_shares *shares, const gm_poolq_limits *lim,
		    gm_poolq_fn fn, void *arg, gm_poolq **out);

/* Lets go of the shares it holds and frees q (NULL: nothing). */
void gm_poolq_destroy(gm_poolq *q);

/* Asks for w->bytes. GM_OK: granted now, w->slab is set and fn is not
 * called. GM_EBUSY: w waits (no room now, a waiter before it may not be
 * passed, or its principal is over its share while others wait) and fn
 * is called once it is granted. GM_ETOOBIG: it could never fit. */
int gm_poolq_get(gm_poolq *q, gm_poolq_wait *w);

/* Takes a waiting w out of the queue; those behind it may now be
 * served. */
void gm_poolq_cancel(gm_poolq *q, gm_poolq_wait *w);

/* Gives w's slab (granted) back to the pool and serves the waiters that
 * may go now. */
void gm_poolq_put(gm_poolq *q, gm_poolq_wait *w);

/* Requests waiting, and the bytes they wait for. */
uint64_t gm_poolq_waiting(const gm_poolq *q);
uint64_t gm_poolq_waiting_bytes(const gm_poolq *q);

/* Grants made past a waiter that did not fit, since start. */
uint64_t gm_poolq_bypasses(const gm_poolq *q);

#endif
