/*
 * gm_sched.c - bounded priority queue in front of an engine; see
 * gm_sched.h for the rules it keeps. The waiting jobs themselves, and
 * the turns principals take, are gm_fairq's.
 */
#include "gm_sched.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_fairq.h"

#define NPRIO (GM_BATCH_PRIO_MAX + 1)
/* Jobs past one waiting for room may take up to 1/PASS_SHARE of the byte
 * budget until it starts: some 16 MiB of the CPU engine's 64, thousands
 * of small jobs while a large one waits for the large ones ahead. */
#define PASS_SHARE 4

struct gm_sched {
	gm_engine *eng;
	gm_stats *st;
	unsigned depth;
	unsigned limit[NPRIO]; /* per priority; 0: only depth */
	gm_sched_budget budget;
	uint64_t inflight, inflight_bytes, requests; /* inflight: on the
							engine */
	uint64_t oversized, oversized_bytes; /* of those, larger than the
						whole byte budget */
	/* Jobs handed to the engine, ever, less those back unstarted: less
	 * the engine's count of starts, those waiting there (waiting()). */
	uint64_t handed_prio[NPRIO];
	gm_sched_job *dl_handed; /* handed with a deadline (dprev, dnext) */
	uint64_t seq; /* jobs handed to the engine, ever: start_seq */
	uint64_t reserved, reserved_prio[NPRIO];
	int stopped;
	gm_fairq *q;
	/* The job whose turn it was and that did not fit (NULL: none), and
	 * the bytes started past it since. */
	const gm_sched_job *waiting;
	uint64_t passed;
	double next_dl_us; /* at or before the earliest queued deadline */
	gm_job **wave;	   /* depth entries: a wave never exceeds the queue */
	gm_sched_job_fn job_done;
	gm_sched_done_fn done;
	void *arg;
};

int gm_sched_create(gm_engine *e, unsigned depth, const gm_sched_budget *b,
		    gm_stats *st, gm_sched_job_fn job_done,
		    gm_sched_done_fn done, void *arg, gm_sched **out)
{
	gm_sched *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return GM_ENOMEM;
	s->wave = calloc(depth, sizeof(*s->wave));
	if (s->wave == NULL || gm_fairq_create(depth, &s->q) != 0) {
		free(s->wave);
		free(s);
		return GM_ENOMEM;
	}
	s->eng = e;
	s->st = st;
	s->depth = depth;
	s->budget = *b;
	if (s->budget.jobs == 0)
		s->budget.jobs = 1;
	s->job_done = job_done;
	s->done = done;
	s->arg = arg;
	*out = s;
	return GM_OK;
}

void gm_sched_destroy(gm_sched *s)
{
	if (s == NULL)
		return;
	gm_fairq_destroy(s->q);
	free(s->wave);
	free(s);
}

void gm_sched_set_limits(gm_sched *s,
			 const unsigned per_prio[GM_BATCH_PRIO_MAX + 1])
{
	memcpy(s->limit, per_prio, sizeof(s->limit));
}

int gm_sched_room(const gm_sched *s, unsigned prio, uint64_t njobs)
{
	if (prio > GM_BATCH_PRIO_MAX)
		return GM_EINVAL;
	if (s->stopped)
		return GM_ESHUTDOWN;
	if (gm_sched_queued(s) + s->reserved + njobs > s->depth)
		return GM_EBUSY;
	if (s->limit[prio] != 0 &&
	    gm_sched_queued_prio(s, prio) + s->reserved_prio[prio] + njobs >
		s->limit[prio])
		return GM_EBUSY;
	return GM_OK;
}

int gm_sched_full(const gm_sched *s, unsigned prio, uint64_t njobs,
		  uint64_t *held, uint64_t *limit)
{
	if (prio <= GM_BATCH_PRIO_MAX && s->limit[prio] != 0 &&
	    gm_sched_queued_prio(s, prio) + s->reserved_prio[prio] + njobs >
		s->limit[prio]) {
		*held = gm_sched_queued_prio(s, prio) + s->reserved_prio[prio];
		*limit = s->limit[prio];
		return 1;
	}
	*held = gm_sched_queued(s) + s->reserved;
	*limit = s->depth;
	return 0;
}

