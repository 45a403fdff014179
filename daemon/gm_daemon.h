/*
 * gm_daemon.h - gemmd's core: the libuv loop that owns the queue, the
 * pool bookkeeping and the stats, wired to the nng server and an engine.
 */
#ifndef GM_DAEMON_H
#define GM_DAEMON_H

#include "gm_config.h"

/*
 * Opens the engine and the listeners, serves until SIGINT or SIGTERM (or
 * a sticky GPU fault), then answers every accepted job, closes
 * everything and returns the process exit status: 0 after a signal, 1
 * when startup failed, 3 after a GPU fault (so a supervisor restarts
 * the daemon). SIGUSR1 (or a "drain" request) drains: new jobs are
 * refused with GM_EDRAINING while the queued ones finish, until a
 * "resume" request. SIGHUP builds the configuration again with
 * reread(arg) and takes what may change into cfg (gm_reload.h); other
 * signals are as gm_signal.h says. Blocks; call from main, before any
 * other thread starts.
 */
int gm_daemon_run(gm_config *cfg, gm_config_source_fn reread, void *arg);

#endif
