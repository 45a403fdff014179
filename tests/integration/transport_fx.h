/*
 * transport_fx.h - what the transport tests share: jobs sent and read back in
 * raw frames (gm_rawc.h), a well-behaved client's timed jobs, ERROR
 * frames read, and what gemmd holds (connections, pool, requests,
 * descriptors, resident memory) checked back where it was.
 */
#ifndef TRANSPORT_FX_H
#define TRANSPORT_FX_H

#include <errno.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "it_case.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

#define WAIT_MS 10000

/* ---- helpers ---- */

/* A fp64 job with its operands, to send and to check. */
typedef struct tjob {
	rc_job j;
	double *a, *b;
} tjob;

void tjob_make(tjob *t, uint32_t m, uint32_t n, uint32_t k, unsigned seed);

void tjob_free(tjob *t);

/* Sends the n jobs t[] as one request id on fd. */
void send_req(int fd, uint64_t id, const tjob *t, uint32_t n, uint32_t bflags);

/* Reads one frame, which must be a GEMM_REPLY of request id whose job
 * (its index in t) succeeded with the right result; returns its
 * index. */
uint32_t read_ok(int fd, uint64_t id, const tjob *t, uint32_t n);

/* Runs one small job on a fresh connection to url; returns its round
 * trip in microseconds, connection included. */
double one_job(const char *url, unsigned seed);

/* Runs n small jobs one after another on fd; returns the p99 round trip
 * in microseconds and sets *p50. */
double timed_jobs(int fd, int n, double *p50);

/* An ERROR frame within ms: its status, id and message; then whether
 * the daemon closed the connection. */
uint32_t read_error(int fd, uint64_t *id, char msg[97]);

/* What an idle gemmd holds, and its process' descriptors and memory. */
typedef struct snapshot {
	int fds;
	long rss_kb;
} snapshot;

snapshot snap(const it_daemon *d);

/* Waits until gemmd holds nothing for clients but open connections,
 * then checks its descriptors against base (open more than base had). */
void assert_idle(const it_daemon *d, double open, const snapshot *base,
		 int more_fds);

void start(it_daemon *d, const char *const *args);

void finish(it_daemon *d);

#endif
