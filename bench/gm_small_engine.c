/*
 * gm_small_engine.c - the CUDA engine run in process on a batch of small
 * jobs, through gm_engine.h as the daemon drives it: the jobs lie in the
 * engine's pinned arena, laid out as gm_small.h says, and go in as one
 * wave; the time is from the submit to the last job's done callback.
 * Also the first job of each kind in a fresh process, with and without
 * the engine's warm-up.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_engine.h"
#include "gm_small.h"

#define MIB	      (1024ull * 1024)
#define STREAMS	      8 /* gemmd's default */
#define LATENCY_REPS  200
#define LATENCY_N     64
#define FIRST_POOL    (256 * MIB)
#define IDLE_SETTLE_S 0.5
#define IDLE_S	      1.0

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t done, want;
	int warm_status;
	double warm_ms;
	int warmed;
};

static void on_done(gm_job *j, void *arg)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	if (++w->done >= w->want)
		pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void on_warm(void *arg, int status, double ms, const char *msg)
{
	struct waiter *w = arg;

	if (msg != NULL)
		fprintf(stderr, "warm-up: %s\n", msg);
	pthread_mutex_lock(&w->mu);
	w->warm_status = status;
	w->warm_ms = ms;
	w->warmed = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Submits jobs[0..n-1] as one wave and waits for all; ms, or < 0. */
static double run_wave(gm_engine *e, struct waiter *w, gm_job **jobs,
		       uint32_t n)
{
	double t0 = sb_now_ms();

	pthread_mutex_lock(&w->mu);
	w->done = 0;
	w->want = n;
	pthread_mutex_unlock(&w->mu);
	if (gm_engine_submit(e, jobs, n) != GM_OK)
		return -1;
	pthread_mutex_lock(&w->mu);
	while (w->done < w->want)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	return sb_now_ms() - t0;
}

static int open_engine(uint64_t pool, uint64_t small, unsigned spin_us,
		       uint64_t direct, struct waiter *w, gm_engine **e,
		       char *err, size_t errlen)
{
	gm_engine_config cfg = {0};

	cfg.kind = GM_ENGINE_CUDA;
	cfg.pool_bytes = pool;
	cfg.streams = STREAMS;
	cfg.kernel = GM_KERNEL_CUBLAS;
	cfg.small_job_bytes = small;
	cfg.spin_us = spin_us;
	cfg.direct_job_bytes = direct;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	return gm_engine_open(&cfg, on_done, w, e, err, errlen) == GM_OK ? 0
									 : -1;
}

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec t = {(time_t)s, (long)((s - (time_t)s) * 1e9)};

	nanosleep(&t, NULL);
}

/* One LATENCY_N^3 job at p (random inputs), alone, many times: the
 * median. */
static double latency(gm_engine *e, struct waiter *w, char *p)
{
	uint64_t mat = (uint64_t)LATENCY_N * LATENCY_N * 4;
	double v[LATENCY_REPS];
	gm_job j, *jp = &j;
	float *in = (float *)p;

	memset(&j, 0, sizeof(j));
	j.d.dtype = GM_FP32;
	j.d.kernel = GM_KERNEL_CUBLAS;
	j.d.m = j.d.n = j.d.k = LATENCY_N;
	j.d.alpha = 1;
	j.a = p;
	j.b = p + mat;
	j.out = p + 2 * mat;
	for (uint64_t i = 0; i < 2 * mat / 4; i++)
		in[i] = (float)rand() / RAND_MAX - 0.5f;
	run_wave(e, w, &jp, 1);
	for (int i = 0; i < LATENCY_REPS; i++)
		v[i] = run_wave(e, w, &jp, 1);
	return sb_median(v, LATENCY_REPS);
}

int sb_engine_run(const sb_batch *b, uint64_t small, int reps, int latency_too,
		  sb_engine_result *out, char *err, size_t errlen)
{
	struct waiter w = {0};
	gm_engine *e = NULL;
	gm_job *jobs = calloc(b->jobs, sizeof(*jobs));
	gm_job **wave = calloc(b->jobs, sizeof(*wave));
	double v[16], c0;
	uint64_t size;
	char *base;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	if (jobs == NULL || wave == NULL || reps < 1 || reps > 16 ||
	    open_engine(b->bytes + 64 * MIB, small, GM_SPIN_US, 0, &w, &e, err,
			errlen) != 0)
		goto done;
	base = gm_engine_arena(e, &size);
	for (uint32_t i = 0; i < b->jobs; i++) {
		sb_batch_job(b, i, base, &jobs[i]);
		wave[i] = &jobs[i];
	}
	sb_batch_fill(b, base);
	for (int i = -1; i < reps; i++) {
		double ms = run_wave(e, &w, wave, b->jobs);

		if (ms < 0) {
			snprintf(err, errlen, "the engine refused the wave");
			goto done;
		}
		if (i >= 0)
			v[i] = ms;
	}
	out->ms = sb_median(v, reps);
	for (uint32_t i = 0; i < b->jobs; i++)
		out->failed += jobs[i].status != GM_OK;
	out->error = sb_batch_check(b, base);
	if (latency_too) {
		out->lat_p50 = latency(e, &w, base + b->bytes);
		sleep_s(IDLE_SETTLE_S);
		c0 = cpu_s();
		sleep_s(IDLE_S);
		out->idle_cpu = (cpu_s() - c0) / IDLE_S;
		/* The same by copies, then with the engine's threads
		 * sleeping at once. */
		gm_engine_close(e);
		e = NULL;
		if (open_engine(b->bytes + 64 * MIB, small, GM_SPIN_US, 1, &w,
				&e, err, errlen) != 0)
			goto done;
		out->lat_p50_copies =
		    latency(e, &w, gm_engine_arena(e, &size) + b->bytes);
		gm_engine_close(e);
		e = NULL;
		if (open_engine(b->bytes + 64 * MIB, small, 0, 0, &w, &e, err,
				errlen) != 0)
			goto done;
		out->lat_p50_nospin =
		    latency(e, &w, gm_engine_arena(e, &size) + b->bytes);
	}
	rv = 0;
done:
	if (e != NULL)
		gm_engine_close(e);
	free(jobs);
	free(wave);
	return rv;
}

