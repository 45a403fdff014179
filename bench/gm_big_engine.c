/*
 * gm_big_engine.c - the CUDA engine in process, driven through
 * gm_engine.h as the daemon drives it: the job's operands in a memfd
 * mapping registered with gm_engine_register (a region), or in pageable
 * memory (gm_job.host_pageable); and small jobs from the engine's arena,
 * one after another, while the tiled job runs, against the same with
 * the engine idle. A time is from the submit to the done callback.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_big.h"
#include "gm_engine.h"
#include "gm_error.h"

#define MIB	  (1024ull * 1024)
#define STREAMS	  8	     /* gemmd's default */
#define ARENA	  (64 * MIB) /* the small jobs' */
#define SMALL_N	  64
#define IDLE_JOBS 200
#define LAT_MAX	  100000
#define REPS_MAX  9

/* A job's way back. */
struct tag {
	int done;
	double back;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void on_done(gm_job *j, void *arg)
{
	struct tag *t = j->user;

	pthread_mutex_lock(&mu);
	t->back = bg_now_ms();
	t->done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static int is_done(struct tag *t)
{
	int done;

	pthread_mutex_lock(&mu);
	done = t->done;
	pthread_mutex_unlock(&mu);
	return done;
}

static void wait_for(struct tag *t)
{
	pthread_mutex_lock(&mu);
	while (!t->done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static int submit(gm_engine *e, gm_job *j, struct tag *t, char *err,
		  size_t errlen)
{
	int rv;

	t->done = 0;
	j->user = t;
	if ((rv = gm_engine_submit(e, &j, 1)) != GM_OK)
		snprintf(err, errlen, "submit: %s", gm_errname(rv));
	return rv;
}

static int job_ok(const gm_job *j, char *err, size_t errlen)
{
	if (j->status == GM_OK)
		return 0;
	snprintf(err, errlen, "%s: %s", gm_errname(j->status), j->msg);
	return -1;
}

/* Runs j alone: its time in ms, or < 0 with err. */
static double run(gm_engine *e, gm_job *j, char *err, size_t errlen)
{
	struct tag t;
	double t0 = bg_now_ms();

	if (submit(e, j, &t, err, errlen) != GM_OK)
		return -1;
	wait_for(&t);
	return job_ok(j, err, errlen) == 0 ? t.back - t0 : -1;
}

static void big_job(const bg_case *c, const bg_mats *m, int pageable, gm_job *j)
{
	memset(j, 0, sizeof(*j));
	j->d.dtype = (uint8_t)c->dtype;
	j->d.kernel = GM_KERNEL_CUBLAS;
	j->d.layout = GM_ROW_MAJOR;
	j->d.m = j->d.n = j->d.k = c->n;
	j->d.alpha = 1;
	j->a = m->a;
	j->b = m->b;
	j->out = m->out;
	j->host_pageable = pageable ? GM_PAGEABLE_ALL : 0;
}

/* A 64^3 fp32 job in the arena. */
static void small_job(gm_engine *e, gm_job *j)
{
	uint64_t size, mat = SMALL_N * SMALL_N * sizeof(float);
	float *p = gm_engine_arena(e, &size);

	memset(j, 0, sizeof(*j));
	j->d.dtype = GM_FP32;
	j->d.kernel = GM_KERNEL_CUBLAS;
	j->d.m = j->d.n = j->d.k = SMALL_N;
	j->d.alpha = 1;
	for (size_t i = 0; i < 2 * SMALL_N * SMALL_N; i++)
		p[i] = (float)(i % 7) - 3;
	j->a = p;
	j->b = (char *)p + mat;
	j->out = (char *)p + 2 * mat;
}

/* Timed runs of j, the first a warm-up when warm is set: the median. */
static int timed(gm_engine *e, gm_job *j, int reps, int warm, double *ms,
		 char *err, size_t errlen)
{
	double v[REPS_MAX];

	for (int i = warm ? -1 : 0; i < reps; i++) {
		double t = run(e, j, err, errlen);

		if (t < 0)
			return -1;
		if (i >= 0)
			v[i] = t;
	}
	*ms = bg_median(v, reps);
	return 0;
}

static double percentile(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return n > 0 ? v[i < n ? i : n - 1] : 0;
}

/* Small jobs one after another, first with the engine idle, then while
 * big runs. */
static int beside(gm_engine *e, gm_job *big, bg_engine_result *r, char *err,
		  size_t errlen)
{
	static double lat[LAT_MAX];
	struct timespec gap = {0, 1000 * 1000};
	struct tag bt;
	gm_job small;
	double t0, worst = 0;
	int n = 0;

	small_job(e, &small);
	for (n = 0; n < IDLE_JOBS; n++)
		if ((lat[n] = run(e, &small, err, errlen)) < 0)
			return -1;
	r->idle_p50 = bg_median(lat, n);
	t0 = bg_now_ms();
	if (submit(e, big, &bt, err, errlen) != GM_OK)
		return -1;
	for (n = 0; !is_done(&bt) && n < LAT_MAX; n++) {
		if ((lat[n] = run(e, &small, err, errlen)) < 0)
			return -1;
		r->slow += lat[n] > 10;
		if (lat[n] > worst) {
			worst = lat[n];
			r->max_h2d = small.h2d_us / 1e3;
			r->max_kernel = small.kernel_us / 1e3;
			r->max_d2h = small.d2h_us / 1e3;
		}
		nanosleep(&gap, NULL);
	}
	wait_for(&bt);
	r->lat_job_ms = bt.back - t0;
	bg_median(lat, n); /* sorts */
	r->lat_n = n;
	r->p50 = percentile(lat, n, 0.5);
	r->p99 = percentile(lat, n, 0.99);
	r->max = n > 0 ? lat[n - 1] : 0;
	return job_ok(big, err, errlen);
}

struct bg_engine {
	gm_engine *e;
	const bg_case *c;
	bg_mats *m;
	int reg; /* m registered by this engine */
};

int bg_engine_region(bg_engine *b, int reps, int with_small,
		     bg_engine_result *r, char *err, size_t errlen)
{
	const bg_case *c = b->c;
	bg_mats *m = b->m;
	gm_job j;

	big_job(c, m, 0, &j);
	bg_poison(c, m->out);
	if (timed(b->e, &j, reps, 1, &r->region_ms, err, errlen) != 0)
		return -1;
	r->h2d_ms = j.h2d_us / 1e3;
	r->kernel_ms = j.kernel_us / 1e3;
	r->d2h_ms = j.d2h_us / 1e3;
	r->region_err = bg_check(c, m->a, m->b, m->out);
	return with_small ? beside(b->e, &j, r, err, errlen) : 0;
}

int bg_engine_pageable(bg_engine *b, int reps, bg_engine_result *r, char *err,
		       size_t errlen)
{
	const bg_case *c = b->c;
	bg_mats pm;
	gm_job j;
	int rv;

	if (bg_mats_map(c, 0, &pm, err, errlen) != 0)
		return -1;
	bg_copy(pm.a, b->m->a, 2 * b->m->mat);
	bg_poison(c, pm.out);
	big_job(c, &pm, 1, &j);
	if ((rv = timed(b->e, &j, reps, 0, &r->pageable_ms, err, errlen)) == 0)
		r->pageable_err = bg_check(c, pm.a, pm.b, pm.out);
	bg_mats_unmap(&pm);
	return rv;
}

static int open_engine(const bg_case *c, uint64_t line_bytes, gm_engine **e,
		       char *err, size_t errlen)
{
	gm_engine_config cfg = {0};
	struct timespec ms = {0, 1000 * 1000};
	char msg[256];
	int rv;

	cfg.kind = GM_ENGINE_CUDA;
	cfg.pool_bytes = ARENA;
	cfg.device_pool_bytes = c->device_pool;
	cfg.streams = STREAMS;
	cfg.issue_order = GM_ISSUE_BREADTH;
	cfg.kernel = GM_KERNEL_CUBLAS;
	cfg.ooc_line_bytes = line_bytes;
	cfg.spin_us = GM_SPIN_US; /* gemmd's default */
	if ((rv = gm_engine_open(&cfg, on_done, NULL, e, msg, sizeof(msg))) !=
	    GM_OK) {
		snprintf(err, errlen, "engine: %s: %s", gm_errname(rv), msg);
		return -1;
	}
	if (gm_engine_warmup(*e, NULL, NULL) == GM_OK)
		while (!gm_engine_ready(*e, NULL))
			nanosleep(&ms, NULL);
	return 0;
}

int bg_engine_open(const bg_case *c, bg_mats *m, uint64_t line_bytes, int reg,
		   bg_engine **out, double *register_ms, char *err,
		   size_t errlen)
{
	bg_engine *b;
	char msg[256];
	double t0;
	int rv;

	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    open_engine(c, line_bytes, &b->e, err, errlen) != 0) {
		free(b);
		return -1;
	}
	b->c = c;
	b->m = m;
	b->reg = reg;
	*out = b;
	if (!reg)
		return 0;
	t0 = bg_now_ms();
	if ((rv = gm_engine_register(b->e, m->base, 3 * m->mat, msg,
				     sizeof(msg))) != GM_OK) {
		snprintf(err, errlen, "register: %s: %s", gm_errname(rv), msg);
		gm_engine_close(b->e);
		free(b);
		return -1;
	}
	*register_ms = bg_now_ms() - t0;
	return 0;
}

void bg_engine_close(bg_engine *b)
{
	if (b->reg)
		gm_engine_unregister(b->e, b->m->base);
	gm_engine_close(b->e);
	free(b);
}
