/*
 * gm_stats.h - the daemon's counters and latency histograms.
 *
 * A plain struct written only on the loop thread and rendered in one
 * place (gm_stats_render). Key names in the rendered document are an API
 * (README.md, "Stats"): add keys, never rename them.
 */
#ifndef GM_STATS_H
#define GM_STATS_H

#include <stdint.h>

#include "gm_engine.h"
#include "gm_hist.h"
#include "gm_proto.h"

enum gm_phase {
	GM_PHASE_QUEUE,
	GM_PHASE_H2D,
	GM_PHASE_KERNEL,
	GM_PHASE_D2H,
	GM_PHASE_TOTAL,
	GM_PHASE_COUNT
};

#define GM_DTYPE_SLOTS 6 /* indexed by enum gm_dtype, slot 0 unused */

typedef struct gm_stats {
	double start_us; /* monotonic clock at start */
	uint64_t requests;
	uint64_t requests_refused; /* malformed, busy, shutting down */
	uint64_t ctrl_requests;
	uint64_t jobs_ok;
	uint64_t jobs_failed;
	uint64_t jobs_rejected; /* in refused requests, never queued */
	uint64_t jobs_by_dtype[GM_DTYPE_SLOTS];
	uint64_t bytes_in;	       /* request bytes received */
	uint64_t bytes_out;	       /* reply bytes sent */
	double flops;		       /* 2*m*n*k of jobs that succeeded */
	uint64_t errors[GM_ERR_COUNT]; /* jobs and refusals by code */
	gm_hist phase[GM_PHASE_COUNT];
} gm_stats;

/* Zeroes s and stamps the start time. */
void gm_stats_init(gm_stats *s);

/* Counts one finished job with its timings. */
void gm_stats_job(gm_stats *s, const gm_job_desc *d, int status,
		  const gm_timings *t);

/* Monotonic clock in microseconds. Any thread. */
double gm_now_us(void);

/* Live values the stats document shows beside the counters. */
typedef struct gm_stats_live {
	const char *engine;
	uint64_t queue_depth, queue_limit;
	uint64_t inflight; /* jobs on the engine */
	uint64_t pool_used, pool_size, pool_slabs;
	int draining;
	gm_engine *eng; /* for per-device counters; may be NULL */
} gm_stats_live;

/* Renders the whole document as JSON text (malloc'd, caller frees), or
 * NULL when out of memory. Loop thread. */
char *gm_stats_render(const gm_stats *s, const gm_stats_live *live);

#endif
