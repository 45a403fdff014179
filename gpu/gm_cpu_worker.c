/*
 * gm_cpu_worker.c - the CPU engine's threads (gm_engine_cpu.c says what
 * they do): the worker's rounds of bursts and pieces, the turns of large
 * jobs, and the side thread that runs small jobs beside a piece.
 */
#include "gm_cpu_worker.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

/* Runs one job whole and fills its status and timings. */
static void run(gm_job *job)
{
	gm_cpu_piece p;

	if (gm_cpu_piece_prepare(&p, job, INFINITY) != GM_OK)
		return;
	job->start_us = gm_engine_now_us();
	gm_cpu_piece_run(&p);
	job->kernel_us = gm_engine_now_us() - job->start_us;
}

/* Hands job back, run or failed. */
static void hand_back(struct cpu_engine *ce, gm_job *job)
{
	job->next = NULL;
	__atomic_add_fetch(&ce->jobs, 1, __ATOMIC_RELAXED);
	/* Last: once back through the callback the job is not ours. */
	gm_engine_back(&ce->base, job, 1);
}

/* Runs job and hands it back. */
static void finish(struct cpu_engine *ce, gm_job *job)
{
	run(job);
	hand_back(ce, job);
}

static void run_burst_job(void *arg, uint64_t i)
{
	struct cpu_engine *ce = arg;

	finish(ce, ce->burst[i]);
}

int gm_cpu_worker_small(const gm_job *job)
{
	const gm_job_desc *d = &job->d;

	return (double)d->m * d->n * d->k <= SMALL_MNK;
}

/* Runs burst[0..n-1], on the crew when there is enough work to share. */
static void run_burst(struct cpu_engine *ce, size_t n, double flops)
{
	size_t i;

	if (flops >= BURST_MIN_FLOPS) {
		gm_crew_run(ce->crew, run_burst_job, ce, n);
		return;
	}
	for (i = 0; i < n; i++)
		finish(ce, ce->burst[i]);
}

/* What one pass over the FIFO takes (take()). */
struct taken {
	gm_job **burst; /* small jobs, at most max */
	size_t max, n;
	double flops; /* their work */
	gm_job *large, *late;
};

/*
 * Takes the small jobs off the FIFO into t->burst (in their order,
 * wherever they wait: those behind a large job need not wait for it),
 * and, when want_large, the first large job into t->large; jobs past
 * their deadline that it meets go to t->late instead. Under mu.
 */
static void take(struct cpu_engine *ce, int want_large, struct taken *t)
{
	double now = gm_engine_now_us();
	gm_job *job = gm_handoff_first(&ce->fifo), *prev = NULL, *next;
	int small;

	t->n = 0;
	t->flops = 0;
	t->large = t->late = NULL;
	for (; job != NULL && (t->n < t->max || (want_large && !t->large));
	     job = next) {
		next = gm_handoff_next(&ce->fifo, job);
		small = gm_cpu_worker_small(job);
		if (gm_engine_expired(job, now)) {
			gm_handoff_unlink(&ce->fifo, prev, job);
			job->next = t->late;
			t->late = job;
		} else if (small && t->n < t->max) {
			t->flops += gm_job_flops(&job->d);
			gm_handoff_unlink(&ce->fifo, prev, job);
			t->burst[t->n++] = job;
		} else if (!small && want_large && t->large == NULL) {
			gm_handoff_unlink(&ce->fifo, prev, job);
			t->large = job;
		} else {
			prev = job;
		}
	}
}

/* Hands back the jobs taken for their deadline, and marks the small
 * ones started, in one call (chained for it). */
static void start_taken(struct cpu_engine *ce, struct taken *t)
{
	gm_job *next;
	size_t i;

	for (; t->late != NULL; t->late = next) {
		next = t->late->next;
		t->late->device = -1;
		hand_back(ce, t->late);
	}
	if (t->n == 0)
		return;
	for (i = 0; i + 1 < t->n; i++)
		t->burst[i]->next = t->burst[i + 1];
	t->burst[t->n - 1]->next = NULL;
	gm_engine_started(&ce->base, t->burst[0], (uint32_t)t->n);
}

/* Runs one piece of p, the side thread free to run small jobs beside
 * it meanwhile. */
