/*
 * gm_ctl_benchcmd.c - gemmctl bench, a load generator against a running
 * gemmd: its options, and the command itself: the daemon's stats
 * before, the run (gm_ctl_benchrun.c), the stats after, and the report
 * of both (gm_ctl_benchrep.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_ctl_bench.h"
#include "gm_ctl_benchrep.h"
#include "gm_ctl_benchrun.h"
#include "gm_proto.h"

#define DEFAULT_DURATION_S  5.0
#define DEFAULT_DIM	    256
#define DEFAULT_CONCURRENCY 4
#define MAX_CONCURRENCY	    1024

static const char bench_help[] =
    "Usage: gemmctl bench [options]\n"
    "Load a running gemmd with GEMM requests and report what it served:\n"
    "throughput (jobs/s, GFLOP/s, GB/s of operands and results), latency\n"
    "percentiles of the requests as this side saw them, the daemon's\n"
    "phases (queue, h2d, kernel, d2h, total) as the replies timed each\n"
    "job, the jobs the daemon's stats counted over the run, and failed\n"
    "jobs by error code. Operands are random, made once. A bare\n"
    "'gemmctl bench' runs 5 s of 256x256x256 fp32 jobs, 4 requests in\n"
    "flight. On a terminal a progress line is refreshed in place.\n"
    "\n"
    "  -s, --shape MxNxK     job shape; repeat for several, taken in turn\n"
    "                        (default 256x256x256)\n"
    "      --mixed MIN:MAX   random shapes instead: m, n and k each drawn\n"
    "                        from MIN..MAX for every job\n"
    "      --dtype T         fp64, fp32 (default), tf32, fp16 or bf16\n"
    "  -b, --batch J         jobs per request (default 1)\n"
    "  -c, --concurrency C   requests in flight (default 4)\n"
    "  -d, --duration S      send for S seconds (default 5), then wait for\n"
    "                        the requests in flight\n"
    "  -n, --count N         send N requests (with --duration: whichever\n"
    "                        ends first)\n"
    "      --regions         operands in a shared-memory region made once\n"
    "                        (ipc:// only); default: through the socket\n"
    "      --priority P      0 (lowest) to 3 (default 1)\n"
    "      --verify N        check N results, picked at random over the\n"
    "                        run, against a long double reference (exit 5\n"
    "                        when one is outside its tolerance)\n"
    "      --seed N          seed of the operands and shapes (default 1)\n"
    "Exit status 1 when any job failed; --concurrency times --batch past\n"
    "the daemon's queue_depth is refused EBUSY.\n"
    "\n" CONN_HELP;

/* ---- options ---- */

/* "MxNxK", each 1..GEMMD_MAX_DIM. */
static bool parse_shape(const char *s, struct gm_ctl_bench_shape *sh)
{
	uint32_t *dim[3] = {&sh->m, &sh->n, &sh->k};
	char buf[64], *tok, *save = NULL;
	long v;
	int i = 0;

	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return false;
	for (tok = strtok_r(buf, "x", &save); tok != NULL && i < 3;
	     tok = strtok_r(NULL, "x", &save)) {
		if (!gm_ctl_parse_long(tok, 1, GEMMD_MAX_DIM, &v))
			return false;
		*dim[i++] = (uint32_t)v;
	}
	return i == 3 && tok == NULL && strstr(s, "xx") == NULL &&
	       s[strlen(s) - 1] != 'x';
}

/* "MIN:MAX", 1 <= MIN <= MAX <= GEMMD_MAX_DIM. */
static bool parse_mixed(const char *s, uint32_t *lo, uint32_t *hi)
{
	const char *colon = strchr(s, ':');
	char buf[32];
	long a, b;

	if (colon == NULL || colon - s >= (long)sizeof(buf))
		return false;
	snprintf(buf, sizeof(buf), "%.*s", (int)(colon - s), s);
	if (!gm_ctl_parse_long(buf, 1, GEMMD_MAX_DIM, &a) ||
	    !gm_ctl_parse_long(colon + 1, a, GEMMD_MAX_DIM, &b))
		return false;
	*lo = (uint32_t)a;
	*hi = (uint32_t)b;
	return true;
}

/* A count option: an integer in min..max into *out. */
static int count_opt(const char *name, long min, long max, long *out)
{
	if (gm_ctl_parse_long(optarg, min, max, out))
		return 0;
	return gm_ctl_usage_error("--%s '%s': want %ld..%ld", name, optarg, min,
				  max);
}

