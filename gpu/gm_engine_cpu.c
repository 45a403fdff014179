/*
 * gm_engine_cpu.c - the CPU engine: OpenBLAS on one worker thread.
 *
 * gm_engine_submit appends jobs to a FIFO and wakes a dedicated worker
 * thread (never libuv's pool: a GEMM there would starve the daemon's file
 * system work). The worker runs one job at a time with cblas_dgemm or
 * cblas_sgemm, which OpenBLAS spreads over its own threads, and calls the
 * done callback from the worker. Kernel choice is a GPU concern: every
 * kernel a job names runs as BLAS here. The CPU reads and writes host
 * memory directly, so copy_in and copy_out are used as the operands
 * themselves instead of being staged through the arena. The arena is only
 * reserved address space (MAP_NORESERVE): pages the pool never hands out
 * cost nothing.
 */
#include "gm_engine_impl.h"

#include <cblas.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "gm_error.h"

struct cpu_engine {
	struct gm_engine base; /* first: gm_engine.c casts back */
	pthread_t worker;
	pthread_mutex_t mu; /* guards everything below it */
	pthread_cond_t wake;
	gm_job *head, *tail;
	int stopping;
	uint64_t jobs;
	double busy_us;
	/* Set at open, read-only afterwards. */
	void *arena;
	uint64_t arena_bytes;
	char name[64];
};

/* The operands of one job, wherever they live. */
struct operands {
	const void *a, *b, *c; /* c NULL when the job has no C */
	void *out;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

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
	job->h2d_us = job->kernel_us = job->d2h_us = 0.0;
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
	t0 = now_us();
	/* BLAS updates C in place, so C is first placed where the result
	 * goes; without C, beta stays 0 and BLAS never reads out. */
	if (op.c != NULL) {
		if (op.c != op.out)
			memcpy(op.out, op.c, sz.c);
		beta = job->d.beta;
	}
	gemm(&job->d, &op, beta);
	job->kernel_us = now_us() - t0;
}

static void *worker_main(void *arg)
{
	struct cpu_engine *ce = arg;
	gm_job *job;

	pthread_mutex_lock(&ce->mu);
	for (;;) {
		while (ce->head == NULL && !ce->stopping)
			pthread_cond_wait(&ce->wake, &ce->mu);
		if ((job = ce->head) == NULL)
			break; /* stopping, and the queue is drained */
		if ((ce->head = job->next) == NULL)
			ce->tail = NULL;
		pthread_mutex_unlock(&ce->mu);

		job->next = NULL;
		run(job);

		pthread_mutex_lock(&ce->mu);
		ce->jobs++;
		ce->busy_us += job->kernel_us;
		pthread_mutex_unlock(&ce->mu);
		/* Last: once back through the callback the job is not ours. */
		ce->base.done(job, ce->base.done_arg);
		pthread_mutex_lock(&ce->mu);
	}
	pthread_mutex_unlock(&ce->mu);
	return NULL;
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
	s->jobs = ce->jobs;
	s->busy_us = ce->busy_us;
	/* BLAS calls are all the CPU engine runs: no copies, no streams. */
	s->kernel_us = ce->busy_us;
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
	if ((rv = pthread_create(&ce->worker, NULL, worker_main, ce)) != 0) {
		snprintf(msg, msglen, "cannot start the cpu worker: %s",
			 strerror(rv));
		pthread_cond_destroy(&ce->wake);
		pthread_mutex_destroy(&ce->mu);
		munmap(ce->arena, ce->arena_bytes);
		free(ce);
		return GM_ENOMEM;
	}
	*out = &ce->base;
	return GM_OK;
}
