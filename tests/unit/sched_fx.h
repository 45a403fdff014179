/*
 * sched_fx.h - the harness of the scheduler's tests: the bounded queue and
 * scheduler in front of the real CPU engine (one BLAS thread), driven the
 * way the daemon drives them. The engine's done callback only hands the
 * job over (through a mutex and condition variable, in the order the
 * engine returned them) and the test thread, playing the loop, calls
 * gm_sched_complete. h_check runs the checks every test ends with: queue
 * and engine empty, nothing reserved, every job of an accepted request
 * finished exactly once before its request was done exactly once, every
 * job that ran back from the engine exactly once, every job that failed
 * before starting (or was refused) never run, its output still poisoned,
 * and the stats agreeing with the statuses the requests came back with.
 */
#ifndef SCHED_FX_H
#define SCHED_FX_H

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

#include "gm_engine.h"
#include "gm_error.h"
#include "gm_sched.h"
#include "gm_stats.h"
#include "gm_testref.h"

#define ALPHA	  1.5
#define BETA	  -0.75
#define MAXJOBS	  32   /* per request */
#define MAXREQS	  16   /* per test */
#define MAXBACK	  256  /* jobs back from the engine per test */
#define WAIT_S	  60   /* a job not back by then is lost */
#define POISON	  0xFF /* every byte: NaN in fp64 and fp32 */
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* One job's description, the short way. */
struct shape {
	uint8_t dtype, layout, ta, tb, has_c;
	uint32_t m, n, k;
};

/* A request and the buffers its jobs point at. in[i] holds the payload
 * (A, B, C back to back) followed by a pristine copy of it. */
struct treq {
	gm_sched_request *r;
	int accepted;
	unsigned done;		    /* request done callbacks seen */
	unsigned back[MAXJOBS];	    /* engine returns seen, per job */
	unsigned finished[MAXJOBS]; /* job callbacks seen, per job */
	uint64_t bytes[MAXJOBS];
	uint8_t *in[MAXJOBS], *out[MAXJOBS];
};

/* The scheduler under test, its engine, and the hand-over from the
 * engine's worker thread to the test thread. */
struct harness {
	gm_engine *eng;
	gm_sched *sched;
	uint64_t budget; /* bytes */
	gm_stats st;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	gm_job *back[MAXBACK];	 /* under mu: in the order they came back */
	size_t nback;		 /* under mu */
	gm_job *starts[MAXBACK]; /* under mu: in the order they started */
	size_t nstarts;		 /* under mu */
	size_t ndelivered;	 /* starts told to the scheduler */
	int gate;		 /* under mu: the engine is held in its done
				    callback while set */
	pthread_cond_t gate_cv;
	size_t ntaken; /* completed by the test thread */
	uint64_t peak_inflight;
	struct treq *reqs[MAXREQS];
	size_t nreqs;
	uint64_t ok, failed, codes[GM_ERR_COUNT]; /* from finished requests */
};

extern struct harness h;
extern uint64_t rs;
extern uint64_t next_id;

/* Engine thread: notes job at the end of list (*n of them so far) and
 * wakes the test thread. Under mu. */
void note(struct harness *hs, gm_job **list, size_t *n, gm_job *job);

/* Engine thread: only hand the job over; while the gate is closed the
 * engine thread waits here, so that what was handed to the engine after
 * this job waits in the engine's own queue. */
void on_engine_done(gm_job *job, void *arg);

/* Engine thread: only note that the job started. */
void on_engine_start(gm_job *job, uint32_t n, void *arg);

void set_gate(int closed);

/* Test thread, from the scheduler: job j is finished. */
void on_job_done(gm_sched_job *j, void *arg);

/* Test thread, from the scheduler: every job of r is back. */
void on_request_done(gm_sched_request *r, void *arg);

/* Checks what must hold between any two calls into the scheduler. */
void check_books(void);

/* A scheduler keeping at most budget bytes of work on the engine. */
void h_open(uint64_t budget, unsigned depth);

/* Bytes of the budget one job of shape s takes: A, B, C and result. */
uint64_t cost_of(const struct shape *s);

/* A request of njobs jobs, job i of shape sh[i % nsh], kept by the
 * harness until h_close. */
struct treq *new_req(uint32_t njobs, uint8_t prio, uint32_t deadline_ms,
		     const struct shape *sh, size_t nsh);

/* A request of n jobs all of shape s. */
struct treq *new_req_of(uint32_t n, const struct shape *s);

/* Hands tr to the scheduler: its code, the books checked. */
int submit(struct treq *tr);

/* submit, which must take tr (GM_OK); returns tr. */
struct treq *submit_ok(struct treq *tr);

/* Waits up to WAIT_S until *count (under mu) reaches n; returns it. */
size_t wait_count(const size_t *count, size_t n);

/* Waits until at least n jobs have come back from the engine. */
void wait_back(size_t n);

/* Waits until at least n jobs have started on the engine. */
void wait_started(size_t n);

/* Completes the next job the engine returned, as the loop would, after
 * the starts that came before it. */
void take_one(void);

/* Completes jobs until no request is left. */
void drain(void);

void wait_past(double t_us);
int never_ran(int status);
int all_poison(const uint8_t *p, uint64_t bytes);
uint64_t out_bytes(const gm_job_desc *d);

/* The checks every test ends with. */
void h_check(void);

/* Frees what h_open made, whatever state a failed test left it in: the
 * engine is closed first, which waits for every job it holds. */
int h_free(void **state);

void h_close(void);

/*
 * Checks job i of tr against gm_testref_check's long double reference
 * (every element written, the error within the dtype's bound), the
 * payload left as it came, and timings in the order they were taken.
 */
void check_result(const struct treq *tr, uint32_t i);

void check_all_ok(const struct treq *tr);

/* Every dtype, layout, transpose pair and C choice of one size. */
struct treq *new_req_all_kinds(uint32_t m, uint32_t n, uint32_t k);

extern const struct shape SMALL;

/* One single-job request of connection conn. */
struct treq *conn_req(uint32_t conn, const struct shape *s);

int setup_seed(void **state);

#endif
