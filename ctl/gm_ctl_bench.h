/*
 * gm_ctl_bench.h - private to gemmctl bench: what it was asked to run
 * (gm_ctl_bench.c parses it), the run (gm_ctl_benchrun.c) and what it
 * measured (gm_ctl_benchrep.c reports it, as text or JSON). All of it lives on
 * gemmctl's main thread; the completion callbacks of the requests only
 * hand finished requests over to it.
 */
#ifndef GM_CTL_BENCH_H
#define GM_CTL_BENCH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "gm_ctl.h"
#include "gm_ctlhist.h"

#define GM_CTL_BENCH_MAX_SHAPES 16

/* The phases a reply times, in gemmd_timings' order. */
enum {
	BENCH_QUEUE,
	BENCH_H2D,
	BENCH_KERNEL,
	BENCH_D2H,
	BENCH_TOTAL,
	BENCH_PHASES
};

extern const char *const gm_ctl_bench_phase[BENCH_PHASES];

struct gm_ctl_bench_shape {
	uint32_t m, n, k;
};

/* The command line. */
struct gm_ctl_bench_opts {
	struct gm_ctl_conn conn;
	struct gm_ctl_bench_shape shape[GM_CTL_BENCH_MAX_SHAPES];
	int nshapes;		       /* jobs take them in turn */
	uint32_t mixed_min, mixed_max; /* nonzero: random m, n, k instead */
	int dtype;
	uint32_t batch;	      /* jobs per request */
	uint32_t concurrency; /* requests in flight */
	double duration_s;    /* 0: until count */
	uint64_t count;	      /* requests; 0: until duration_s */
	bool regions;	      /* operands in one shared-memory region */
	gemmd_submit_opts sub;
	uint32_t verify; /* results to check */
	uint64_t seed;
};

/* What the run measured. Errors count failed jobs by code: a request
 * refused whole counts each of its jobs. */
struct gm_ctl_bench_result {
	double elapsed_s; /* first request sent to last one finished */
	uint64_t requests_sent, requests_ok, requests_failed;
	uint64_t jobs_sent, jobs_ok, jobs_failed;
	double flops; /* 2*m*n*k of the jobs that succeeded */
	double bytes; /* their operands and results */
	uint64_t errors[GM_ERR_COUNT];
	int stop_rv;	    /* the refusal that stopped the run, or 0 */
	int stats_rv;	    /* why there are no stats after it, or 0 */
	gm_ctlhist latency; /* per answered request, on this side, µs */
	gm_ctlhist phase[BENCH_PHASES]; /* per job that succeeded, as its
					   reply timed it, µs */
	uint32_t checked, checked_ok;	/* --verify */
	double worst_rel, worst_tol;	/* the check of the largest rel/tol */
};

/* Makes the operands, runs the load o asks for on cl and checks the
 * results kept (gm_ctl_benchrun.c); what it measured goes into r, zeroed
 * by the caller. 0, or the exit status after saying why it could not
 * start (no memory, no region). Blocks for the run. */
int gm_ctl_bench_drive(const struct gm_ctl_bench_opts *o, gemmd_client *cl,
		       struct gm_ctl_bench_result *r);

/* The exit status the result calls for: 3 when a connection failure
 * stopped it or kept the stats after it, 5 when a check failed, 1 when
 * any job failed or a refusal stopped the run, else 0. */
int gm_ctl_bench_status(const struct gm_ctl_bench_result *r);

/* Prints the report on gm_ctl_out: text, or one JSON document with
 * --json. before and after are the daemon's stats documents (the
 * objects inside {"ok":true,"stats":...}) from around the run; its
 * counters' differences are the daemon's view of the run. after is
 * NULL when there was none (r->stats_rv says why). */
void gm_ctl_bench_report(const struct gm_ctl_bench_opts *o,
			 const struct gm_ctl_bench_result *r,
			 const cJSON *before, const cJSON *after);

/* The live line on a terminal: "\r" and the run so far. */
void gm_ctl_bench_progress(const struct gm_ctl_bench_result *r,
			   double elapsed_s);

#endif
