/*
 * gm_cuda_life.cu - a device's life: opening it (streams, cuBLAS handles,
 * the one device allocation and its pool, what the issue thread and the
 * runner keep, the threads) and closing it. The top of the device's
 * modules: it starts the threads whose bodies the others hold and is
 * called by none of them (gm_cuda_dev.h has the layering).
 *
 * Device memory is allocated once, at open, so that no job pays for
 * cudaMalloc / cudaFree (each of which may synchronise the whole device);
 * a gm_pool keeps the books over the device address range, which it
 * never dereferences.
 */
#include "gm_cuda_life.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_cuda_batch.h"
#include "gm_cuda_direct.h"
#include "gm_cuda_done.h"
#include "gm_cuda_err.h"
#include "gm_cuda_issue.h"
#include "gm_cuda_ooc.h"
#include "gm_cuda_stage.h"
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

int gm_cuda_life_open(struct gm_cuda_shared *sh, int index,
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
		gm_cuda_life_close(d);
		return rv;
	}
	*out = d;
	return GM_OK;
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
void gm_cuda_life_close(struct gm_cuda_dev *d)
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
