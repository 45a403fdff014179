/*
 * gm_bench.h - what the parts of gemmd_bench share: a benchmark case,
 * the bound measured in process for it (gm_bound.c), and the driving of
 * a gemmd through the client library (gm_drive.c).
 *
 * Every time is in milliseconds and every figure is a median of
 * repetitions taken after a warm-up. Inputs are random, never zeros.
 */
#ifndef GM_BENCH_H
#define GM_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"

/* One row of the table: jobs of one square shape, and how gemmd runs
 * them. */
typedef struct gm_case {
	const char *name;  /* selects it on the command line */
	const char *label; /* what the table shows beside the shape */
	int dtype;	   /* GEMMD_FP64 or GEMMD_FP32 */
	uint32_t n;	   /* m = n = k */
	uint32_t jobs;
	uint32_t requests; /* the jobs split into this many, all in flight */
	int depth;	   /* issue_order depth instead of breadth */
	int mapped;	   /* mapped_output */
	int kernel;	   /* GEMMD_KERNEL_CUBLAS or GEMMD_KERNEL_TILED */
} gm_case;

/* Bytes of one job's operands and of its result (no C input). */
uint64_t gm_case_in_bytes(const gm_case *c);
uint64_t gm_case_out_bytes(const gm_case *c);
double gm_case_flops(const gm_case *c); /* all jobs: jobs * 2 n^3 */

/* Check a CUDA runtime or cuBLAS call in a function that returns int:
 * on failure, "expr: text" goes to err (errlen bytes) and the function
 * returns -1. The caller includes the CUDA headers. */
#define GM_BENCH_CUDA(expr, err, errlen)                           \
	do {                                                       \
		cudaError_t e_ = (expr);                           \
		if (e_ != cudaSuccess) {                           \
			snprintf((err), (errlen), "%s: %s", #expr, \
				 cudaGetErrorString(e_));          \
			return -1;                                 \
		}                                                  \
	} while (0)

#define GM_BENCH_BLAS(expr, err, errlen)                           \
	do {                                                       \
		cublasStatus_t s_ = (expr);                        \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                 \
			snprintf((err), (errlen), "%s: %s", #expr, \
				 cublasGetStatusString(s_));       \
			return -1;                                 \
		}                                                  \
	} while (0)

/* Fills n elements of dtype at p with uniform values in [-1, 1). */
void gm_bench_random(int dtype, void *p, size_t n, uint64_t seed);

/* Median of v[0..n-1] (sorts v). */
double gm_bench_median(double *v, size_t n);

/* ---- the bound, measured in process on device 0 (gm_bound.c) ---- */

typedef struct gm_bound {
	double h2d_ms;	  /* every job's A and B to the device, alone */
	double kernel_ms; /* every job's GEMM, alone, with the case's kernel */
	double d2h_ms;	  /* every job's result back, alone */
	double copies_ms; /* both copies, no GEMM: the link both ways */
	double pipe_ms;	  /* all three issued as gemmd issues them */
	double out_ms;	  /* the same while host threads copy each result
			     into fresh memory, as the daemon's reply path
			     does */
	double cublas_ms; /* the GEMMs with cuBLAS, and with the tiled */
	double tiled_ms;  /* kernel (0: not measured) */
	int reps;	  /* timed repetitions behind each median */
} gm_bound;

/* Name of device 0 and a line describing it. */
int gm_bound_device(char *name, size_t namelen, char *line, size_t linelen);

/*
 * Measures c's bound on streams CUDA streams, as gemmd would run it: the
 * same bytes copied with cudaMemcpyAsync from and to pinned memory, the
 * same GEMMs through cublasGemmEx (and the tiled kernel when tiled is
 * set or c uses it). Returns 0, or -1 with the reason in err.
 */
int gm_bound_measure(const gm_case *c, unsigned streams, int tiled,
		     gm_bound *out, char *err, size_t errlen);

/* ---- gemmd, driven through the client library (gm_drive.c) ---- */

#define GM_BENCH_SETS_MAX 16 /* --set options passed on to gemmd */

/* A gemmd this program started, or one it was pointed at. */
typedef struct gm_daemon_proc {
	int pid; /* 0: not ours */
	char url[128];
	gemmd_client *cl;
} gm_daemon_proc;

/*
 * Starts path with the configuration c needs (pools large enough for all
 * of its jobs at once, its issue order, output mode and kernel), streams
 * streams and the extra "-s KEY=VALUE" settings in sets[0..nsets-1];
 * waits until it answers a ping. Returns 0 or -1 with err.
 */
int gm_drive_start(const char *path, const gm_case *c, unsigned streams,
		   char *const *sets, int nsets, gm_daemon_proc *p, char *err,
		   size_t errlen);

/* Connects to a running gemmd at url. */
int gm_drive_attach(const char *url, gm_daemon_proc *p, char *err,
		    size_t errlen);

/* Closes the client; stops the daemon when it was started here, and
 * returns its exit status (0 when attached). */
int gm_drive_stop(gm_daemon_proc *p);

/* One run of a case through gemmd. */
typedef struct gm_run {
	double client_ms; /* first submit to last reply, on this host */
	double daemon_ms; /* receipt to reply in the daemon (longest) */
	double engine_ms; /* device busy time the daemon reports */
	double periods;	  /* busy periods in it; < 0: not reported */
	int failed;	  /* jobs that did not come back GM_OK */
	char why[160];	  /* the first failure */
} gm_run;

/* Client-side buffers for a case: random inputs, results. */
typedef struct gm_payload gm_payload;

gm_payload *gm_drive_payload(const gm_case *c);
void gm_drive_payload_free(gm_payload *pl);

/*
 * Submits the first jobs jobs of c (all of them when 0) as c says, waits
 * for every reply and reads the daemon's device busy time before and
 * after. Returns 0, or -1 when the run could not be made (err).
 */
int gm_drive_run(gm_daemon_proc *p, const gm_case *c, gm_payload *pl,
		 uint32_t jobs, gm_run *out, char *err, size_t errlen);

/* Recomputes a few elements of the first and last results in fp64 and
 * returns the largest error relative to sum |a||b|. */
double gm_drive_verify(const gm_case *c, const gm_payload *pl);

#endif
