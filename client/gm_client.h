/*
 * gm_client.h - private to the client library: what a gemmd_client is,
 * and the calling thread's last error, which every file of the library
 * sets and gemmd_last_error() reads.
 *
 * A client is one nng REQ socket, the pool of calls made on it (each a
 * state machine of gm_call.h, reused and freed only by gemmd_close) and
 * its shared-memory regions (gm_shm.h).
 */
#ifndef GM_CLIENT_H
#define GM_CLIENT_H

#include <nng/nng.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gemmd.h"

/* Longest detail kept for gemmd_last_error(), with its NUL. */
#define GM_CLIENT_ERRLEN 256

struct gm_call;
typedef struct gm_shm gm_shm;

struct gemmd_client {
	nng_socket sock;
	gm_shm *shm;	    /* shared-memory regions */
	pthread_mutex_t mu; /* guards the calls below */
	struct gm_call *free, *all;
	uint64_t next_id;
	bool closing; /* gemmd_close began: no call is added */
};

/* Sets the calling thread's gemmd_last_error() and returns code. */
int gm_client_seterr(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Empties the calling thread's gemmd_last_error(). */
void gm_client_clearerr(void);

/* The calling thread's last error text (thread-local storage). */
const char *gm_client_lasterr(void);

#endif
