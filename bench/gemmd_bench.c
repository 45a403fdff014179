/*
 * gemmd_bench.c - drives a gemmd with fixed batches of GEMM jobs and
 * prints, beside each achieved time, the bound this program measured
 * for the same jobs on the same GPU in the same run.
 *
 * For each case the bound is the slowest of three phases measured alone
 * in process (gm_bound.c): every host-to-device copy, every GEMM, every
 * device-to-host copy. Then a fresh gemmd is started with the
 * configuration the case needs (or a running one is used, --url), the
 * jobs are submitted after a warm-up, several times, and two views are
 * timed (gm_drive.c): the engine's, from the first host-to-device copy to
 * the last device-to-host one on the device, and the client's, end to
 * end. Medians of each are divided by the bound. The table comes last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_bench.h"

#define REPS_DEFAULT	3
#define STREAMS_DEFAULT 8 /* gemmd's default */
#define REPS_MAX	16
#define WARM_ROUNDS	2 /* warm-up jobs: this many per stream */
/* No further run of a case starts when it would likely end after this
 * many seconds of runs: 12 GB through a socket takes ~20 s a run. */
#define CASE_SECONDS 45

/* The jobs of the issue (64 x 1024^2 fp64, 64 x 4096^2 fp32, 256 x 512^2
 * fp32) and the variations it asks for: issue order, mapped output, the
 * tiled kernel, and many requests in flight instead of one. */
static const gm_case cases[] = {
    {"fp64-1024", "breadth", GEMMD_FP64, 1024, 64, 1, 0, 0,
     GEMMD_KERNEL_CUBLAS},
    {"fp64-1024-depth", "depth", GEMMD_FP64, 1024, 64, 1, 1, 0,
     GEMMD_KERNEL_CUBLAS},
    {"fp64-1024-mapped", "breadth, mapped out", GEMMD_FP64, 1024, 64, 1, 0, 1,
     GEMMD_KERNEL_CUBLAS},
    {"fp64-1024-tiled", "breadth, tiled kernel", GEMMD_FP64, 1024, 64, 1, 0, 0,
     GEMMD_KERNEL_TILED},
    {"fp64-1024-64req", "breadth, 64 requests", GEMMD_FP64, 1024, 64, 64, 0, 0,
     GEMMD_KERNEL_CUBLAS},
    {"fp32-4096", "breadth", GEMMD_FP32, 4096, 64, 1, 0, 0,
     GEMMD_KERNEL_CUBLAS},
    {"fp32-4096-depth", "depth", GEMMD_FP32, 4096, 64, 1, 1, 0,
     GEMMD_KERNEL_CUBLAS},
    {"fp32-512", "breadth", GEMMD_FP32, 512, 256, 1, 0, 0, GEMMD_KERNEL_CUBLAS},
    {"fp32-512-depth", "depth", GEMMD_FP32, 512, 256, 1, 1, 0,
     GEMMD_KERNEL_CUBLAS},
    {"fp32-512-mapped", "breadth, mapped out", GEMMD_FP32, 512, 256, 1, 0, 1,
     GEMMD_KERNEL_CUBLAS},
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

struct opts {
	const char *gemmd, *url, *only;
	int reps;
	unsigned streams;
	char *sets[GM_BENCH_SETS_MAX];
	int nsets;
};

/* What one case came to. */
struct result {
	const gm_case *c;
	int ran;       /* bound measured */
	int driven;    /* gemmd runs made */
	gm_bound b;    /* kernel_ms is the case's kernel */
	double engine; /* medians over the runs */
	double client;
	double daemon;
	double periods;
	double error;	/* gm_drive_verify */
	int failed;	/* jobs, over all runs */
	int exit_code;	/* of the gemmd started for it */
	char note[320]; /* why a part is missing */
};

/* ---- command line ------------------------------------------------------- */

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: gemmd_bench (--gemmd PATH | --url URL) [--cases "
		"LIST]\n"
		"                   [--reps N] [--streams N] [--set "
		"KEY=VALUE]...\n"
		"  --gemmd PATH   start PATH afresh for each case, with pools "
		"sized to\n"
		"                 hold all of its jobs and the case's "
		"issue_order,\n"
		"                 mapped_output and kernel\n"
		"  --url URL      drive the gemmd running there, as it is "
		"configured;\n"
		"                 cases that need another configuration are "
		"skipped\n"
		"  --cases LIST   comma-separated case names (default: all)\n"
		"  --reps N       timed runs per case after the warm-up "
		"(default %d)\n"
		"  --streams N    gemmd's streams, and the bound's (default "
		"%d)\n"
		"  --set K=V      pass -s K=V to every gemmd started\n"
		"cases:",
		REPS_DEFAULT, STREAMS_DEFAULT);
	for (i = 0; i < NCASES; i++)
		fprintf(f, " %s", cases[i].name);
	fprintf(f, "\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->reps = REPS_DEFAULT;
	o->streams = STREAMS_DEFAULT;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		}
		if (v == NULL)
			return -1;
		i++;
		if (strcmp(a, "--gemmd") == 0)
			o->gemmd = v;
		else if (strcmp(a, "--url") == 0)
			o->url = v;
		else if (strcmp(a, "--cases") == 0)
			o->only = v;
		else if (strcmp(a, "--reps") == 0)
			o->reps = atoi(v);
		else if (strcmp(a, "--streams") == 0)
			o->streams = (unsigned)atoi(v);
		else if (strcmp(a, "--set") == 0 &&
			 o->nsets < GM_BENCH_SETS_MAX)
			o->sets[o->nsets++] = (char *)v;
		else
			return -1;
	}
	if ((o->gemmd == NULL) == (o->url == NULL) || o->reps < 1 ||
	    o->reps > REPS_MAX || o->streams < 1 || o->streams > 64)
		return -1;
	return 0;
}

