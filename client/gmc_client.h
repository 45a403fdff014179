/*
 * gmc_client.h - private to the client library: what a gemmd_client is,
 * the one lock that guards it and what is done once that lock is let go.
 * Types only: every layer of the library (README.md) includes it.
 *
 * A client holds the daemons it dialed (gmc_daemon.h), each with its
 * connections (gmc_conn.h); the calls in flight (gmc_call.h), each sent as
 * one or more request frames, its parts; a timer thread (gmc_timer.h) for
 * deadlines, redials and the freeing of closed streams; and, made on
 * first use, the copy threads that stage plain pointers through shared
 * memory (gmc_stage.h).
 *
 * Threads: the caller's, nng's (stream and dial callbacks), the timer
 * thread and the copy threads all take the client's lock, mu, to change
 * any of that state, and none of them holds it while it starts stream
 * I/O, closes a stream or tells a caller that its call ended: a stream
 * may complete an operation on the thread that starts it, and a done
 * callback may start the next call. What must wait for the lock to be
 * let go is collected in a gmc_todo and run after (gmc_todo_run, in
 * gmc_conn.h).
 */
#ifndef GMC_CLIENT_H
#define GMC_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gemmd.h"
#include "gmc_idmap.h"
#include "gm_poller.h"
#include "gmc_timer.h"

typedef struct gmc_call gmc_call;
typedef struct gmc_part gmc_part;
typedef struct gmc_conn gmc_conn;
typedef struct gmc_daemon gmc_daemon;
typedef struct gmc_workers gmc_workers;
struct gmc_staging;

struct gemmd_client {
	pthread_mutex_t mu;
	pthread_cond_t cv;    /* a connection went down (gemmd_close waits) */
	gmc_daemon **daemons; /* [0]: gemmd_open's; under mu */
	unsigned ndaemons;
	unsigned next_daemon; /* round robin among equals */
	gmc_idmap parts;      /* request id -> gmc_part in flight */
	uint64_t next_id;     /* atomic */
	gmc_timer *timer;
	gm_poller *poller;    /* receives a waiting caller takes */
	gmc_workers *workers; /* copy threads; NULL until staging needs them */
	gmc_call *calls;      /* not ended, through next_call/prev_call */
	bool closing;	      /* gemmd_close began: no call starts */
	unsigned deferred;    /* tells handed to the timer thread, under mu */
	/* what the layers below tell the staging of the calls it took
	 * (gmc_call.h); set by the first stage made */
	const struct gmc_staging *staging;
};

/* What a thread holding the lock leaves for after it: calls whose end
 * is to be told (in the order they ended: a caller sees replies of one
 * connection in the order they came), connections whose I/O may start
 * or that are to be closed. */
typedef struct gmc_todo {
	gemmd_client *cl;
	gmc_call *tell;	     /* through gmc_call.next_tell */
	gmc_call *tell_last; /* the last of them */
	gmc_conn *run;	     /* through gmc_conn.next_run */
} gmc_todo;

#define GMC_TODO_INIT(client) ((gmc_todo){.cl = (client)})

#endif
