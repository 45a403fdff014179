/*
 * gm_ctl_bench.h - private to gemmctl bench: what it was asked to run
 * (gm_ctl_benchcmd.c parses it) and what it measured, the types that the
 * run (gm_ctl_benchrun.h) and the report (gm_ctl_benchrep.h) share. All
 * of it lives on gemmctl's main thread; the completion callbacks of the
 * requests only hand finished requests over to it.
 */
#ifndef GM_CTL_BENCH_H
#define GM_CTL_BENCH_H

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

#endif
