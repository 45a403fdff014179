/*
 * gm_engine_cpu.c - the CPU engine: OpenBLAS on one worker thread and a
 * small crew.
 *
 * gm_engine_submit appends jobs to a FIFO and wakes a dedicated worker
 * thread (never libuv's pool: a GEMM there would starve the daemon's file
 * system work). The worker takes from the FIFO only what it runs next,
 * so that the jobs behind still wait where gm_engine_cancel can take them
 * back and their deadlines still count. It works in rounds: first every
 * small job waiting (m n k at most SMALL_MNK, which OpenBLAS runs on the
 * calling thread only) runs, as one burst shared by the worker and a
 * crew of helper threads (gm_crew.h), each job on one core, so that a
 * wave of small jobs costs one wake-up per helper, not one per job; then
 * one piece (gm_cpu_piece.h, about cpu_piece_us of BLAS on OpenBLAS's
 * own threads) of the large job whose turn it is. Large jobs take turns,
 * at most TURNS_MAX at once, a new one joining after the others have had
 * their piece. So no job waits behind a large one for more than about a
 * piece per large job under way, whoever sent it, and cancel and
 * deadlines reach every job not yet taken. Jobs taken are started
 * (gm_engine_started); each job's start_us is its first BLAS call's, and
 * a large job's kernel_us runs to the end of its last piece, the pieces
 * of others in between included. The done callback is called from
 * whichever thread ran the job. The device is busy from the moment the
 * worker takes work until it has none, and counted so as it goes.
 * Kernel choice is a GPU concern: every kernel a job names runs as BLAS
 * here. The CPU reads and writes host memory directly, so copy_in and
 * copy_out are used as the operands themselves instead of being staged
 * through the arena, and operands in pageable memory
 * (gm_job.host_pageable) are used where they are: a job of any size
 * that fits in host memory runs. The arena is only reserved address space
 * (MAP_NORESERVE): pages the pool never hands out cost nothing.
 */
#include "gm_engine_impl.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gm_cpu_piece.h"
#include "gm_crew.h"
#include "gm_error.h"

/*
 * OpenBLAS 0.3 runs a GEMM with m n k <= 65536 * 4 (SMP_THRESHOLD_MIN
 * times the default GEMM_MULTITHREAD_THRESHOLD, interface/gemm.c) on the
 * calling thread alone: a 64^3 fp32 job takes 6.5 us with one BLAS
 * thread or two on a 2-core host.
 */
#define SMALL_MNK (65536.0 * 4)
/* Work below which waking the crew costs more than it saves: a
 * helper's wake-up is tens of microseconds, 8 MFLOP about 100. */
#define BURST_MIN_FLOPS (8.0 * 1024 * 1024)
#define BURST_MAX	4096 /* jobs run as one burst, at most */
/* Jobs larger than a piece run in turns, a piece each, at most this
 * many at once: one taken after another's start still has its first
 * piece within a few pieces, and those not taken still wait where
 * cancel and their deadlines reach them. */
#define TURNS_MAX 4
/* A first guess of what one BLAS thread does in a microsecond, in
 * FLOPs, before the engine has timed its own pieces (fp64; fp32 twice):
 * low, so that the first pieces are short rather than long. */
#define RATE_GUESS 4000.0
/* Pieces of fewer FLOPs are too short to time the BLAS by. */
#define RATE_MIN_FLOPS 1e7

/* A job larger than one piece, started and run a piece per turn. */
struct turn {
	gm_job *job;
	gm_cpu_piece p;
};

