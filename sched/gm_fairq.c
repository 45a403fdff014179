/*
 * gm_fairq.c - per-priority heaps of per-principal FIFOs ordered by
 * work; see gm_fairq.h. Flows are found by (principal, priority) in a
 * chained hash table sized with the flow pool, so pushing a request's
 * jobs costs a short chain walk, not a scan of every principal; the
 * flow whose turn it is is a heap's top, so a take costs log(flows).
 */
#include "gm_fairq.h"

#include <stdlib.h>

#define NPRIO (GM_BATCH_PRIO_MAX + 1)

/* Whose turns a flow takes: a principal, or a connection that names
 * none (who NULL). */
typedef struct key {
	const void *who;
	uint32_t conn; /* 0 when who is set */
} key;

/* The jobs one principal has waiting at one priority, oldest first. */
typedef struct flow {
	key k;
	unsigned prio;
	gm_sched_job *head, *tail;
	double tag;	    /* work served at the priority when head starts */
	uint64_t seq;	    /* when tag was set: ties go to the older */
	uint32_t at;	    /* index in the priority's heap */
	struct flow *next;  /* free list, or the held list */
	struct flow *hnext; /* hash chain */
} flow;

/* A flow's heap index while gm_fairq_hold has it set aside. */
#define HELD UINT32_MAX

/* One priority: its flows with jobs, by (tag, seq), and its clock. */
typedef struct level {
	flow **heap; /* cap entries */
	uint32_t n;
	flow *held; /* set aside by gm_fairq_hold, through next */
	double now; /* the tag of the last job taken: what a newcomer gets */
	uint64_t count;
} level;

struct gm_fairq {
	level lv[NPRIO];
	uint64_t total, seq;
	flow *pool, *free;
	flow **buckets;
	uint32_t mask; /* buckets - 1, a power of two less one */
};

double gm_fairq_work(const gm_sched_job *j)
{
	const gm_job_desc *d = &j->job.d;

	return 2.0 * d->m * d->n * d->k + GM_FAIRQ_BYTE_WORK * j->bytes +
	       GM_FAIRQ_JOB_WORK;
}

int gm_fairq_create(unsigned cap, gm_fairq **out)
{
	gm_fairq *q = calloc(1, sizeof(*q));
	uint32_t n = 64;
	int bad = 0;

	if (q == NULL)
		return GM_ENOMEM;
	/* About two flows a bucket when the queue is full of them. */
	while (n < cap / 2 && n < (1u << 20))
		n <<= 1;
	q->pool = calloc(cap, sizeof(*q->pool));
	q->buckets = calloc(n, sizeof(*q->buckets));
	for (unsigned p = 0; p < NPRIO; p++)
		bad |= (q->lv[p].heap = calloc(cap, sizeof(flow *))) == NULL;
	if (q->pool == NULL || q->buckets == NULL || bad) {
		gm_fairq_destroy(q);
		return GM_ENOMEM;
	}
	q->mask = n - 1;
	for (unsigned i = cap; i-- > 0;) {
		q->pool[i].next = q->free;
		q->free = &q->pool[i];
	}
	*out = q;
	return GM_OK;
}

void gm_fairq_destroy(gm_fairq *q)
{
	if (q == NULL)
		return;
	for (unsigned p = 0; p < NPRIO; p++)
		free(q->lv[p].heap);
	free(q->pool);
	free(q->buckets);
	free(q);
}

/* ---- the heap of a priority ---- */

static int before(const flow *a, const flow *b)
{
	return a->tag < b->tag || (a->tag == b->tag && a->seq < b->seq);
}

static void put(level *lv, uint32_t i, flow *f)
{
	lv->heap[i] = f;
	f->at = i;
}

