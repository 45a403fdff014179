/*
 * gemmd_ooc_bench.c - a job larger than its share of the device, run
 * out of core by the CUDA engine, beside cuBLAS on device-resident data
 * (the compute bound) and cuBLASXt from the same host memory (what users
 * would run instead), all in the same run on the same GPU.
 *
 * Each case is one row-major fp64 job out = A B of n^3 with a device
 * pool of which the job may hold its default share (ooc_share_percent,
 * GM_OOC_SHARE_PCT). Its operands lie in a memfd
 * mapping, as a shared-memory region's do, registered with the engine as
 * the daemon registers a region; the engine runs it in process through
 * gm_engine.h, then again from a copy in pageable memory (as a socket
 * payload larger than the pinned pool is received), and small jobs are
 * timed one after another while it runs. Then the same job goes through
 * a gemmd the bench starts (the one built beside it, or --gemmd PATH),
 * from a region the client makes (gemmd.h). Last, a 16384^2 fp32 job
 * goes through the socket of a gemmd with pool_bytes 1 GiB: larger than
 * the pool, the daemon receives it into pageable memory
 * (pageable_max_bytes) and its engine tiles it from there; it is
 * measured beside cuBLAS on resident data, cuBLASXt and the raw ipc://
 * stream carrying the same bytes, the bound being the stream then the
 * resident GEMM (a job starts once its payload is in).
 *
 *   gemmd_ooc_bench                    quick case (16384^3, 1 GiB pool)
 *   gemmd_ooc_bench --case big         32768^3, 4 GiB pool (24 GiB host)
 *   gemmd_ooc_bench --case socket      16384^2 fp32 through the socket
 *   gemmd_ooc_bench --case all         all three
 *
 * Each result is printed beside its bound: "x resident" is the resident
 * cuBLAS time over the result's (1 is the compute bound), "x cuBLASXt"
 * cuBLASXt's best time over it (above 1: faster than cuBLASXt), "of
 * bound" the bound's time over it. The engine plans its tiles charging
 * GM_OOC_LINE_BYTES per line of a 2D copy; two more runs plan with 1
 * (bytes alone) and 4 times as much. --no-gemmd, --no-xt, --no-pageable
 * and --no-variants leave those runs out.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_big.h"
#include "gm_ooc.h"

#define GIB	   (1024ull * 1024 * 1024)
#define XT_BLOCK   8192 /* a second cuBLASXt run with larger tiles */
#define TARGET	   0.85 /* of the resident rate, from a region */
#define REPS_MAX   9
#define FP64_ERROR 1e-9 /* bg_check's error a right fp64 result stays under */
#ifndef GEMMD_PATH
#define GEMMD_PATH NULL /* no gemmd built beside the bench */
#endif

static const bg_case cases[] = {
    {"quick", GEMMD_FP64, 16384, 1 * GIB},
    {"big", GEMMD_FP64, 32768, 4 * GIB},
};
static const bg_case socket_case = {"socket", GEMMD_FP32, 16384, 0};

struct opts {
	const char *which, *gemmd; /* gemmd NULL: --no-gemmd */
	int reps, xt, pageable, variants;
};

struct row {
	double resident, xt, xt_big, engine, pageable, gemmd;
	int xt_block;
};

static const char *ok(double err, int dtype)
{
	return err <= (dtype == GEMMD_FP64 ? FP64_ERROR : 1e-4) ? "ok"
								: "WRONG";
}

static void print_plan(const bg_case *c, uint64_t line_bytes)
{
	gm_job_desc d = {0};
	gm_ooc_plan p;

	d.dtype = (uint8_t)c->dtype;
	d.m = d.n = d.k = c->n;
	d.alpha = 1;
	if (gm_ooc_plan_make(&d, gm_ooc_share(c->device_pool, 0), line_bytes,
			     &p) != GM_OK)
		return;
	printf("  plan, %llu bytes a line: %u x %u tiles of %u x %u, %u "
	       "panels of %u; %.1f GB in, %.2f M lines (%.0f flop/byte), "
	       "%.2f GiB of the device\n",
	       (unsigned long long)line_bytes, p.tm, p.tn, p.mt, p.nt, p.nk,
	       p.kb, p.h2d_bytes / 1e9, p.h2d_lines / 1e6,
	       bg_flops(c) / p.h2d_bytes, p.bytes / (double)GIB);
}

/* cuBLASXt's best time of the run, 0 when it did not run. */
static double xt_best(const struct row *w)
{
	return w->xt_big > 0 && (w->xt == 0 || w->xt_big < w->xt) ? w->xt_big
								  : w->xt;
}

/* A result, and its ratio to each bound w has (resident cuBLAS and,
 * with xt set, cuBLASXt). */
