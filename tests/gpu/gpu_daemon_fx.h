/*
 * gpu_daemon_fx.h - what the tests of a real gemmd on the CUDA engine share:
 * the error bounds of each dtype, the daemon (started through support/itest.h),
 * its stats, requests of 16 jobs with their fp64 reference computed by
 * the CPU engine in this process (open_cpu, close_cpu), the checks of
 * results and timings, and a case run over every variant and shape.
 */
#ifndef GPU_DAEMON_FX_H
#define GPU_DAEMON_FX_H

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gemmd.h"
#include "gm_build.h"
#include "gm_engine.h"
#include "gm_testref.h"
#include "itest.h"

#define REQ_JOBS 16 /* trans_a x trans_b x layout x C */

#define SHAPES 4

#define TIMEOUT_MS 120000 /* one request, the largest shapes included */

#define START_S 30.0 /* CUDA start-up and the pinned pool */

#define FAULT_EXIT_S 5.0 /* a faulted gemmd is gone within this */

#define EXIT_FAULT 3 /* gemmd's exit status after a GPU fault */

#define MIB (1024ull * 1024)

/* What the CPU knows of one job: its operands as sent, in fp64 (rc NULL
 * without C), the product, and the magnitude bound of the product. */
struct tref {
	double *ra, *rb, *rc;
	double *ref; /* alpha*op(A)*op(B) + beta*C */
	double *mag; /* |alpha||op(A)||op(B)| + |beta||C| */
};

/* One request: up to 16 jobs of one dtype, kernel and shape. */
struct treq {
	gemmd_job j[REQ_JOBS];
	struct tref r[REQ_JOBS];
	uint32_t n;
	int rv, done;
	int tiled; /* its jobs run out of core: their phases overlap */
};

struct shape {
	uint32_t m, n, k;
};

/* A dtype with the kernel its jobs name. */
struct variant {
	int dtype, kernel;
};

extern const struct shape shapes[SHAPES];

extern it_daemon dmn;

extern int show_log;

extern gm_engine *cpu;

extern pthread_mutex_t cpu_mu;

extern pthread_cond_t cpu_cv;

extern size_t cpu_done;

extern uint64_t seed;

/* ---- numbers (random operands and dtypes: gm_testref) ------------------ */

/*
 * Error bounds, relative to M = |alpha||op(A)||op(B)| + |beta||C|, for a
 * result against the fp64 reference computed from the same inputs.
 * Against M, unlike against the result, cancellation cannot inflate the
 * ratio, and both sources of rounding below are bounded by it:
 * - accumulation: any summation order, FMA or not, errs by at most
 *   (K+2)u M per element (the gamma bound; +2 for alpha and beta). With
 *   random signs the errors add like a random walk and the Frobenius
 *   norm of the error stays near u ||M|| whatever K; 4 sqrt(K) u leaves
 *   room for blocked, split-K and tensor-core sums and for the fp64
 *   reference's own rounding. fp32, tf32, fp16 and bf16 accumulate in
 *   fp32 (u = 2^-24), fp64 in fp64 (2^-53).
 * - a fixed part: the output rounded to its dtype (fp16 2^-11, bf16
 *   2^-8, relative to the result and so to M), doubled; for tf32, the
 *   inputs (rounded here) rounded again by hardware that truncates where
 *   we rounded: 2^-11 on each of A and B.
 * So fp64 ~1e-14 and fp32 ~1e-6 (8e-6 at K = 999), tf32 and fp16 ~1e-3,
 * bf16 ~8e-3. A transposed operand or a wrong layout errs by about
 * 2/sqrt(K) of M (0.06 at K = 999), above every bound; fp32 computed
 * through TF32 errs by some 4e-4/sqrt(K), far above for K = 5 and 65.
 * Each element must also stay within the worst-case accumulation,
 * doubled for adders that truncate, plus one fp16 normal spacing of
 * absolute slack for fp16 results in the subnormal range (or flushed).
 */
double unit_acc(int dtype);

double fixed_part(int dtype);

double tolerance(int dtype, uint32_t k);

double elem_tolerance(int dtype, uint32_t k);

double elem_slack(int dtype);

