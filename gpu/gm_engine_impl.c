/*
 * gm_engine_impl.c - what every engine calls back into (gm_engine_impl.h):
 * handing jobs back and telling starts, failing expired jobs, ending a
 * warm-up, the clock. Kept apart from gm_engine.c, which opens engines,
 * so that the CUDA engine's plugin links these and nothing of the CPU
 * engine or the loader; they keep no state, so the plugin's copy and
 * gemmd's behave as one.
 */
#include "gm_engine_impl.h"

#include <stdio.h>
#include <time.h>

#include "gm_error.h"

double gm_engine_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

void gm_engine_back(gm_engine *e, gm_job *job, uint32_t n)
{
	gm_job *next;

	if (e->done_together != NULL) {
		e->done_together(job, n, e->done_arg);
		return;
	}
	/* Once back through the callback a job is not ours: read on
	 * first. */
	for (; n > 0; n--, job = next) {
		next = job->next;
		e->done(job, e->done_arg);
	}
}

void gm_engine_started(gm_engine *e, gm_job *job, uint32_t n)
{
	if (e->start != NULL)
		e->start(job, n, e->done_arg);
}

int gm_engine_expired(gm_job *job, double now)
{
	if (job->deadline_us == 0.0 || now <= job->deadline_us)
		return 0;
	job->status = GM_ETIMEDOUT;
	snprintf(job->msg, sizeof(job->msg), "%s", GM_EXPIRED_MSG);
	job->h2d_us = job->kernel_us = job->d2h_us = job->start_us = 0.0;
	return 1;
}

void gm_engine_warmed(gm_engine *e, int status, const char *msg)
{
	/* Read before warming drops: a new warm-up may start after. */
	gm_engine_warm_fn fn = e->warm_fn;
	void *arg = e->warm_arg;
	double ms = (gm_engine_now_us() - e->warm_t0) / 1e3;

	__atomic_store(&e->warm_ms, &ms, __ATOMIC_RELAXED);
	__atomic_store_n(&e->warming, 0, __ATOMIC_RELEASE);
	if (fn != NULL)
		fn(arg, status, ms, status == GM_OK ? NULL : msg);
}
