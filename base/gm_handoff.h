/*
 * gm_handoff.h - the one way to hand items from some threads to others:
 * an intrusive FIFO under its owner's lock, with one wake-up rule and
 * one spin policy (gm_spin.h).
 *
 * Items are the owner's structs, chained through a `void *`-sized
 * pointer member of theirs (its offset given at init) that belongs to
 * the queue from push until the item is popped or taken back; nothing
 * is allocated per item, so a push cannot fail for memory. The lock is
 * the owner's, so that what the owner keeps beside the queue (bytes
 * outstanding, jobs held elsewhere, a warm-up asked for) changes under
 * the same lock as the queue, and a take-back finds a job in one place
 * or another, never between. Every call below is made with that lock
 * held; a wait drops it while it polls or sleeps, as pthread_cond_wait.
 *
 * Wake-ups: a push signals only while a consumer sleeps on the queue.
 * A consumer about to sleep on an empty queue first polls for spin_us
 * (the queue's gm_spin; none: it sleeps at once), without the lock,
 * watching a counter that every push, kick and close moves; pushes that
 * come while it polls wake nobody, and one that comes once it has
 * decided to sleep finds it counted as a sleeper (both under the lock),
 * so no wake-up is lost. A consumer that is not a thread of ours (an
 * event loop) is woken by a function of the owner's instead.
 *
 * Thread map: which threads cross where.
 *
 *   gemmd (daemon/)
 *     nng's threads, engine threads --news--> loop
 *                                 gm_inbox.h: a hand-off whose consumer
 *                                 is the loop, woken by its uv_async
 *                                 unless the loop polls it
 *   libgemmd (client/)
 *     callers, nng's threads --tasks--> copy threads (gmc_workers.c)
 *     any thread --kick--> timer thread (gmc_timer.c: a heap of events
 *                                 beside a hand-off that carries none)
 *
 *   CPU engine (gm_engine_cpu.c)
 *     loop --jobs--> worker       the FIFO; the worker takes what it
 *                                 runs next, cancel takes back the rest
 *     worker --calls--> crew      gm_crew.h: one ticket per helper out,
 *     crew --tickets--> worker    every ticket back before the call ends
 *     loop/worker --> side thread woken while the worker is in a piece
 *                                 (a condition of the engine's, not a
 *                                 queue: it takes from the same FIFO)
 *     any engine thread --> loop  jobs back (gm_engine.h); starts cross
 *                                 nothing: a flag and a count the loop
 *                                 reads (gm_engine_starts)
 *   CUDA engine, per device (gm_cuda_dev.h)
 *     loop --waves--> issue       polled for spin_us after each wave;
 *                                 a warm-up asked for is a kick
 *     issue --jobs--> runner      tiled jobs (gm_cuda_ooc.h)
 *     issue --contexts--> done[s] one queue per stream, in stream order;
 *                                 one completion thread of the device
 *                                 polls its queue for spin_us after its
 *                                 last, and one its end event
 *     issue --pieces--> stagers   a crew (gm_crew.h)
 *     runner --tiles--> packers   a crew (gm_crew.h)
 *     done, issue, runner --> loop  jobs back
 *   Waits for device memory (issue thread, runner) are conditions of the
 *   device's, not queues: memory freed wakes them only while they wait.
 */
#ifndef GM_HANDOFF_H
#define GM_HANDOFF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "gm_spin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Embedded in its owner; the fields are the module's. */
typedef struct gm_handoff {
	pthread_mutex_t *mu;	 /* the owner's */
	pthread_cond_t cv;	 /* consumers asleep; CLOCK_MONOTONIC */
	size_t off;		 /* of the items' link */
	gm_spin *spin;		 /* consumers poll under it; NULL: never */
	void (*wake)(void *arg); /* a consumer of the owner's, or NULL */
	void *wake_arg;
	/* under mu: */
	void *head, *tail;
	unsigned sleepers; /* consumers asleep on cv */
	bool kicked;	   /* a wait returns once without an item */
	bool closed;	   /* pushes refused, waits return when empty */
	bool polled;	   /* the owner's consumer polls: no wake */
	unsigned stamp;	   /* atomic: moves at each push, kick, close */
} gm_handoff;

