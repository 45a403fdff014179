/*
 * gm_engine_cpu.c - the CPU engine: OpenBLAS on one worker thread and a
 * small crew.
 *
 * gm_engine_submit appends jobs to a FIFO and wakes a dedicated worker
 * thread (never libuv's pool: a GEMM there would starve the daemon's file
 * system work). The worker takes from the FIFO only what it runs next,
 * so that the jobs behind still wait where gm_engine_cancel can take them
 * back and their deadlines still count: a large job alone, which
 * cblas_dgemm or cblas_sgemm runs on OpenBLAS's own threads, or the
 * stretch of small jobs at the FIFO's head. OpenBLAS runs a small job (m
 * n k at most SMALL_MNK) on the calling thread only, so one job at a time
 * would leave the other cores idle: such a stretch is run as one burst by
 * the worker and a crew of helper threads (gm_crew.h), each job on one
 * core, so a wave of small jobs costs one wake-up per helper, not one per
 * job. Jobs taken are started (gm_engine_started); each job's start_us is
 * its own BLAS call's. The done callback is called from whichever thread
 * ran the job. The device is busy from the moment the worker takes work
 * until the FIFO is empty again, and counted so as it goes.
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
	/* The worker's: */
	gm_crew *crew;
	gm_job *burst[BURST_MAX];
};

/* The operands of one job, wherever they live. */
struct operands {
	const void *a, *b, *c; /* c NULL when the job has no C */
	void *out;
};

static int check_dtype(int dtype, char *msg, size_t msglen)
{
	const char *name;

	if (dtype == GM_FP64 || dtype == GM_FP32)
		return GM_OK;
	if ((name = gm_dtype_name(dtype)) != NULL)
		snprintf(msg, msglen,
			 "dtype %s is unsupported by the cpu engine", name);
	else
		snprintf(msg, msglen,
			 "dtype %d is unsupported by the cpu engine", dtype);
	return GM_EUNSUPPORTED;
}

static int cpu_supports(const gm_engine *e, const gm_job_desc *d, char *msg,
			size_t msglen)
{
	return check_dtype(d->dtype, msg, msglen);
}

/* With copy_to set, copy_in holds only the operands that lie in
 * [copy_to, copy_to + copy_in_bytes): each of those is read from
 * copy_in at the same offset, the others (in regions) where they are. */
static const void *in_place(const gm_job *job, const void *p, uint64_t len)
{
	const uint8_t *to = job->copy_to, *q = p;

	if (q < to || len > job->copy_in_bytes ||
	    (uint64_t)(q - to) > job->copy_in_bytes - len)
		return p;
	return (const uint8_t *)job->copy_in + (q - to);
}

/* Finds the operands of job: the wire-ordered copy_in buffer when set
 * (all of A, B, C, or with copy_to those it stands for), else a, b and
 * c; the result goes to copy_out when set, else to out. */
static int operands_of(gm_job *job, const gm_job_sizes *sz, struct operands *op)
{
	int has_c = (job->d.flags & GM_JOB_HAS_C) != 0;
	const uint8_t *in = job->copy_in;

	if (in != NULL && job->copy_to != NULL) {
		op->a = in_place(job, job->a, sz->a);
		op->b = in_place(job, job->b, sz->b);
		op->c = has_c ? in_place(job, job->c, sz->c) : NULL;
	} else if (in != NULL) {
		if (job->copy_in_bytes < sz->a + sz->b + sz->c) {
			snprintf(job->msg, sizeof(job->msg),
				 "copy_in holds %llu bytes, the job needs %llu",
				 (unsigned long long)job->copy_in_bytes,
				 (unsigned long long)(sz->a + sz->b + sz->c));
			return GM_EINVAL;
		}
		op->a = in;
		op->b = in + sz->a;
		op->c = has_c ? in + sz->a + sz->b : NULL;
	} else {
		op->a = job->a;
		op->b = job->b;
		op->c = has_c ? job->c : NULL;
	}
	op->out = job->copy_out != NULL ? job->copy_out : job->out;
	if (op->a == NULL || op->b == NULL || op->out == NULL ||
	    (has_c && op->c == NULL)) {
		snprintf(job->msg, sizeof(job->msg), "job operand missing");
		return GM_EINVAL;
	}
	return GM_OK;
}

/* Leading dimension of a densely packed operand whose op() is rows x cols:
 * the length of a stored row (row-major) or column (column-major). */
static int lead(int row_major, int trans, uint32_t rows, uint32_t cols)
{
	uint32_t stored_rows = trans ? cols : rows;
	uint32_t stored_cols = trans ? rows : cols;

	return (int)(row_major ? stored_cols : stored_rows);
}

