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
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest.h"

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

#endif
