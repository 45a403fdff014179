/*
 * gm_client.h - private to the client library: what a gemmd_client is,
 * the one lock that guards it, what is done once that lock is let go,
 * and the calling thread's last error, which every file of the library
 * sets and gemmd_last_error() reads.
 *
 * A client holds the daemons it dialed (gm_daemon.h), each with its
 * connections (gm_conn.h); the calls in flight (gm_call.h), each sent as
 * one or more request frames, its parts; a timer thread (gm_timer.h) for
 * deadlines, redials and the freeing of closed streams; and, made on
 * first use, the copy threads that stage plain pointers through shared
 * memory (gm_stage.h).
 *
 * Threads: the caller's, nng's (stream and dial callbacks), the timer
 * thread and the copy threads all take the client's lock, mu, to change
 * any of that state, and none of them holds it while it starts stream
 * I/O, closes a stream or tells a caller that its call ended: a stream
 * may complete an operation on the thread that starts it, and a done
 * callback may start the next call. What must wait for the lock to be
 * let go is collected in a gm_todo and run after (gm_todo_run).
 */
#ifndef GM_CLIENT_H
#define GM_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gemmd.h"
#include "gm_idmap.h"
#include "gm_poller.h"
#include "gm_timer.h"

/* Longest detail kept for gemmd_last_error(), with its NUL. */
#define GM_CLIENT_ERRLEN 256

typedef struct gm_call gm_call;
typedef struct gm_part gm_part;
typedef struct gm_conn gm_conn;
typedef struct gm_daemon gm_daemon;
typedef struct gm_workers gm_workers;

struct gemmd_client {
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* a connection went down (gemmd_close waits) */
	gm_daemon **daemons; /* [0]: gemmd_open's; under mu */
	unsigned ndaemons;
	unsigned next_daemon; /* round robin among equals */
	gm_idmap parts;	      /* request id -> gm_part in flight */
	uint64_t next_id;     /* atomic */
	gm_timer *timer;
	gm_poller *poller;   /* receives a waiting caller takes */
	gm_workers *workers; /* copy threads; NULL until staging needs them */
	gm_call *calls;	     /* not ended, through next_call/prev_call */
	bool closing;	     /* gemmd_close began: no call starts */
	unsigned deferred;   /* tells handed to the timer thread, under mu */
};

/* What a thread holding the lock leaves for after it: calls whose end
 * is to be told (in the order they ended: a caller sees replies of one
 * connection in the order they came), connections whose I/O may start
 * or that are to be closed. */
typedef struct gm_todo {
	gemmd_client *cl;
	gm_call *tell;	    /* through gm_call.next_tell */
	gm_call *tell_last; /* the last of them */
	gm_conn *run;	    /* through gm_conn.next_run */
} gm_todo;

#define GM_TODO_INIT(client) ((gm_todo){.cl = (client)})

/* Runs t: starts connections' I/O, closes streams, tells callers. Not
 * with the lock held. */
void gm_todo_run(gm_todo *t);

/* Sets the calling thread's gemmd_last_error() and returns code. */
int gm_client_seterr(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Empties the calling thread's gemmd_last_error(). */
void gm_client_clearerr(void);

/* The calling thread's last error text (thread-local storage). */
const char *gm_client_lasterr(void);

#endif