/* out = alpha*op(A)*op(B) + beta*out, in the job's dtype and layout. */
static void gemm(const gm_job_desc *d, const struct operands *op, double beta)
{
	int row = d->layout == GM_ROW_MAJOR;
	enum CBLAS_ORDER order = row ? CblasRowMajor : CblasColMajor;
	enum CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
	int lda = lead(row, d->trans_a, d->m, d->k);
	int ldb = lead(row, d->trans_b, d->k, d->n);
	int ldc = lead(row, 0, d->m, d->n);

	if (d->dtype == GM_FP64)
		cblas_dgemm(order, ta, tb, d->m, d->n, d->k, d->alpha, op->a,
			    lda, op->b, ldb, beta, op->out, ldc);
	else
		cblas_sgemm(order, ta, tb, d->m, d->n, d->k, (float)d->alpha,
			    op->a, lda, op->b, ldb, (float)beta, op->out, ldc);
}

/* Runs one job and fills its status and timings. */
static void run(gm_job *job)
{
	struct operands op;
	gm_job_sizes sz;
	double beta = 0.0, t0;

	job->msg[0] = '\0';
	job->h2d_us = job->kernel_us = job->d2h_us = job->start_us = 0.0;
	job->device = -1;
	if ((job->status =
		 check_dtype(job->d.dtype, job->msg, sizeof(job->msg))) != 0)
		return;
	if ((job->status = gm_job_sizes_of(&job->d, &sz)) != 0) {
		snprintf(job->msg, sizeof(job->msg), "job sizes: %s",
			 gm_strerror(job->status));
		return;
	}
	if ((job->status = operands_of(job, &sz, &op)) != 0)
		return;
	job->start_us = t0 = gm_engine_now_us();
	/* BLAS updates C in place, so C is first placed where the result
	 * goes; without C, beta stays 0 and BLAS never reads out. */
	if (op.c != NULL) {
		if (op.c != op.out)
			memcpy(op.out, op.c, sz.c);
		beta = job->d.beta;
	}
	gemm(&job->d, &op, beta);
	job->kernel_us = gm_engine_now_us() - t0;
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

/* Takes the FIFO's head off it. Under mu. */
static gm_job *pop(struct cpu_engine *ce)
{
	gm_job *job = ce->head;

	if ((ce->head = job->next) == NULL)
		ce->tail = NULL;
	job->next = NULL;
	return job;
}

/*
 * Takes what runs next off the FIFO into burst[]: its first job alone
 * when that is large, else the small jobs up to the next large one (at
 * most BURST_MAX); jobs past their deadline go to *late instead.
 * Returns how many were taken, with their work in *flops. Under mu.
 */
static size_t take(struct cpu_engine *ce, gm_job **late, double *flops)
{
	double now = gm_engine_now_us();
	gm_job *job;
	size_t n = 0;

	*flops = 0;
	while (ce->head != NULL && n < BURST_MAX) {
		if (gm_engine_expired(ce->head, now)) {
			job = pop(ce);
			job->next = *late;
			*late = job;
			continue;
		}
		if (n > 0 && !small(ce->head))
			break;
		job = pop(ce);
		*flops += gm_job_flops(&job->d);
		ce->burst[n++] = job;
		if (!small(job))
			break;
	}
	return n;
}

/* Hands back the jobs taken for their deadline, and runs burst[0..n-1]
 * (one large job, or small ones) once each is told started. */
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
		return; /* all were late */
	/* One piece of news for the burst: chained for it. */
	for (i = 0; i + 1 < n; i++)
		ce->burst[i]->next = ce->burst[i + 1];
	ce->burst[n - 1]->next = NULL;
	gm_engine_started(&ce->base, ce->burst[0], (uint32_t)n);
	if (n == 1 && !small(ce->burst[0]))
		finish(ce, ce->burst[0]);
	else
		run_burst(ce, n, flops);
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

static void *worker_main(void *arg)
{
	struct cpu_engine *ce = arg;
	gm_job *late = NULL;
	double flops;
	size_t n;

	pthread_mutex_lock(&ce->mu);
	for (;;) {
		while (ce->head == NULL && !ce->warm && !ce->stopping)
			pthread_cond_wait(&ce->wake, &ce->mu);
		if (ce->warm) {
			ce->warm = 0;
			pthread_mutex_unlock(&ce->mu);
			warm_up(ce);
			pthread_mutex_lock(&ce->mu);
			continue;
		}
		if (ce->head == NULL)
			break; /* stopping, and the queue is drained */
		if (!ce->running) {
			ce->running = 1;
			ce->busy_since = gm_engine_now_us();
		}
		n = take(ce, &late, &flops);
		pthread_mutex_unlock(&ce->mu);

		run_taken(ce, late, n, flops);
		late = NULL;

		pthread_mutex_lock(&ce->mu);
		if (ce->head == NULL) {
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
