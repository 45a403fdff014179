/*
 * gmc_stage.c - the staging region of a daemon, the calls that wait for
 * blocks of it and the chunks that hold them; see gmc_stage.h. The copies
 * are gmc_stage_copy.c's.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmc_stage.h"

#include "gmc_conn.h"
#include "gmc_daemon.h"
#include "gmc_reply.h"
#include "gmc_shm.h"
#include "gmc_stage_copy.h"

#define THREADS_MAX 16
#define MIB	    (1ull << 20)
#define NO_LIMIT    (1ull << 62) /* no refusal yet: never doubled past */

static void make_run(gmc_task *task);
static void in_done(gmc_chunk *ch, gmc_todo *t);
static void settle(gmc_chunk *ch, uint32_t index, gmc_todo *t);
static void chunk_drop(gmc_chunk *ch, gmc_todo *t);
static void replied(gmc_part *p, uint32_t index, const gm_reply_job *r,
		    gmc_todo *t);
static void part_over(gmc_part *p, gmc_todo *t);
static void call_end(gmc_call *k, gmc_todo *t);

static const gmc_stage_copied copied = {in_done, settle, chunk_drop};
static const gmc_staging staging = {replied, part_over, call_end};

int gmc_stage_new(gmc_daemon *dm, uint64_t bytes, gmc_stage **out)
{
	gmc_stage *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return gmc_error_set(GM_ENOMEM, "out of memory");
	st->dm = dm;
	st->copied = &copied;
	dm->cl->staging = &staging;
	st->bytes = bytes ? bytes : GEMMD_STAGING_BYTES_DEFAULT;
	st->limit = NO_LIMIT;
	st->make.fn = make_run;
	*out = st;
	return GM_OK;
}

void gmc_stage_free(gmc_stage *st)
{
	/* The region itself goes with the daemon's hand-off socket. */
	if (st != NULL)
		free(st->cur);
	free(st);
}

unsigned gmc_stage_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 2 ? 2 : n > THREADS_MAX ? THREADS_MAX : (unsigned)n;
}

/* The client's workers, made on first use; NULL when none could be. */
static gmc_workers *workers(gemmd_client *cl)
{
	if (cl->workers == NULL)
		gmc_workers_new(gmc_stage_threads(), &cl->workers);
	return cl->workers;
}

/* ---- which calls ---- */

static bool plain(const gemmd_job *j)
{
	return !j->a_ref.region && !j->b_ref.region && !j->c_ref.region &&
	       !j->out_ref.region;
}

bool gmc_stage_wants(const gmc_daemon *dm, const gmc_call *k,
		     const gm_job_desc *d)
{
	const gmc_stage *st = dm->stage;
	uint64_t total = 0, off[GM_OPND_COUNT];

	if (st == NULL || k->kind != GMC_CALL_GEMM ||
	    (st->state == STAGE_OFF && gmc_timer_now() < st->off_until))
		return false;
	for (uint32_t i = 0; i < k->njobs; i++) {
		uint64_t slot = gmc_stage_layout(&d[i], off);

		if (!plain(&k->jobs[i]) || slot > st->limit / 2)
			return false;
		total += slot;
	}
	return total >= GMC_STAGE_MIN_BYTES;
}

/* ---- the region ---- */

static void start_make(gmc_stage *st, gmc_todo *t);
static void fall_back(gmc_stage *st, uint64_t over, gmc_todo *t);
static void issue(gmc_stage *st, gmc_todo *t);

/* The last retired region gone, the stage waiting for it makes the
 * next. */
static void gone(gmc_stage *st, gmc_todo *t)
{
	if (--st->live == 0 && st->state == STAGE_DRAIN) {
		st->state = STAGE_NONE;
		if (st->head != NULL)
			start_make(st, t);
	}
}

