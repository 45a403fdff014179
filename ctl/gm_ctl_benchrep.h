/*
 * gm_ctl_benchrep.h - private to gemmctl bench: what a run measured,
 * reported as text or JSON beside the daemon's stats, the live line
 * while it runs, and the exit status it calls for.
 */
#ifndef GM_CTL_BENCHREP_H
#define GM_CTL_BENCHREP_H

#include <cjson/cJSON.h>

#include "gm_ctl_bench.h"

/* The names of the phases, in gemmd_timings' order. */
extern const char *const gm_ctl_bench_phase[BENCH_PHASES];

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
