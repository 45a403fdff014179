/*
 * hostile_fx.h - what the tests in raw frames share (hostile,
 * hostile_conn, hostage, ctrl): how long an answer may take, the error
 * codes of PROTOCOL.md §9 by number, as a client written from the text
 * alone has them, a job naming a region nobody holds, and a job's round
 * trip that must succeed.
 */
#ifndef HOSTILE_FX_H
#define HOSTILE_FX_H

#include <pthread.h>

#include "it_case.h"

#define WAIT_MS 10000

/* Error codes of PROTOCOL.md §9. */
enum {
	OK = 0,
	EMAGIC = 2,
	EVERSION = 3,
	EMSGTYPE = 4,
	EDTYPE = 5,
	EDIM = 7,
	EOVERFLOW = 8,
	ETRUNC = 9,
	ETRAILING = 10,
	ETOOMANY = 11,
	EFIELD = 12,
	ETOOBIG = 13,
	EBUSY = 14,
	ETIMEDOUT = 18,
	EDRAINING = 30,
	EACCES = 31,
	ENOTFOUND = 27,
};

/* One 1x1x1 fp64 job whose A is region 7, which no client holds, and
 * whose B is inline at b. */
rc_job region_job(const double *b);

/* Sends the request req (len bytes) of one job on fd and reads its
 * GEMM_REPLY, whose job must have succeeded; returns the round trip in
 * microseconds. */
double job_ok_us(int fd, const uint8_t *req, size_t len);

/* Runs 64x64x64 fp64 jobs one after another on fd, at least min of them
 * and on until ms have passed (200,000 at most); returns the p99 round
 * trip in microseconds and sets *p50, and *max and *n unless NULL. */
double timed_jobs(int fd, int min, int ms, double *p50, double *max, int *n);

#endif