double seconds(void);

/* ---- the daemon (the fixture of support/itest.h) ------------------------ */

/* Starts gemmd --engine=cuda with "--set" options and GEMMD_INJECT_FAULT
 * = fault (none when NULL); waits until it answers ping. */
void start_daemon(const char *const *sets, const char *fault);

/* SIGTERM; gemmd must drain and exit 0. */
void stop_daemon(void);

/* After each case: a case that failed half-way leaves gemmd running. */
int reap_daemon(void **state);

/* ---- stats -------------------------------------------------------------- */

/* The number at a dotted path of the stats document; NAN when absent. */
double stat_at(const cJSON *stats, const char *path);

cJSON *fetch_stats(gemmd_client *c);

/* After every reply came back: job counts as expected, nothing queued
 * or running, every slab of the host pool and every device byte back. */
void check_stats_idle(gemmd_client *c, double ok, double failed);

/* ---- jobs --------------------------------------------------------------- */

/* Fills n elements of dtype at p with random values; returns what was
 * stored, in fp64. */
double *fill(int dtype, void *p, size_t n, uint64_t *s);

/* The bits of combo choose trans_a, trans_b, layout and C. */
void make_job(gemmd_job *j, struct tref *r, const struct variant *v,
	      const struct shape *sh, unsigned combo);

void make_req(struct treq *q, const struct variant *v, const struct shape *sh,
	      uint32_t n);

void free_req(struct treq *q);

void on_reply(void *arg, int rv);

void submit_req(gemmd_client *c, struct treq *q, int timeout_ms);

void wait_reqs(struct treq *q, size_t n, double limit_s);

/* ---- the reference ------------------------------------------------------ */

void on_cpu_done(gm_job *job, void *arg);

/* Runs g[0..n-1] on the CPU engine and waits for them. */
void cpu_run(gm_job *g, size_t n);

void absolute(double *p, size_t n);

/* Computes ref and mag of every job of q that succeeded, in fp64; the
 * operands are left as their absolute values. */
void compute_refs(struct treq *q);

/* ---- checks ------------------------------------------------------------- */

const char *kernel_name(int kernel);

void describe(const gemmd_job *j, char *buf, size_t len);

/* Whether the engine coalesces j (its host bytes at most
 * GM_SMALL_JOB_BYTES): its result then comes back in its batch's copy,
 * mapped output or not. */
uint64_t host_bytes(const gemmd_job *j);

int coalesced(const gemmd_job *j);

/* Each phase ran (d2h none with mapped output, but for small jobs) and
 * lies inside the total; so does their sum, less a little for the two
 * clocks, unless the job was tiled: its copies and GEMMs overlap, and
 * each phase is a sum over its tiles (PROTOCOL.md, Timings). */
void check_timings(const gemmd_job *j, int mapped, int tiled);

/* Checks one result against its reference; returns error / tolerance. */
double check_result(const gemmd_job *j, const struct tref *r);

/* Checks every job of an answered request: failed ones with code fail
 * (counted in *failed), the rest against the CPU. Prints a line. */
void check_req(struct treq *q, int mapped, int fail, unsigned *failed);

/* ---- cases -------------------------------------------------------------- */

/* Every variant on every shape, one request each, all in flight at once;
 * returns the number of jobs, all of which must have succeeded. */
unsigned sweep(const struct variant *v, size_t nv, int mapped);

void check_idle(unsigned ok, unsigned failed);

/* One gemmd with the defaults runs the variants, then stops cleanly. */
void run_case(const struct variant *v, size_t nv);

/* ---- setup -------------------------------------------------------------- */

int open_cpu(void **state);

int close_cpu(void **state);

/* The main of a test of this kind: exit 77 (skipped) without GEMMD or
 * without a CUDA device; the seed from GM_TEST_SEED (else the time),
 * printed; the test filter from GM_TEST_FILTER; the n tests run between
 * open_cpu and close_cpu. */
int gpu_daemon_main(const struct CMUnitTest *tests, size_t n);
#define GPU_DAEMON_MAIN(tests) \
	gpu_daemon_main(tests, sizeof(tests) / sizeof((tests)[0]))

#endif
