/*
 * gm_share.h - what each principal holds of the memory all clients
 * share: pool bytes of its granted slabs, pageable bytes of its requests
 * over the pool, reply bytes queued on its connections and not yet
 * written, and its requests waiting for pool room.
 *
 * The caps on these (principal_share_percent) are enforced where the
 * memory is handed out: gm_poolq (a principal over its share of the pool
 * waits while another principal waits), gm_pageable (one over its share
 * of the pageable cap is refused EBUSY) and the connections (those of a
 * principal over its share of the reply bytes are not read). They count
 * principals, not connections: opening more connections takes no more.
 *
 * A share is found by the principal's name, created on first use and
 * freed with its last holder (a connection, a request, or the pool
 * queue, which holds the two principals it saw last). A principal's
 * name is kept here as a copy, so that sched/ needs nothing of the
 * daemon's principals. Loop thread only.
 */
#ifndef GM_SHARE_H
#define GM_SHARE_H

#include <stdint.h>

typedef struct gm_shares gm_shares;

typedef struct gm_share {
	uint64_t pool;	   /* pool bytes of its granted slabs */
	uint64_t pageable; /* pageable bytes of its requests */
	uint64_t unsent;   /* reply bytes queued, not yet written */
	uint64_t waiting;  /* its requests waiting in gm_poolq */
	unsigned refs;
	struct gm_share *next; /* in its bucket */
	char name[];
} gm_share;

/* An empty table. GM_ENOMEM. */
int gm_shares_create(gm_shares **out);

/* Frees the table and any share still held (NULL: nothing); nothing may
 * use them after. */
void gm_shares_destroy(gm_shares *t);

/* The share of the principal called name, with one more holder; NULL
 * when out of memory. */
gm_share *gm_shares_hold(gm_shares *t, const char *name);

/* One more holder of s, which has one; returns s. */
gm_share *gm_share_hold(gm_share *s);

/* One holder fewer (NULL: nothing); the last frees it. Its counts must
 * be back to 0 by then. */
void gm_shares_release(gm_shares *t, gm_share *s);

/* Principals with a share now. */
uint64_t gm_shares_count(const gm_shares *t);

/* percent of total, rounded down but at least 1: the most one
 * principal may hold of a resource of total bytes. */
uint64_t gm_share_cap(uint64_t total, unsigned percent);

#endif