static int selected(const struct opts *o, const gm_case *c)
{
	size_t n = strlen(c->name);
	const char *p = o->only;

	if (p == NULL)
		return 1;
	for (; (p = strstr(p, c->name)) != NULL; p += n)
		if ((p == o->only || p[-1] == ',') &&
		    (p[n] == '\0' || p[n] == ','))
			return 1;
	return 0;
}

/* ---- measuring ---------------------------------------------------------- */

/* Bounds are measured once per shape and kernel; later cases reuse them. */
static int bound_of(struct result *res, size_t i, unsigned streams)
{
	const gm_case *c = res[i].c;
	char err[256];
	size_t k;

	for (k = 0; k < i; k++) {
		const gm_case *o = res[k].c;

		if (res[k].ran && o->dtype == c->dtype && o->n == c->n &&
		    o->jobs == c->jobs && o->kernel == c->kernel) {
			res[i].b = res[k].b;
			res[i].ran = 1;
			return 0;
		}
	}
	printf("bound: %u x %u^2 %s, %s kernel, %u streams\n", c->jobs, c->n,
	       c->dtype == GEMMD_FP64 ? "fp64" : "fp32",
	       c->kernel == GEMMD_KERNEL_TILED ? "tiled" : "cuBLAS", streams);
	fflush(stdout);
	if (gm_bound_measure(c, streams, 1, &res[i].b, err, sizeof(err)) != 0) {
		snprintf(res[i].note, sizeof(res[i].note), "bound: %s", err);
		printf("  %s\n", res[i].note);
		return -1;
	}
	printf("  h2d %.2f ms, kernel %.2f ms (cuBLAS %.2f, tiled %.2f), "
	       "d2h %.2f ms; both copies %.2f ms, all together %.2f ms, "
	       "and with results copied out %.2f ms; median of %d\n",
	       res[i].b.h2d_ms, res[i].b.kernel_ms, res[i].b.cublas_ms,
	       res[i].b.tiled_ms, res[i].b.d2h_ms, res[i].b.copies_ms,
	       res[i].b.pipe_ms, res[i].b.out_ms, res[i].b.reps);
	res[i].ran = 1;
	return 0;
}