int gm_sched_reserve(gm_sched *s, unsigned prio, uint64_t njobs)
{
	int rv = gm_sched_room(s, prio, njobs);

	if (rv == GM_OK) {
		s->reserved += njobs;
		s->reserved_prio[prio] += njobs;
	}
	return rv;
}

void gm_sched_unreserve(gm_sched *s, unsigned prio, uint64_t njobs)
{
	s->reserved -= njobs;
	s->reserved_prio[prio] -= njobs;
}

gm_sched_request *gm_sched_alloc_request(uint32_t njobs)
{
	/* One block: the request, then its jobs. */
	gm_sched_request *r =
	    calloc(1, sizeof(*r) + (size_t)njobs * sizeof(gm_sched_job));

	if (r == NULL)
		return NULL;
	r->njobs = njobs;
	r->jobs = (gm_sched_job *)(r + 1);
	return r;
}

void gm_sched_free_request(gm_sched_request *r)
{
	free(r);
}

/* Host bytes the engine moves for a job: what the budget counts. */
static uint64_t job_bytes(const gm_job *j)
{
	gm_job_sizes z;

	if (gm_job_sizes_of(&j->d, &z) != GM_OK)
		return 0;
	return z.a + z.b + z.c + z.out;
}

static void finish_job(gm_sched *s, gm_sched_job *j)
{
	gm_sched_request *r = j->req;

	bool last;

	j->t.total_us = gm_clock_now_us() - r->recv_us;
	gm_stats_job(s->st, &j->job.d, r->batch.priority, j->job.status, &j->t);
	/* Counted before the callback, which may free r with its last job
	 * when there is no done callback. */
	if ((last = --r->left == 0))
		s->requests--;
	s->job_done(j, s->arg);
	if (last && s->done != NULL)
		s->done(r, s->arg);
}

/* A job that never started: it waited until now (PROTOCOL.md 11), in
 * the queue or in the engine's. */
static void fail_job(gm_sched *s, gm_sched_job *j, int code, const char *msg)
{
	j->t.queue_us = fmax(gm_clock_now_us() - j->req->recv_us, 0.0);
	if (j == s->waiting) { /* it will never start */
		s->waiting = NULL;
		s->passed = 0;
	}
	j->state = GM_SCHED_JOB_DONE;
	j->job.status = code;
	snprintf(j->job.msg, sizeof(j->job.msg), "%s", msg);
	finish_job(s, j);
}

/* When r's jobs stop being worth starting; 0: never. */
static double deadline_of(const gm_sched_request *r)
{
	uint32_t dl = r->batch.deadline_ms;

	return dl != 0 ? r->recv_us + (double)dl * 1000.0 : 0.0;
}

static int expired(const gm_sched_job *j, double now)
{
	double due = deadline_of(j->req);

	return due != 0.0 && now > due;
}

int gm_sched_submit(gm_sched *s, gm_sched_request *r)
{
	double due = deadline_of(r);
	char msg[GM_MSG_TEXT + 1];
	int rv;

	if (r->njobs == 0)
		return GM_EINVAL;
	if (r->reserved)
		gm_sched_unreserve(s, r->batch.priority, r->njobs);
	else if ((rv = gm_sched_room(s, r->batch.priority, r->njobs)) != 0)
		return rv;
	s->requests++;
	if (due != 0.0 && (s->next_dl_us == 0.0 || due < s->next_dl_us))
		s->next_dl_us = due;
	/* One extra hold so a request whose jobs all fail at once is
	 * finished only after the loop, not in the middle of it. */
	r->left = r->njobs + 1;
	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_sched_job *j = &r->jobs[i];

		j->req = r;
		j->idx = i;
		j->job.user = j;
		j->job.device = -1;
		j->job.deadline_us = due;
		j->bytes = job_bytes(&j->job);
		if ((rv = gm_engine_supports(s->eng, &j->job.d, msg,
					     sizeof(msg))) != 0) {
			fail_job(s, j, rv, msg);
		} else {
			j->state = GM_SCHED_JOB_QUEUED;
			gm_fairq_push(s->q, j);
		}
	}
	if (--r->left == 0) {
		s->requests--;
		if (s->done != NULL)
			s->done(r, s->arg);
	}
	gm_sched_pump(s);
	return GM_OK;
}

