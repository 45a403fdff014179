/*
 * gm_poller.h - receives a spinning thread takes itself. nng 1.5.2
 * completes a receive on its poller thread (epoll), then runs the aio's
 * callback on one of its task threads: two thread wake-ups for every
 * receive, some 10-20 us on the path of a small request and again on
 * its reply. A thread that spins anyway between events (the daemon's
 * loop for spin_us, a client's caller waiting for its answer) can
 * instead try each receive itself, on its own thread: a read that finds
 * bytes completes there and then, with no wake-up at all.
 *
 * A poller is a set of plain streams (ipc://, tcp://; TLS streams run
 * their own pump and are never polled). While it is started, a receive
 * of at most GM_POLLER_MAX_BYTES begun on one of its streams is parked
 * with it, up to a cap, instead of being handed to nng. Each
 * gm_poller_poll tries every parked receive once, without blocking,
 * and runs the callbacks of those that ended on the polling thread.
 * Stopping it hands what is parked to nng as any receive. A poller made
 * to take back (GM_POLLER_TAKE_BACK) also parks, when it starts, the
 * receives already in nng's hands (cancelled there, then parked as
 * their cancellation comes back): a client's caller starts one while
 * the receive of its reply already waits in nng.
 *
 * Every receive still completes exactly once, on whichever thread ends
 * it; a callback run by a poll may start the next receive, which parks.
 */
#ifndef GM_POLLER_H
#define GM_POLLER_H

#include <stdbool.h>

#include "gm_stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gm_poller gm_poller;

/* Receives a poller holds at most; more go to nng as usual (each try
 * is a system call or two, on every turn of the spin). */
#define GM_POLLER_MAX_PARKED 16

/* The largest receive a poller takes: one for more is the bulk of a
 * big frame, which nng's threads read while the polling thread does its
 * other work; a poll is for what a small request or reply brings. */
#define GM_POLLER_MAX_BYTES (256u << 10)

enum {
	GM_POLLER_TAKE_BACK = 1, /* start takes back receives in flight */
};

/* A poller; flags from the enum above. GM_OK or GM_ENOMEM. */
int gm_poller_new(unsigned flags, gm_poller **out);

/* Frees p once its streams are all freed. With streams still in it (a
 * daemon that exits with connections it could not free) p stays, as
 * they do, for the process's exit: one of nng's threads may still
 * start a receive on them. NULL is fine. */
void gm_poller_free(gm_poller *p);

/* Puts s, a stream just made, in p: before its first receive, from the
 * thread that owns it. A TLS stream stays out (nothing to poll). */
void gm_stream_set_poller(gm_stream *s, gm_poller *p);

/* Receives begun from now on park (see above). Counted: p stays started
 * until as many gm_poller_stop. Any thread. */
void gm_poller_start(gm_poller *p);

/* Tries each parked receive once and runs, on this thread, the
 * callbacks of those that ended. Returns how many ended. Never blocks
 * on the network; threads polling at once take turns. */
int gm_poller_poll(gm_poller *p);

/* Ends one gm_poller_start; at the last, what is parked goes to nng. */
void gm_poller_stop(gm_poller *p);

/* How many receives are parked now. Any thread. */
unsigned gm_poller_parked(gm_poller *p);

#ifdef __cplusplus
}
#endif
#endif
