/*
 * gm_outq.c - the frames waiting for one connection; see gm_outq.h.
 * Pieces live in one array, those of the send in flight first; the
 * array is compacted when its end is reached, and grown only by
 * gm_outq_reserve and gm_outq_push_heap.
 */
#include "gm_outq.h"

#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

#define MIN_CAP 16

void gm_outq_init(gm_outq *q, gm_outq_done_fn done, void *arg)
{
	memset(q, 0, sizeof(*q));
	q->sorted = 1;
	q->done = done;
	q->arg = arg;
}

/* A piece is gone: its owner told, or its memory freed. */
static void release(gm_outq *q, gm_outq_seg *s)
{
	if (s->heap)
		free((void *)s->p);
	else
		q->done(s->owner, s->nframes, q->arg);
}

/* bytes fewer queued, in q and in the principal's count. */
static void less(gm_outq *q, uint64_t bytes)
{
	q->bytes -= bytes;
	if (q->also != NULL)
		*q->also -= bytes;
}

void gm_outq_count_in(gm_outq *q, uint64_t *also)
{
	q->also = also;
	if (also != NULL)
		*also += q->bytes;
}

void gm_outq_fini(gm_outq *q)
{
	for (uint64_t i = 0; i < q->n; i++)
		release(q, &q->seg[q->head + i]);
	less(q, q->bytes);
	q->also = NULL;
	free(q->seg);
	q->seg = NULL;
	q->cap = q->head = q->n = q->nsending = q->bytes = q->reserved = 0;
}

/* Room for want pieces in all, from index 0. */
static int grow(gm_outq *q, uint64_t want)
{
	uint64_t cap = q->cap ? q->cap : MIN_CAP;
	gm_outq_seg *s;

	if (q->head != 0) {
		memmove(q->seg, q->seg + q->head, q->n * sizeof(*q->seg));
		q->head = 0;
	}
	if (want <= q->cap)
		return GM_OK;
	while (cap < want)
		cap *= 2;
	if ((s = realloc(q->seg, cap * sizeof(*s))) == NULL)
		return GM_ENOMEM;
	q->seg = s;
	q->cap = cap;
	return GM_OK;
}

int gm_outq_reserve(gm_outq *q, uint64_t n)
{
	if (grow(q, q->n + q->reserved + n) != GM_OK)
		return GM_ENOMEM;
	q->reserved += n;
	return GM_OK;
}

void gm_outq_unreserve(gm_outq *q, uint64_t n)
{
	q->reserved -= n;
}

void gm_outq_forgo(gm_outq *q, void *owner)
{
	q->reserved--;
	q->done(owner, 1, q->arg);
}

static int before(const gm_outq_seg *a, const gm_outq_seg *b)
{
	return a->seq < b->seq || (a->seq == b->seq && a->p < b->p);
}

/* Whether b continues a in memory, as frames of one owner. */
static int joins(const gm_outq_seg *a, const gm_outq_seg *b)
{
	return !a->heap && !b->heap && a->owner == b->owner &&
	       a->p + a->len == b->p;
}

/* Appends s; joins it to the last piece when it continues it. */
static void append(gm_outq *q, const gm_outq_seg *s)
{
	gm_outq_seg *last =
	    q->n > q->nsending ? &q->seg[q->head + q->n - 1] : NULL;

	q->bytes += s->len;
	if (q->also != NULL)
		*q->also += s->len;
	if (last != NULL && joins(last, s)) {
		last->len += s->len;
		last->nframes += s->nframes;
		return;
	}
	if (last != NULL && before(s, last))
		q->sorted = 0;
	if (q->head + q->n == q->cap)
		grow(q, q->n); /* compacts: the room is there */
	q->seg[q->head + q->n++] = *s;
}

void gm_outq_push(gm_outq *q, const uint8_t *p, uint64_t len, void *owner,
		  uint64_t seq)
{
	gm_outq_seg s = {
	    .p = p, .len = len, .seq = seq, .owner = owner, .nframes = 1};

	q->reserved--;
	append(q, &s);
}

int gm_outq_push_heap(gm_outq *q, uint8_t *p, uint64_t len, uint64_t seq)
{
	gm_outq_seg s = {.p = p, .len = len, .seq = seq, .heap = 1};

	if (grow(q, q->n + q->reserved + 1) != GM_OK) {
		free(p);
		return GM_ENOMEM;
	}
	append(q, &s);
	return GM_OK;
}

static int cmp_seg(const void *x, const void *y)
{
	const gm_outq_seg *a = x, *b = y;

	return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* Puts the waiting pieces in order and joins those that touch. */
static void order(gm_outq *q)
{
	gm_outq_seg *s = q->seg + q->head;
	uint64_t out = 0;

	qsort(s, q->n, sizeof(*s), cmp_seg);
	for (uint64_t i = 0; i < q->n; i++) {
		if (out > 0 && joins(&s[out - 1], &s[i])) {
			s[out - 1].len += s[i].len;
			s[out - 1].nframes += s[i].nframes;
		} else {
			s[out++] = s[i];
		}
	}
	q->n = out;
	q->sorted = 1;
}

unsigned gm_outq_next(gm_outq *q, nng_iov *iov, unsigned max)
{
	unsigned k;

	if (q->nsending != 0 || q->n == 0)
		return 0;
	if (!q->sorted)
		order(q);
	for (k = 0; k < max && k < q->n; k++) {
		iov[k].iov_buf = (void *)q->seg[q->head + k].p;
		iov[k].iov_len = q->seg[q->head + k].len;
	}
	q->nsending = k;
	return k;
}

uint64_t gm_outq_sent(gm_outq *q)
{
	uint64_t bytes = 0;

	for (uint64_t i = 0; i < q->nsending; i++) {
		gm_outq_seg *s = &q->seg[q->head + i];

		bytes += s->len;
		release(q, s);
	}
	less(q, bytes);
	q->head += q->nsending;
	q->n -= q->nsending;
	q->nsending = 0;
	if (q->n == 0)
		q->head = 0;
	return bytes;
}

void gm_outq_drop(gm_outq *q)
{
	for (uint64_t i = q->nsending; i < q->n; i++) {
		gm_outq_seg *s = &q->seg[q->head + i];

		less(q, s->len);
		release(q, s);
	}
	q->n = q->nsending;
	q->sorted = 1;
}
