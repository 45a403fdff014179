/*
 * gm_cuda_ooc.cu - a device's out-of-core runner (gm_cuda_ooc.h): its
 * CUDA objects, its thread and queue, the slab each job takes and gives
 * back, and the host copies around a job: a socket payload staged in
 * before its tiles, a result copied out after them.
 *
 * The runner counts as a context in flight while it holds its slab, so
 * the device's busy period covers a tiled job, the issue thread waits
 * for the slab to come back rather than failing a job that does not fit
 * beside it, and the warm-up waits as for any job.
 */
#include "gm_cuda_ooc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_cuda_dev.h"
#include "gm_cuda_err.h"
#include "gm_engine_impl.h"

static_assert(GM_CUDA_OOC_STAGE_BYTES >= 8ull * GM_MAX_DIM,
	      "a staging buffer holds a line of any operand");

int gm_cuda_ooc_wanted(struct gm_cuda_dev *d, const gm_job *j, uint64_t bytes)
{
	return (j->host_pageable & GM_PAGEABLE_ALL) != 0 ||
	       bytes > gm_ooc_share(gm_pool_size(d->pool),
				    d->sh->cfg.ooc_share_pct);
}

/* ---- host copies ------------------------------------------------------ */

/* bytes from src to dst, in items the crew shares. */
static void copy_flat(struct gm_cuda_ooc *o, void *dst, const void *src,
		      uint64_t bytes)
{
	uint64_t whole = bytes / GM_CUDA_COPY_ITEM * GM_CUDA_COPY_ITEM;

	gm_cuda_tile_copy(o, dst, GM_CUDA_COPY_ITEM, src, GM_CUDA_COPY_ITEM,
			  GM_CUDA_COPY_ITEM, bytes / GM_CUDA_COPY_ITEM);
	memcpy((char *)dst + whole, (const char *)src + whole, bytes - whole);
}

/* ---- CUDA objects --------------------------------------------------------
 */

static int make_events(struct gm_cuda_ooc *o, char *msg, size_t msglen)
{
	int i;

	for (i = 0; i < GM_OOC_EVENTS; i++)
		GM_CUDA_TRY(
		    cudaEventCreateWithFlags(&o->ev[i], cudaEventDisableTiming),
		    msg, msglen);
	GM_CUDA_TRY(cudaEventCreate(&o->end), msg, msglen);
	for (i = 0; i < GM_CUDA_OOC_TIMED; i++) {
		GM_CUDA_TRY(cudaEventCreate(&o->timed[i].start), msg, msglen);
		GM_CUDA_TRY(cudaEventCreate(&o->timed[i].end), msg, msglen);
	}
	return GM_OK;
}

/* Pinned once, at open: a job never waits for pinning. */
static int make_staging(struct gm_cuda_ooc *o, char *msg, size_t msglen)
{
	GM_CUDA_TRY(cudaHostAlloc((void **)&o->stage_mem,
				  GM_CUDA_OOC_STAGES * GM_CUDA_OOC_STAGE_BYTES,
				  cudaHostAllocPortable),
		    msg, msglen);
	for (int i = 0; i < GM_CUDA_OOC_STAGES; i++) {
		o->stage[i].p = o->stage_mem + i * GM_CUDA_OOC_STAGE_BYTES;
		GM_CUDA_TRY(cudaEventCreateWithFlags(&o->stage[i].ev,
						     cudaEventDisableTiming),
			    msg, msglen);
	}
	return GM_OK;
}

static int make_streams(struct gm_cuda_ooc *o, void *ws, uint64_t ws_bytes,
			char *msg, size_t msglen)
{
	int least, greatest;

	GM_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest), msg,
		    msglen);
	for (int i = 0; i < GM_OOC_STREAMS; i++)
		GM_CUDA_TRY(cudaStreamCreateWithPriority(
				&o->s[i], cudaStreamNonBlocking, least),
			    msg, msglen);
	GM_CUBLAS_TRY(cublasCreate(&o->blas), msg, msglen);
	GM_CUBLAS_TRY(cublasSetStream(o->blas, o->s[GM_OOC_MUL]), msg, msglen);
	GM_CUBLAS_TRY(cublasSetWorkspace(o->blas, ws, ws_bytes), msg, msglen);
	return GM_OK;
}

