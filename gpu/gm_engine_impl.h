/*
 * gm_engine_impl.h - what an engine implementation provides.
 *
 * Private to gpu/. Each engine embeds struct gm_engine as its first member
 * and points it at its table of operations; gm_engine.c dispatches the
 * public calls of gm_engine.h through the table, and defines the helpers
 * below (this header belongs to it).
 */
#ifndef GM_ENGINE_IMPL_H
#define GM_ENGINE_IMPL_H

#include "gm_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gm_engine_ops {
	const char *name;
	void (*close)(gm_engine *e);
	void *(*arena)(gm_engine *e, uint64_t *size);
	int (*supports)(const gm_engine *e, const gm_job_desc *d, char *msg,
			size_t msglen);
	int (*submit)(gm_engine *e, gm_job **jobs, size_t n);
	int (*faulted)(const gm_engine *e);
	unsigned (*devices)(const gm_engine *e);
	void (*device_stats)(gm_engine *e, unsigned dev, gm_device_stats *s);
	/* Optional (NULL: memory is used as it is, nothing to undo). */
	int (*reg)(gm_engine *e, void *p, size_t len, char *msg, size_t msglen);
	void (*unreg)(gm_engine *e, void *p);
	/* Starts a warm-up that ends with gm_engine_warmed(); GM_OK or a
	 * code for a warm-up that could not start (then not called). */
	int (*warmup)(gm_engine *e);
	/* Optional (NULL: nothing is taken back): gm_engine_cancel. */
	int (*cancel)(gm_engine *e, gm_job *job);
};

struct gm_engine {
	const struct gm_engine_ops *ops;
	gm_engine_done_fn done;
	void *done_arg;
	gm_engine_jobs_fn start; /* NULL: nobody asked */
	/* Jobs started, by priority (gm_engine_started); atomic. */
	uint64_t starts[GM_BATCH_PRIO_MAX + 1];
	gm_engine_jobs_fn done_together; /* NULL: done for each */
	/* The warm-up under way or last ended (gm_engine.c). */
	gm_engine_warm_fn warm_fn;
	void *warm_arg;
	double warm_t0, warm_ms;
	int warming; /* atomic */
};

/* Ends the warm-up ops->warmup started: records its time and calls the
 * warm callback. Once per warm-up, on an engine thread. */
void gm_engine_warmed(gm_engine *e, int status, const char *msg);

/* Marks job and the n - 1 jobs after it through next started
 * (gm_job.started), counts them (gm_engine_starts) and tells the caller
 * (gm_engine_on_start), if it asked. On the engine thread that commits
 * to running them; a job already marked is not counted again. */
void gm_engine_started(gm_engine *e, gm_job *job, uint32_t n);

/* Hands job and the n - 1 jobs after it through next back to the
 * caller, in one call when it asked (gm_engine_on_done_together), else
 * through the done callback one by one. On an engine thread. */
void gm_engine_back(gm_engine *e, gm_job *job, uint32_t n);

/* Whether job, not yet started, is past its deadline at now (the clock
 * of gm_engine_now_us); if so, fails it with GM_ETIMEDOUT and its text,
 * for the engine to hand back instead of running it. */
int gm_engine_expired(gm_job *job, double now);

/* The monotonic clock in microseconds. */
double gm_engine_now_us(void);

#ifdef __cplusplus
}
#endif
#endif
