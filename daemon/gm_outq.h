/*
 * gm_outq.h - what waits to be written to one connection: whole frames,
 * each either a run of bytes in a request's slab (a job's reply frame,
 * written there in place: gm_slab.h) or a small frame of its own on the
 * heap (an ERROR, a CTRL_REPLY, a kept detached result).
 *
 * A connection sends what it queued a few frames at a time (nng takes at
 * most GM_IO_IOV_MAX pieces per operation). Frames may go out in any
 * order (PROTOCOL.md 2), so before each send the queue puts the frames
 * waiting in order, oldest request first and, within a request, by
 * address, and joins those that touch in memory: the replies of jobs of
 * one request that finished one after another lie back to back in its
 * slab, and 4096 of them go out as one piece in one write. Older
 * requests go first, so a request's replies cannot be held back
 * forever by newer ones.
 *
 * Each slab frame counts against its owner (a request), which is told
 * (done callback) how many of its frames were written or dropped, so it
 * knows when its slab is free. Room for a request's frames is reserved
 * when it is accepted (gm_outq_reserve), so queueing its replies never
 * allocates. Loop thread only.
 */
#ifndef GM_OUTQ_H
#define GM_OUTQ_H

#include <nng/nng.h>
#include <stdint.h>

/* nframes of owner's frames are written, or dropped. */
typedef void (*gm_outq_done_fn)(void *owner, uint32_t nframes, void *arg);

typedef struct gm_outq_seg {
	const uint8_t *p;
	uint64_t len;
	uint64_t seq;	  /* older first */
	void *owner;	  /* slab frames: told when they are gone */
	uint32_t nframes; /* frames in this piece */
	int heap;	  /* p is malloc'd: freed when gone */
} gm_outq_seg;

typedef struct gm_outq {
	gm_outq_seg *seg; /* [head, head + n): sending first */
	uint64_t cap, head, n;
	uint64_t nsending; /* pieces of the send in flight */
	uint64_t reserved; /* room promised to accepted requests */
	uint64_t bytes;	   /* queued and in flight */
	uint64_t *also;	   /* counts them too (a principal's), or NULL */
	int sorted;	   /* the waiting pieces are in order */
	gm_outq_done_fn done;
	void *arg;
} gm_outq;

void gm_outq_init(gm_outq *q, gm_outq_done_fn done, void *arg);

/* From now on also counts the bytes queued and in flight, those queued
 * already included, beside q->bytes: a principal's share (gm_share.h)
 * over all its connections. */
void gm_outq_count_in(gm_outq *q, uint64_t *also);

/* Drops every frame (owners told, heap frames freed), takes its bytes
 * out of the count it was given, and frees the queue's memory. No send
 * may be in flight. */
void gm_outq_fini(gm_outq *q);

/* Makes room for n more slab frames, for an accepted request.
 * GM_ENOMEM. */
int gm_outq_reserve(gm_outq *q, uint64_t n);

/* Gives back room for n frames that will not be queued. */
void gm_outq_unreserve(gm_outq *q, uint64_t n);

/* A frame of owner with room reserved will not be queued (the
 * connection is closing): its room goes back and owner is told, as of
 * a frame dropped. */
void gm_outq_forgo(gm_outq *q, void *owner);

/* Queues one frame of owner at p (len bytes, in its slab), using room
 * reserved for it. seq orders owners: lower goes first. */
void gm_outq_push(gm_outq *q, const uint8_t *p, uint64_t len, void *owner,
		  uint64_t seq);

/* Queues a frame of its own (malloc'd; the queue frees it), seq as
 * above. GM_ENOMEM: not queued, and freed. */
int gm_outq_push_heap(gm_outq *q, uint8_t *p, uint64_t len, uint64_t seq);

/* Takes the next pieces to send, at most max, into iov (their frames
 * are in flight until gm_outq_sent); returns how many, 0 when nothing
 * waits or a send is in flight. */
unsigned gm_outq_next(gm_outq *q, nng_iov *iov, unsigned max);

/* The send in flight ended: its frames are gone (written, or lost with
 * the connection). Returns their bytes. */
uint64_t gm_outq_sent(gm_outq *q);

/* Drops every frame not in flight (the connection is closing). */
void gm_outq_drop(gm_outq *q);

/* Whether nothing is queued or in flight. */
static inline int gm_outq_empty(const gm_outq *q)
{
	return q->n == 0;
}

#endif