/*
 * Sets q up for items linked through the pointer member at link_off,
 * under the owner's lock mu, its consumers polling under spin (NULL:
 * they sleep at once). Returns 0, or the pthreads error. Before any
 * other thread sees q.
 */
int gm_handoff_init(gm_handoff *q, pthread_mutex_t *mu, size_t link_off,
		    gm_spin *spin);

/* Frees what init made; q must be empty of waiters. Items still queued
 * stay the owner's (gm_handoff_take_all first). */
void gm_handoff_destroy(gm_handoff *q);

/* For a consumer that is not a thread sleeping in gm_handoff_wait (an
 * event loop): pushes call wake(arg), under mu, unless the consumer
 * said it polls (gm_handoff_polled). Before any other thread sees q. */
void gm_handoff_set_wake(gm_handoff *q, void (*wake)(void *arg), void *arg);

/* Appends item; wakes a sleeping consumer. Returns false, keeping
 * nothing, once q is closed. */
bool gm_handoff_push(gm_handoff *q, void *item);

/* Appends items[0..n-1] in order, waking as many sleeping consumers as
 * there are items (one broadcast when that is all of them). */
bool gm_handoff_push_all(gm_handoff *q, void *const *items, size_t n);

/* Puts item right after prev, an item of q (NULL: first), waking as
 * push does: for items that go ahead of others (urgent tasks). Returns
 * false, keeping nothing, once q is closed. */
bool gm_handoff_insert(gm_handoff *q, void *prev, void *item);

/* Takes the oldest item off q; NULL when q is empty. */
void *gm_handoff_pop(gm_handoff *q);

/* Takes every item off q, returned oldest first, still chained through
 * their links (the last's is NULL); NULL when q is empty. */
void *gm_handoff_take_all(gm_handoff *q);

/* The oldest item, and the one after item: NULL at the end. For a
 * consumer that chooses what it takes, or a take-back that looks. */
void *gm_handoff_first(const gm_handoff *q);
void *gm_handoff_next(const gm_handoff *q, const void *item);

/* Takes item, which follows prev (NULL: item is the first), off q. */
void gm_handoff_unlink(gm_handoff *q, void *prev, void *item);

/* Takes item off q if it is there: whether it was. */
bool gm_handoff_remove(gm_handoff *q, void *item);

/* Takes the oldest item for which match(item, key) is true off q and
 * returns it; NULL when there is none. */
void *gm_handoff_remove_if(gm_handoff *q, bool (*match)(void *item, void *key),
			   void *key);

/*
 * Returns at once when q has an item, is closed, or was kicked since
 * the last wait returned; else polls (gm_spin.h) and then sleeps until
 * one of those. Clears the kick. The caller looks at q (and at what it
 * keeps beside q) when it returns. Consumer threads, any number.
 */
void gm_handoff_wait(gm_handoff *q);

/* The same, but sleeps no later than at (CLOCK_MONOTONIC); false when
 * it returned for the time alone. */
bool gm_handoff_wait_until(gm_handoff *q, const struct timespec *at);

/* Waits, then pops: the oldest item, or NULL when q is closed and
 * empty or was kicked. */
void *gm_handoff_pop_wait(gm_handoff *q);

/* Makes one wait return (now, or the next to start) without an item:
 * for news kept beside q, as a warm-up asked for. */
void gm_handoff_kick(gm_handoff *q);

/* Refuses pushes from now on and wakes every consumer; waits return at
 * once when q is empty. Items queued still come out. */
void gm_handoff_close(gm_handoff *q);
bool gm_handoff_closed(const gm_handoff *q);

/* The owner's consumer (gm_handoff_set_wake) polls q from now on (on)
 * and pushes need not wake it, or no longer does (off). */
void gm_handoff_polled(gm_handoff *q, bool on);

/* A number that moves at each push, kick and close: a poller compares
 * it with the one it saw. Any thread, no lock. */
unsigned gm_handoff_stamp(const gm_handoff *q);

#ifdef __cplusplus
}
#endif
#endif
