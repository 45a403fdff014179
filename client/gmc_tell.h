/*
 * gmc_tell.h - private to the client library: telling a call's caller
 * that it ended (gmc_call.h), once no I/O touches its memory: a blocking
 * caller through its waiter, which polls the client's connections for a
 * while before it sleeps, or an asynchronous one through its done
 * callback. Called by gmc_todo_run, never with the client's lock held.
 */
#ifndef GMC_TELL_H
#define GMC_TELL_H

#include "gmc_call.h"
#include "gmc_client.h"

/* How long a blocking caller polls for its call's end before it sleeps:
 * a small job's reply comes within some 100 us, and waking a sleeping
 * thread took 8 us of that (an H100 host, bench/RESULTS.md). Meanwhile
 * it reads its connections itself (gm_poller.h): the reply then wakes
 * none of nng's threads either. */
#define GMC_TELL_SPIN_US 100

/* Tells k's caller and frees k. Without the lock. */
void gmc_tell(gmc_call *k);

/* Makes a waiter for a call of cl: GM_OK or GM_ENOMEM. */
int gmc_tell_waiter_init(gmc_call_waiter *w, gemmd_client *cl);

/* Frees a waiter whose call never started. */
void gmc_tell_waiter_drop(gmc_call_waiter *w);

/* Blocks until the waiter's call has ended, frees the waiter and returns
 * the call's code, with gemmd_last_error() set when it failed. While it
 * polls, the ends it takes of other calls that have a done callback are
 * told on the timer thread: a callback never runs inside its caller's
 * own call on the library. */
int gmc_tell_wait(gmc_call_waiter *w);

#endif
