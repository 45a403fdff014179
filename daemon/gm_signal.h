/*
 * gm_signal.h - the signals gemmd acts on, and those it survives.
 *
 *   SIGINT, SIGTERM    stop: answer every accepted job, then exit 0
 *   SIGUSR1            drain
 *   SIGHUP             reload the configuration
 *   SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSTKFLT,
 *   SIGXCPU, SIGXFSZ   logged and ignored (their default kills)
 *   SIGPIPE            ignored: a peer that went away is an error on
 *                      the write, never the daemon's death
 *
 * One handler, installed before the daemon opens anything and never
 * removed, counts each signal and wakes the loop with uv_async_send,
 * the one libuv call a signal handler may make; the loop then acts on
 * the counts. So there is no moment of the daemon's life (opening the
 * engine, a reload, the teardown after the loop's handles closed) in
 * which one of these signals kills it, as there would be with libuv's
 * uv_signal_t, which puts the default action back when its handle
 * closes. A signal that comes while no loop listens is counted and
 * acted on once one does (gm_signal_open), or dropped at exit.
 * Signals that mean a bug (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
 * and SIGQUIT (a core on purpose) keep their default.
 */
#ifndef GM_SIGNAL_H
#define GM_SIGNAL_H

#include <stddef.h>
#include <uv.h>

/* What the loop does with a signal that came count times (coalesced)
 * since it last looked. */
typedef void (*gm_signal_fn)(int signum, unsigned count, void *arg);

/* Installs the handler for every signal above (SIGPIPE: SIG_IGN). GM_OK,
 * or GM_EINTERNAL with msg naming the signal. Call once, from the main
 * thread, before other threads start. */
int gm_signal_install(char *msg, size_t msglen);

/* Delivers the signals, from now on, to fn on loop's thread; those that
 * came before are delivered at the loop's next turn. One loop at a time.
 * GM_OK, or GM_EINTERNAL with msg. The handle is closed by
 * gm_signal_close, which must come before the loop's other handles are
 * walked and closed. Loop thread. */
int gm_signal_open(uv_loop_t *loop, gm_signal_fn fn, void *arg, char *msg,
		   size_t msglen);

/* Stops delivering (signals are counted and ignored from now on) and
 * closes the handle; a handler running on another thread is waited
 * for. Idempotent. Loop thread. */
void gm_signal_close(void);

#endif