static void release_run(gmc_task *task)
{
	gmc_stage_region *sr =
	    (gmc_stage_region *)((char *)task -
				 offsetof(gmc_stage_region, release));
	gmc_stage *st = sr->st;
	gemmd_client *cl = st->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	gmc_shm_release(sr->r, GMC_SHM_RELEASE_MS);
	free(sr);
	pthread_mutex_lock(&cl->mu);
	gone(st, &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

/* A stale region that no chunk uses any more is handed back. */
static void maybe_release(gmc_stage_region *sr, gmc_todo *t)
{
	gmc_workers *w;

	if (!sr->stale || sr->users > 0)
		return;
	if ((w = workers(sr->st->dm->cl)) == NULL) {
		gone(sr->st, t); /* the region goes with the hand-off socket */
		return;
	}
	sr->release.fn = release_run;
	gmc_workers_push(w, &sr->release, false);
}

/* The current region takes no more chunks: a lost one may write into
 * it, or a call needs a larger one. */
static void retire(gmc_stage *st, gmc_todo *t)
{
	gmc_stage_region *sr = st->cur;

	st->cur = NULL;
	st->state = STAGE_NONE;
	sr->stale = true;
	maybe_release(sr, t);
}

/* The size of the next region: room for two of the largest job waiting,
 * a power of two, never less than the last region, at most the limit
 * (the calls that would not fit in half of it took the socket). */
static uint64_t region_size(const gmc_stage *st)
{
	uint64_t need = 0, size = MIB;

	for (const gmc_stage_call *sc = st->head; sc; sc = sc->next_wait)
		need = sc->need > need ? sc->need : need;
	while (size < 2 * need)
		size <<= 1;
	size = size > st->bytes ? size : st->bytes;
	return size < st->limit ? size : st->limit;
}

static void make_run(gmc_task *task)
{
	gmc_stage *st = (gmc_stage *)((char *)task - offsetof(gmc_stage, make));
	gemmd_client *cl = st->dm->cl;
	gmc_todo t = GMC_TODO_INIT(cl);
	gemmd_region *r = NULL;
	gmc_stage_region *sr;
	uint64_t size;
	int rv;

	pthread_mutex_lock(&cl->mu);
	for (;;) {
		fall_back(st, st->limit / 2, &t); /* they never fit */
		if (st->head == NULL) {
			st->state = STAGE_NONE;
			break;
		}
		size = region_size(st);
		pthread_mutex_unlock(&cl->mu);
		sr = calloc(1, sizeof(*sr));
		rv = sr ? gmc_shm_create(st->dm->shm, size,
					 gmc_shm_create_ms(size), &r)
			: GM_ENOMEM;
		pthread_mutex_lock(&cl->mu);
		if (rv == GM_OK) {
			*sr = (gmc_stage_region){.r = r, .st = st};
			st->cur = sr;
			st->bytes = size;
			st->live++;
			st->state = STAGE_READY;
			issue(st, &t);
			break;
		}
		free(sr);
		if (rv != GM_ETOOBIG) {
			st->state = STAGE_OFF;
			st->off_until =
			    gmc_timer_now() + GMC_STAGE_RETRY_S * 1000000000ull;
			fall_back(st, 0, &t);
			break;
		}
		/* Over the daemon's quota: the limit halves, for good. */
		st->limit = (size / 2) & ~(MIB - 1);
	}
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

static void start_make(gmc_stage *st, gmc_todo *t)
{
	gmc_workers *w = workers(st->dm->cl);

	if (st->state == STAGE_MAKING)
		return;
	if (st->live > 0) {
		st->state = STAGE_DRAIN; /* the retired regions go first */
		return;
	}
	if (w == NULL) {
		fall_back(st, 0, t);
		return;
	}
	st->state = STAGE_MAKING;
	gmc_workers_push(w, &st->make, true);
}

/* ---- calls ---- */

static void unwait(gmc_stage *st, gmc_stage_call *sc)
{
	gmc_stage_call **pp = &st->head, *prev = NULL;

	for (; *pp != sc; prev = *pp, pp = &(*pp)->next_wait)
		;
	*pp = sc->next_wait;
	if (st->tail == sc)
		st->tail = prev;
	sc->waiting = false;
}

static void sc_free(gmc_stage_call *sc)
{
	free(sc->d);
	free(sc);
}

/* The calls waiting for the region whose largest job is over bytes take
 * the socket instead: their frames are built by gmc_daemon_plan, here,
 * on a worker thread. Called under the lock; lets it go meanwhile. */
static void fall_back(gmc_stage *st, uint64_t over, gmc_todo *t)
{
	gemmd_client *cl = st->dm->cl;
	gmc_stage_call *sc;

	for (;;) {
		gmc_call *k;
		gmc_plan pl;
		int rv;

		for (sc = st->head; sc != NULL && sc->need <= over;
		     sc = sc->next_wait)
			;
		if (sc == NULL)
			break;
		k = sc->k;
		unwait(st, sc);
		k->stage = NULL;
		gmc_call_pin(k); /* its operands are read to build */
		pthread_mutex_unlock(&cl->mu);
		rv = gmc_daemon_plan(st->dm, k, sc->d, &sc->b, NULL, &pl);
		pthread_mutex_lock(&cl->mu);
		if (rv != GM_OK) {
			gmc_call_end(k, rv, gmc_error_last(), t);
		} else if (k->ended) {
			gmc_plan_free(&pl);
		} else {
			gmc_daemon_queue(st->dm, k, &pl, t);
			gmc_call_open_done(k, t); /* the stage's unit */
		}
		gmc_call_unpin(k, t);
		sc_free(sc);
	}
}

void gmc_stage_submit(gmc_daemon *dm, gmc_call *k, const gm_job_desc *d,
		      const gm_batch *b, gmc_todo *t)
{
	gmc_stage *st = dm->stage;
	gmc_stage_call *sc = calloc(1, sizeof(*sc));

	k->dm = dm;
	if (sc == NULL || (sc->d = malloc(k->njobs * sizeof(*d))) == NULL) {
		free(sc);
		gmc_call_end(k, GM_ENOMEM, "out of memory", t);
		return;
	}
	memcpy(sc->d, d, k->njobs * sizeof(*d));
	for (uint32_t i = 0; i < k->njobs; i++) {
		uint64_t off[GM_OPND_COUNT],
		    slot = gmc_stage_layout(&d[i], off);

		sc->need = slot > sc->need ? slot : sc->need;
	}
	sc->b = *b;
	sc->k = k;
	sc->st = st;
	k->stage = sc;
	k->open++; /* the jobs not yet in a chunk */
	sc->waiting = true;
	if (st->tail != NULL)
		st->tail->next_wait = sc;
	else
		st->head = sc;
	st->tail = sc;
	if (st->state == STAGE_OFF && gmc_timer_now() >= st->off_until)
		st->state = STAGE_NONE;
	if (st->state == STAGE_NONE)
		start_make(st, t);
	else if (st->state == STAGE_READY)
		issue(st, t);
	else if (st->state == STAGE_OFF)
		fall_back(st, 0, t);
}

static void call_end(gmc_call *k, gmc_todo *t)
{
	gmc_stage_call *sc = k->stage;

	(void)t;
	if (sc->waiting)
		unwait(sc->st, sc);
	sc->k = NULL;
	k->stage = NULL;
	if (sc->chunks == 0)
		sc_free(sc);
}

/* ---- chunks ---- */

/* The batch of a chunk: the call's deadline counts from its start. */
static gm_batch chunk_batch(const gmc_stage_call *sc)
{
	gm_batch b = sc->b;
	uint64_t ms = (gmc_timer_now() - sc->k->start) / 1000000u;

	if (b.deadline_ms != 0)
		b.deadline_ms =
		    ms < b.deadline_ms ? b.deadline_ms - (uint32_t)ms : 1;
	return b;
}

/* The region descriptors of ch's jobs, and its request frame. */
static int chunk_frame(gmc_chunk *ch)
{
	gmc_stage_call *sc = ch->sc;
	gmc_part *p = ch->part;
	gm_region_ref *refs =
	    calloc((size_t)p->njobs * GM_OPND_COUNT, sizeof(*refs));
	gm_batch b = chunk_batch(sc);
	uint64_t id = gemmd_region_id(ch->sr->r), off[GM_OPND_COUNT];
	int rv;

	if (refs == NULL)
		return GM_ENOMEM;
	for (uint32_t i = 0; i < p->njobs; i++) {
		const gm_job_desc *d = &sc->d[p->first + i];

		gmc_stage_layout(d, off);
		for (int op = 0; op < GM_OPND_COUNT; op++)
			if (op != GM_OPND_C || (d->flags & GM_JOB_HAS_C))
				refs[GM_OPND_COUNT * i + op] =
				    (gm_region_ref){id, ch->slot[i] + off[op]};
	}
	rv = gmc_encode_gemm(sc->k->jobs + p->first, sc->d + p->first, p->njobs,
			     &b, p->id, refs, &p->f);
	free(refs);
	return rv;
}

static gmc_chunk *chunk_new(gmc_stage_call *sc, uint32_t n, uint64_t off,
			    uint64_t bytes, gmc_todo *t)
{
	gmc_chunk *ch = calloc(1, sizeof(*ch));
	gmc_call *k = sc->k;
	uint64_t at = off, slot[GM_OPND_COUNT];
	double flops = 0;

	if (ch == NULL || (ch->slot = calloc(n, sizeof(*ch->slot))) == NULL ||
	    (ch->rec = calloc(n, sizeof(*ch->rec))) == NULL ||
	    (ch->outs = calloc(n, sizeof(*ch->outs))) == NULL ||
	    (ch->part = gmc_part_new(k, gmc_call_next_id(k->cl), sc->next, n,
				     t)) == NULL) {
		if (ch != NULL) {
			free(ch->slot);
			free(ch->rec);
			free(ch->outs);
		}
		free(ch);
		gmc_call_end(k, GM_ENOMEM, "out of memory", t);
		return NULL;
	}
	ch->sc = sc;
	ch->sr = sc->st->cur;
	ch->off = off;
	ch->bytes = bytes;
	ch->refs = 1;
	ch->part->chunk = ch;
	gmc_part_hold(ch->part);
	for (uint32_t i = 0; i < n; i++) {
		ch->slot[i] = at;
		at += gmc_stage_layout(&sc->d[sc->next + i], slot);
		flops += gm_job_flops(&sc->d[sc->next + i]);
	}
	ch->sr->users++;
	sc->chunks++;
	ch->part->work = gmc_daemon_cost(bytes, flops);
	return ch;
}

/* Gives the calls waiting, in order, blocks for their next chunks. */
static void issue(gmc_stage *st, gmc_todo *t)
{
	gmc_stage_call *sc;
	uint64_t off[GM_OPND_COUNT];

	while ((sc = st->head) != NULL) {
		gmc_call *k = sc->k;
		uint64_t bytes = 0, at;
		uint32_t n = 0;
		gmc_chunk *ch;

		if (st->cur != NULL && sc->need > st->bytes / 2)
			retire(st, t); /* it grows */
		if (st->cur == NULL) {
			start_make(st, t);
			return;
		}

		/* A quarter of the region: a few chunks in flight. */
		while (sc->next + n < k->njobs &&
		       (n == 0 ||
			bytes + gmc_stage_layout(&sc->d[sc->next + n], off) <=
			    st->bytes / 4))
			bytes += gmc_stage_layout(&sc->d[sc->next + n++], off);
		if (gemmd_region_alloc(st->cur->r, bytes, GMC_STAGE_ALIGN,
				       &at) != GM_OK)
			return; /* wait for a block to be freed */
		if ((ch = chunk_new(sc, n, at, bytes, t)) == NULL) {
			gemmd_region_free(st->cur->r, at);
			continue; /* the call ended: it left the queue */
		}
		sc->next += n;
		if (sc->next == k->njobs) {
			unwait(st, sc);
			gmc_call_open_done(k, t);
		}
		if (chunk_frame(ch) != GM_OK || gmc_stage_copy_in(ch) != GM_OK)
			gmc_call_end(k, GM_ENOMEM, "out of memory", t);
	}
}

static void in_done(gmc_chunk *ch, gmc_todo *t)
{
	gmc_part *p = ch->part;

	if (p->call == NULL || p->state != GMC_PART_NEW)
		return;
	if (gmc_part_ready(p, t) == GM_OK)
		gmc_conn_queue(gmc_conn_pick(&p->call->dm->sl), p, t);
}

static void replied(gmc_part *p, uint32_t index, const gm_reply_job *r,
		    gmc_todo *t)
{
	gmc_chunk *ch = p->chunk;

	ch->rec[index] = *r;
	if (r->status != GM_OK || p->call == NULL)
		settle(ch, index, t);
	else if (gmc_stage_copy_out(ch, index) != GM_OK)
		gmc_call_end(p->call, GM_ENOMEM, "out of memory", t);
}

static void settle(gmc_chunk *ch, uint32_t index, gmc_todo *t)
{
	gmc_part *p = ch->part;
	gmc_call *k = p->call;

	if (k != NULL && !p->answered[index]) {
		gmc_reply_take(&k->jobs[p->first + index], &ch->rec[index]);
		k->settled[p->first + index] = 1;
	}
	gmc_part_answered(p, index, t);
}

static void part_over(gmc_part *p, gmc_todo *t)
{
	gmc_chunk *ch = p->chunk;
	gmc_stage *st = ch->sc->st;

	/* Written, neither answered whole nor refused: the daemon may
	 * still run it and write into its block. */
	if (p->written && !p->refused && p->left > 0) {
		ch->tainted = true;
		if (st->cur == ch->sr)
			retire(st, t);
		ch->sr->stale = true;
	}
	chunk_drop(ch, t);
}

static void chunk_drop(gmc_chunk *ch, gmc_todo *t)
{
	gmc_stage_region *sr = ch->sr;
	gmc_stage_call *sc = ch->sc;
	gmc_stage *st = sc->st;

	if (--ch->refs > 0)
		return;
	if (!ch->tainted)
		gemmd_region_free(sr->r, ch->off);
	sr->users--;
	if (--sc->chunks == 0 && sc->k == NULL)
		sc_free(sc);
	ch->part->chunk = NULL;
	gmc_part_drop(ch->part);
	free(ch->slot);
	free(ch->rec);
	free(ch->outs);
	free(ch);
	maybe_release(sr, t);
	issue(st, t);
}