/* Warm-up, then the timed runs; medians into r. */
static int drive_runs(gm_daemon_proc *p, struct result *r, gm_payload *pl,
		      int reps, unsigned streams)
{
	double eng[REPS_MAX], cli[REPS_MAX], dmn[REPS_MAX], per[REPS_MAX];
	double spent = 0;
	char err[256];
	gm_run run;
	int i;

	if (gm_drive_run(p, r->c, pl, WARM_ROUNDS * streams, &run, err,
			 sizeof(err)) != 0) {
		snprintf(r->note, sizeof(r->note), "warm-up: %s", err);
		return -1;
	}
	for (i = 0; i < reps; i++) {
		if (i > 0 && (spent + spent / i) / 1e3 > CASE_SECONDS) {
			printf("  %d runs: another would pass %d s\n", i,
			       CASE_SECONDS);
			break;
		}
		if (gm_drive_run(p, r->c, pl, 0, &run, err, sizeof(err)) != 0) {
			snprintf(r->note, sizeof(r->note), "run: %s", err);
			return -1;
		}
		printf("  run %d: client %.1f ms, daemon %.1f ms, engine %.2f "
		       "ms, %g busy period(s)%s%s\n",
		       i + 1, run.client_ms, run.daemon_ms, run.engine_ms,
		       run.periods, run.failed ? ", FAILED: " : "", run.why);
		fflush(stdout);
		eng[i] = run.engine_ms;
		cli[i] = run.client_ms;
		dmn[i] = run.daemon_ms;
		per[i] = run.periods;
		spent += run.client_ms;
		r->failed += run.failed;
	}
	r->engine = gm_bench_median(eng, (size_t)i);
	r->client = gm_bench_median(cli, (size_t)i);
	r->daemon = gm_bench_median(dmn, (size_t)i);
	r->periods = gm_bench_median(per, (size_t)i);
	r->error = gm_drive_verify(r->c, pl);
	r->driven = i;
	return 0;
}

static void drive(const struct opts *o, struct result *r)
{
	const gm_case *c = r->c;
	gm_payload *pl;
	gm_daemon_proc p;
	char err[256];
	int rv;

	if (o->url != NULL && (c->depth || c->mapped)) {
		snprintf(r->note, sizeof(r->note),
			 "needs a gemmd started with other settings");
		return;
	}
	printf("gemmd: %s (%s), %u jobs in %u request(s)\n", c->name, c->label,
	       c->jobs, c->requests);
	fflush(stdout);
	if ((pl = gm_drive_payload(c)) == NULL) {
		snprintf(r->note, sizeof(r->note), "out of host memory");
		return;
	}
	rv = o->gemmd != NULL ? gm_drive_start(o->gemmd, c, o->streams, o->sets,
					       o->nsets, &p, err, sizeof(err))
			      : gm_drive_attach(o->url, &p, err, sizeof(err));
	if (rv != 0) {
		snprintf(r->note, sizeof(r->note), "gemmd: %s", err);
	} else {
		drive_runs(&p, r, pl, o->reps, o->streams);
		r->exit_code = gm_drive_stop(&p);
	}
	gm_drive_payload_free(pl);
	if (r->note[0] != '\0')
		printf("  %s\n", r->note);
}

/* ---- the table ---------------------------------------------------------- */

static double bound_ms(const gm_bound *b, const char **which)
{
	double m = b->h2d_ms;

	*which = "h2d";
	if (b->kernel_ms > m) {
		m = b->kernel_ms;
		*which = "kernel";
	}
	if (b->d2h_ms > m) {
		m = b->d2h_ms;
		*which = "d2h";
	}
	return m;
}

static const char *dtype_name(int dtype)
{
	return dtype == GEMMD_FP64 ? "fp64" : "fp32";
}

static void shape_of(const gm_case *c, char *buf, size_t len)
{
	snprintf(buf, len, "%ux%u^2 %s %s", c->jobs, c->n, dtype_name(c->dtype),
		 c->label);
}

static int correct(const struct result *r)
{
	double tol = r->c->dtype == GEMMD_FP64 ? 1e-12 : 1e-5;

	return r->failed == 0 && r->error < tol;
}

/* The table: the bound and its phases, the engine's and the
 * client's view of the same jobs, their ratios to the bound. */
static void print_row(const struct result *r)
{
	const gm_case *c = r->c;
	const char *which;
	double bound = bound_ms(&r->b, &which);
	char shape[64];

	shape_of(c, shape, sizeof(shape));
	printf("%-38s %7.2f %7.2f %7.2f %8.2f %-6s |", shape, r->b.h2d_ms,
	       r->b.kernel_ms, r->b.d2h_ms, bound, which);
	if (!r->driven) {
		printf(" %s\n", r->note);
		return;
	}
	printf(" %8.2f %6.3f %3.0f | %8.1f %6.1f | %5.1f %5.1f | %d %s%s\n",
	       r->engine, r->engine / bound, r->periods, r->client,
	       r->client / bound, gm_case_flops(c) / r->b.kernel_ms / 1e9,
	       gm_case_flops(c) / r->engine / 1e9, r->driven,
	       correct(r) ? "ok" : "WRONG",
	       r->exit_code ? " (gemmd exit != 0)" : "");
}