static void line(const char *what, const bg_case *c, double ms,
		 const struct row *w, int xt)
{
	printf("  %-34s %10.1f ms %7.2f TFLOP/s", what, ms, bg_tflops(c, ms));
	if (w != NULL && w->resident > 0 && ms > 0)
		printf("  %5.3fx resident", w->resident / ms);
	if (w != NULL && xt && xt_best(w) > 0 && ms > 0)
		printf("  %5.2fx cuBLASXt", xt_best(w) / ms);
	printf("\n");
}

static void print_engine(const bg_case *c, const bg_engine_result *e,
			 const char *what, struct row *w)
{
	line(what, c, e->region_ms, w, 1);
	printf("  %-34s h2d %.0f, kernel %.0f, d2h %.0f ms (sums); %s\n",
	       "  its timings", e->h2d_ms, e->kernel_ms, e->d2h_ms,
	       ok(e->region_err, c->dtype));
	if (e->lat_n == 0)
		return;
	printf("  %-34s idle p50 %.3f ms; beside it (%d in %.0f ms, %d over "
	       "10 ms) p50 %.3f, p99 %.3f, max %.3f ms\n",
	       "64^3 fp32 jobs one at a time", e->idle_p50, e->lat_n,
	       e->lat_job_ms, e->slow, e->p50, e->p99, e->max);
	printf("  %-34s h2d %.3f, kernel %.3f, d2h %.3f ms\n",
	       "  the slowest one's timings", e->max_h2d, e->max_kernel,
	       e->max_d2h);
}

/* How fast 2D copies cross, by the width of their lines. */
static void copies(const bg_case *c, const bg_mats *m)
{
	static const uint64_t widths[] = {2048, 8192, 32768};
	uint64_t pitch = bg_mat_bytes(c) / c->n;
	char err[256];
	double g;

	printf("  2D copies in, lines %llu KiB apart:",
	       (unsigned long long)(pitch >> 10));
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (bg_copy2d(c, m, widths[i], 1, &g, err, sizeof(err)) == 0)
			printf(" %llu KiB lines %.1f GB/s,",
			       (unsigned long long)(widths[i] >> 10), g);
	if (bg_copy2d(c, m, 8192, 2, &g, err, sizeof(err)) == 0)
		printf(" 8 KiB on two streams %.1f GB/s,", g);
	if (bg_copy2d(c, m, pitch, 1, &g, err, sizeof(err)) == 0)
		printf(" whole rows %.1f GB/s", g);
	printf("\n");
}

/* The engine once more, planning with line_bytes: the memory is
 * pinned already. */
static void variant(const bg_case *c, bg_mats *m, int reps, uint64_t line_bytes,
		    struct row *w)
{
	char err[512] = "", what[64];
	bg_engine_result e;
	bg_engine *be;
	double reg;
	int rv;

	memset(&e, 0, sizeof(e));
	print_plan(c, line_bytes);
	if (bg_engine_open(c, m, line_bytes, 0, &be, &reg, err, sizeof(err)) !=
	    0) {
		printf("  failed: %s\n", err);
		return;
	}
	rv = bg_engine_region(be, reps, 0, &e, err, sizeof(err));
	bg_engine_close(be);
	if (rv != 0) {
		printf("  failed: %s\n", err);
		return;
	}
	snprintf(what, sizeof(what), "engine, region, %llu B a line",
		 (unsigned long long)line_bytes);
	print_engine(c, &e, what, w);
}

/* cuBLAS on resident data and, unless --no-xt, cuBLASXt (a failure of
 * which is printed, not fatal) for c from m, printed. */
static int compute_bounds(const struct opts *o, const bg_case *c, bg_mats *m,
			  struct row *w, char *err, size_t errlen)
{
	char what[64], xerr[256];

	if (bg_resident(c, m, o->reps, &w->resident, err, errlen) != 0)
		return -1;
	line("cuBLAS, device-resident", c, w->resident, NULL, 0);
	fflush(stdout);
	if (!o->xt)
		return 0;
	if (bg_xt(c, m, 0, &w->xt, &w->xt_block, xerr, sizeof(xerr)) == 0) {
		snprintf(what, sizeof(what), "cuBLASXt, block %d (default)",
			 w->xt_block);
		line(what, c, w->xt, w, 0);
	} else {
		printf("  cuBLASXt: %s\n", xerr);
	}
	if (bg_xt(c, m, XT_BLOCK, &w->xt_big, &w->xt_block, xerr,
		  sizeof(xerr)) == 0) {
		snprintf(what, sizeof(what), "cuBLASXt, block %d", w->xt_block);
		line(what, c, w->xt_big, w, 0);
	} else {
		printf("  cuBLASXt, block %d: %s\n", XT_BLOCK, xerr);
	}
	fflush(stdout);
	return 0;
}

/* The in-process part of a case: the bounds and the engine, whose
 * registration pins the operands for all that follows. */
