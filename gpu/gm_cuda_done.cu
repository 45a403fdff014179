/*
 * gm_cuda_done.cu - a stream's completion thread: hands the stream's jobs
 * back, in the order they were issued on it.
 *
 * The thread sleeps on its queue, then in cudaEventSynchronize on the
 * job's end event, a blocking-sync event, so the thread sleeps until the
 * device interrupts and an idle engine burns no CPU. Waiting on the event
 * rather than being called from the stream (cudaLaunchHostFunc) matters
 * when the device faults: host functions queued behind a sticky error
 * never run, while the wait returns the error. Each stream has its own
 * thread because a stream's jobs finish in order but the streams do not.
 * The device's memory goes back to the pool only here, once the stream
 * has passed the job, so no copy can still be reading a reused slab.
 * Each completion also times its job's end against the start of the
 * device's busy period, whose length is the latest such end.
 */
#include "gm_cuda_dev.h"

#include <stdio.h>
#include <string.h>

#include "gm_cuda_err.h"

/* Microseconds between two completed events; unknown when the runtime
 * cannot say. */
static double elapsed_or(cudaEvent_t from, cudaEvent_t to, double unknown)
{
	float ms;

	if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) {
		(void)cudaGetLastError();
		return unknown;
	}
	return ms * 1e3;
}

static double elapsed_us(cudaEvent_t from, cudaEvent_t to)
{
	return elapsed_or(from, to, 0);
}

/* Times c's events against the start of the busy period it is part
 * of (c->at, -1 where unknown). The span event cannot be recorded again
 * before c is released: a new period needs every job of this one
 * released first. */
static void time_against_span(struct gm_cuda_dev *d, struct gm_cuda_ctx *c)
{
	int state;

	pthread_mutex_lock(&d->mu);
	state = d->span_state;
	pthread_mutex_unlock(&d->mu);
	for (int i = 0; i < EV_COUNT; i++)
		c->at[i] = c->ended && state == SPAN_OPEN
			       ? elapsed_or(d->span_ev, c->ev[i], -1)
			       : -1;
	c->end_us = c->at[EV_END];
}

static void read_times(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;

	j->h2d_us = elapsed_us(c->ev[EV_H2D_START], c->ev[EV_H2D_END]);
	j->kernel_us = elapsed_us(c->ev[EV_H2D_END], c->ev[EV_KERNEL_END]);
	/* Mapped output has no copy back: the kernel wrote the result. */
	j->d2h_us =
	    c->mapped ? 0 : elapsed_us(c->ev[EV_KERNEL_END], c->ev[EV_END]);
}

/*
 * Sleeps until the stream is past c. Any failure to learn that, sticky or
 * not, faults the device: its streams can no longer be trusted, and its
 * memory cannot be reused safely.
 */
static void wait_for(struct gm_cuda_dev *d, struct gm_cuda_ctx *c)
{
	char msg[GM_MSG_TEXT + 1];
	cudaError_t e;

	if (gm_cuda_dev_faulted(d))
		return;
	if (c->ended)
		e = cudaEventSynchronize(c->ev[EV_END]);
	else /* the end event could not be recorded */
		e = cudaStreamSynchronize(c->st->s);
	if (e != cudaSuccess) {
		gm_cuda_fail(e, "waiting for a job", __FILE__, __LINE__, msg,
			     sizeof(msg));
		gm_cuda_dev_fault(d, msg);
	}
}

static void complete(struct gm_cuda_dev *d, struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;

	wait_for(d, c);
	c->end_us = -1;
	for (int i = 0; i < EV_COUNT; i++)
		c->at[i] = -1;
	if (gm_cuda_dev_faulted(d)) {
		j->status = GM_EGPUFAULT;
		pthread_mutex_lock(&d->sh->fault_mu);
		snprintf(j->msg, sizeof(j->msg), "%s", d->sh->fault_msg);
		pthread_mutex_unlock(&d->sh->fault_mu);
	} else {
		time_against_span(d, c);
		if (j->status == GM_OK)
			read_times(c);
		if (j->status == GM_OK && j->copy_out != NULL)
			memcpy(j->copy_out, j->out, c->sz.out);
	}
	gm_cuda_dev_release(d, c);
	gm_cuda_dev_finish(d, j);
}

void *gm_cuda_done_main(void *arg)
{
	struct gm_cuda_stream *st = (struct gm_cuda_stream *)arg;
	struct gm_cuda_dev *d = st->dev;
	struct gm_cuda_ctx *c;

	cudaSetDevice(d->index);
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (st->head == NULL && !d->done_stopping)
			pthread_cond_wait(&st->cv, &d->mu);
		if ((c = st->head) == NULL)
			break;
		if ((st->head = c->next) == NULL)
			st->tail = NULL;
		pthread_mutex_unlock(&d->mu);
		complete(d, c);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}
