/*
 * gm_cuda_dev.cu - the small shared steps a device's threads and the
 * engine take under its lock: queueing a wave, taking a job back,
 * giving memory back, timing busy periods, recording a fault, handing
 * a job back. The bottom of the device's modules (gm_cuda_dev.h has the
 * layering): it calls none of them.
 */
#include "gm_cuda_dev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_engine_impl.h"

uint64_t gm_cuda_job_bytes(const gm_job *j)
{
	gm_job_sizes sz;

	if (gm_job_sizes_of(&j->d, &sz) != GM_OK)
		return 0;
	return sz.a + sz.b + sz.c + sz.out;
}

void gm_cuda_ctx_destroy(struct gm_cuda_ctx *c)
{
	int i;

	for (i = 0; i < EV_COUNT; i++)
		if (c->ev[i] != NULL)
			cudaEventDestroy(c->ev[i]);
	free(c);
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
	rv = gm_handoff_remove(&d->ooc_jobs, job) ? GM_OK : GM_ENOTFOUND;
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