static int in_process(const struct opts *o, const bg_case *c, struct row *w)
{
	char err[512] = "";
	bg_engine_result e;
	bg_engine *be = NULL;
	bg_mats m;
	double t0, reg;
	int rv = -1;

	memset(&e, 0, sizeof(e));
	if (bg_mats_map(c, 1, &m, err, sizeof(err)) != 0)
		goto out;
	t0 = bg_now_ms();
	bg_mats_fill(c, &m, 7);
	printf("  operands: %.1f GiB in a memfd mapping, filled in %.0f ms\n",
	       3.0 * m.mat / GIB, bg_now_ms() - t0);
	if (bg_engine_open(c, &m, 0, 1, &be, &reg, err, sizeof(err)) != 0)
		goto unmap;
	printf("  registered (pinned) in %.0f ms\n", reg);
	copies(c, &m);
	if (compute_bounds(o, c, &m, w, err, sizeof(err)) != 0)
		goto close;
	if (bg_engine_region(be, o->reps, 1, &e, err, sizeof(err)) != 0)
		goto close;
	w->engine = e.region_ms;
	print_engine(c, &e, "engine, from a region", w);
	fflush(stdout);
	rv = 0;
	if (o->pageable) {
		if (bg_engine_pageable(be, o->reps, &e, err, sizeof(err)) != 0)
			goto close;
		w->pageable = e.pageable_ms;
		line("engine, from pageable memory", c, e.pageable_ms, w, 1);
		printf("  %-34s %s\n", "", ok(e.pageable_err, c->dtype));
		fflush(stdout);
	}
	if (o->variants) {
		variant(c, &m, o->reps, 1, w);
		variant(c, &m, o->reps, 4 * GM_OOC_LINE_BYTES, w);
	}
close:
	bg_engine_close(be);
unmap:
	bg_mats_unmap(&m);
out:
	if (rv != 0)
		printf("  failed: %s\n", err);
	fflush(stdout);
	return rv;
}

static int through_gemmd(const struct opts *o, const bg_case *c, struct row *w)
{
	char err[512] = "";
	bg_drive_result r;

	if (bg_drive_region(o->gemmd, c, o->reps, &r, err, sizeof(err)) != 0) {
		printf("  gemmd, from a region: failed: %s\n", err);
		return -1;
	}
	printf("  gemmd: region of %.1f GiB made (and pinned) in %.0f ms\n",
	       3.0 * bg_mat_bytes(c) / GIB, r.create_ms);
	if (r.status != GM_OK) {
		printf("  gemmd, from a region: %s\n", r.msg);
		return -1;
	}
	w->gemmd = r.ms;
	line("gemmd, from a region", c, r.ms, w, 1);
	printf("  %-34s h2d %.0f, kernel %.0f, d2h %.0f ms; %s\n",
	       "  its timings", r.t.h2d_us / 1e3, r.t.kernel_us / 1e3,
	       r.t.d2h_us / 1e3, ok(r.err, c->dtype));
	return 0;
}

/* The targets for a job from a region: at least TARGET of the
 * resident rate, and faster than cuBLASXt. */
static void target(const char *what, double ms, const struct row *w)
{
	double ratio = w->resident / ms, xt = xt_best(w);

	printf("  target, %s from a region: %.3fx resident (>= %.2f: %s)", what,
	       ratio, TARGET, ratio >= TARGET ? "met" : "missed");
	if (xt > 0)
		printf(", %.2fx cuBLASXt's best rate (> 1: %s)", xt / ms,
		       ms < xt ? "met" : "missed");
	printf("\n");
}

static void targets(const struct row *w)
{
	if (w->resident <= 0)
		return;
	if (w->engine > 0)
		target("engine", w->engine, w);
	if (w->gemmd > 0)
		target("gemmd", w->gemmd, w);
}

static int run_case(const struct opts *o, const bg_case *c)
{
	struct row w = {0};
	int rv;

	printf("%s: %s %u^3, device_pool_bytes %.0f GiB (a tiled job holds "
	       "%d%%)\n",
	       c->name, c->dtype == GEMMD_FP64 ? "fp64" : "fp32", c->n,
	       c->device_pool / (double)GIB, GM_OOC_SHARE_PCT);
	print_plan(c, GM_OOC_LINE_BYTES);
	rv = in_process(o, c, &w);
	if (o->gemmd != NULL && through_gemmd(o, c, &w) != 0)
		rv = -1;
	targets(&w);
	return rv;
}

/* The socket case through gemmd, against its bound: the raw stream,
 * then the resident GEMM. */