/* Whether j is larger than the whole byte budget. */
static int oversized(const gm_sched *s, const gm_sched_job *j)
{
	return j->bytes > s->budget.bytes;
}

/* Jobs of priority p handed to the engine that it has not started. */
static uint64_t waiting(const gm_sched *s, unsigned p)
{
	return s->handed_prio[p] - gm_engine_starts(s->eng, p);
}

static uint64_t waiting_all(const gm_sched *s)
{
	uint64_t n = 0;

	for (unsigned p = 0; p < NPRIO; p++)
		n += waiting(s, p);
	return n;
}

/* Counts j as handed to the engine at now, not started. */
static void hand(gm_sched *s, gm_sched_job *j, double now)
{
	unsigned p = j->req->batch.priority;

	j->state = GM_SCHED_JOB_HANDED;
	j->handed_us = now;
	j->job.prio = (uint8_t)p;
	j->job.started = 0;
	s->inflight++;
	s->inflight_bytes += j->bytes;
	if (oversized(s, j)) {
		s->oversized++;
		s->oversized_bytes += j->bytes;
	}
	s->handed_prio[p]++;
	j->dprev = NULL;
	j->dnext = NULL;
	if (j->job.deadline_us == 0.0)
		return;
	if ((j->dnext = s->dl_handed) != NULL)
		j->dnext->dprev = j;
	s->dl_handed = j;
}

/* j, handed, came back or was taken back: one that never started is no
 * longer counted as waiting in the engine (one that did, the engine
 * counted as it started). */
static void unhand(gm_sched *s, gm_sched_job *j)
{
	if (j->state != GM_SCHED_JOB_HANDED)
		return;
	if (!gm_job_started(&j->job))
		s->handed_prio[j->req->batch.priority]--;
	if (j->job.deadline_us == 0.0)
		return;
	if (j->dprev != NULL)
		j->dprev->dnext = j->dnext;
	else
		s->dl_handed = j->dnext;
	if (j->dnext != NULL)
		j->dnext->dprev = j->dprev;
}

/* Whether j may start now: the engine is idle, or j fits the budget
 * beside what it runs; a job larger than the whole byte budget fits
 * beside any others but another such job, and takes none of the bytes
 * (the engines run it in pieces or out of core: see gm_sched.h). */
static int fits(const gm_sched *s, const gm_sched_job *j)
{
	if (s->inflight == 0)
		return 1;
	if (s->inflight >= s->budget.jobs)
		return 0;
	if (oversized(s, j))
		return s->oversized == 0;
	return s->inflight_bytes - s->oversized_bytes + j->bytes <=
	       s->budget.bytes;
}

/* Moves j, whose turn it is at priority p, into the wave. */
static void start_job(gm_sched *s, gm_sched_job *j, unsigned p, double now,
		      size_t *n)
{
	gm_fairq_take(s->q, p);
	hand(s, j, now);
	j->t.start_seq = ++s->seq;
	s->wave[(*n)++] = &j->job;
	if (j == s->waiting) {
		s->waiting = NULL;
		s->passed = 0;
	}
}

/* Whether j, which does not wait for room itself, may start past the
 * job that does (s->waiting): it fits, and the bytes started past that
 * job stay within PASS_SHARE of the budget. */