/* ---- the first job ----------------------------------------------------------
 */

struct first {
	int dtype, kernel, ta, tb;
	uint32_t m, n, k;
};

/* Square jobs the warm-up runs the shapes of, and two it does not. */
static const struct first firsts[] = {
    {GM_FP32, GM_KERNEL_CUBLAS, 0, 0, 64, 64, 64},
    {GM_FP64, GM_KERNEL_CUBLAS, 0, 0, 64, 64, 64},
    {GM_TF32, GM_KERNEL_CUBLAS, 0, 0, 64, 64, 64},
    {GM_FP16, GM_KERNEL_CUBLAS, 0, 0, 64, 64, 64},
    {GM_BF16, GM_KERNEL_CUBLAS, 0, 0, 64, 64, 64},
    {GM_FP32, GM_KERNEL_TILED, 0, 0, 64, 64, 64},
    {GM_FP64, GM_KERNEL_TILED, 0, 0, 64, 64, 64},
    {GM_FP32, GM_KERNEL_CUBLAS, 0, 0, 1024, 1024, 1024},
    {GM_FP64, GM_KERNEL_CUBLAS, 0, 0, 1024, 1024, 1024},
    {GM_FP16, GM_KERNEL_CUBLAS, 0, 0, 1024, 1024, 1024},
    {GM_BF16, GM_KERNEL_CUBLAS, 0, 0, 1024, 1024, 1024},
    {GM_FP32, GM_KERNEL_CUBLAS, 1, 0, 37, 300, 111},
    {GM_FP64, GM_KERNEL_CUBLAS, 0, 1, 1500, 700, 900},
};

int sb_engine_first(int warm)
{
	struct waiter w = {0};
	char err[256] = "";
	gm_engine *e = NULL;
	double t0 = sb_now_ms(), open_ms;
	uint64_t size;
	char *p;

	if (open_engine(FIRST_POOL, 0, GM_SPIN_US, 0, &w, &e, err,
			sizeof(err)) != 0) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	open_ms = sb_now_ms() - t0;
	if (warm) {
		gm_engine_warmup(e, on_warm, &w);
		pthread_mutex_lock(&w.mu);
		while (!w.warmed)
			pthread_cond_wait(&w.cv, &w.mu);
		pthread_mutex_unlock(&w.mu);
	}
	printf("    open %.0f ms, warm-up %.0f ms (status %d)\n", open_ms,
	       w.warm_ms, w.warm_status);
	p = gm_engine_arena(e, &size);
	memset(p, 0, 3 * 8 * 1500 * 1500);
	for (size_t i = 0; i < sizeof(firsts) / sizeof(firsts[0]); i++) {
		const struct first *f = &firsts[i];
		uint64_t es = gm_dtype_size(f->dtype);
		gm_job j, *jp = &j;
		double first, next;

		memset(&j, 0, sizeof(j));
		j.d.dtype = (uint8_t)f->dtype;
		j.d.kernel = (uint8_t)f->kernel;
		j.d.trans_a = (uint8_t)f->ta;
		j.d.trans_b = (uint8_t)f->tb;
		j.d.m = f->m;
		j.d.n = f->n;
		j.d.k = f->k;
		j.d.alpha = 1;
		j.a = p;
		j.b = p + es * f->m * f->k;
		j.out = (char *)j.b + es * f->k * f->n;
		first = run_wave(e, &w, &jp, 1);
		next = run_wave(e, &w, &jp, 1);
		printf(
		    "    %-4s %-6s %4ux%4ux%4u%s: first %8.2f ms, next %6.2f "
		    "ms%s\n",
		    gm_dtype_name(f->dtype),
		    f->kernel == GM_KERNEL_TILED ? "tiled" : "cublas", f->m,
		    f->n, f->k,
		    f->ta   ? " ta"
		    : f->tb ? " tb"
			    : "   ",
		    first, next, j.status == GM_OK ? "" : " (failed)");
	}
	gm_engine_close(e);
	return 0;
}
