/*
 * gm_sched.c - bounded priority queue in front of an engine; see
 * gm_sched.h for the rules it keeps.
 */
#include "gm_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_log.h"

#define NPRIO (GM_BATCH_PRIO_MAX + 1)

struct gm_sched {
	gm_engine *eng;
	gm_pool *pool;
	gm_stats *st;
	unsigned depth;
	uint64_t queued, inflight, requests;
	int stopped;
	gm_sjob *head[NPRIO], *tail[NPRIO];
	gm_job **wave; /* depth entries: a wave never exceeds the queue */
	gm_sched_done_fn done;
	void *arg;
};

int gm_sched_create(gm_engine *e, gm_pool *p, unsigned depth, gm_stats *st,
		    gm_sched_done_fn done, void *arg, gm_sched **out)
{
	gm_sched *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return GM_ENOMEM;
	s->wave = calloc(depth, sizeof(*s->wave));
	if (s->wave == NULL) {
		free(s);
		return GM_ENOMEM;
	}
	s->eng = e;
	s->pool = p;
	s->st = st;
	s->depth = depth;
	s->done = done;
	s->arg = arg;
	*out = s;
	return GM_OK;
}

void gm_sched_destroy(gm_sched *s)
{
	if (s == NULL)
		return;
	free(s->wave);
	free(s);
}

gm_sreq *gm_sched_new_req(uint32_t njobs)
{
	/* One block: the request, then its jobs. */
	gm_sreq *r = calloc(1, sizeof(*r) + (size_t)njobs * sizeof(gm_sjob));

	if (r == NULL)
		return NULL;
	r->njobs = njobs;
	r->jobs = (gm_sjob *)(r + 1);
	return r;
}

void gm_sched_free_req(gm_sreq *r)
{
	free(r);
}

/* Bytes of the slab a job needs: its payload, plus room for the result
 * when there is no C to compute in place. */
static uint64_t slab_bytes(const gm_job_desc *d)
{
	gm_job_sizes z;

	gm_job_sizes_of(d, &z);
	return z.a + z.b + (z.c ? z.c : z.out);
}

static void place_in_slab(gm_sjob *j, void *slab)
{
	gm_job_sizes z;
	uint8_t *p = slab;

	gm_job_sizes_of(&j->job.d, &z);
	j->slab = slab;
	j->job.a = p;
	j->job.b = p + z.a;
	j->job.c = z.c ? p + z.a + z.b : NULL;
	/* With C the result overwrites C: its input is on the device by
	 * then, and the slab stays as small as the payload. */
	j->job.out = p + z.a + z.b;
}

static void finish_request(gm_sched *s, gm_sreq *r)
{
	double now = gm_now_us();

	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_sjob *j = &r->jobs[i];

		j->t.total_us = now - r->recv_us;
		gm_stats_job(s->st, &j->job.d, j->job.status, &j->t);
	}
	s->requests--;
	s->done(r, s->arg);
}

static void finish_job(gm_sched *s, gm_sjob *j)
{
	if (--j->req->left == 0)
		finish_request(s, j->req);
}

static void fail_job(gm_sched *s, gm_sjob *j, int code, const char *msg)
{
	j->job.status = code;
	snprintf(j->job.msg, sizeof(j->job.msg), "%s", msg);
	GM_LOGJ(GM_LOG_DEBUG, j->req->id, j->idx, "failed: %s: %s",
		gm_errname(code), msg);
	finish_job(s, j);
}

static void push(gm_sched *s, gm_sjob *j)
{
	unsigned p = j->req->batch.priority;

	j->qnext = NULL;
	if (s->tail[p] != NULL)
		s->tail[p]->qnext = j;
	else
		s->head[p] = j;
	s->tail[p] = j;
	s->queued++;
}

static gm_sjob *pop(gm_sched *s, unsigned p)
{
	gm_sjob *j = s->head[p];

	s->head[p] = j->qnext;
	if (s->head[p] == NULL)
		s->tail[p] = NULL;
	s->queued--;
	return j;
}

