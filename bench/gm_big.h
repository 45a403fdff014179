/*
 * gm_big.h - what the parts of gemmd_ooc_bench share: one square job
 * too large for its share of the device, its operands in host memory,
 * and the ways of running it: cuBLAS on copies resident on the device
 * (the compute bound) and cuBLASXt from the same host memory, the
 * anchor users would pick instead (gm_big_bound.c); the CUDA engine in
 * process, as the daemon drives it (gm_big_engine.c); a gemmd through
 * the client library (gm_big_drive.c).
 *
 * The job is row-major out = A B, n x n x n, without C, with random
 * operands in [-1, 1). A, B and out lie back to back in one mapping.
 * Times are milliseconds; a rate is 2 n^3 over the time.
 */
#ifndef GM_BIG_H
#define GM_BIG_H

#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"

typedef struct bg_case {
	const char *name;
	int dtype; /* GEMMD_FP64 or GEMMD_FP32 */
	uint32_t n;
	uint64_t device_pool; /* device_pool_bytes */
} bg_case;

/* A, B and out of a case in one mapping. */
typedef struct bg_mats {
	char *base;
	uint64_t mat; /* bytes of one matrix */
	char *a, *b, *out;
} bg_mats;

uint64_t bg_mat_bytes(const bg_case *c);
double bg_flops(const bg_case *c);
double bg_tflops(const bg_case *c, double ms);
double bg_now_ms(void);
double bg_median(double *v, int n);

/* Maps m for c: shared, a sealed memfd mapped MAP_SHARED as a region
 * is; else anonymous private memory. 0, or -1 with err. */
int bg_mats_map(const bg_case *c, int shared, bg_mats *m, char *err,
		size_t errlen);
void bg_mats_unmap(bg_mats *m);

/* Random A and B (a function of the seed and each element's index), on
 * all cores. */
void bg_mats_fill(const bg_case *c, bg_mats *m, uint64_t seed);

/* bytes from src to dst on all cores. */
void bg_copy(void *dst, const void *src, uint64_t bytes);

/* The largest error of a few elements of out against fp64 dot products
 * of A and B, over sqrt(n) (about an element's size). */
double bg_check(const bg_case *c, const char *a, const char *b,
		const char *out);

/* Poisons out with NaN, so that a result not written fails bg_check. */
void bg_poison(const bg_case *c, char *out);

/* ---- in-process bounds on device 0 (gm_big_bound.c) ---- */

/* cuBLAS on A, B and out copied to device memory: a warm-up, then the
 * median of reps calls, timed with events. 0 or -1 with err. */
int bg_resident(const bg_case *c, const bg_mats *m, int reps, double *ms,
		char *err, size_t errlen);

/* Host-to-device 2D copies of lines of width bytes from A (a pitch of
 * one of its rows), up to 1 GiB and as many lines as A has rows, on
 * streams streams (1 or 2) at once: GB/s, timed with events. 0 or -1
 * with err. */
int bg_copy2d(const bg_case *c, const bg_mats *m, uint64_t width, int streams,
	      double *gbps, char *err, size_t errlen);

/* One cublasXtDgemm (or Sgemm) on device 0 from the host memory of m,
 * wall clock, with tiles of block (0: cuBLASXt's default; *used gets
 * the one it used). 0 or -1 with err. */
int bg_xt(const bg_case *c, bg_mats *m, int block, double *ms, int *used,
	  char *err, size_t errlen);

/* ---- the engine in process (gm_big_engine.c) ---- */

typedef struct bg_engine bg_engine;

typedef struct bg_engine_result {
	double region_ms, pageable_ms;	  /* submit to back, medians */
	double h2d_ms, kernel_ms, d2h_ms; /* the job's own timings */
	double region_err, pageable_err;  /* bg_check */
	/* 64^3 fp32 jobs one after another, submit to back, ms: with the
	 * engine idle, and while the tiled job runs (lat_n of them, slow
	 * of them over 10 ms; the slowest one's own timings). */
	double idle_p50, p50, p99, max;
	int lat_n, slow;
	double max_h2d, max_kernel, max_d2h;
	double lat_job_ms; /* how long the tiled job took meanwhile */
} bg_engine_result;

/* Opens a CUDA engine with c's device pool and the planner's cost per
 * line (gm_engine_config.ooc_line_bytes, 0: the default), and, with
 * reg set, registers m (shared, from bg_mats_map) as the daemon
 * registers a region, in *register_ms: its memory is then pinned until
 * bg_engine_close, for every engine of the process. 0 or -1 with err. */
int bg_engine_open(const bg_case *c, bg_mats *m, uint64_t line_bytes, int reg,
		   bg_engine **out, double *register_ms, char *err,
		   size_t errlen);
void bg_engine_close(bg_engine *b);

/* c from the registered memory: a warm-up and reps timed runs, then,
 * with beside set, one more with small jobs one after another beside
 * it. 0 or -1 with err. */
int bg_engine_region(bg_engine *b, int reps, int beside, bg_engine_result *r,
		     char *err, size_t errlen);

/* c from a copy of A and B in pageable memory: reps timed runs. */
int bg_engine_pageable(bg_engine *b, int reps, bg_engine_result *r, char *err,
		       size_t errlen);

/* ---- a gemmd, through the client library (gm_big_drive.c) ---- */

typedef struct bg_drive_result {
	double create_ms; /* gemmd_region_create (the daemon pins it) */
	double ms;	  /* submit to reply, median of the timed runs */
	double err;	  /* bg_check, when the job ran */
	int status;	  /* the job's, or the call's when it failed */
	char msg[GEMMD_MSG_TEXT + 64];
	gemmd_timings t;
	/* From the daemon's stats after the runs: requests it received
	 * into pageable memory (larger than its pool), and the most such
	 * memory held at once; -1 when not read. */
	double pageable_requests, pageable_peak;
} bg_drive_result;

/* Starts gemmd with c's device pool, makes a region for A, B and out
 * and runs c from it: a warm-up, then reps timed runs. 0 when the runs
 * were made (r->status says whether the job ran), -1 with err. */
int bg_drive_region(const char *gemmd, const bg_case *c, int reps,
		    bg_drive_result *r, char *err, size_t errlen);

/* Starts gemmd with pool_bytes, c's device pool, and max_message_bytes
 * and pageable_max_bytes that take c's request whole (larger than the
 * pool, it is received into pageable memory), and sends c through the
 * socket (staging off) from m (bg_mats_map, A and B filled): a warm-up,
 * then reps timed runs, out poisoned before the last. As
 * bg_drive_region. */
int bg_drive_socket(const char *gemmd, const bg_case *c, uint64_t pool_bytes,
		    bg_mats *m, int reps, bg_drive_result *r, char *err,
		    size_t errlen);

/* ---- the socket's own bound (gm_big_drive.c) ---- */

/* One ipc:// byte stream of this host carrying in_bytes one way and
 * out_bytes back, with no framing and no GEMM (bench/gm_rawrate.h):
 * the median of reps after a warm-up, in *ms. 0 or -1 with err. */
int bg_stream(uint64_t in_bytes, uint64_t out_bytes, int reps, double *ms,
	      char *err, size_t errlen);

#endif