struct cpu_engine {
	struct gm_engine base; /* first: gm_engine.c casts back */
	pthread_t worker;
	pthread_mutex_t mu; /* guards everything below it */
	pthread_cond_t wake;
	gm_job *head, *tail;
	int stopping;
	int warm;	   /* a warm-up is asked for */
	int running;	   /* the worker is running jobs since busy_since */
	double busy_since; /* host clock */
	double busy_us;	   /* ended stretches of running */
	uint64_t jobs;	   /* atomic */
	/* Set at open, read-only afterwards. */
	void *arena;
	uint64_t arena_bytes;
	char name[64];
	double piece_us;    /* a piece's length, by the rate below */
	double piece_flops; /* a piece's FLOPs instead; 0: by piece_us */
	/* The worker's: */
	gm_crew *crew;
	gm_job *burst[BURST_MAX];
	double rate[2]; /* FLOPs per us of fp64, fp32 pieces, timed */
	struct turn turns[TURNS_MAX];
	unsigned nturns;
	unsigned cursor; /* turns[cursor] runs next; nturns: a new one */
};

static int cpu_supports(const gm_engine *e, const gm_job_desc *d, char *msg,
			size_t msglen)
{
	return gm_cpu_piece_check(d->dtype, msg, msglen);
}

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

/* Jobs OpenBLAS runs on the calling thread alone go to bursts. */
static int small(const gm_job *job)
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

/* Unlinks *at, which follows prev, from the FIFO. Under mu. */
static gm_job *unlink_at(struct cpu_engine *ce, gm_job **at, gm_job *prev)
{
	gm_job *job = *at;

	if ((*at = job->next) == NULL)
		ce->tail = prev;
	job->next = NULL;
	return job;
}

/*
 * Takes the small jobs off the FIFO into burst[] (at most BURST_MAX, in
 * their order, wherever they wait: those behind a large job need not
 * wait for it), and, when want_large, the first large job into *large;
 * jobs past their deadline that it meets go to *late instead. Returns
 * how many small ones were taken, with their work in *flops. Under mu.
 */
static size_t take(struct cpu_engine *ce, int want_large, gm_job **large,
		   gm_job **late, double *flops)
{
	double now = gm_engine_now_us();
	gm_job **at = &ce->head, *prev = NULL, *job;
	size_t n = 0;

	*flops = 0;
	*large = NULL;
	while (*at != NULL && (n < BURST_MAX || (want_large && !*large))) {
		job = *at;
		if (gm_engine_expired(job, now)) {
			job = unlink_at(ce, at, prev);
			job->next = *late;
			*late = job;
		} else if (small(job) && n < BURST_MAX) {
			*flops += gm_job_flops(&job->d);
			ce->burst[n++] = unlink_at(ce, at, prev);
		} else if (!small(job) && want_large && *large == NULL) {
			*large = unlink_at(ce, at, prev);
		} else {
			prev = job;
			at = &job->next;
		}
	}
	return n;
}

/* Hands back the jobs taken for their deadline, and runs burst[0..n-1]
 * once they are told started. */
static void run_taken(struct cpu_engine *ce, gm_job *late, size_t n,
		      double flops)
{
	gm_job *next;
	size_t i;

	for (; late != NULL; late = next) {
		next = late->next;
		late->device = -1;
		hand_back(ce, late);
	}
	if (n == 0)
		return;
	/* One piece of news for the burst: chained for it. */
	for (i = 0; i + 1 < n; i++)
		ce->burst[i]->next = ce->burst[i + 1];
	ce->burst[n - 1]->next = NULL;
	gm_engine_started(&ce->base, ce->burst[0], (uint32_t)n);
	run_burst(ce, n, flops);
}

static double *rate_of(struct cpu_engine *ce, const gm_job *job)
{
	return &ce->rate[job->d.dtype == GM_FP64 ? 0 : 1];
}

/* FLOPs of one piece of job: what the engine runs in piece_us by the
 * rate it timed for the job's dtype. */
static double piece_flops(struct cpu_engine *ce, const gm_job *job)
{
	if (ce->piece_flops > 0.0)
		return ce->piece_flops;
	return *rate_of(ce, job) * ce->piece_us;
}

