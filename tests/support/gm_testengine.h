/*
 * gm_testengine.h - the engine fixture of the in-process engine tests: an
 * engine opened through gm_engine.h the way the daemon opens it, its done
 * callback counting jobs for the test thread to wait on; jobs of random
 * operands (the seed in rs, from gm_testref_seed) with outputs poisoned
 * with NaN, checked against the long double reference of
 * gm_testref_check; a wave run, checked and freed.
 */
#ifndef GM_TESTENGINE_H
#define GM_TESTENGINE_H

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

#include "gm_build.h"
#include "gm_engine.h"
#include "gm_error.h"
#include "gm_testref.h"

#define ALPHA 1.5
#define BETA  -0.75

/* Collects jobs coming back through the done callback. */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t done;
};

extern struct waiter w;
extern uint64_t rs;

void on_done(gm_job *job, void *arg);
void wait_done(size_t n);
size_t done_count(void);

/* CLOCK_MONOTONIC in us, the clock the engine stamps jobs with. */
double now_us(void);
gm_engine *open_engine(int kind, unsigned threads);

/* A job and the buffers it owns, with the description it was built from:
 * A, B and C back to back as on the wire, then the result. */
struct tjob {
	gm_job job;
	size_t es;
	uint8_t *a, *b, *c, *out;
	int back; /* for a test that counts them: the order it came back in */
};

void fill_nan(void *p, int dtype, size_t count);

/* A job of random A, B and C (from rs), alpha ALPHA and beta BETA, its
 * result poisoned with NaN; out is c itself when in_place. */
void make_job(struct tjob *t, int dtype, int layout, int ta, int tb, int has_c,
	      int in_place, uint32_t m, uint32_t n, uint32_t k);

/*
 * Checks t's result (at out) against the long double reference of
 * gm_testref_check: every element written, the error within the bound.
 */
void check_result(const struct tjob *t, const void *out);

/* Asserts that t succeeded and its out is the reference's product; a
 * job updated in place compares against c_before, a copy of C taken
 * before it ran. Asserts nothing of where or how long it ran. */
void check_job(const struct tjob *t, const void *c_before);

void free_job(struct tjob *t);

/* Runs wave[0..n-1] (the jobs of t) as one wave on a fresh engine e,
 * checks and frees every job, and reads the stats after. */
void run_checked(gm_engine *e, struct tjob *t, gm_job **wave, int n,
		 gm_device_stats *s);

int setup_seed(void **state);

#endif