static void run_piece(struct cpu_engine *ce, gm_cpu_piece *p)
{
	pthread_mutex_lock(&ce->mu);
	ce->in_piece = 1;
	if (gm_handoff_first(&ce->fifo) != NULL)
		pthread_cond_signal(&ce->side_wake);
	pthread_mutex_unlock(&ce->mu);
	gm_cpu_piece_run(p);
	pthread_mutex_lock(&ce->mu);
	ce->in_piece = 0;
	pthread_mutex_unlock(&ce->mu);
}

/* FLOPs of one piece of job: fixed for the engine's life (gm_engine_cpu.c
 * says why), by the job's dtype alone. */
static double piece_flops(const struct cpu_engine *ce, const gm_job *job)
{
	return ce->piece_flops[job->d.dtype == GM_FP64 ? 0 : 1];
}

/* Runs the next piece of turns[i]; hands its job back after its last,
 * the job's time from its first piece's start to its last's end
 * (pieces of other jobs in between included). */
static void run_turn(struct cpu_engine *ce, unsigned i)
{
	struct turn *t = &ce->turns[i];

	if (t->job->start_us == 0.0)
		t->job->start_us = gm_engine_now_us();
	run_piece(ce, &t->p);
	if (!gm_cpu_piece_done(&t->p)) {
		ce->cursor = i + 1;
		return;
	}
	t->job->kernel_us = gm_engine_now_us() - t->job->start_us;
	hand_back(ce, t->job);
	memmove(&ce->turns[i], &ce->turns[i + 1],
		(ce->nturns - i - 1) * sizeof(*t));
	ce->cursor = i; /* the next one moved here */
	ce->nturns--;
}

/* Starts large (taken off the FIFO) with its first piece, as the last
 * of the turns; one that cannot run goes back failed, never started. */
static void start_turn(struct cpu_engine *ce, gm_job *large)
{
	struct turn *t = &ce->turns[ce->nturns];

	if (gm_cpu_piece_prepare(&t->p, large, piece_flops(ce, large)) !=
	    GM_OK) {
		hand_back(ce, large);
		return;
	}
	t->job = large;
	large->next = NULL;
	gm_engine_started(&ce->base, large, 1);
	ce->nturns++;
	run_turn(ce, ce->nturns - 1);
	if (ce->cursor >= ce->nturns)
		ce->cursor = 0; /* back to the oldest */
}

/*
 * One round of the worker: the small jobs waiting all run (a burst),
 * then one piece of the job whose turn it is, where the turn after the
 * last job's goes to the FIFO's first large job (when there is room):
 * a small job waits at most about one piece, a large one its share.
 * Called with mu held; returns with it held.
 */
static void round_of(struct cpu_engine *ce)
{
	int want_large = ce->cursor >= ce->nturns && ce->nturns < TURNS_MAX;
	struct taken t = {.burst = ce->burst, .max = BURST_MAX};

	take(ce, want_large, &t);
	pthread_mutex_unlock(&ce->mu);

	start_taken(ce, &t);
	if (t.n > 0)
		run_burst(ce, t.n, t.flops);
	if (t.large != NULL)
		start_turn(ce, t.large);
	else if (ce->nturns > 0)
		run_turn(ce, ce->cursor < ce->nturns ? ce->cursor : 0);

	pthread_mutex_lock(&ce->mu);
}

/* OpenBLAS sets up its buffers and threads on first use. */
static void warm_up(struct cpu_engine *ce)
{
	double a[4] = {1, 2, 3, 4}, c[4];
	float af[4] = {1, 2, 3, 4}, cf[4];

	cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, a,
		    2, a, 2, 0.0, c, 2);
	cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f,
		    af, 2, af, 2, 0.0f, cf, 2);
	gm_engine_warmed(&ce->base, GM_OK, NULL);
}

/* Microseconds of the median of CAL_RUNS calls of a CAL_EDGE^3 GEMM of
 * dtype on buf (three CAL_EDGE^2 matrices). */