/* Runs the next piece of turns[i]; hands its job back after its last,
 * the job's time from its first piece's start to its last's end
 * (pieces of other jobs in between included). */
static void run_turn(struct cpu_engine *ce, unsigned i)
{
	struct turn *t = &ce->turns[i];
	double t0 = gm_engine_now_us(), flops, us, *rate;

	if (t->job->start_us == 0.0)
		t->job->start_us = t0;
	flops = gm_cpu_piece_run(&t->p);
	us = gm_engine_now_us() - t0;
	rate = rate_of(ce, t->job);
	if (flops >= RATE_MIN_FLOPS && us > 0.0)
		*rate = 0.75 * *rate + 0.25 * (flops / us);
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
	gm_job *late = NULL, *large;
	double flops;
	size_t n;

	n = take(ce, want_large, &large, &late, &flops);
	pthread_mutex_unlock(&ce->mu);

	run_taken(ce, late, n, flops);
	if (large != NULL)
		start_turn(ce, large);
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

/* Whether the worker has jobs, waiting or in turns. Under mu. */
static int has_work(const struct cpu_engine *ce)
{
	return ce->head != NULL || ce->nturns > 0;
}

static void *worker_main(void *arg)
{
	struct cpu_engine *ce = arg;

	pthread_mutex_lock(&ce->mu);
	for (;;) {
		while (!has_work(ce) && !ce->warm && !ce->stopping)
			pthread_cond_wait(&ce->wake, &ce->mu);
		if (ce->warm) {
			ce->warm = 0;
			pthread_mutex_unlock(&ce->mu);
			warm_up(ce);
			pthread_mutex_lock(&ce->mu);
			continue;
		}
		if (!has_work(ce))
			break; /* stopping, and every job is back */
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

static int cpu_cancel(gm_engine *e, gm_job *job)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;
	gm_job **at, *prev = NULL;
	int rv = GM_ENOTFOUND;

	pthread_mutex_lock(&ce->mu);
	for (at = &ce->head; *at != NULL; prev = *at, at = &(*at)->next) {
		if (*at != job)
			continue;
		*at = job->next;
		if (ce->tail == job)
			ce->tail = prev;
		job->next = NULL;
		rv = GM_OK;
		break;
	}
	pthread_mutex_unlock(&ce->mu);
	return rv;
}

static int cpu_warmup(gm_engine *e)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	pthread_mutex_lock(&ce->mu);
	ce->warm = 1;
	pthread_cond_signal(&ce->wake);
	pthread_mutex_unlock(&ce->mu);
	return GM_OK;
}

static int cpu_submit(gm_engine *e, gm_job **jobs, size_t n)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;
	size_t i;

	if (n == 0)
		return GM_OK;
	for (i = 0; i + 1 < n; i++)
		jobs[i]->next = jobs[i + 1];
	jobs[n - 1]->next = NULL;

	pthread_mutex_lock(&ce->mu);
	if (ce->tail != NULL)
		ce->tail->next = jobs[0];
	else
		ce->head = jobs[0];
	ce->tail = jobs[n - 1];
	pthread_cond_signal(&ce->wake);
	pthread_mutex_unlock(&ce->mu);
	return GM_OK;
}

static void cpu_close(gm_engine *e)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	pthread_mutex_lock(&ce->mu);
	ce->stopping = 1;
	pthread_cond_signal(&ce->wake);
	pthread_mutex_unlock(&ce->mu);
	pthread_join(ce->worker, NULL);

	gm_crew_close(ce->crew);
	munmap(ce->arena, ce->arena_bytes);
	pthread_cond_destroy(&ce->wake);
	pthread_mutex_destroy(&ce->mu);
	free(ce);
}

static void *cpu_arena(gm_engine *e, uint64_t *size)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	*size = ce->arena_bytes;
	return ce->arena;
}

static int cpu_faulted(const gm_engine *e)
{
	return 0;
}

static unsigned cpu_devices(const gm_engine *e)
{
	return 1;
}