/* Checks what can be known before queueing; returns 0 to queue. */
static int precheck(gm_sched *s, gm_sjob *j, char *msg, size_t len)
{
	uint64_t need = slab_bytes(&j->job.d);
	int rv;

	if ((rv = gm_engine_supports(s->eng, &j->job.d, msg, len)) != 0)
		return rv;
	if (need > gm_pool_size(s->pool)) {
		snprintf(msg, len,
			 "job needs %llu bytes of host pool, pool holds %llu",
			 (unsigned long long)need,
			 (unsigned long long)gm_pool_size(s->pool));
		return GM_ETOOBIG;
	}
	return 0;
}

int gm_sched_submit(gm_sched *s, gm_sreq *r)
{
	char msg[GM_MSG_TEXT + 1];
	int rv;

	if (r->njobs == 0 || r->batch.priority > GM_BATCH_PRIO_MAX)
		return GM_EINVAL;
	if (s->stopped)
		return GM_ESHUTDOWN;
	if (s->queued + r->njobs > s->depth)
		return GM_EBUSY;
	s->requests++;
	/* One extra hold so a request whose jobs all fail at once is
	 * finished only after the loop, not in the middle of it. */
	r->left = r->njobs + 1;
	for (uint32_t i = 0; i < r->njobs; i++) {
		gm_sjob *j = &r->jobs[i];

		j->req = r;
		j->idx = i;
		j->job.user = j;
		j->job.device = -1;
		if ((rv = precheck(s, j, msg, sizeof(msg))) != 0)
			fail_job(s, j, rv, msg);
		else
			push(s, j);
	}
	finish_job(s, &r->jobs[0]);
	gm_sched_pump(s);
	return GM_OK;
}

static int expired(const gm_sjob *j, double now)
{
	uint32_t dl = j->req->batch.deadline_ms;

	return dl != 0 && now - j->req->recv_us > (double)dl * 1000.0;
}

/* Moves the head jobs that fit into the wave; returns how many. Stops at
 * the first job that does not fit so a large job is never starved by
 * smaller ones behind it. */
static size_t fill_wave(gm_sched *s, double now)
{
	size_t n = 0;
	void *slab;

	for (int p = GM_BATCH_PRIO_MAX; p >= 0; p--) {
		while (s->head[p] != NULL) {
			gm_sjob *j = s->head[p];

			if (expired(j, now)) {
				pop(s, (unsigned)p);
				fail_job(s, j, GM_ETIMEDOUT,
					 "deadline passed before the job "
					 "started");
				continue;
			}
			if (gm_pool_alloc(s->pool, slab_bytes(&j->job.d),
					  &slab) != 0)
				return n;
			pop(s, (unsigned)p);
			place_in_slab(j, slab);
			j->start_us = now;
			s->wave[n++] = &j->job;
			s->inflight++;
		}
	}
	return n;
}

void gm_sched_pump(gm_sched *s)
{
	size_t n;
	int rv;

	/* A refused wave frees its slabs, so what waited behind it may fit
	 * now: go on until the engine takes a wave or nothing fits. */
	while ((n = fill_wave(s, gm_now_us())) != 0) {
		if ((rv = gm_engine_submit(s->eng, s->wave, n)) == 0)
			return;
		/* The engine refused the whole wave (a sticky fault): every
		 * job of it still gets its one reply. */
		for (size_t i = 0; i < n; i++) {
			gm_sjob *j = s->wave[i]->user;

			gm_pool_free(s->pool, j->slab);
			j->slab = NULL;
			s->inflight--;
			fail_job(s, j, rv, "the engine refused the job");
		}
	}
}

void gm_sched_complete(gm_sched *s, gm_job *job)
{
	gm_sjob *j = job->user;

	gm_pool_free(s->pool, j->slab);
	j->slab = NULL;
	s->inflight--;
	j->t.queue_us = j->start_us - j->req->recv_us;
	j->t.h2d_us = job->h2d_us;
	j->t.kernel_us = job->kernel_us;
	j->t.d2h_us = job->d2h_us;
	if (job->status != 0)
		GM_LOGJ(GM_LOG_DEBUG, j->req->id, j->idx, "failed: %s: %s",
			gm_errname(job->status), job->msg);
	finish_job(s, j);
	gm_sched_pump(s);
}

void gm_sched_stop(gm_sched *s)
{
	s->stopped = 1;
}

uint64_t gm_sched_queued(const gm_sched *s)
{
	return s->queued;
}

uint64_t gm_sched_inflight(const gm_sched *s)
{
	return s->inflight;
}

uint64_t gm_sched_requests(const gm_sched *s)
{
	return s->requests;
}
