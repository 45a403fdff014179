/*
 * gm_ctl_benchrun.h - private to gemmctl bench: the run itself, requests
 * kept in flight on the command's client, their replies counted and a
 * sample of results checked.
 */
#ifndef GM_CTL_BENCHRUN_H
#define GM_CTL_BENCHRUN_H

#include "gm_ctl_bench.h"

/* Makes the operands, runs the load o asks for on cl and checks the
 * results kept (gm_ctl_benchrun.c); what it measured goes into r, zeroed
 * by the caller. 0, or the exit status after saying why it could not
 * start (no memory, no region). Blocks for the run. */
int gm_ctl_bench_drive(const struct gm_ctl_bench_opts *o, gemmd_client *cl,
		       struct gm_ctl_bench_result *r);

#endif