static void cpu_device_stats(gm_engine *e, unsigned dev, gm_device_stats *s)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	memset(s, 0, sizeof(*s));
	if (dev != 0)
		return;
	snprintf(s->name, sizeof(s->name), "%s", ce->name);
	pthread_mutex_lock(&ce->mu);
	s->jobs = __atomic_load_n(&ce->jobs, __ATOMIC_RELAXED);
	s->busy_us = ce->busy_us;
	if (ce->running)
		s->busy_us += gm_engine_now_us() - ce->busy_since;
	/* BLAS calls are all the CPU engine runs: no copies, no streams. */
	s->kernel_us = s->busy_us;
	pthread_mutex_unlock(&ce->mu);
}

static const struct gm_engine_ops cpu_ops = {
    .name = "cpu",
    .close = cpu_close,
    .arena = cpu_arena,
    .supports = cpu_supports,
    .submit = cpu_submit,
    .faulted = cpu_faulted,
    .devices = cpu_devices,
    .device_stats = cpu_device_stats,
    .warmup = cpu_warmup,
    .cancel = cpu_cancel,
};

static int map_arena(struct cpu_engine *ce, uint64_t bytes, char *msg,
		     size_t msglen)
{
	void *p;

	if (bytes == 0 || bytes > SIZE_MAX) {
		snprintf(msg, msglen, "pool_bytes %llu is not a usable size",
			 (unsigned long long)bytes);
		return GM_EINVAL;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		snprintf(msg, msglen, "cannot map a %llu-byte arena: %s",
			 (unsigned long long)bytes, strerror(errno));
		return GM_ENOMEM;
	}
	ce->arena = p;
	ce->arena_bytes = bytes;
	return GM_OK;
}

int gm_engine_cpu_open(const gm_engine_config *cfg, gm_engine_done_fn done,
		       void *arg, gm_engine **out, char *msg, size_t msglen)
{
	struct cpu_engine *ce;
	int rv;

	*out = NULL;
	if ((ce = calloc(1, sizeof(*ce))) == NULL) {
		snprintf(msg, msglen, "out of memory for the cpu engine");
		return GM_ENOMEM;
	}
	if ((rv = map_arena(ce, cfg->pool_bytes, msg, msglen)) != 0) {
		free(ce);
		return rv;
	}
	ce->base.ops = &cpu_ops;
	ce->base.done = done;
	ce->base.done_arg = arg;
	pthread_mutex_init(&ce->mu, NULL);
	pthread_cond_init(&ce->wake, NULL);
	/* OpenBLAS keeps one thread count per process. */
	if (cfg->cpu_threads != 0)
		openblas_set_num_threads((int)cfg->cpu_threads);
	snprintf(ce->name, sizeof(ce->name), "cpu (OpenBLAS, %d threads)",
		 openblas_get_num_threads());
	ce->piece_us =
	    cfg->cpu_piece_us != 0 ? cfg->cpu_piece_us : GM_CPU_PIECE_US;
	ce->piece_flops = (double)cfg->cpu_piece_flops;
	ce->rate[0] = RATE_GUESS * openblas_get_num_threads();
	ce->rate[1] = 2.0 * ce->rate[0];
	/* As many threads run small jobs as OpenBLAS runs large ones. */
	if (gm_crew_open((unsigned)openblas_get_num_threads() - 1, &ce->crew) !=
		GM_OK ||
	    (rv = pthread_create(&ce->worker, NULL, worker_main, ce)) != 0) {
		snprintf(msg, msglen, "cannot start the cpu worker threads");
		gm_crew_close(ce->crew);
		pthread_cond_destroy(&ce->wake);
		pthread_mutex_destroy(&ce->mu);
		munmap(ce->arena, ce->arena_bytes);
		free(ce);
		return GM_ENOMEM;
	}
	*out = &ce->base;
	return GM_OK;
}
