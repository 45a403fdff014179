/*
 * gm_cuda_dev.cu - a device's life: opening it (streams, cuBLAS handles,
 * the one device allocation and its pool, the threads), closing it, and
 * the small shared steps its threads take under its lock: queueing a
 * wave, giving memory back, recording a fault, handing a job back.
 *
 * Device memory is allocated once, at open, so that no job pays for
 * cudaMalloc / cudaFree (each of which may synchronise the whole device);
 * a gm_pool keeps the books over the device address range, which it
 * never dereferences.
 */
#include "gm_cuda_dev.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_cuda_direct.h"
#include "gm_cuda_err.h"
#include "gm_engine_impl.h"

#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)
/* Default pool: half the free memory, at most this; the rest is left to
 * cuBLAS, other processes and the driver. */
#define POOL_DEFAULT_MAX (8 * GIB)
/* Staging threads beside the issue thread: half the cores in all, at
 * most eight copiers, which is about what host memory feeds. */
#define STAGE_COPIERS_MAX 8
#define GROUPS_MAX	  4096 /* keys the issue thread sorts at once */
/* Host bytes of one batch, at most, and at most an eighth of the pool
 * so that batches of a large wave still take turns in it. Large enough
 * that a batch's own cost (its events, two to four copies, its calls:
 * about 30 us of issue) is small beside its copies (80 us at 50 GB/s),
 * small enough that 4096 jobs of 64^3 fp32 (192 MiB) make 48 batches,
 * six rounds of 8 streams, whose copies in and back overlap. */
#define BATCH_BYTES (4ull << 20)

uint64_t gm_cuda_job_bytes(const gm_job *j)
{
	gm_job_sizes sz;

	if (gm_job_sizes_of(&j->d, &sz) != GM_OK)
		return 0;
	return sz.a + sz.b + sz.c + sz.out;
}

/* cuBLAS recommends 32 MiB of workspace per handle on Hopper, 4 MiB
 * before. */
static uint64_t workspace_bytes(const cudaDeviceProp *p)
{
	return p->major >= 9 ? 32 * MIB : 4 * MIB;
}

/* The pool: device_pool_bytes, which with the workspaces (lead) must fit
 * in the device's memory (else startup stops, naming the key: the
 * allocation would fail anyway, less clearly), or the default. */
static int pool_bytes(struct gm_cuda_dev *d, uint64_t lead, uint64_t *bytes,
		      char *msg, size_t msglen)
{
	uint64_t want = d->sh->cfg.device_pool_bytes;
	size_t free_b, total_b;

	GM_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b), msg, msglen);
	if (want != 0 && want + lead > total_b) {
		snprintf(msg, msglen,
			 "device_pool_bytes %llu (%.1f GiB) and %llu bytes of "
			 "cuBLAS workspace are more than device %d's memory, "
			 "%llu bytes (%.1f GiB)",
			 (unsigned long long)want, (double)want / GIB,
			 (unsigned long long)lead, d->index,
			 (unsigned long long)total_b, (double)total_b / GIB);
		return GM_ECONFIG;
	}
	if (want != 0)
		*bytes = want;
	else
		*bytes = free_b / 2 < POOL_DEFAULT_MAX ? free_b / 2
						       : POOL_DEFAULT_MAX;
	return GM_OK;
}

/* One workspace per stream of the ring and one for the runner, then the
 * pool. */
static int open_memory(struct gm_cuda_dev *d, uint64_t ws, char *msg,
		       size_t msglen)
{
	uint64_t pool = 0, lead = ws * (d->nstreams + 1);
	int rv;

	if ((rv = pool_bytes(d, lead, &pool, msg, msglen)) != 0)
		return rv;
	GM_CUDA_TRY(cudaMalloc(&d->mem, lead + pool), msg, msglen);
	if (gm_pool_create((char *)d->mem + lead, pool, &d->pool) != GM_OK) {
		snprintf(msg, msglen, "device pool bookkeeping");
		return GM_ENOMEM;
	}
	return GM_OK;
}

/* Streams do not synchronise with the legacy default stream, so nothing
 * outside the engine can serialise them. The ring's have the highest
 * priority, so that their kernels' blocks are scheduled ahead of those
 * of a tiled job's GEMMs (the runner's streams have the lowest). */
