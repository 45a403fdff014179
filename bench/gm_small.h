/*
 * gm_small.h - what the parts of gemmd_small_bench share: a batch of
 * small jobs laid out as gemmd lays out a request's jobs, the bounds
 * measured in process for it (gm_small_bound.c), and the engine run in
 * process on it (gm_small_engine.c).
 *
 * Every job is a row-major fp32 GEMM without C, out = A B, with random
 * operands in [-1, 1). Its A, B and result sit back to back, each at an
 * offset aligned to GM_BATCH_ALIGN, and the next job follows: jobs of
 * one shape are at one stride from each other. Times are milliseconds,
 * medians of repetitions after a warm-up.
 */
#ifndef GM_SMALL_H
#define GM_SMALL_H

#include <stddef.h>
#include <stdint.h>

#include "gm_job.h"

typedef struct sb_batch {
	const char *name;
	uint32_t jobs;
	uint32_t *m, *n, *k;
	uint64_t *at;	  /* job i's A, from the layout's start */
	uint64_t bytes;	  /* of the whole layout */
	uint64_t in, out; /* bytes of all inputs, of all results */
	double flops;
} sb_batch;

/* jobs of random shapes, m, n and k each in [lo, hi] (all hi^3 when
 * lo == hi), from seed. NULL when out of memory. */
sb_batch *sb_batch_make(const char *name, uint32_t jobs, uint32_t lo,
			uint32_t hi, uint64_t seed);
void sb_batch_free(sb_batch *b);

/* Where job i's B and result are, from its A. */
uint64_t sb_batch_b(const sb_batch *b, uint32_t i);
uint64_t sb_batch_out(const sb_batch *b, uint32_t i);

/* Job i as the engine takes it, its operands in the layout at base. */
void sb_batch_job(const sb_batch *b, uint32_t i, char *base, gm_job *j);

/* Random inputs into the layout at base. */
void sb_batch_fill(const sb_batch *b, char *base);

/* The largest error of a few elements of the first and last results in
 * the layout at base, relative to sqrt(k). */
double sb_batch_check(const sb_batch *b, const char *base);

double sb_median(double *v, int n);
double sb_now_ms(void);

/* ---- bounds, in process on device 0 (gm_small_bound.c) ---- */

typedef struct sb_bound {
	double link_ms;	  /* all inputs in, all results out, each one
			     plain copy, both at once: the link's bound */
	double h2d_ms;	  /* the engine's copies in (strided, or pieces
			     in batched copies), alone */
	double d2h_ms;	  /* its copies back, alone */
	double copies_ms; /* both at once: the copy bound */
	double kernel_ms; /* all GEMMs in one batched cuBLAS call */
	double loop_ms;	  /* one cublasGemmEx per job */
	int differ;	  /* jobs whose result from the batched call is
			     not, bit for bit, cublasGemmEx's */
} sb_bound;

int sb_bound_measure(const sb_batch *b, sb_bound *out, char *err,
		     size_t errlen);

/* One job of b (its first) alone, its bare CUDA calls in this process:
 * copies in, cublasGemmEx, copy out, then a wait for the stream, by
 * polling an event (*poll_ms) and by sleeping on a blocking-sync one
 * (*block_ms); each the median on the host clock, from the first call
 * to the wait's end. What the engine's latency is compared with. */
int sb_bound_one(const sb_batch *b, double *poll_ms, double *block_ms,
		 char *err, size_t errlen);

/* ---- the engine, in process (gm_small_engine.c) ---- */

typedef struct sb_engine_result {
	double ms;	       /* submit of the wave to the last job back */
	double error;	       /* sb_batch_check */
	int failed;	       /* jobs not GM_OK in the last run */
	double lat_p50;	       /* one 64^3 job alone, submit to back, ms */
	double lat_p50_nospin; /* the same with spin_us 0 */
	double lat_p50_copies; /* the same by copies (direct_job_bytes 1) */
	double idle_cpu;       /* CPU seconds per second with nothing to do */
} sb_engine_result;

/* Runs b as one wave on a CUDA engine with small_job_bytes small
 * (0: the engine's default), reps times after a warm-up; with latency,
 * also times single jobs and the idle CPU, with spin_us at its default
 * and at 0. */
int sb_engine_run(const sb_batch *b, uint64_t small, int reps, int latency,
		  sb_engine_result *out, char *err, size_t errlen);

/* In a fresh process: opens a CUDA engine, warms it up when warm, and
 * times the first job of each dtype and kernel; prints one line each. */
int sb_engine_first(int warm);

#endif
