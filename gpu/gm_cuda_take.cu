/*
 * gm_cuda_take.cu - how the issue thread gets a context device memory
 * (gm_cuda_take.h): a slab of the pool and a context, made on demand and
 * reused, or, while the device is full, a sleep until a completion or the
 * runner frees memory, during which the jobs waiting stay queued (taken
 * back, or handed back past their deadline).
 */
#include "gm_cuda_take.h"

#include <stdio.h>
#include <stdlib.h>

#include "gm_cuda_err.h"
#include "gm_engine_impl.h"

#define CTX_MAX 1024 /* contexts in flight per device: bounds events */

static int make_events(struct gm_cuda_ctx *c, char *msg, size_t msglen)
{
	int i;

	/* Only the end event is waited on; blocking sync makes that wait
	 * sleep. The others only time. */
	for (i = 0; i < EV_COUNT; i++)
		GM_CUDA_TRY(cudaEventCreateWithFlags(
				&c->ev[i], i == EV_END ? cudaEventBlockingSync
						       : cudaEventDefault),
			    msg, msglen);
	return GM_OK;
}

static int new_ctx(struct gm_cuda_ctx **out, char *msg, size_t msglen)
{
	struct gm_cuda_ctx *c;
	int rv;

	if ((c = (struct gm_cuda_ctx *)calloc(1, sizeof(*c))) == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	if ((rv = make_events(c, msg, msglen)) != GM_OK) {
		gm_cuda_ctx_destroy(c);
		return rv;
	}
	*out = c;
	return GM_OK;
}

/* Under mu: a context and bytes of the pool, or GM_ENOMEM when either is
 * short now. *fresh: a context must still be made (outside the lock). */
static int grab(struct gm_cuda_dev *d, uint64_t bytes, void **slab,
		struct gm_cuda_ctx **ctx, int *fresh)
{
	int rv;

	/* The runner waits for its slab: it comes first. */
	if (d->ooc_want != 0 || (d->free_ctx == NULL && d->nctx >= CTX_MAX))
		return GM_ENOMEM;
	if ((rv = gm_pool_alloc(d->pool, bytes, slab)) != GM_OK)
		return rv;
	*fresh = d->free_ctx == NULL;
	if (*fresh) {
		d->nctx++;
	} else {
		*ctx = d->free_ctx;
		d->free_ctx = (*ctx)->next;
	}
	d->was_idle = d->inflight == 0;
	if (d->inflight++ == 0)
		gm_cuda_dev_busy_begin(d);
	return GM_OK;
}

/* Undoes grab() for a context that could not be made. */
static void ungrab(struct gm_cuda_dev *d, void *slab)
{
	pthread_mutex_lock(&d->mu);
	gm_pool_free(d->pool, slab);
	d->nctx--;
	if (--d->inflight == 0)
		gm_cuda_dev_busy_end(d);
	gm_cuda_dev_freed(d);
	pthread_mutex_unlock(&d->mu);
}

/* Under mu: takes the jobs of d's current chain that passed their
 * deadline out of it (gm_engine_expired gave them their code); returns
 * them linked, for the caller to hand back without mu. Sets *due to the
 * earliest deadline of those left (0: none). */
static gm_job *unlink_expired(struct gm_cuda_dev *d, double *due)
{
	gm_job **at = &d->current, *gone = NULL, *j;
	double now = gm_engine_now_us();
	uint32_t i, n = d->current_n;

	*due = 0;
	for (i = 0; i < n && (j = *at) != NULL; i++) {
		if (!gm_engine_expired(j, now)) {
			if (j->deadline_us != 0 &&
			    (*due == 0 || j->deadline_us < *due))
				*due = j->deadline_us;
			at = &j->next;
			continue;
		}
		*at = j->next;
		d->current_n--;
		j->next = gone;
		gone = j;
	}
	return gone;
}

/* Under mu: sleeps on issue_cv until memory may have come back, or
 * just past due (gm_engine_now_us's monotonic clock, issue_cv's too)
 * when it is not 0. The current chain may be taken from meanwhile. */
static void wait_memory(struct gm_cuda_dev *d, double due)
{
	double us = due + 1; /* expired is later than the deadline */
	struct timespec at = {
	    (time_t)(us / 1e6),
	    (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3)};

	d->current_waits = 1;
	d->mem_waits++;
	if (due == 0)
		pthread_cond_wait(&d->issue_cv, &d->mu);
	else
		pthread_cond_timedwait(&d->issue_cv, &d->mu, &at);
	d->mem_waits--;
	d->current_waits = 0;
}

/* Hands back the jobs linked from j, failed. */
static void finish_list(struct gm_cuda_dev *d, gm_job *j)
{
	gm_job *next;

	for (; j != NULL; j = next) {
		next = j->next;
		j->next = NULL;
		gm_cuda_dev_finish(d, j);
	}
}

int gm_cuda_take_ctx(struct gm_cuda_dev *d, gm_job **j, uint32_t *n,
		     uint64_t bytes, int may_wait, struct gm_cuda_ctx **out)
{
	struct gm_cuda_shared *sh = d->sh;
	struct gm_cuda_ctx *ctx = NULL;
	gm_job *gone;
	void *slab = NULL;
	double due;
	int rv, fresh = 0;

	pthread_mutex_lock(&d->mu);
	d->current = *j;
	d->current_n = *n;
	for (;;) {
		if (d->current == NULL) {
			rv = GM_CUDA_TAKEN;
			break;
		}
		if (__atomic_load_n(&sh->faulted, __ATOMIC_ACQUIRE)) {
			rv = GM_EGPUFAULT;
			break;
		}
		rv = grab(d, bytes, &slab, &ctx, &fresh);
		if (rv != GM_ENOMEM || !may_wait) {
			rv = rv == GM_ENOMEM ? GM_CUDA_WOULD_WAIT : rv;
			break;
		}
		/* Nothing will free memory: no context in flight (a
		 * tiled job counts as one), no runner about to take and
		 * give back its slab. */
		if (d->inflight == 0 && d->ooc_want == 0)
			break;
		if ((gone = unlink_expired(d, &due)) != NULL) {
			pthread_mutex_unlock(&d->mu);
			finish_list(d, gone);
			pthread_mutex_lock(&d->mu);
			continue;
		}
		wait_memory(d, due);
	}
	/* What is left goes on, or back, from here. */
	*j = d->current;
	*n = d->current_n;
	d->current = NULL;
	d->current_n = 0;
	pthread_mutex_unlock(&d->mu);
	if (rv == GM_CUDA_TAKEN)
		return rv;
	if (rv == GM_EGPUFAULT) {
		pthread_mutex_lock(&sh->fault_mu);
		snprintf((*j)->msg, sizeof((*j)->msg), "%s", sh->fault_msg);
		pthread_mutex_unlock(&sh->fault_mu);
	} else if (rv == GM_ENOMEM) {
		snprintf((*j)->msg, sizeof((*j)->msg),
			 "GPU memory pool exhausted");
	} else if (rv != GM_OK && rv != GM_CUDA_WOULD_WAIT) {
		snprintf((*j)->msg, sizeof((*j)->msg), "GPU memory pool: %s",
			 gm_strerror(rv));
	}
	if (rv != GM_OK)
		return rv;
	if (fresh &&
	    (rv = new_ctx(&ctx, (*j)->msg, sizeof((*j)->msg))) != GM_OK) {
		ungrab(d, slab);
		return rv;
	}
	ctx->slab = slab;
	*out = ctx;
	return GM_OK;
}
