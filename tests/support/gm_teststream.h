/*
 * gm_teststream.h - synchronous helpers over the asynchronous byte
 * streams (net/gm_stream.h), for the tests of net/: one operation, one
 * whole transfer, and the callbacks that post a semaphore when an
 * operation, an accept or a dial ends.
 */
#ifndef GM_TESTSTREAM_H
#define GM_TESTSTREAM_H

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_stream.h"

/* What ended, as the callbacks below leave it; sem is posted once per
 * end. */
typedef struct gm_teststream_wait {
	sem_t sem;
	int rv;
	int calls;    /* atomic: ends so far (gm_teststream_on_io) */
	size_t n;     /* bytes the operation moved */
	gm_stream *s; /* the stream accepted or dialed */
	pthread_t on; /* the thread the last operation ended on */
	char msg[256];
} gm_teststream_wait;

/* gm_io's done: arg is a gm_teststream_wait. */
void gm_teststream_on_io(gm_io *io, int rv, size_t n);

/* gm_accept_fn and gm_dial_fn: arg is a gm_teststream_wait. */
void gm_teststream_on_accept(void *arg, int rv, int nng_rv, gm_stream *s);
void gm_teststream_on_dial(void *arg, int rv, gm_stream *s, const char *msg);

/* Accepts one connection on l while d dials it, and waits for both
 * ends: GM_OK with *srv and *cli, or the first failure. */
int gm_teststream_connect(gm_listener *l, gm_dialer *d, gm_stream **srv,
			  gm_stream **cli);

/* One operation of at most len bytes at p, waited for: its rv, *n the
 * bytes it moved. */
int gm_teststream_op(gm_stream *s, int send, void *p, size_t len, size_t *n);

/* Sends or receives all len bytes at p: GM_OK or the first failure. */
int gm_teststream_move_all(gm_stream *s, int send, uint8_t *p, size_t len);

#endif
