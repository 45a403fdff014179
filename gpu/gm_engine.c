/*
 * gm_engine.c - the engine interface's bottom: forwards the public calls
 * of gm_engine.h to the engine's table of operations, and holds what
 * every engine calls back into (gm_engine_impl.h): handing jobs back and
 * telling starts, failing expired jobs, ending a warm-up, the clock.
 * Opening an engine, which calls the engines, is gm_engine_open.c's, so
 * that the CUDA engine's plugin links this file and nothing of the CPU
 * engine or the loader; it keeps no state, so the plugin's copy and
 * gemmd's behave as one.
 *
 * Layering of gpu/'s engine modules, calls and includes going down:
 *   gm_engine_open      picks and opens an engine
 *   gm_engine_cpu       the CPU engine's table: open, submit, cancel, stats
 *   gm_cpu_worker       the CPU engine's threads and state
 *   gm_engine_load      loads the CUDA engine's plugin, forwards to it
 *   gm_engine_plugin    the plugin's entry table (gm_engine_cuda.cu fills
 *                       it: gm_cuda_dev.h has the CUDA engine's layers)
 *   gm_engine           this file, gm_engine.h and gm_engine_impl.h
 * with gm_cpu_piece, gm_crew, gm_pool, gm_batch, gm_ooc and gm_timeline
 * below as leaves.
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
	gm_job *j = job;

	for (uint32_t i = 0; i < n; i++, j = j->next)
		if (__atomic_exchange_n(&j->started, 1, __ATOMIC_RELEASE) == 0)
			__atomic_add_fetch(&e->starts[j->prio], 1,
					   __ATOMIC_RELEASE);
	if (e->start != NULL)
		e->start(job, n, e->done_arg);
}

uint64_t gm_engine_starts(const gm_engine *e, unsigned prio)
{
	return __atomic_load_n(&e->starts[prio], __ATOMIC_ACQUIRE);
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

void gm_engine_close(gm_engine *e)
{
	e->ops->close(e);
}

const char *gm_engine_name(const gm_engine *e)
{
	return e->ops->name;
}

void *gm_engine_arena(gm_engine *e, uint64_t *size)
{
	return e->ops->arena(e, size);
}

int gm_engine_supports(const gm_engine *e, const gm_job_desc *d, char *msg,
		       size_t msglen)
{
	return e->ops->supports(e, d, msg, msglen);
}

int gm_engine_submit(gm_engine *e, gm_job **jobs, size_t n)
{
	return e->ops->submit(e, jobs, n);
}

void gm_engine_on_start(gm_engine *e, gm_engine_jobs_fn fn)
{
	e->start = fn;
}

void gm_engine_on_done_together(gm_engine *e, gm_engine_jobs_fn fn)
{
	e->done_together = fn;
}

int gm_engine_cancel(gm_engine *e, gm_job *job)
{
	if (e->ops->cancel == NULL)
		return GM_ENOTFOUND;
	return e->ops->cancel(e, job);
}

int gm_engine_register(gm_engine *e, void *p, size_t len, char *msg,
		       size_t msglen)
{
	if (e->ops->reg == NULL)
		return GM_OK;
	return e->ops->reg(e, p, len, msg, msglen);
}

void gm_engine_unregister(gm_engine *e, void *p)
{
	if (e->ops->unreg != NULL)
		e->ops->unreg(e, p);
}

int gm_engine_warmup(gm_engine *e, gm_engine_warm_fn fn, void *arg)
{
	int rv;

	if (__atomic_load_n(&e->warming, __ATOMIC_ACQUIRE))
		return GM_EBUSY;
	e->warm_fn = fn;
	e->warm_arg = arg;
	e->warm_t0 = gm_engine_now_us();
	__atomic_store_n(&e->warming, 1, __ATOMIC_RELEASE);
	if ((rv = e->ops->warmup(e)) != GM_OK)
		__atomic_store_n(&e->warming, 0, __ATOMIC_RELEASE);
	return rv;
}

int gm_engine_ready(const gm_engine *e, double *ms)
{
	int warming = __atomic_load_n(&e->warming, __ATOMIC_ACQUIRE);

	if (ms != NULL)
		__atomic_load(&e->warm_ms, ms, __ATOMIC_RELAXED);
	return !warming;
}

int gm_engine_faulted(const gm_engine *e)
{
	return e->ops->faulted(e);
}

unsigned gm_engine_devices(const gm_engine *e)
{
	return e->ops->devices(e);
}

void gm_engine_device_stats(gm_engine *e, unsigned dev, gm_device_stats *s)
{
	e->ops->device_stats(e, dev, s);
}