static int open_stream(struct gm_cuda_stream *st, void *ws, uint64_t ws_bytes,
		       char *msg, size_t msglen)
{
	int least, greatest;

	st->ws = ws;
	GM_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest), msg,
		    msglen);
	GM_CUDA_TRY(cudaStreamCreateWithPriority(&st->s, cudaStreamNonBlocking,
						 greatest),
		    msg, msglen);
	GM_CUBLAS_TRY(cublasCreate(&st->blas), msg, msglen);
	GM_CUBLAS_TRY(cublasSetStream(st->blas, st->s), msg, msglen);
	GM_CUBLAS_TRY(cublasSetWorkspace(st->blas, ws, ws_bytes), msg, msglen);
	return GM_OK;
}

static unsigned stage_threads(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long n = cpus / 2 < STAGE_COPIERS_MAX ? cpus / 2 : STAGE_COPIERS_MAX;

	return n > 1 ? (unsigned)(n - 1) : 0;
}

static int open_streams(struct gm_cuda_dev *d, char *msg, size_t msglen)
{
	cudaDeviceProp p;
	uint64_t ws;
	unsigned i;
	int rv;

	GM_CUDA_TRY(cudaGetDeviceProperties(&p, d->index), msg, msglen);
	snprintf(d->name, sizeof(d->name), "%.63s", p.name);
	ws = workspace_bytes(&p);
	if ((rv = open_memory(d, ws, msg, msglen)) != 0)
		return rv;
	for (i = 0; i < d->nstreams; i++) {
		rv = open_stream(&d->streams[i], (char *)d->mem + i * ws, ws,
				 msg, msglen);
		if (rv != 0)
			return rv;
	}
	GM_CUDA_TRY(cudaEventCreate(&d->span_ev), msg, msglen);
	if ((rv = gm_cuda_ooc_open(d, (char *)d->mem + d->nstreams * ws, ws,
				   stage_threads(), msg, msglen)) != GM_OK)
		return rv;
	return gm_cuda_lt_open(ws, &d->lt, msg, msglen);
}

/* What the issue thread keeps: the sorting of small jobs, the scratch of
 * a batch's copies and of a chunk's staging, and the batch bounds. */
static int open_issue(struct gm_cuda_dev *d, char *msg, size_t msglen)
{
	const gm_engine_config *cfg = &d->sh->cfg;
	uint64_t eighth = gm_pool_size(d->pool) / 8;

	d->small_bytes = cfg->small_job_bytes != 0 ? cfg->small_job_bytes
						   : GM_SMALL_JOB_BYTES;
	if (gm_cuda_direct_open(cfg->direct_job_bytes != 0
				    ? cfg->direct_job_bytes
				    : GM_DIRECT_JOB_BYTES,
				&d->direct, msg, msglen) != GM_OK)
		return GM_ENOMEM;
	d->batch_bytes = BATCH_BYTES < eighth ? BATCH_BYTES : eighth;
	d->pieces = (struct gm_cuda_piece *)calloc(GM_CUDA_STAGE_PIECES,
						   sizeof(*d->pieces));
	if (d->pieces == NULL ||
	    gm_batch_groups_create(GROUPS_MAX, &d->groups) != GM_OK ||
	    gm_cuda_copies_open(&d->copies) != GM_OK) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	return GM_OK;
}

static int start_threads(struct gm_cuda_dev *d, char *msg, size_t msglen)
{
	unsigned i;

	if (gm_cuda_stager_open(stage_threads(), &d->stager) != GM_OK) {
		snprintf(msg, msglen, "cannot start the staging threads");
		return GM_ENOMEM;
	}
	for (i = 0; i < d->nstreams; i++) {
		struct gm_cuda_stream *st = &d->streams[i];

		if (pthread_create(&st->thread, NULL, gm_cuda_done_main, st)) {
			snprintf(msg, msglen, "cannot start a thread");
			return GM_ENOMEM;
		}
		st->started = 1;
	}
	if (pthread_create(&d->issue_thread, NULL, gm_cuda_issue_main, d)) {
		snprintf(msg, msglen, "cannot start a thread");
		return GM_ENOMEM;
	}
	d->issue_started = 1;
	return gm_cuda_ooc_start(d, msg, msglen);
}