static int may_pass(const gm_sched *s, const gm_sched_job *j)
{
	return fits(s, j) &&
	       s->passed + j->bytes <= s->budget.bytes / PASS_SHARE;
}

/*
 * Moves the jobs whose turn it is into the wave while they fit; returns
 * how many. The first that does not fit keeps its turn (s->waiting);
 * the jobs of other principals and lower priorities that fit start
 * past it, up to a bounded number of bytes until it starts, so that it
 * waits at most for the work ahead of it and that much more, never
 * starved by smaller ones, while they do not wait for all of it.
 */
static size_t fill_wave(gm_sched *s, double now)
{
	gm_sched_job *j, *blocked = NULL;
	size_t n = 0;

	for (int p = GM_BATCH_PRIO_MAX; p >= 0; p--) {
		while ((j = gm_fairq_peek(s->q, (unsigned)p)) != NULL) {
			if (expired(j, now)) {
				gm_fairq_remove(s->q, j);
				fail_job(s, j, GM_ETIMEDOUT, GM_EXPIRED_MSG);
			} else if (blocked == NULL && fits(s, j)) {
				start_job(s, j, (unsigned)p, now, &n);
			} else if (blocked == NULL) {
				blocked = j;
				if (s->waiting != j) {
					s->waiting = j;
					s->passed = 0;
				}
				gm_fairq_hold(s->q, (unsigned)p);
			} else if (may_pass(s, j)) {
				s->passed += j->bytes;
				start_job(s, j, (unsigned)p, now, &n);
			} else {
				gm_fairq_hold(s->q, (unsigned)p);
			}
		}
	}
	gm_fairq_unhold(s->q);
	return n;
}

/* Takes back a job the engine gave up before it started. */
static void take_back(gm_sched *s, gm_sched_job *j)
{
	unhand(s, j);
	s->inflight--;
	s->inflight_bytes -= j->bytes;
	if (oversized(s, j)) {
		s->oversized--;
		s->oversized_bytes -= j->bytes;
	}
}

/* Takes back a job the engine never took or never started: it has no
 * place in the order jobs were started in. */
static void withdraw(gm_sched *s, gm_sched_job *j)
{
	take_back(s, j);
	j->t.start_seq = 0;
}

int gm_sched_cancel(gm_sched *s, gm_sched_job *j)
{
	const char *why = "canceled before it started";

	if (j->state == GM_SCHED_JOB_QUEUED) {
		gm_fairq_remove(s->q, j);
	} else if (j->state == GM_SCHED_JOB_HANDED &&
		   gm_engine_cancel(s->eng, &j->job) == GM_OK) {
		withdraw(s, j);
	} else {
		return GM_ENOTFOUND;
	}
	fail_job(s, j, GM_ECANCELED, why);
	gm_sched_pump(s);
	return GM_OK;
}

/* What gm_sched_expire's sweep knows: the time, and the earliest
 * deadline among the jobs it keeps. */
struct sweep {
	double now, next;
};

static int sweep_one(gm_sched_job *j, void *arg)
{
	struct sweep *w = arg;
	double due = deadline_of(j->req);

	if (due != 0.0 && w->now > due)
		return 1;
	if (due != 0.0 && (w->next == 0.0 || due < w->next))
		w->next = due;
	return 0;
}

/* Takes back from the engine the handed jobs past their deadline that
 * it still holds, onto *gone; the others' deadlines go into w. */
static void sweep_handed(gm_sched *s, struct sweep *w, gm_sched_job **gone)
{
	gm_sched_job *j, *next;

	for (j = s->dl_handed; j != NULL; j = next) {
		next = j->dnext;
		if (gm_job_started(&j->job))
			continue; /* it runs to its end */
		if (sweep_one(j, w) && gm_engine_cancel(s->eng, &j->job) == 0) {
			withdraw(s, j);
			j->qnext = *gone;
			*gone = j;
		}
	}
}

