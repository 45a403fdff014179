/*
 * gm_cuda_done.cu - a stream's completion thread: hands the stream's jobs
 * back, in the order they were issued on it, a batch's all at once with
 * the batch's timings.
 *
 * The thread sleeps on its queue (gm_handoff.h), then waits for the
 * context's end event. Waking from a blocking-sync wait costs about 20 us (55
 * us against 36 us for a 64^3 job's round trip, DESIGN.md), so one thread per
 * device first polls the event for up to spin_us (gm_engine.h, gm_spin.h),
 * which a small job finishes within; only then does it sleep in
 * cudaEventSynchronize, a blocking-sync event, until the device
 * interrupts. Likewise, having handed its last context back, one thread
 * per device polls its queue for spin_us before it sleeps on it: the
 * issue thread gives a context issued with nothing in flight to the
 * stream given last (gm_cuda_issue.cu), so the next small job of a
 * client that sends one at a time finds that thread awake. The polling
 * happens only for spin_us after work, so an idle engine burns no CPU,
 * and one thread at a time for each, so the streams of a busy device do
 * not take a core each. Waiting on the event
 * rather than being called from the stream (cudaLaunchHostFunc) matters
 * when the device faults: host functions queued behind a sticky error
 * never run, while the wait returns the error. Each stream has its own
 * thread because a stream's jobs finish in order but the streams do not.
 * The device's memory goes back to the pool only here, once the stream
 * has passed the job, so no copy can still be reading a reused slab.
 * Each completion also times its job's end against the start of the
 * device's busy period, whose length is the latest such end, and puts
 * its start on the host clock (gm_cuda_dev.h).
 */
#include "gm_cuda_done.h"

#include <stdio.h>
#include <string.h>

#include "gm_cuda_dev.h"
#include "gm_cuda_err.h"
#include "gm_engine_impl.h"

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
	for (int i = 0; i < EV_COUNT; i++) {
		cudaEvent_t ev = gm_cuda_ctx_ev(c, i);

		c->at[i] = c->ended && state == SPAN_OPEN
			       ? elapsed_or(d->span_ev, ev, -1)
			       : -1;
	}
	c->end_us = c->at[EV_END];
}

/* When c's first copy began, on the host clock, c's end having been seen
 * at seen: against the busy period's start when c was timed against it,
 * else by c's own events; 0 when they cannot tell. */
static double start_of(struct gm_cuda_dev *d, struct gm_cuda_ctx *c,
		       double seen)
{
	double start, span;

	if (c->at[EV_H2D_START] >= 0 && c->at[EV_END] >= 0) {
		pthread_mutex_lock(&d->mu);
		start = gm_cuda_dev_start_of(d, c->at, seen);
		pthread_mutex_unlock(&d->mu);
		return start;
	}
	if (!c->ended ||
	    (span = elapsed_or(c->start, gm_cuda_ctx_ev(c, EV_END), -1)) < 0)
		return 0;
	return seen - span;
}

static void read_times(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;

	/* A job run on its host memory has no copies: its kernel read the
	 * operands and wrote the result across the link. Mapped output has
	 * no copy back. */
	j->h2d_us = c->direct ? 0 : elapsed_us(c->start, c->ev[EV_H2D_END]);
	j->kernel_us =
	    elapsed_us(gm_cuda_ctx_ev(c, EV_H2D_END), c->ev[EV_KERNEL_END]);
	j->d2h_us = c->mapped || c->direct
			? 0
			: elapsed_us(c->ev[EV_KERNEL_END], c->ev[EV_END]);
}

/* Gives every job of a batch what its first job holds: the batch's
 * status, message and timings. */
static void spread(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job, *k = j->next;

	for (uint32_t i = 1; i < c->njobs; i++, k = k->next) {
		k->status = j->status;
		if (j->status != GM_OK)
			memcpy(k->msg, j->msg, sizeof(k->msg));
		k->h2d_us = j->h2d_us;
		k->kernel_us = j->kernel_us;
		k->d2h_us = j->d2h_us;
		k->start_us = j->start_us;
	}
}

/* Results the daemon wants elsewhere than where the device put them. */
static void copy_out(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;
	gm_job_sizes sz;

	for (uint32_t i = 0; i < c->njobs; i++, j = j->next)
		if (j->status == GM_OK && j->copy_out != NULL &&
		    gm_job_sizes_of(&j->d, &sz) == GM_OK)
			memcpy(j->copy_out, j->out, sz.out);
}

/* An end event polled, and what the last query said. */
struct end_poll {
	cudaEvent_t ev;
	cudaError_t e;
};

static bool ended(void *arg)
{
	struct end_poll *p = (struct end_poll *)arg;

	return (p->e = cudaEventQuery(p->ev)) != cudaErrorNotReady;
}

/* Polls ev for up to spin_us when no other thread of d polls an event
 * (gm_spin.h), then sleeps on it. */
static cudaError_t wait_event(struct gm_cuda_dev *d, cudaEvent_t ev)
{
	struct end_poll p = {ev, cudaErrorNotReady};

	if (gm_spin_until(&d->spin_ends, ended, &p))
		return p.e;
	return cudaEventSynchronize(ev);
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
		e = wait_event(d, gm_cuda_ctx_ev(c, EV_END));
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
	uint32_t n = c->njobs;
	double seen;
	int faulted;

	wait_for(d, c);
	seen = gm_engine_now_us();
	c->end_us = -1;
	for (int i = 0; i < EV_COUNT; i++)
		c->at[i] = -1;
	if ((faulted = gm_cuda_dev_faulted(d))) {
		j->status = GM_EGPUFAULT;
		pthread_mutex_lock(&d->sh->fault_mu);
		snprintf(j->msg, sizeof(j->msg), "%s", d->sh->fault_msg);
		pthread_mutex_unlock(&d->sh->fault_mu);
	} else {
		time_against_span(d, c);
		j->start_us = start_of(d, c, seen);
		if (j->status == GM_OK)
			read_times(c);
	}
	spread(c);
	if (!faulted)
		copy_out(c);
	/* c goes back to the free list: the jobs are read off it first. */
	gm_cuda_dev_release(d, c);
	gm_cuda_dev_finish_n(d, j, n);
}

void *gm_cuda_done_main(void *arg)
{
	struct gm_cuda_stream *st = (struct gm_cuda_stream *)arg;
	struct gm_cuda_dev *d = st->dev;
	struct gm_cuda_ctx *c;

	cudaSetDevice(d->index);
	/* An empty queue is polled for spin_us by one thread of d at a time
	 * (d->spin_idle), then slept on (see the file comment). */
	pthread_mutex_lock(&d->mu);
	while ((c = (struct gm_cuda_ctx *)gm_handoff_pop_wait(&st->done)) !=
	       NULL) {
		pthread_mutex_unlock(&d->mu);
		complete(d, c);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}