/* What lies between the bound and the engine's view (all measured in
 * process), and between the engine's and the client's (the daemon's own
 * receipt-to-reply time, the rest is the socket and the client). */
static void print_detail(const struct result *r)
{
	const char *which;
	double bound = bound_ms(&r->b, &which);
	char shape[64];

	shape_of(r->c, shape, sizeof(shape));
	printf("%-38s %8.2f %8.2f %8.2f %8.2f |", shape, bound, r->b.copies_ms,
	       r->b.pipe_ms, r->b.out_ms);
	if (r->driven)
		printf(" %8.2f %9.1f %9.1f\n", r->engine, r->daemon,
		       r->client - r->daemon);
	else
		printf("\n");
}

static void print_kernels(const struct result *res, size_t n)
{
	size_t i, k;

	printf("\nkernel alone, TFLOP/s     cuBLAS   tiled  tiled/cuBLAS\n");
	for (i = 0; i < n; i++) {
		const gm_case *c = res[i].c;
		int seen = 0;

		for (k = 0; k < i; k++)
			seen |= res[k].ran && res[k].c->n == c->n &&
				res[k].c->dtype == c->dtype;
		if (!res[i].ran || seen || res[i].b.tiled_ms <= 0)
			continue;
		printf("%ux%u^2 %-13s %8.1f %7.2f %10.3f\n", c->jobs, c->n,
		       dtype_name(c->dtype),
		       gm_case_flops(c) / res[i].b.cublas_ms / 1e9,
		       gm_case_flops(c) / res[i].b.tiled_ms / 1e9,
		       res[i].b.cublas_ms / res[i].b.tiled_ms);
	}
}

static void print_targets(const struct result *res, size_t n)
{
	size_t i;

	printf("\ntargets (engine view / bound):\n");
	for (i = 0; i < n; i++) {
		const gm_case *c = res[i].c;
		const char *which;
		double lim = strcmp(c->name, "fp64-1024") == 0	 ? 1.15
			     : strcmp(c->name, "fp32-4096") == 0 ? 1.05
								 : 0;

		if (lim == 0 || !res[i].driven)
			continue;
		printf("  %ux%u^2 %s: %.3f, target <= %.2f: %s\n", c->jobs,
		       c->n, dtype_name(c->dtype),
		       res[i].engine / bound_ms(&res[i].b, &which), lim,
		       res[i].engine / bound_ms(&res[i].b, &which) <= lim
			   ? "met"
			   : "missed");
	}
}

static void print_table(const struct result *res, size_t n, const char *gpu,
			const struct opts *o)
{
	size_t i;

	printf("\n%s, %u streams; medians of the runs after a warm-up; "
	       "times in ms\n",
	       gpu, o->streams);
	printf("%-38s %7s %7s %7s %8s %-6s | %8s %6s %3s | %8s %6s | %11s | "
	       "%s\n",
	       "case", "h2d", "kernel", "d2h", "bound", "", "engine", "ratio",
	       "per", "client", "ratio", "TFLOP/s k/e", "runs");
	for (i = 0; i < n; i++)
		if (res[i].ran)
			print_row(&res[i]);
	printf("\n%-38s %8s %8s %8s %8s | %8s %9s %9s\n", "in detail", "bound",
	       "copies", "together", "+out", "engine", "daemon", "socket");
	for (i = 0; i < n; i++)
		if (res[i].ran)
			print_detail(&res[i]);
	print_kernels(res, n);
	print_targets(res, n);
}

int main(int argc, char **argv)
{
	struct result res[NCASES];
	char gpu[128], line[256], date[64];
	time_t now = time(NULL);
	struct opts o;
	size_t i, n = 0;

	if (parse(argc, argv, &o) != 0) {
		usage(stderr);
		return 2;
	}
	if (gm_bound_device(gpu, sizeof(gpu), line, sizeof(line)) != 0) {
		fprintf(stderr, "gemmd_bench: no CUDA device\n");
		return 77;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("gemmd_bench, %s\n%s\n\n", date, line);
	memset(res, 0, sizeof(res));
	for (i = 0; i < NCASES; i++)
		if (selected(&o, &cases[i]))
			res[n++].c = &cases[i];
	/* Bounds first, while nothing else holds the GPU or host memory. */
	for (i = 0; i < n; i++)
		bound_of(res, i, o.streams);
	for (i = 0; i < n; i++)
		if (res[i].ran)
			drive(&o, &res[i]);
	print_table(res, n, gpu, &o);
	return 0;
}