unsigned gm_sched_expire(gm_sched *s)
{
	struct sweep w = {gm_clock_now_us(), 0.0};
	gm_sched_job *gone = gm_fairq_remove_if(s->q, sweep_one, &w), *next;
	unsigned n = 0;

	sweep_handed(s, &w, &gone);
	s->next_dl_us = w.next;
	/* Failing the last job of a request frees it: read on first. */
	for (; gone != NULL; gone = next, n++) {
		next = gone->qnext;
		fail_job(s, gone, GM_ETIMEDOUT, GM_EXPIRED_MSG);
	}
	if (n != 0)
		gm_sched_pump(s);
	return n;
}

double gm_sched_next_deadline(const gm_sched *s)
{
	return s->next_dl_us;
}

void gm_sched_pump(gm_sched *s)
{
	size_t n;
	int rv;

	/* A refused wave gives its budget back, so what waited behind it
	 * may start: go on until the engine takes a wave or none starts. */
	while ((n = fill_wave(s, gm_clock_now_us())) != 0) {
		if ((rv = gm_engine_submit(s->eng, s->wave, n)) == 0)
			return;
		/* The engine refused the whole wave (a sticky fault): every
		 * job of it still gets its one reply. */
		for (size_t i = 0; i < n; i++) {
			gm_sched_job *j = s->wave[i]->user;

			withdraw(s, j);
			fail_job(s, j, rv, "the engine refused the job");
		}
	}
}

void gm_sched_complete(gm_sched *s, gm_job *job)
{
	gm_sched_job *j = job->user;
	/* Queued until its first device operation or BLAS call; one that
	 * never began waited until it was handed back. */
	double start = job->start_us > 0.0 ? job->start_us : gm_clock_now_us();

	/* One the engine hands back without having started it (its
	 * deadline passed in the engine's queue, met there between two
	 * pieces before the loop's sweep took it) has no more place in the
	 * order of starts than one the sweep took back. */
	if (!gm_job_started(job))
		withdraw(s, j);
	else
		take_back(s, j);
	j->state = GM_SCHED_JOB_DONE;
	j->t.queue_us = fmax(start - j->req->recv_us, 0.0);
	j->t.h2d_us = job->h2d_us;
	j->t.kernel_us = job->kernel_us;
	j->t.d2h_us = job->d2h_us;
	finish_job(s, j);
	gm_sched_pump(s);
}

int gm_sched_job_state(const gm_sched_job *j)
{
	if (j->state == GM_SCHED_JOB_HANDED && gm_job_started(&j->job))
		return GM_SCHED_JOB_RUNNING;
	return j->state;
}

void gm_sched_stop(gm_sched *s)
{
	s->stopped = 1;
}

uint64_t gm_sched_queued(const gm_sched *s)
{
	return gm_fairq_total(s->q) + waiting_all(s);
}

uint64_t gm_sched_queued_prio(const gm_sched *s, unsigned prio)
{
	if (prio > GM_BATCH_PRIO_MAX)
		return 0;
	return gm_fairq_count(s->q, prio) + waiting(s, prio);
}

uint64_t gm_sched_inflight(const gm_sched *s)
{
	return s->inflight - waiting_all(s);
}

uint64_t gm_sched_on_engine(const gm_sched *s)
{
	return s->inflight;
}

uint64_t gm_sched_in_queue(const gm_sched *s)
{
	return gm_fairq_total(s->q);
}

uint64_t gm_sched_in_queue_prio(const gm_sched *s, unsigned prio)
{
	return gm_fairq_count(s->q, prio);
}

uint64_t gm_sched_inflight_bytes(const gm_sched *s)
{
	return s->inflight_bytes;
}

uint64_t gm_sched_oversized_bytes(const gm_sched *s)
{
	return s->oversized_bytes;
}

uint64_t gm_sched_requests(const gm_sched *s)
{
	return s->requests;
}

uint64_t gm_sched_reserved(const gm_sched *s)
{
	return s->reserved;
}
