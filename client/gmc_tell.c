/*
 * gmc_tell.c - a call's caller told that it ended: a blocking caller's
 * waiter woken, or a done callback run; see gmc_tell.h.
 */
#include "gmc_tell.h"

#include <stdlib.h>
#include <string.h>

/* Whether this thread polls in gmc_tell_wait. */
static __thread bool polling;

/* Timer thread: a tell a polling caller handed over (gmc_tell).
 * gemmd_close waits for the count to fall to zero. */
static void tell_later(void *arg)
{
	gmc_call *k = arg;
	gemmd_client *cl = k->cl;

	gmc_tell(k);
	pthread_mutex_lock(&cl->mu);
	if (--cl->deferred == 0)
		pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
}

/* Hands k's tell to the timer thread: false when its heap cannot grow. */
static bool defer_tell(gmc_call *k)
{
	gemmd_client *cl = k->cl;

	pthread_mutex_lock(&cl->mu);
	cl->deferred++;
	pthread_mutex_unlock(&cl->mu);
	gmc_tev_init(&k->grace, tell_later, k);
	if (gmc_timer_arm(cl->timer, &k->grace, 0) == GM_OK)
		return true;
	pthread_mutex_lock(&cl->mu);
	cl->deferred--;
	pthread_mutex_unlock(&cl->mu);
	return false;
}

void gmc_tell(gmc_call *k)
{
	gemmd_client *cl = k->cl;
	gmc_call_waiter *w = k->nt.w;
	gmc_part *p, *next;

	gmc_timer_cancel(cl->timer, &k->deadline);
	gmc_timer_cancel(cl->timer, &k->grace);
	/* Another's callback, on a caller's thread: to the timer thread
	 * (told here only when its heap cannot grow). */
	if (w == NULL && polling && defer_tell(k))
		return;
	pthread_mutex_lock(&cl->mu);
	for (p = k->parts; p != NULL; p = next) {
		next = p->next_of_call;
		gmc_part_drop(p);
	}
	pthread_mutex_unlock(&cl->mu);
	/* A wait that allocated out for a result that did not come. */
	if (k->alloc_out && k->jobs[0].status != GM_OK) {
		free(k->jobs[0].out);
		k->jobs[0].out = NULL;
	}
	if (w != NULL) {
		pthread_mutex_lock(&w->mu);
		w->rv = k->rv;
		w->reply = k->reply;
		k->reply = NULL;
		memcpy(w->msg, k->msg, sizeof(w->msg));
		__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		gmc_call_free(k);
	} else {
		gemmd_done_fn done = k->nt.done;
		void *arg = k->nt.arg;
		int rv = k->rv;

		gmc_call_free(k);
		done(arg, rv);
	}
}

/* ---- waiters ---- */

int gmc_tell_waiter_init(gmc_call_waiter *w, gemmd_client *cl)
{
	memset(w, 0, sizeof(*w));
	w->poller = cl != NULL ? cl->poller : NULL; /* NULL: refused later */
	if (pthread_mutex_init(&w->mu, NULL) != 0)
		return gmc_error_set(GM_ENOMEM, "out of memory");
	if (pthread_cond_init(&w->cv, NULL) != 0) {
		pthread_mutex_destroy(&w->mu);
		return gmc_error_set(GM_ENOMEM, "out of memory");
	}
	return GM_OK;
}

void gmc_tell_waiter_drop(gmc_call_waiter *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

/* One turn of a polling loop: tells the core so (pause), leaving more
 * of it to a hyperthread beside the poller. A yield instead made the
 * daemon's own time worse on the same host (bench/RESULTS.md). */
static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

int gmc_tell_wait(gmc_call_waiter *w)
{
	uint64_t until = gmc_timer_now() + GMC_TELL_SPIN_US * 1000u;

	gm_poller_start(w->poller);
	polling = true;
	/* Seen done, the lock is still taken: the teller may hold it, and
	 * w is not to be dropped before it lets go. */
	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) &&
	       gmc_timer_now() < until)
		if (gm_poller_poll(w->poller) == 0)
			relax();
	polling = false;
	gm_poller_stop(w->poller);
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	gmc_tell_waiter_drop(w);
	if (w->rv != 0)
		gmc_error_set(w->rv, "%s", w->msg);
	return w->rv;
}
