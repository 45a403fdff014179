/*
 * itest.h - the one daemon fixture of the tests: a real gemmd started
 * on temporary sockets with the arguments, engine and environment a test
 * names (ready once it answers a ping over tcp://, through the raw-frame
 * client gm_rawc.h), stopped, killed, waited for, its log read; its
 * stats read by key, raw or through the client library; what the kernel
 * says about its process (descriptors, memory, CPU time); GEMM jobs with
 * their reference check; small timing helpers. Every suite that runs a
 * gemmd (integration, gpu) starts it here and nowhere else.
 *
 * itest.c holds the daemon's life, itest_probe.c what is read of it,
 * itest_job.c the client library's side.
 *
 * Failures here return an error for the test to assert on; nothing in
 * these files calls cmocka but it_run, so a helper can also run in a
 * forked child.
 */
#ifndef ITEST_H
#define ITEST_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gemmd.h"
#include "gm_rawc.h"

struct CMUnitTest;

typedef struct it_daemon {
	pid_t pid;	/* 0 when not running */
	char dir[64];	/* temporary directory, removed by it_cleanup */
	char ipc[160];	/* ipc://DIR/run/gemmd.sock: gemmd creates run/ */
	char tcp[64];	/* tcp://127.0.0.1:PORT, a port free at setup */
	char log[128];	/* gemmd's stderr */
	char path[128]; /* the ipc socket's file */
	long nofile;	/* when not 0: gemmd's RLIMIT_NOFILE, soft and hard */
	/* Set between it_setup and it_start, all optional: */
	const char *engine; /* --engine=ENGINE; NULL: cpu */
	const char *fault;  /* GEMMD_INJECT_FAULT for gemmd; NULL: none */
	int start_ms;	    /* how long start may take; 0: about 5 s */
	bool answer_only;   /* ready once it answers a ping, warm or not */
} it_daemon;

/* A loopback TCP port nobody listens on right now, or -1. */
int it_free_port(void);

/* Makes the directory and picks the addresses; starts nothing. */
int it_setup(it_daemon *d);

/*
 * Starts gemmd with d->engine (the CPU engine by default), listening on
 * d->ipc and d->tcp, with extra arguments args (NULL-terminated, may be
 * NULL), stderr appended to d->log, GEMMD_INJECT_FAULT taken out of its
 * environment unless d->fault names one; waits (d->start_ms, about 5 s
 * by default) for a ping over tcp://, which the ipc:// allow-lists do
 * not cover, to say it is ready. Returns 0, or -1 when gemmd exited or
 * did not answer (then it is killed).
 */
int it_start(it_daemon *d, const char *const *args);

/* it_setup, then it_start with the defaults; as it_start. */
int it_launch(it_daemon *d, const char *const *args);

/* it_setup and it_start with metrics_listen on a loopback port free at
 * setup, which *port gets, and extra arguments args; as it_start. */
int it_start_metrics(it_daemon *d, int *port, const char *const *args);

/* The longest gemmd may take to exit after SIGTERM in a test. */
#define IT_STOP_MS 60000

/* SIGTERM, then waits (IT_STOP_MS at most: then the end of its log goes
 * to stderr, it is killed and -1 returned); returns the exit status
 * (128 + signal when one killed it). */
int it_stop(it_daemon *d);

/* SIGKILL, then waits. */
void it_kill(it_daemon *d);

/* Waits up to ms for gemmd to exit by itself: its exit status (128 +
 * signal when one killed it), or -1 when it still runs; *took_ms (may
 * be NULL) gets the time waited. */
int it_wait_exit(it_daemon *d, int ms, double *took_ms);

/* Copies the last lines of d's log to stderr, after why. */
void it_tail_log(const it_daemon *d, const char *why);

/* Kills gemmd if it still runs and removes d->dir. */
void it_cleanup(it_daemon *d);

/* it_stop, then it_cleanup: it_stop's status. */
int it_finish(it_daemon *d);

/* Runs gemmd with args to its exit (at most 10 s), stderr into err (cut
 * to errlen). Returns the exit status, or -1 when it did not exit. */
int it_run_gemmd(const char *const *args, char *err, size_t errlen);

/* Whether the file at path contains text. */
int it_file_has(const char *path, const char *text);

/* The number at a dotted path ("pool.used"; an array's element by its
 * index, "devices.0.busy_s") of a stats object, or -1. */
double it_num(const cJSON *stats, const char *path);

/* The "stats" object of d's stats document, fetched over d->tcp with a
 * raw CTRL frame (cJSON_Delete it), or NULL. */
cJSON *it_rstats(const it_daemon *d);