/* One option of bench; nonzero stops with that exit status (-1: help). */
static int bench_opt(struct gm_ctl_bench_opts *o, int opt)
{
	int rc = 0;
	long v = 0;

	switch (opt) {
	case 's':
		if (o->nshapes == GM_CTL_BENCH_MAX_SHAPES)
			return gm_ctl_usage_error("at most %d --shape",
						  GM_CTL_BENCH_MAX_SHAPES);
		if (!parse_shape(optarg, &o->shape[o->nshapes++]))
			return gm_ctl_usage_error(
			    "--shape '%s': want MxNxK, each 1..%u", optarg,
			    GEMMD_MAX_DIM);
		break;
	case 'm':
		if (!parse_mixed(optarg, &o->mixed_min, &o->mixed_max))
			return gm_ctl_usage_error(
			    "--mixed '%s': want MIN:MAX, 1 <= MIN <= MAX <= %u",
			    optarg, GEMMD_MAX_DIM);
		break;
	case 't':
		if ((o->dtype = gm_dtype_parse(optarg)) == 0)
			return gm_ctl_usage_error("--dtype '%s': want fp64, "
						  "fp32, tf32, fp16 or bf16",
						  optarg);
		break;
	case 'b':
		rc = count_opt("batch", 1, GEMMD_MAX_JOBS, &v);
		o->batch = (uint32_t)v;
		break;
	case 'c':
		rc = count_opt("concurrency", 1, MAX_CONCURRENCY, &v);
		o->concurrency = (uint32_t)v;
		break;
	case 'd':
		if (!gm_ctl_parse_double(optarg, &o->duration_s) ||
		    o->duration_s <= 0 || o->duration_s > 1e6)
			return gm_ctl_usage_error(
			    "--duration '%s': want seconds > 0", optarg);
		break;
	case 'n':
		rc = count_opt("count", 1, INT64_MAX, &v);
		o->count = (uint64_t)v;
		break;
	case 'R':
		o->regions = true;
		break;
	case 'p':
		rc = count_opt("priority", 0, GEMMD_PRIORITY_MAX, &v);
		o->sub.priority = (int)v;
		break;
	case 'V':
		rc = count_opt("verify", 0, 1000000, &v);
		o->verify = (uint32_t)v;
		break;
	case 'S':
		rc = count_opt("seed", 0, INT64_MAX, &v);
		o->seed = (uint64_t)v;
		break;
	case 'h':
		fputs(bench_help, stdout);
		return -1;
	default:
		if (!gm_ctl_conn_opt(&o->conn, opt, &rc))
			return gm_ctl_try_help();
	}
	return rc;
}

static int bench_parse(int argc, char **argv, struct gm_ctl_bench_opts *o)
{
	static const struct option longopts[] = {
	    {"shape", required_argument, NULL, 's'},
	    {"mixed", required_argument, NULL, 'm'},
	    {"dtype", required_argument, NULL, 't'},
	    {"batch", required_argument, NULL, 'b'},
	    {"concurrency", required_argument, NULL, 'c'},
	    {"duration", required_argument, NULL, 'd'},
	    {"count", required_argument, NULL, 'n'},
	    {"regions", no_argument, NULL, 'R'},
	    {"priority", required_argument, NULL, 'p'},
	    {"verify", required_argument, NULL, 'V'},
	    {"seed", required_argument, NULL, 'S'},
	    CONN_OPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "s:b:c:d:n:h", longopts, NULL)) !=
	       -1) {
		if (opt == '?')
			return gm_ctl_try_help();
		if ((rc = bench_opt(o, opt)) != 0)
			return rc;
	}
	if (optind != argc)
		return gm_ctl_usage_error("unexpected argument '%s'",
					  argv[optind]);
	if (o->nshapes > 0 && o->mixed_max > 0)
		return gm_ctl_usage_error("--shape or --mixed, not both");
	if (o->regions && strncmp(gm_ctl_conn_url(&o->conn), "ipc://", 6) != 0)
		return gm_ctl_usage_error("--regions: needs an ipc:// URL, "
					  "not %s",
					  gm_ctl_conn_url(&o->conn));
	if (o->nshapes == 0 && o->mixed_max == 0)
		o->shape[o->nshapes++] = (struct gm_ctl_bench_shape){
		    DEFAULT_DIM, DEFAULT_DIM, DEFAULT_DIM};
	if (o->duration_s == 0 && o->count == 0)
		o->duration_s = DEFAULT_DURATION_S;
	return 0;
}

/* The daemon's stats document, detached from its reply, into *out. */
static int stats_doc(gemmd_client *cl, int timeout_ms, cJSON **out)
{
	char *reply = NULL;
	cJSON *doc;
	int rv = gemmd_stats(cl, &reply, timeout_ms);

	*out = NULL;
	if (rv != GM_OK)
		return rv;
	doc = cJSON_Parse(reply);
	free(reply);
	*out = cJSON_DetachItemFromObjectCaseSensitive(doc, "stats");
	cJSON_Delete(doc);
	if (cJSON_IsObject(*out))
		return GM_OK;
	cJSON_Delete(*out);
	*out = NULL;
	return GM_EJSON;
}

/* Stats, the run, stats again (none after a lost connection: they
 * would only wait out the timeout), the report; the exit status. */
static int bench_run(const struct gm_ctl_bench_opts *o, gemmd_client *cl,
		     struct gm_ctl_bench_result *r)
{
	cJSON *before, *after = NULL;
	int rc, rv;

	if ((rv = stats_doc(cl, o->conn.timeout_ms, &before)) != GM_OK)
		return gm_ctl_failed("stats", 0, rv, NULL);
	if ((rc = gm_ctl_bench_drive(o, cl, r)) == 0) {
		r->stats_rv = r->stop_rv;
		if (gm_ctl_daemon_status(r->stop_rv) != EXIT_DAEMON)
			r->stats_rv = stats_doc(cl, o->conn.timeout_ms, &after);
		gm_ctl_bench_report(o, r, before, after);
		rc = gm_ctl_bench_status(r);
	}
	cJSON_Delete(before);
	cJSON_Delete(after);
	return rc;
}

int gm_ctl_bench(int argc, char **argv)
{
	static struct gm_ctl_bench_result r; /* its histograms are large */
	struct gm_ctl_bench_opts o = {
	    .conn = {.timeout_ms = DEFAULT_TIMEOUT_MS},
	    .dtype = GEMMD_FP32,
	    .batch = 1,
	    .concurrency = DEFAULT_CONCURRENCY,
	    .sub = {GEMMD_PRIORITY_DEFAULT, 0},
	    .seed = 1,
	};
	gemmd_client *cl;
	int rc;

	if ((rc = bench_parse(argc, argv, &o)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_connect(&o.conn, &cl)) != 0)
		return rc;
	rc = bench_run(&o, cl, &r);
	gemmd_close(cl);
	return rc;
}