static double time_calibration(int dtype, void *buf)
{
	const size_t mat = (size_t)CAL_EDGE * CAL_EDGE;
	double us[CAL_RUNS], t0, x;
	int i, j;

	for (i = 0; i < CAL_RUNS; i++) {
		t0 = gm_engine_now_us();
		if (dtype == GM_FP64)
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				    CAL_EDGE, CAL_EDGE, CAL_EDGE, 1.0, buf,
				    CAL_EDGE, (double *)buf + mat, CAL_EDGE,
				    0.0, (double *)buf + 2 * mat, CAL_EDGE);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
				    CAL_EDGE, CAL_EDGE, CAL_EDGE, 1.0f, buf,
				    CAL_EDGE, (float *)buf + mat, CAL_EDGE,
				    0.0f, (float *)buf + 2 * mat, CAL_EDGE);
		x = gm_engine_now_us() - t0;
		for (j = i; j > 0 && us[j - 1] > x; j--) /* kept sorted */
			us[j] = us[j - 1];
		us[j] = x;
	}
	return us[CAL_RUNS / 2];
}

/*
 * Sizes the pieces of each dtype once, before the first job, at what
 * the BLAS does in piece_us by its median calibration call: from then on
 * a job's cut depends on its shape and dtype alone, so the same job
 * always gets the same BLAS calls and so the same bytes, whatever the
 * load (gm_cpu_piece.h). Without memory for the calibration, the guess.
 */
void gm_cpu_worker_size_pieces(struct cpu_engine *ce)
{
	const double flops = 2.0 * CAL_EDGE * CAL_EDGE * CAL_EDGE;
	double guess = RATE_GUESS * openblas_get_num_threads(), us;
	void *buf;

	if (ce->piece_flops[0] > 0.0)
		return; /* set at open */
	buf = calloc(3 * (size_t)CAL_EDGE * CAL_EDGE, sizeof(double));
	for (int i = 0; i < 2; i++) {
		int dtype = i == 0 ? GM_FP64 : GM_FP32;
		double rate = (i + 1) * guess;

		if (buf != NULL && (us = time_calibration(dtype, buf)) > 0.0)
			rate = flops / us;
		ce->piece_flops[i] = rate * ce->piece_us;
	}
	free(buf);
}

/* Whether the worker has jobs, waiting or in turns. Under mu. */
static int has_work(const struct cpu_engine *ce)
{
	return gm_handoff_first(&ce->fifo) != NULL || ce->nturns > 0;
}

void *gm_cpu_worker_main(void *arg)
{
	struct cpu_engine *ce = arg;

	pthread_mutex_lock(&ce->mu);
	for (;;) {
		/* Turns under way are work of its own: no wait for them. */
		if (ce->nturns == 0 && !ce->warm)
			gm_handoff_wait(&ce->fifo);
		if (ce->warm) {
			ce->warm = 0;
			pthread_mutex_unlock(&ce->mu);
			warm_up(ce);
			pthread_mutex_lock(&ce->mu);
			continue;
		}
		if (!has_work(ce)) {
			if (gm_handoff_closed(&ce->fifo))
				break; /* every job is back */
			continue;      /* a kick already spent */
		}
		if (!ce->running) {
			ce->running = 1;
			ce->busy_since = gm_engine_now_us();
		}
		round_of(ce);
		if (!has_work(ce)) {
			ce->busy_us += gm_engine_now_us() - ce->busy_since;
			ce->running = 0;
		}
	}
	pthread_mutex_unlock(&ce->mu);
	return NULL;
}

void *gm_cpu_worker_side(void *arg)
{
	struct cpu_engine *ce = arg;
	struct taken t = {.burst = ce->side_burst, .max = SIDE_MAX};

	pthread_mutex_lock(&ce->mu);
	for (;;) {
		while (!gm_handoff_closed(&ce->fifo) &&
		       !(ce->in_piece && gm_handoff_first(&ce->fifo) != NULL))
			pthread_cond_wait(&ce->side_wake, &ce->mu);
		if (gm_handoff_closed(&ce->fifo))
			break;
		take(ce, 0, &t);
		if (t.n == 0 && t.late == NULL) {
			/* Only large jobs wait: the worker's, after its
			 * piece. */
			pthread_cond_wait(&ce->side_wake, &ce->mu);
			continue;
		}
		pthread_mutex_unlock(&ce->mu);
		start_taken(ce, &t);
		/* One at a time: the worker's BLAS threads have the cores
		 * and the crew is the worker's. */
		for (size_t i = 0; i < t.n; i++)
			finish(ce, t.burst[i]);
		pthread_mutex_lock(&ce->mu);
	}
	pthread_mutex_unlock(&ce->mu);
	return NULL;
}