/* The stats show nothing before now. */
static void show_from(struct gm_cuda_dev *d, double now)
{
	gm_tl_shown_init(&d->show_busy, now);
	gm_tl_shown_init(&d->show_kernel, now);
	gm_tl_shown_init(&d->show_copy, now);
	gm_tl_shown_init(&d->show_overlap, now);
	for (unsigned i = 0; i < GM_MAX_STREAMS; i++)
		gm_tl_shown_init(&d->show_stream[i], now);
}

/* The device's queues and their spin policies; GM_ENOMEM with none
 * left made. */
static int init_queues(struct gm_cuda_dev *d)
{
	unsigned spin_us = d->sh->cfg.spin_us, i;

	gm_spin_init(&d->spin_waves, spin_us);
	gm_spin_init(&d->spin_ends, spin_us);
	gm_spin_init(&d->spin_idle, spin_us);
	if (gm_handoff_init(&d->waves, &d->mu,
			    offsetof(struct gm_cuda_wave, next),
			    &d->spin_waves) != 0)
		return GM_ENOMEM;
	if (gm_handoff_init(&d->ooc_jobs, &d->mu, offsetof(gm_job, next),
			    NULL) != 0)
		goto fail_ooc;
	for (i = 0; i < d->nstreams; i++)
		if (gm_handoff_init(&d->streams[i].done, &d->mu,
				    offsetof(struct gm_cuda_ctx, next),
				    &d->spin_idle) != 0)
			goto fail_done;
	return GM_OK;

fail_done:
	while (i-- > 0)
		gm_handoff_destroy(&d->streams[i].done);
	gm_handoff_destroy(&d->ooc_jobs);
fail_ooc:
	gm_handoff_destroy(&d->waves);
	return GM_ENOMEM;
}

static void destroy_queues(struct gm_cuda_dev *d)
{
	for (unsigned i = 0; i < d->nstreams; i++)
		gm_handoff_destroy(&d->streams[i].done);
	gm_handoff_destroy(&d->ooc_jobs);
	gm_handoff_destroy(&d->waves);
}

static int alloc_dev(struct gm_cuda_shared *sh, int index,
		     struct gm_cuda_dev **out)
{
	struct gm_cuda_dev *d;
	pthread_condattr_t ca;
	unsigned i;

	if ((d = (struct gm_cuda_dev *)calloc(1, sizeof(*d))) == NULL)
		return GM_ENOMEM;
	d->nstreams = sh->cfg.streams;
	d->streams =
	    (struct gm_cuda_stream *)calloc(d->nstreams, sizeof(*d->streams));
	if (d->streams == NULL) {
		free(d);
		return GM_ENOMEM;
	}
	d->sh = sh;
	d->index = index;
	show_from(d, gm_engine_now_us());
	pthread_mutex_init(&d->mu, NULL);
	for (i = 0; i < d->nstreams; i++)
		d->streams[i].dev = d;
	if (init_queues(d) != GM_OK) {
		pthread_mutex_destroy(&d->mu);
		free(d->streams);
		free(d);
		return GM_ENOMEM;
	}
	/* On the clock of the jobs' deadlines (gm_cuda_issue.cu waits for
	 * memory until one). */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->issue_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&d->ooc_cv, NULL);
	*out = d;
	return GM_OK;
}

int gm_cuda_dev_open(struct gm_cuda_shared *sh, int index,
		     struct gm_cuda_dev **out, char *msg, size_t msglen)
{
	struct gm_cuda_dev *d;
	cudaError_t e;
	int rv;

