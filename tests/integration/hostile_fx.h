/*
 * hostile_fx.h - what the hostile-traffic tests share: how long an answer may
 * take, and the error codes of PROTOCOL.md §9 by number, as a client
 * written from the text alone has them.
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
	EDRAINING = 30,
	EACCES = 31,
	ENOTFOUND = 27,
};

#endif