static int socket_run(const struct opts *o, const bg_case *c, bg_mats *m,
		      const struct row *w, char *err, size_t errlen)
{
	uint64_t mat = bg_mat_bytes(c);
	double stream, bound;
	bg_drive_result r;

	if (bg_stream(2 * mat, mat, o->reps, &stream, err, errlen) != 0)
		return -1;
	printf("  %-34s %10.1f ms %7.2f GB/s\n", "ipc:// stream, same bytes",
	       stream, 3.0 * mat / stream / 1e6);
	bound = stream + w->resident;
	line("bound: the stream, then resident", c, bound, NULL, 0);
	fflush(stdout);
	if (bg_drive_socket(o->gemmd, c, GIB, m, o->reps, &r, err, errlen) != 0)
		return -1;
	if (r.status != GM_OK) {
		snprintf(err, errlen, "gemmd: %s", r.msg);
		return -1;
	}
	line("gemmd, through the socket", c, r.ms, w, 1);
	printf("  %-34s %5.3fx the bound\n", "", bound / r.ms);
	printf("  %-34s queue %.0f, h2d %.0f, kernel %.0f, d2h %.0f, total "
	       "%.0f ms; %s\n",
	       "  its timings", r.t.queue_us / 1e3, r.t.h2d_us / 1e3,
	       r.t.kernel_us / 1e3, r.t.d2h_us / 1e3, r.t.total_us / 1e3,
	       ok(r.err, c->dtype));
	printf("  %-34s %.0f requests in pageable memory, at most %.2f GiB "
	       "held\n",
	       "  the daemon", r.pageable_requests, r.pageable_peak / GIB);
	return 0;
}

/* A payload larger than the pinned pool, through the socket. */
static int through_socket(const struct opts *o)
{
	const bg_case *c = &socket_case;
	char err[512] = "";
	struct row w = {0};
	bg_mats m;
	int rv;

	printf("socket: fp32 %u^3 through the socket, %.1f GiB in and %.1f "
	       "GiB back, pool_bytes 1 GiB (received into pageable memory)\n",
	       c->n, 2.0 * bg_mat_bytes(c) / GIB, 1.0 * bg_mat_bytes(c) / GIB);
	if (bg_mats_map(c, 0, &m, err, sizeof(err)) != 0) {
		printf("  failed: %s\n", err);
		return -1;
	}
	bg_mats_fill(c, &m, 13);
	rv = compute_bounds(o, c, &m, &w, err, sizeof(err));
	if (rv == 0)
		rv = socket_run(o, c, &m, &w, err, sizeof(err));
	if (rv != 0)
		printf("  failed: %s\n", err);
	bg_mats_unmap(&m);
	fflush(stdout);
	return rv;
}

static int parse(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--no-xt") == 0)
			o->xt = 0;
		else if (strcmp(a, "--no-pageable") == 0)
			o->pageable = 0;
		else if (strcmp(a, "--no-gemmd") == 0)
			o->gemmd = NULL;
		else if (strcmp(a, "--no-variants") == 0)
			o->variants = 0;
		else if (strcmp(a, "--case") == 0 && v != NULL)
			o->which = argv[++i];
		else if (strcmp(a, "--gemmd") == 0 && v != NULL)
			o->gemmd = argv[++i];
		else if (strcmp(a, "--reps") == 0 && v != NULL)
			o->reps = atoi(argv[++i]);
		else
			return -1;
	}
	return o->reps >= 1 && o->reps <= REPS_MAX ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o = {"quick", GEMMD_PATH, 2, 1, 1, 1};
	struct cudaDeviceProp p;
	int failed = 0, ran = 0;

	/* As the engine does before it first touches a device
	 * (gm_engine_cuda.cu); here the device is touched first below. */
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr,
			"usage: gemmd_ooc_bench [--case quick|big|socket|all] "
			"[--gemmd PATH | --no-gemmd] [--reps 1..%d] [--no-xt] "
			"[--no-pageable] [--no-variants]\n",
			REPS_MAX);
		return 2;
	}
	if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
		fprintf(stderr, "no CUDA device\n");
		return 77;
	}
	printf("%s (%d SMs, %.0f GiB), %ld cores, %.0f GiB host memory; "
	       "medians of %d runs after a warm-up\n",
	       p.name, p.multiProcessorCount, p.totalGlobalMem / (double)GIB,
	       sysconf(_SC_NPROCESSORS_ONLN),
	       (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / GIB,
	       o.reps);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(o.which, "all") != 0 &&
		    strcmp(o.which, cases[i].name) != 0)
			continue;
		ran++;
		failed += run_case(&o, &cases[i]) != 0;
	}
	if (strcmp(o.which, "all") == 0 || strcmp(o.which, "socket") == 0) {
		ran++;
		if (o.gemmd == NULL)
			printf("socket: needs a gemmd (--no-gemmd given)\n");
		else if (through_socket(&o) != 0)
			failed++;
	}
	if (ran == 0) {
		fprintf(stderr, "no case named %s\n", o.which);
		return 2;
	}
	return failed ? 1 : 0;
}