	*out = NULL;
	if (alloc_dev(sh, index, &d) != GM_OK) {
		snprintf(msg, msglen, "device %d: out of host memory", index);
		return GM_ENOMEM;
	}
	/* Blocking sync lets a waiting thread sleep instead of spinning.
	 * Where the context already exists the flag cannot change; the end
	 * events are blocking-sync events of their own anyway. */
	if ((e = cudaSetDevice(index)) == cudaSuccess &&
	    cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
		(void)cudaGetLastError();
	if (e != cudaSuccess)
		rv = gm_cuda_fail(e, "cudaSetDevice", __FILE__, __LINE__, msg,
				  msglen);
	else if ((rv = open_streams(d, msg, msglen)) == 0 &&
		 (rv = open_issue(d, msg, msglen)) == 0)
		rv = start_threads(d, msg, msglen);
	if (rv != 0) {
		gm_cuda_dev_close(d);
		return rv;
	}
	*out = d;
	return GM_OK;
}

void gm_cuda_ctx_destroy(struct gm_cuda_ctx *c)
{
	int i;

	for (i = 0; i < EV_COUNT; i++)
		if (c->ev[i] != NULL)
			cudaEventDestroy(c->ev[i]);
	free(c);
}

static void free_ctxs(struct gm_cuda_dev *d)
{
	struct gm_cuda_ctx *c, *next;

	for (c = d->free_ctx; c != NULL; c = next) {
		next = c->next;
		gm_cuda_ctx_destroy(c);
	}
	d->free_ctx = NULL;
}

static void free_waves(struct gm_cuda_dev *d)
{
	struct gm_cuda_wave *w, *next;

	for (w = d->free_waves; w != NULL; w = next) {
		next = w->next;
		free(w);
	}
	d->free_waves = NULL;
}

/* Stops the issue thread once it has issued everything queued, the
 * runner once it has run every tiled job the issue thread gave it, then
 * the completion threads once they have handed everything back. */
static void stop_threads(struct gm_cuda_dev *d)
{
	unsigned i;

	pthread_mutex_lock(&d->mu);
	gm_handoff_close(&d->waves);
	pthread_mutex_unlock(&d->mu);
	if (d->issue_started)
		pthread_join(d->issue_thread, NULL);
	gm_cuda_ooc_stop(d);

	pthread_mutex_lock(&d->mu);
	for (i = 0; i < d->nstreams; i++)
		gm_handoff_close(&d->streams[i].done);
	pthread_mutex_unlock(&d->mu);
	for (i = 0; i < d->nstreams; i++)
		if (d->streams[i].started)
			pthread_join(d->streams[i].thread, NULL);
}

/* After a sticky fault these calls fail; nothing more can be done about
 * it than exiting, which is the daemon's next step. */
void gm_cuda_dev_close(struct gm_cuda_dev *d)
{
	unsigned i;

	stop_threads(d);
	gm_cuda_stager_close(d->stager);
	cudaSetDevice(d->index);
	gm_cuda_ooc_close(d);
	free_ctxs(d);
	free_waves(d);
	gm_cuda_direct_close(d->direct);
	gm_cuda_lt_close(d->lt);
	gm_batch_groups_destroy(d->groups);
	gm_cuda_copies_close(d->copies);
	free(d->pieces);
	if (d->span_ev != NULL)
		cudaEventDestroy(d->span_ev);
	gm_tl_free(&d->tl);
	for (i = 0; i < d->nstreams; i++) {
		struct gm_cuda_stream *st = &d->streams[i];

		if (st->blas != NULL)
			cublasDestroy(st->blas);
		if (st->s != NULL)
			cudaStreamDestroy(st->s);
	}
	gm_pool_destroy(d->pool);
	if (d->mem != NULL)
		cudaFree(d->mem);
	(void)cudaGetLastError();
	pthread_cond_destroy(&d->issue_cv);
	pthread_cond_destroy(&d->ooc_cv);
	destroy_queues(d);
	pthread_mutex_destroy(&d->mu);
	free(d->streams);
	free(d);
}

struct gm_cuda_wave *gm_cuda_dev_wave(struct gm_cuda_dev *d)
{
	struct gm_cuda_wave *w;

