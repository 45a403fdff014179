/*
 * gm_fairq.c - per-priority rings of per-connection FIFOs; see
 * gm_fairq.h. Flows are found by (connection, priority) in a chained
 * hash table sized with the flow pool, so pushing a request's jobs costs
 * a short chain walk, not a scan of every connection.
 */
#include "gm_fairq.h"

#include <stdlib.h>

#define NPRIO (GM_BATCH_PRIO_MAX + 1)

/* The jobs one connection has waiting at one priority, oldest first. */
typedef struct flow {
	uint32_t conn;
	unsigned prio;
	gm_sched_job *head, *tail;
	struct flow *next, *prev; /* the priority's ring; next: free list */
	struct flow *hnext;	  /* hash chain */
} flow;

/* One priority: the ring of flows with jobs, and whose turn it is. */
typedef struct level {
	flow *turn; /* NULL when nothing waits */
	uint64_t count;
} level;

struct gm_fairq {
	level lv[NPRIO];
	uint64_t total;
	flow *pool, *free;
	flow **buckets;
	uint32_t mask; /* buckets - 1, a power of two less one */
};

int gm_fairq_create(unsigned cap, gm_fairq **out)
{
	gm_fairq *q = calloc(1, sizeof(*q));
	uint32_t n = 64;

	if (q == NULL)
		return GM_ENOMEM;
	/* About two flows a bucket when the queue is full of them. */
	while (n < cap / 2 && n < (1u << 20))
		n <<= 1;
	q->pool = calloc(cap, sizeof(*q->pool));
	q->buckets = calloc(n, sizeof(*q->buckets));
	if (q->pool == NULL || q->buckets == NULL) {
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
	free(q->pool);
	free(q->buckets);
	free(q);
}

static flow **bucket(const gm_fairq *q, uint32_t conn, unsigned prio)
{
	uint32_t h = (conn * 4u + prio) * 2654435761u; /* Knuth's multiplier */

	return &q->buckets[(h ^ (h >> 16)) & q->mask];
}

static flow *find(const gm_fairq *q, uint32_t conn, unsigned prio)
{
	flow *f = *bucket(q, conn, prio);

	while (f != NULL && (f->conn != conn || f->prio != prio))
		f = f->hnext;
	return f;
}

/* The flow of (conn, prio); a new one joins the ring just before the
 * flow whose turn it is, so it is served after every flow already
 * waiting. */
static flow *get_flow(gm_fairq *q, uint32_t conn, unsigned prio)
{
	flow *f = find(q, conn, prio), **b;
	level *lv = &q->lv[prio];

	if (f != NULL)
		return f;
	/* Each flow in use holds a job and the queue holds fewer than cap,
	 * so the pool is never empty here. */
	f = q->free;
	q->free = f->next;
	*f = (flow){.conn = conn, .prio = prio};
	b = bucket(q, conn, prio);
	f->hnext = *b;
	*b = f;
	if (lv->turn == NULL) {
		f->next = f->prev = f;
		lv->turn = f;
	} else {
		f->next = lv->turn;
		f->prev = lv->turn->prev;
		f->prev->next = f;
		lv->turn->prev = f;
	}
	return f;
}

/* Takes an empty flow out of its ring and the hash table. */
static void drop_flow(gm_fairq *q, flow *f)
{
	level *lv = &q->lv[f->prio];
	flow **b = bucket(q, f->conn, f->prio);

	if (f->next == f) {
		lv->turn = NULL;
	} else {
		f->prev->next = f->next;
		f->next->prev = f->prev;
		if (lv->turn == f)
			lv->turn = f->next;
	}
	while (*b != f)
		b = &(*b)->hnext;
	*b = f->hnext;
	f->next = q->free;
	q->free = f;
}

void gm_fairq_push(gm_fairq *q, gm_sched_job *j)
{
	unsigned prio = j->req->batch.priority;
	flow *f = get_flow(q, j->req->conn, prio);

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
	const flow *f = q->lv[prio].turn;

	return f != NULL ? f->head : NULL;
}

/* Unlinks j, which follows prev in f (prev NULL: j is the head). */
static void unlink_job(gm_fairq *q, flow *f, gm_sched_job *prev,
		       gm_sched_job *j)
{
	if (prev != NULL)
		prev->qnext = j->qnext;
	else
		f->head = j->qnext;
	if (f->tail == j)
		f->tail = prev;
	j->qnext = NULL;
	q->lv[f->prio].count--;
	q->total--;
}

gm_sched_job *gm_fairq_take(gm_fairq *q, unsigned prio)
{
	level *lv = &q->lv[prio];
	flow *f = lv->turn;
	gm_sched_job *j = f->head;

	unlink_job(q, f, NULL, j);
	lv->turn = f->next;
	if (f->head == NULL)
		drop_flow(q, f);
	return j;
}

void gm_fairq_remove(gm_fairq *q, gm_sched_job *j)
{
	flow *f = find(q, j->req->conn, j->req->batch.priority);
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
		flow *f = q->lv[p].turn, *last, *next;
		int at_last;

		if (f == NULL)
			continue;
		/* Once round the ring; dropping a flow leaves its
		 * successor's links alone. */
		last = f->prev;
		do {
			next = f->next;
			at_last = f == last;
			sweep_flow(q, f, drop, arg, &tail);
			if (f->head == NULL)
				drop_flow(q, f);
			f = next;
		} while (!at_last);
	}
	return out;
}

uint64_t gm_fairq_count(const gm_fairq *q, unsigned prio)
{
	return prio < NPRIO ? q->lv[prio].count : 0;
}

uint64_t gm_fairq_total(const gm_fairq *q)
{
	return q->total;
}