static void sift_up(level *lv, uint32_t i)
{
	flow *f = lv->heap[i];

	while (i > 0 && before(f, lv->heap[(i - 1) / 2])) {
		put(lv, i, lv->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	put(lv, i, f);
}

static void sift_down(level *lv, uint32_t i)
{
	flow *f = lv->heap[i];
	uint32_t c;

	while ((c = 2 * i + 1) < lv->n) {
		if (c + 1 < lv->n && before(lv->heap[c + 1], lv->heap[c]))
			c++;
		if (!before(lv->heap[c], f))
			break;
		put(lv, i, lv->heap[c]);
		i = c;
	}
	put(lv, i, f);
}

/* Takes the flow at heap index i out of the heap. */
static void heap_remove(level *lv, uint32_t i)
{
	flow *last = lv->heap[--lv->n];

	if (i == lv->n)
		return;
	put(lv, i, last);
	sift_down(lv, i);
	sift_up(lv, last->at);
}

/* ---- flows ---- */

static key key_of(const gm_sched_request *r)
{
	return (key){.who = r->principal,
		     .conn = r->principal != NULL ? 0 : r->conn};
}

static int same(key a, key b)
{
	return a.who == b.who && a.conn == b.conn;
}

static flow **bucket(const gm_fairq *q, key k, unsigned prio)
{
	uintptr_t w = (uintptr_t)k.who;
	/* Knuth's multiplier over the key's bits; the low ones of a
	 * pointer are alike, so its higher ones are folded in. */
	uint32_t h = ((uint32_t)(w >> 4) ^ (uint32_t)((uint64_t)w >> 32) ^
		      k.conn * 4u ^ prio) *
		     2654435761u;

	return &q->buckets[(h ^ (h >> 16)) & q->mask];
}

static flow *find(const gm_fairq *q, key k, unsigned prio)
{
	flow *f = *bucket(q, k, prio);

	while (f != NULL && (!same(f->k, k) || f->prio != prio))
		f = f->hnext;
	return f;
}

/* The flow of (k, prio); a new one starts at the priority's clock,
 * after the flows already there at the same tag. */
static flow *get_flow(gm_fairq *q, key k, unsigned prio)
{
	flow *f = find(q, k, prio), **b;
	level *lv = &q->lv[prio];

	if (f != NULL)
		return f;
	/* Each flow in use holds a job and the queue holds fewer than cap,
	 * so the pool is never empty here. */
	f = q->free;
	q->free = f->next;
	*f = (flow){.k = k,
		    .prio = prio,
		    .tag = lv->now,
		    .seq = ++q->seq,
		    .at = lv->n++};
	b = bucket(q, k, prio);
	f->hnext = *b;
	*b = f;
	lv->heap[f->at] = f;
	sift_up(lv, f->at);
	return f;
}

/* Frees an empty flow, out of the heap already, from the hash table. */
static void free_flow(gm_fairq *q, flow *f)
{
	flow **b = bucket(q, f->k, f->prio);

	while (*b != f)
		b = &(*b)->hnext;
	*b = f->hnext;
	f->next = q->free;
	q->free = f;
}

static void drop_flow(gm_fairq *q, flow *f)
{
	level *lv = &q->lv[f->prio];
	flow **h = &lv->held;

	if (f->at != HELD) {
		heap_remove(lv, f->at);
	} else {
		while (*h != f)
			h = &(*h)->next;
		*h = f->next;
	}
	free_flow(q, f);
}

void gm_fairq_push(gm_fairq *q, gm_sched_job *j)
{
	unsigned prio = j->req->batch.priority;
	flow *f = get_flow(q, key_of(j->req), prio);

	j->qnext = NULL;
	if (f->tail != NULL)
		f->tail->qnext = j;
	else
		f->head = j;
	f->tail = j;
	q->lv[prio].count++;
	q->total++;
}

gm_sched_job *gm_fairq_peek(const gm_fairq *q, unsigned prio)
{
	const level *lv = &q->lv[prio];

	return lv->n > 0 ? lv->heap[0]->head : NULL;
}

/* Unlinks j, which follows prev in f (prev NULL: j is the head). */
static void unlink_job(gm_fairq *q, flow *f, gm_sched_job *prev,
		       gm_sched_job *j)
{
	level *lv = &q->lv[f->prio];

	if (prev != NULL)
		prev->qnext = j->qnext;
	else
		f->head = j->qnext;
	if (f->tail == j)
		f->tail = prev;
	j->qnext = NULL;
	lv->count--;
	/* Tags only order flows against each other: with none waiting at
	 * a priority its clock starts again, so tags never grow past what
	 * a double adds exactly to. */
	if (lv->count == 0)
		lv->now = 0.0;
	q->total--;
}

gm_sched_job *gm_fairq_take(gm_fairq *q, unsigned prio)
{
	level *lv = &q->lv[prio];
	flow *f = lv->heap[0];
	gm_sched_job *j = f->head;

	if (f->tag > lv->now)
		lv->now = f->tag;
	f->tag += gm_fairq_work(j);
	f->seq = ++q->seq;
	unlink_job(q, f, NULL, j);
	if (f->head == NULL)
		drop_flow(q, f);
	else
		sift_down(lv, 0);
	return j;
}

void gm_fairq_remove(gm_fairq *q, gm_sched_job *j)
{
	flow *f = find(q, key_of(j->req), j->req->batch.priority);
	gm_sched_job *prev = NULL, *at = f->head;

	while (at != j) {
		prev = at;
		at = at->qnext;
	}
	unlink_job(q, f, prev, j);
	if (f->head == NULL)
		drop_flow(q, f);
}

/* remove_if over one flow; appends what it removes at *tail. */
static void sweep_flow(gm_fairq *q, flow *f,
		       int (*drop)(gm_sched_job *, void *), void *arg,
		       gm_sched_job ***tail)
{
	gm_sched_job *prev = NULL, *j = f->head, *next;

	for (; j != NULL; j = next) {
		next = j->qnext;
		if (!drop(j, arg)) {
			prev = j;
			continue;
		}
		unlink_job(q, f, prev, j);
		**tail = j;
		*tail = &j->qnext;
	}
}

gm_sched_job *gm_fairq_remove_if(gm_fairq *q,
				 int (*drop)(gm_sched_job *j, void *arg),
				 void *arg)
{
	gm_sched_job *out = NULL, **tail = &out;

	for (unsigned p = 0; p < NPRIO; p++) {
		level *lv = &q->lv[p];
		uint32_t kept = 0;

		/* Tags stay as they are, so the heap's order holds among
		 * the flows kept: compacted in place, then heaped again. */
		for (uint32_t i = 0; i < lv->n; i++) {
			flow *f = lv->heap[i];

			sweep_flow(q, f, drop, arg, &tail);
			if (f->head == NULL)
				free_flow(q, f);
			else
				put(lv, kept++, f);
		}
		lv->n = kept;
		for (uint32_t i = kept / 2; i-- > 0;)
			sift_down(lv, i);
	}
	return out;
}

void gm_fairq_hold(gm_fairq *q, unsigned prio)
{
	level *lv = &q->lv[prio];
	flow *f = lv->heap[0];

	heap_remove(lv, 0);
	f->at = HELD;
	f->next = lv->held;
	lv->held = f;
}

void gm_fairq_unhold(gm_fairq *q)
{
	for (unsigned p = 0; p < NPRIO; p++) {
		level *lv = &q->lv[p];
		flow *f;

		while ((f = lv->held) != NULL) {
			lv->held = f->next;
			put(lv, lv->n++, f);
			sift_up(lv, f->at);
		}
	}
}

uint64_t gm_fairq_count(const gm_fairq *q, unsigned prio)
{
	return prio < NPRIO ? q->lv[prio].count : 0;
}

uint64_t gm_fairq_total(const gm_fairq *q)
{
	return q->total;
}