	pthread_mutex_lock(&d->mu);
	if ((w = d->free_waves) != NULL)
		d->free_waves = w->next;
	pthread_mutex_unlock(&d->mu);
	if (w == NULL)
		w = (struct gm_cuda_wave *)malloc(sizeof(*w));
	if (w != NULL)
		w->head = NULL;
	return w;
}

void gm_cuda_dev_wave_free(struct gm_cuda_dev *d, struct gm_cuda_wave *w)
{
	pthread_mutex_lock(&d->mu);
	w->next = d->free_waves;
	d->free_waves = w;
	pthread_mutex_unlock(&d->mu);
}

void gm_cuda_dev_warm(struct gm_cuda_dev *d)
{
	pthread_mutex_lock(&d->mu);
	d->warm = 1;
	gm_handoff_kick(&d->waves);
	pthread_mutex_unlock(&d->mu);
}

/* Takes job out of the list at *at, of at most max links: 1, or 0 when
 * it is not there. */
static int unlink_job(gm_job **at, gm_job *job, uint32_t max)
{
	for (uint32_t i = 0; i < max && *at != NULL; i++, at = &(*at)->next) {
		if (*at == job) {
			*at = job->next;
			job->next = NULL;
			return 1;
		}
	}
	return 0;
}

int gm_cuda_dev_take_back(struct gm_cuda_dev *d, gm_job *job)
{
	struct gm_cuda_wave *w;
	int rv;

	pthread_mutex_lock(&d->mu);
	rv = gm_cuda_ooc_take_back(d, job);
	/* What the issue thread waits for memory with is the thread's
	 * again when it wakes: it reads what is left of it then. */
	if (rv != GM_OK && d->current_waits) {
		if (unlink_job(&d->current, job, d->current_n)) {
			d->current_n--;
			/* to wait on for what is left */
			pthread_cond_signal(&d->issue_cv);
			rv = GM_OK;
		} else if (gm_batch_groups_remove(d->groups, job)) {
			rv = GM_OK;
		}
	}
	if (rv != GM_OK && unlink_job(&d->held, job, UINT32_MAX))
		rv = GM_OK;
	/* An emptied wave issues nothing. */
	for (w = (struct gm_cuda_wave *)gm_handoff_first(&d->waves);
	     w != NULL && rv != GM_OK;
	     w = (struct gm_cuda_wave *)gm_handoff_next(&d->waves, w))
		if (unlink_job(&w->head, job, UINT32_MAX))
			rv = GM_OK;
	if (rv == GM_OK)
		d->outstanding -= gm_cuda_job_bytes(job);
	pthread_mutex_unlock(&d->mu);
	return rv;
}

double gm_cuda_dev_start_of(struct gm_cuda_dev *d, const double *at,
			    double seen)
{
	double span = seen - at[EV_END];

	if (d->span_host == 0 || span < d->span_host)
		d->span_host = span;
	return d->span_host + at[EV_H2D_START];
}

void gm_cuda_dev_queue(struct gm_cuda_dev *d, struct gm_cuda_wave *w,
		       uint64_t bytes)
{
	pthread_mutex_lock(&d->mu);
	(void)gm_handoff_push(&d->waves, w); /* closed only after the loop
						 stopped queueing */
	d->outstanding += bytes;
	pthread_mutex_unlock(&d->mu);
}

uint64_t gm_cuda_dev_load(struct gm_cuda_dev *d)
{
	uint64_t load;

	pthread_mutex_lock(&d->mu);
	load = d->outstanding;
	pthread_mutex_unlock(&d->mu);
	return load;
}

void gm_cuda_dev_stats(struct gm_cuda_dev *d, gm_device_stats *s)
{
	double now, busy;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", d->name);
	pthread_mutex_lock(&d->mu);
	now = gm_engine_now_us();
	s->jobs = d->jobs;
	s->mem_used = gm_pool_used(d->pool);
	s->mem_total = gm_pool_size(d->pool);
	s->busy_periods = d->periods;
	busy = d->busy_us + (d->inflight > 0 ? now - d->busy_since : 0);
	s->busy_us = gm_tl_show(&d->show_busy, busy, now);
	s->copy_us = gm_tl_show(&d->show_copy, d->tl.busy_us[GM_TL_COPY], now);
	s->kernel_us =
	    gm_tl_show(&d->show_kernel, d->tl.busy_us[GM_TL_KERNEL], now);
	s->overlap_us = gm_tl_show(&d->show_overlap, d->tl.overlap_us, now);
	s->nstreams =
	    d->nstreams < GM_MAX_STREAMS ? d->nstreams : GM_MAX_STREAMS;
	for (unsigned i = 0; i < s->nstreams; i++)
		s->stream_busy_us[i] =
		    gm_tl_show(&d->show_stream[i], d->stream_busy_us[i], now);
	pthread_mutex_unlock(&d->mu);
}

void gm_cuda_dev_fault(struct gm_cuda_dev *d, const char *msg)
{
	struct gm_cuda_shared *sh = d->sh;

	pthread_mutex_lock(&sh->fault_mu);
	if (!__atomic_load_n(&sh->faulted, __ATOMIC_ACQUIRE)) {
		snprintf(sh->fault_msg, sizeof(sh->fault_msg), "GPU %d: %s",
			 d->index, msg);
		__atomic_store_n(&sh->faulted, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sh->fault_mu);
	pthread_mutex_lock(&d->mu);
	__atomic_store_n(&d->faulted, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&d->issue_cv);
	pthread_cond_broadcast(&d->ooc_cv);
	pthread_mutex_unlock(&d->mu);
}

int gm_cuda_dev_faulted(struct gm_cuda_dev *d)
{
	return __atomic_load_n(&d->faulted, __ATOMIC_ACQUIRE);
}

/* Adds ctx's copies and kernel to the device's timeline and its whole
 * span to its stream's busy time. Under mu. */
static void count_intervals(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx)
{
	const double *t = ctx->at;
	unsigned s = (unsigned)(ctx->st - d->streams);

	if (t[EV_H2D_START] < 0 || t[EV_END] < 0)
		return;
	gm_tl_add(&d->tl, GM_TL_COPY, t[EV_H2D_START], t[EV_H2D_END]);
	gm_tl_add(&d->tl, GM_TL_KERNEL, t[EV_H2D_END], t[EV_KERNEL_END]);
	if (!ctx->mapped)
		gm_tl_add(&d->tl, GM_TL_COPY, t[EV_KERNEL_END], t[EV_END]);
	if (s < GM_MAX_STREAMS)
		d->stream_busy_us[s] += t[EV_END] - t[EV_H2D_START];
}

void gm_cuda_dev_release(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx)
{
	pthread_mutex_lock(&d->mu);
	gm_pool_free(d->pool, ctx->slab);
	ctx->slab = NULL;
	ctx->job = NULL;
	ctx->next = d->free_ctx;
	d->free_ctx = ctx;
	if (ctx->end_us > d->span_end_us)
		d->span_end_us = ctx->end_us;
	count_intervals(d, ctx);
	if (--d->inflight == 0)
		gm_cuda_dev_busy_end(d);
	gm_cuda_dev_freed(d);
	pthread_mutex_unlock(&d->mu);
}

void gm_cuda_dev_freed(struct gm_cuda_dev *d)
{
	/* Only to a thread that waits for memory: one asleep for other
	 * work would wake for nothing, and take mu from the completion
	 * that woke it on its way to hand its jobs back. */
	if (d->mem_waits == 0)
		return;
	pthread_cond_signal(&d->issue_cv);
	pthread_cond_signal(&d->ooc_cv);
}

/* Under mu: the issue thread and the runner may both find the span
 * pending, and only one of them may record it. */
int gm_cuda_dev_open_span(struct gm_cuda_dev *d, cudaStream_t s)
{
	int open = SPAN_ALREADY_OPEN;

	pthread_mutex_lock(&d->mu);
	if (d->span_state == SPAN_PENDING) {
		if (cudaEventRecord(d->span_ev, s) == cudaSuccess) {
			d->span_state = SPAN_OPEN;
			open = SPAN_OPENED_HERE;
		} else { /* the period counts by the host clock */
			(void)cudaGetLastError();
		}
	}
	if (d->span_state != SPAN_OPEN)
		open = SPAN_NOT_OPEN;
	pthread_mutex_unlock(&d->mu);
	return open;
}

void gm_cuda_dev_busy_begin(struct gm_cuda_dev *d)
{
	d->busy_since = gm_engine_now_us();
	d->span_state = SPAN_PENDING;
	d->span_end_us = 0;
	d->span_host = 0;
}

/* A period whose first copy never ran (every job failed before it), or
 * whose ends could not be timed, counts by the host clock. */
void gm_cuda_dev_busy_end(struct gm_cuda_dev *d)
{
	if (d->span_state == SPAN_OPEN && d->span_end_us > 0) {
		d->busy_us += d->span_end_us;
		gm_tl_fold(&d->tl);
	} else {
		d->busy_us += gm_engine_now_us() - d->busy_since;
		gm_tl_discard(&d->tl);
	}
	d->periods++;
	d->span_state = SPAN_NONE;
}

void gm_cuda_dev_finish(struct gm_cuda_dev *d, gm_job *job)
{
	gm_cuda_dev_finish_n(d, job, 1);
}

void gm_cuda_dev_finish_n(struct gm_cuda_dev *d, gm_job *job, uint32_t n)
{
	uint64_t bytes = 0;
	gm_job *j = job;
	uint32_t i;

	for (i = 0; i < n; i++, j = j->next) {
		j->device = d->index;
		bytes += gm_cuda_job_bytes(j);
	}
	pthread_mutex_lock(&d->mu);
	d->jobs += n;
	d->outstanding -= bytes;
	pthread_mutex_unlock(&d->mu);
	gm_engine_back(d->sh->engine, job, n);
}
