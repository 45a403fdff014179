/*
 * itest.h - what the C integration tests share: a real gemmd started on
 * temporary sockets, its stats document read by key, plain sockets that
 * speak just enough of nng's SP framing to misbehave on purpose, and
 * small timing helpers.
 *
 * Failures here return an error for the test to assert on; nothing in
 * this file calls cmocka, so a helper can also run in a forked child.
 */
#ifndef ITEST_H
#define ITEST_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gemmd.h"

typedef struct it_daemon {
	pid_t pid;	/* 0 when not running */
	char dir[64];	/* temporary directory, removed by it_cleanup */
	char ipc[160];	/* ipc://DIR/run/gemmd.sock: gemmd creates run/ */
	char tcp[64];	/* tcp://127.0.0.1:PORT, a port free at setup */
	char log[128];	/* gemmd's stderr */
	char path[128]; /* the ipc socket's file */
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

/* SIGTERM, then waits; returns the exit status (128 + signal when one
 * killed it). */
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

/* The "stats" object of a stats reply, fetched over c (cJSON_Delete
 * it), or NULL. */
cJSON *it_stats(gemmd_client *c);

/* The number at a dotted path ("pool.used") of a stats object, or -1. */
double it_num(const cJSON *stats, const char *path);

/* it_num of a fresh stats document; -1 when it cannot be fetched. */
double it_stat(gemmd_client *c, const char *path);

/*
 * A plain socket connected to an ipc:// or tcp:// URL, with nng's SP
 * header for a REQ peer already sent: 00 'S' 'P' 00, the protocol 0x0030
 * big-endian, two zero bytes. Returns the descriptor or -1; *ipc says
 * which framing the connection uses.
 */
int it_sp_connect(const char *url, int *ipc);

/* Writes the frame header of a len-byte message: on ipc:// a 0x01 type
 * byte and the length as u64 big-endian, on tcp:// the length alone. */
int it_sp_frame(int fd, int ipc, uint64_t len);

/* Waits up to ms for the peer to close fd, reading past whatever it
 * sent (its SP header); returns whether it closed. */
int it_closed_by_peer(int fd, int ms);

/* Writes all n bytes of p; 0 or -1. */
int it_write_all(int fd, const void *p, size_t n);

/* Raises the soft RLIMIT_NOFILE to the hard one; returns the new soft
 * limit. */
long it_raise_nofile(void);

/* Makes j a row-major fp64 m x n x k job, alpha 1, with operands in
 * -1..1 from seed and out filled with 0xA5 bytes (it_job_untouched). */
void it_job(gemmd_job *j, uint32_t m, uint32_t n, uint32_t k, unsigned seed);

/* Frees what it_job allocated. */
void it_job_free(gemmd_job *j);

/* Whether j succeeded and out is A*B to fp64 rounding. */
int it_job_ok(const gemmd_job *j);

/* Whether out still holds the 0xA5 fill: no byte of a result landed. */
int it_job_untouched(const gemmd_job *j);

/* j as a one-job GEMM request message with the given id, after head
 * bytes left for the caller (an SP header): malloc'd, *len in all. */
uint8_t *it_request(const gemmd_job *j, uint64_t id, size_t head, size_t *len);

/* Monotonic clock in microseconds. */
double it_now_us(void);

/* The q-quantile (0..1) of n samples, which it sorts. */
double it_quantile(double *v, size_t n, double q);

#endif