/* it_num of a fresh stats document of d; -1 when it cannot be had. */
double it_rstat(const it_daemon *d, const char *path);

/* Polls d's stats until path reads want (within ms); returns the last
 * value read. */
double it_wait_stat(const it_daemon *d, const char *path, double want, int ms);

/* The same until path reads want or more: for counts that anything
 * else going on (the polls' own connections too) may push past it. */
double it_wait_stat_min(const it_daemon *d, const char *path, double want,
			int ms);

/* Descriptors process pid has open (/proc/PID/fd), or -1. */
int it_fds(pid_t pid);

/* Resident memory of pid in KiB (VmRSS of /proc/PID/status), or -1. */
long it_rss_kb(pid_t pid);

/* Whether a gemmd's resident memory tells what it holds: not under
 * AddressSanitizer (built with it, or ASAN_OPTIONS set), whose
 * quarantine keeps what was freed, up to 256 MiB; its leak check runs
 * at gemmd's exit instead. */
int it_rss_tells(void);

/* CPU time pid has used, user and system, in ms (/proc/PID/stat). */
double it_cpu_ms(pid_t pid);

/* Raises the soft RLIMIT_NOFILE to the hard one; returns the new soft
 * limit. */
long it_raise_nofile(void);

/* Runs the n tests as cmocka's group "tests" with SIGPIPE ignored:
 * exit 77 (skipped) when $GEMMD is not set. */
int it_run(const struct CMUnitTest *tests, size_t n);
#define IT_RUN(tests) it_run(tests, sizeof(tests) / sizeof((tests)[0]))

/* it_run with setup (may be NULL) run once before the group. */
int it_run_setup(const struct CMUnitTest *tests, size_t n,
		 int (*setup)(void **state));
#define IT_RUN_SETUP(tests, setup) \
	it_run_setup(tests, sizeof(tests) / sizeof((tests)[0]), setup)

/* Monotonic clock in microseconds. */
double it_now_us(void);

/* The q-quantile (0..1) of n samples, which it sorts. */
double it_quantile(double *v, size_t n, double q);

/* ---- through the client library ---- */

/* The "stats" object of a stats reply, fetched over c (cJSON_Delete
 * it), or NULL. */
cJSON *it_stats(gemmd_client *c);

/* it_num of a fresh stats document; -1 when it cannot be fetched. */
double it_stat(gemmd_client *c, const char *path);

/* Makes j a row-major fp64 m x n x k job, alpha 1, with operands in
 * -1..1 from seed and out filled with 0xA5 bytes (it_job_untouched). */
void it_job(gemmd_job *j, uint32_t m, uint32_t n, uint32_t k, unsigned seed);

/* Frees what it_job allocated. */
void it_job_free(gemmd_job *j);

/* Whether j succeeded and out is A*B to fp64 rounding. */
int it_job_ok(const gemmd_job *j);

/* Runs one it_job of m x n x k from seed on c within timeout_ms and
 * checks it: its round trip in microseconds, or -1 when the call failed
 * or the result was wrong (reported on stderr). The well-behaved client
 * of the attack tests. */
double it_timed_job(gemmd_client *c, uint32_t m, uint32_t n, uint32_t k,
		    unsigned seed, int timeout_ms);

/* Whether out still holds the 0xA5 fill: no byte of a result landed. */
int it_job_untouched(const gemmd_job *j);

/* Where a gemmd_submit_async callback lands: it_done, called with one
 * as its arg, sets rv and at_us (when it came), then done. */
typedef struct it_waiter {
	int rv;
	int done; /* read with it_wait_done: another thread sets it */
	double at_us;
} it_waiter;

/* The callback for an it_waiter arg; runs on the client's thread. */
void it_done(void *arg, int rv);

/* Waits up to ms (0: not at all; < 0: as long as it takes) for w's
 * callback; whether it came. */
int it_wait_done(it_waiter *w, int ms);

/* The engine's speed on this host: starts a gemmd with args, runs one
 * it_job of n x n x n twice over ipc:// within timeout_ms each (the
 * first warms OpenBLAS up), stops it. Returns the second's flops per
 * microsecond of kernel time, or -1 when a step failed. */
double it_flops_per_us(const char *const *args, uint32_t n, int timeout_ms);

/* The edge of the cube job that takes about seconds on the engine of a
 * gemmd started with args, timed as it_flops_per_us does with an n^3
 * job, within [lo, hi]; its speed in *rate (flops per microsecond).
 * Returns 0 when the timing failed. For tests that size a job to take
 * a given time on whatever host runs them. */
uint32_t it_cube_for(const char *const *args, uint32_t n, int timeout_ms,
		     double seconds, uint32_t lo, uint32_t hi, double *rate);

#endif
