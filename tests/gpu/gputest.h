/*
 * gputest.h - what the gpu suite's engine tests share: an engine under
 * test with its arena books ("bench"), jobs with random operands run on
 * it and, in fp64, on the CPU engine, the check of a result against that
 * reference with a tolerance scaled to the dtype and K, and the fixture
 * that opens the reference engine. Helpers assert with cmocka.
 */
#ifndef GPUTEST_H
#define GPUTEST_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gm_engine.h"
#include "gm_pool.h"

#define WAVE_MAX     32
#define WAIT_SECONDS 300
#define MIB	     (1024ull * 1024)
#define LEAK_SLACK   (64 * MIB) /* driver and cuBLAS caches come and go */
#define SUBMIT_MAX_S 0.05	/* submit only links jobs: never this slow */
#define IDLE_CPU_MAX 0.05	/* CPU seconds per second of an idle engine */

/* One job run twice: on the engine under test and, in fp64, on the CPU. */
struct tjob {
	gm_job job, ref;
	gm_job_sizes sz;
	void *slab;	      /* in the tested engine's arena */
	void *in, *copy_out;  /* when the job uses copy_in / copy_out */
	double *ra, *rb, *rc; /* reference operands, fp64 */
	double cnorm;	      /* Frobenius norm of C as stored */
	int returned;	      /* times the done callback saw job */
	double back;	      /* when it last came back, seconds */
};

/* A tested engine with its arena books and completion count. */
struct bench {
	gm_engine *e;
	gm_pool *pool;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t done;
	uint64_t jobs; /* submitted and returned, for device_stats */
};

#define DEV_MAX 16

/* What device_stats says about all devices of an engine. */
struct totals {
	uint64_t jobs, mem_used;
	unsigned named, sized, busy, without_jobs;
};

struct shape {
	uint32_t m, n, k;
};

extern struct bench cpu; /* the reference, open for the whole run */
extern struct bench gpu; /* the engine under test in the current case */
extern uint64_t seed;	 /* of the next job's operands */
extern int quick;	 /* GM_TEST_QUICK: small sizes only */
/* 1x1x1 to 1024x1000x999; the first shape_count() of them are run. */
extern const struct shape shapes[4];

void bench_open(struct bench *b, const gm_engine_config *cfg);

/* Closes a CUDA engine, then checks that every slab came back before
 * and the device memory after. Checks come after the close so that a
 * failure does not leave the engine open for the next case. */
void bench_close(struct bench *b, int check_memory);

struct totals device_totals(struct bench *b);

/* Waits until n jobs in all came back to b. */
void wait_done(struct bench *b, size_t n);

double seconds(clockid_t clock);

/* Submits jobs as one wave, checks submit did not wait for them, and
 * waits until all came back. */
void run_wave(struct bench *b, gm_job **jobs, size_t n);

/* 1 GiB arena, 4 streams, breadth-first, cuBLAS. */
gm_engine_config cuda_config(void);

/* Operands go into the arena slab, or, with copy, into a buffer of their
 * own that the engine must stage (the slab is poisoned to prove it). */
void make_job(struct bench *b, struct tjob *t, const gm_job_desc *d, int copy);

/* The same job in fp64 on the CPU; the result replaces rc. */
void make_ref(struct tjob *t);

void free_job(struct bench *b, struct tjob *t);

/* t's result against its reference; mapped: it came back with no copy. */
void check_result(const struct tjob *t, int mapped);

/* The 16 combinations of trans_a, trans_b, layout and C, as a wave. */
size_t combos(gm_job_desc *d, int dtype, int kernel, const struct shape *s);

/* Prints the mean timings of t[0..n-1]. */
void report(const struct tjob *t, size_t n, const char *what);

/* Runs the jobs of t[0..n-1] on b, checks each came back once, then
 * runs their references on the CPU. */
void run_both(struct bench *b, struct tjob *t, size_t n);

/* Runs desc[0..n-1] on b and on the CPU and compares. Every other job
 * of the small shapes goes through copy_in / copy_out. */
void check_wave(struct bench *b, const gm_job_desc *desc, size_t n, int mapped,
		const char *what);

/* check_wave of the 16 combinations of each shape. */
void check_dtype(struct bench *b, int dtype, int kernel, int mapped,
		 const char *what);

/* cmocka fixtures: setup opens the reference engine, and one CUDA
 * engine to bring the device up, so that the memory baseline includes
 * the context; close_gpu closes the engine a failed case left open;
 * teardown closes the reference. */
int setup(void **state);
int close_gpu(void **state);
int teardown(void **state);

/* The main of a gpu test: 77 without a device; GM_TEST_QUICK,
 * GM_TEST_SEED and GM_TEST_FILTER read; tests[0..n-1] run between setup
 * and teardown. Returns the exit status. */
int gpu_main(const struct CMUnitTest *tests, size_t n);

#endif
