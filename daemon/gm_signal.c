/*
 * gm_signal.c - one signal handler that counts, and the loop's side of
 * it; see gm_signal.h.
 *
 * The handler touches only lock-free atomics and calls uv_async_send,
 * which libuv documents as async-signal-safe. The handle it wakes is
 * published through an atomic pointer; closing unpublishes it, then
 * waits for a handler that had already read it (on another thread) to
 * leave, so that no handler ever sends to a closed handle.
 */
#include "gm_signal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gm_error.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_POINTER_LOCK_FREE == 2,
	       "a signal handler may only touch lock-free atomics");

/* Every signal the handler takes. */
static const int handled[] = {
    SIGINT,  SIGTERM, SIGUSR1, SIGHUP,	  SIGUSR2, SIGALRM, SIGVTALRM,
    SIGPROF, SIGIO,   SIGPWR,  SIGSTKFLT, SIGXCPU, SIGXFSZ,
};

#define NHANDLED (sizeof(handled) / sizeof(handled[0]))

static atomic_uint counts[NSIG];
static _Atomic(uv_async_t *) wake;
static atomic_int inside; /* handlers between reading wake and done */

static uv_async_t async;
static gm_signal_fn deliver;
static void *deliver_arg;
static int opened;

static void on_signal(int signum)
{
	int saved = errno;
	uv_async_t *a;

	atomic_fetch_add(&inside, 1);
	atomic_fetch_add(&counts[signum], 1);
	if ((a = atomic_load(&wake)) != NULL)
		uv_async_send(a);
	atomic_fetch_sub(&inside, 1);
	errno = saved;
}

int gm_signal_install(char *msg, size_t msglen)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* Interrupted system calls on other threads carry on. */
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_signal;
	for (size_t i = 0; i < NHANDLED; i++)
		if (sigaction(handled[i], &sa, NULL) != 0) {
			snprintf(msg, msglen, "handling %s: %s",
				 strsignal(handled[i]), strerror(errno));
			return GM_EINTERNAL;
		}
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0) {
		snprintf(msg, msglen, "ignoring SIGPIPE: %s", strerror(errno));
		return GM_EINTERNAL;
	}
	return GM_OK;
}

/* Loop thread: hand over what came since the last look, in the order of
 * handled[] (a stop before a reload that came with it). */
static void on_wake(uv_async_t *a)
{
	unsigned n;

	(void)a;
	for (size_t i = 0; i < NHANDLED; i++)
		if ((n = atomic_exchange(&counts[handled[i]], 0)) != 0)
			deliver(handled[i], n, deliver_arg);
}

int gm_signal_open(uv_loop_t *loop, gm_signal_fn fn, void *arg, char *msg,
		   size_t msglen)
{
	int rv;

	if ((rv = uv_async_init(loop, &async, on_wake)) != 0) {
		snprintf(msg, msglen, "signals: %s", uv_strerror(rv));
		return GM_EINTERNAL;
	}
	deliver = fn;
	deliver_arg = arg;
	opened = 1;
	atomic_store(&wake, &async);
	/* Those that came before anyone listened. */
	uv_async_send(&async);
	return GM_OK;
}

void gm_signal_close(void)
{
	if (!opened)
		return;
	opened = 0;
	atomic_store(&wake, NULL);
	while (atomic_load(&inside) != 0)
		sched_yield();
	uv_close((uv_handle_t *)&async, NULL);
}