int gm_cuda_ooc_open(struct gm_cuda_dev *d, void *ws, uint64_t ws_bytes,
		     unsigned helpers, char *msg, size_t msglen)
{
	struct gm_cuda_ooc *o;
	int rv;

	if ((o = (struct gm_cuda_ooc *)calloc(1, sizeof(*o))) == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	d->ooc = o;
	o->dev = d;
	for (int i = 0; i < GM_CUDA_OOC_TIMED; i++)
		o->timed[i].stream = -1;
	if ((rv = make_streams(o, ws, ws_bytes, msg, msglen)) != GM_OK ||
	    (rv = make_events(o, msg, msglen)) != GM_OK ||
	    (rv = make_staging(o, msg, msglen)) != GM_OK)
		return rv;
	if (gm_crew_open(helpers, &o->crew) != GM_OK) {
		snprintf(msg, msglen, "cannot start the staging threads");
		return GM_ENOMEM;
	}
	return GM_OK;
}

void gm_cuda_ooc_close(struct gm_cuda_dev *d)
{
	struct gm_cuda_ooc *o = d->ooc;
	int i;

	if (o == NULL)
		return;
	gm_crew_close(o->crew);
	if (o->blas != NULL)
		cublasDestroy(o->blas);
	for (i = 0; i < GM_OOC_STREAMS; i++)
		if (o->s[i] != NULL)
			cudaStreamDestroy(o->s[i]);
	for (i = 0; i < GM_OOC_EVENTS; i++)
		if (o->ev[i] != NULL)
			cudaEventDestroy(o->ev[i]);
	if (o->end != NULL)
		cudaEventDestroy(o->end);
	for (i = 0; i < GM_CUDA_OOC_TIMED; i++) {
		if (o->timed[i].start != NULL)
			cudaEventDestroy(o->timed[i].start);
		if (o->timed[i].end != NULL)
			cudaEventDestroy(o->timed[i].end);
	}
	for (i = 0; i < GM_CUDA_OOC_STAGES; i++)
		if (o->stage[i].ev != NULL)
			cudaEventDestroy(o->stage[i].ev);
	if (o->stage_mem != NULL)
		cudaFreeHost(o->stage_mem);
	(void)cudaGetLastError();
	free(o);
	d->ooc = NULL;
}

/* ---- a job ------------------------------------------------------------- */

/* The fault that stopped the device, as j's text. */
static void fault_text(struct gm_cuda_dev *d, gm_job *j)
{
	pthread_mutex_lock(&d->sh->fault_mu);
	snprintf(j->msg, sizeof(j->msg), "%s", d->sh->fault_msg);
	pthread_mutex_unlock(&d->sh->fault_mu);
}

/*
 * bytes of the top of the pool for j, counted as a context in flight.
 * While it waits, the issue thread starts nothing new (ooc_want), so the
 * slab is had once the jobs in flight are done. GM_OK, or a code with
 * the text in j->msg.
 */
static int take(struct gm_cuda_dev *d, gm_job *j, uint64_t bytes, void **slab)
{
	int rv;

	pthread_mutex_lock(&d->mu);
	d->ooc_want = bytes;
	for (;;) {
		if (__atomic_load_n(&d->sh->faulted, __ATOMIC_ACQUIRE)) {
			rv = GM_EGPUFAULT;
			break;
		}
		if ((rv = gm_pool_alloc_high(d->pool, bytes, slab)) !=
		    GM_ENOMEM)
			break;
		d->mem_waits++;
		pthread_cond_wait(&d->ooc_cv, &d->mu);
		d->mem_waits--;
	}
	d->ooc_want = 0;
	if (rv == GM_OK && d->inflight++ == 0)
		gm_cuda_dev_busy_begin(d);
	pthread_cond_signal(&d->issue_cv);
	pthread_mutex_unlock(&d->mu);
	if (rv == GM_EGPUFAULT)
		fault_text(d, j);
	else if (rv != GM_OK)
		snprintf(j->msg, sizeof(j->msg), "GPU memory pool: %s",
			 gm_strerror(rv));
	return rv;
}

/* Gives the slab back; end_us is the job's end in the busy period. */
static void give(struct gm_cuda_dev *d, void *slab, double end_us)
{
	pthread_mutex_lock(&d->mu);
	gm_pool_free(d->pool, slab);
	if (end_us > d->span_end_us)
		d->span_end_us = end_us;
	if (--d->inflight == 0)
		gm_cuda_dev_busy_end(d);
	gm_cuda_dev_freed(d);
	pthread_mutex_unlock(&d->mu);
}

/* The plan for j in d's share of the pool; GM_OK or a code with text. */
static int plan_of(struct gm_cuda_dev *d, gm_job *j, gm_ooc_plan *p)
{
	uint64_t share =
	    gm_ooc_share(gm_pool_size(d->pool), d->sh->cfg.ooc_share_pct);
	uint64_t line = d->sh->cfg.ooc_line_bytes;
	int rv;

	rv = gm_ooc_plan_make(&j->d, share, line ? line : GM_OOC_LINE_BYTES, p);
	if (rv != GM_OK)
		snprintf(j->msg, sizeof(j->msg),
			 "a GPU pool share of %llu bytes is too small to tile "
			 "the job in; raise device_pool_bytes",
			 (unsigned long long)share);
	return rv;
}

static int run_tiles(struct gm_cuda_dev *d, gm_job *j, const gm_ooc_plan *p,
		     void *slab, double *end_us)
{
	struct gm_cuda_ooc *o = d->ooc;
	gm_job_sizes sz;
	int rv;

	if (j->copy_in != NULL) /* a socket payload to stage first */
		copy_flat(o, j->copy_to != NULL ? j->copy_to : j->a, j->copy_in,
			  j->copy_in_bytes);
	rv = gm_cuda_tile_run(o, j, p, (char *)slab, end_us);
	if (rv == GM_EGPUFAULT)
		gm_cuda_dev_fault(d, j->msg);
	if (gm_cuda_dev_faulted(d)) {
		fault_text(d, j);
		return GM_EGPUFAULT;
	}
	if (rv != GM_OK)
		return rv;
	j->h2d_us = o->sum_us[GM_OOC_IN];
	j->kernel_us = o->sum_us[GM_OOC_MUL];
	j->d2h_us = o->sum_us[GM_OOC_OUT];
	if (j->copy_out != NULL && gm_job_sizes_of(&j->d, &sz) == GM_OK)
		copy_flat(o, j->copy_out, j->out, sz.out);
	return GM_OK;
}

/* A job waits in the runner's queue and for its slab; it starts once it
 * has the slab (its first tile follows its host staging at once), unless
 * its deadline passed meanwhile. */
static void run(struct gm_cuda_dev *d, gm_job *j)
{
	double end_us = -1;
	gm_ooc_plan plan;
	void *slab = NULL;

	if (gm_engine_expired(j, gm_engine_now_us())) {
		gm_cuda_dev_finish(d, j);
		return;
	}
	if ((j->status = plan_of(d, j, &plan)) == GM_OK &&
	    (j->status = take(d, j, plan.bytes, &slab)) == GM_OK) {
		if (gm_engine_expired(j, gm_engine_now_us())) {
			give(d, slab, end_us);
			gm_cuda_dev_finish(d, j);
			return;
		}
		gm_engine_started(d->sh->engine, j, 1);
		j->start_us = gm_engine_now_us();
		j->status = run_tiles(d, j, &plan, slab, &end_us);
		give(d, slab, end_us);
	}
	gm_cuda_dev_finish(d, j);
}

static void *ooc_main(void *arg)
{
	struct gm_cuda_dev *d = (struct gm_cuda_dev *)arg;
	gm_job *j;

	cudaSetDevice(d->index);
	pthread_mutex_lock(&d->mu);
	while ((j = (gm_job *)gm_handoff_pop_wait(&d->ooc_jobs)) != NULL) {
		pthread_mutex_unlock(&d->mu);
		run(d, j);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int gm_cuda_ooc_start(struct gm_cuda_dev *d, char *msg, size_t msglen)
{
	if (pthread_create(&d->ooc_thread, NULL, ooc_main, d) != 0) {
		snprintf(msg, msglen, "cannot start a thread");
		return GM_ENOMEM;
	}
	d->ooc_started = 1;
	return GM_OK;
}

void gm_cuda_ooc_queue(struct gm_cuda_dev *d, gm_job *j)
{
	pthread_mutex_lock(&d->mu);
	/* Closed only after the issue thread stopped. */
	(void)gm_handoff_push(&d->ooc_jobs, j);
	pthread_mutex_unlock(&d->mu);
}

void gm_cuda_ooc_stop(struct gm_cuda_dev *d)
{
	pthread_mutex_lock(&d->mu);
	gm_handoff_close(&d->ooc_jobs);
	pthread_mutex_unlock(&d->mu);
	if (d->ooc_started)
		pthread_join(d->ooc_thread, NULL);
	d->ooc_started = 0;
}
