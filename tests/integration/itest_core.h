/*
 * itest_core.h - what every C integration test shares, without the
 * client library: a real gemmd started on temporary sockets (ready once
 * it answers a ping over tcp://, through the raw-frame client
 * gm_rawc.h), its stats read by key, what the kernel says about its
 * process (descriptors, memory, CPU time), and small timing helpers.
 * Tests that speak the wire themselves use only this; those that use
 * the client library include itest.h, which adds its helpers.
 *
 * Failures here return an error for the test to assert on; nothing in
 * this file calls cmocka, so a helper can also run in a forked child.
 */
#ifndef ITEST_CORE_H
#define ITEST_CORE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gm_rawc.h"

typedef struct it_daemon {
	pid_t pid;	/* 0 when not running */
	char dir[64];	/* temporary directory, removed by it_cleanup */
	char ipc[160];	/* ipc://DIR/run/gemmd.sock: gemmd creates run/ */
	char tcp[64];	/* tcp://127.0.0.1:PORT, a port free at setup */
	char log[128];	/* gemmd's stderr */
	char path[128]; /* the ipc socket's file */
	long nofile;	/* when not 0: gemmd's RLIMIT_NOFILE, soft and hard */
} it_daemon;

/* A loopback TCP port nobody listens on right now, or -1. */
int it_free_port(void);

/* Makes the directory and picks the addresses; starts nothing. */
int it_setup(it_daemon *d);

/*
 * Starts gemmd with the CPU engine, listening on d->ipc and d->tcp, with
 * extra arguments args (NULL-terminated, may be NULL), stderr appended
 * to d->log; waits up to 5 s for a ping over tcp://, which the ipc://
 * allow-lists do not cover. Returns 0, or -1 when gemmd exited or did
 * not answer (then it is killed).
 */
int it_start(it_daemon *d, const char *const *args);

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

/* Kills gemmd if it still runs and removes d->dir. */
void it_cleanup(it_daemon *d);

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

/* Monotonic clock in microseconds. */
double it_now_us(void);

/* The q-quantile (0..1) of n samples, which it sorts. */
double it_quantile(double *v, size_t n, double q);

#endif
