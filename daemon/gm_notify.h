/*
 * gm_notify.h - tells systemd how the daemon is doing (sd_notify(3)).
 *
 * gemmd runs as a Type=notify service: it reports READY=1 once its
 * listeners are up, STOPPING=1 when a stop begins, and WATCHDOG=1 from
 * a timer on the event loop, so that a loop that stops turning (not
 * merely a process that is alive) gets the service restarted. Each
 * message carries a STATUS= line that `systemctl status` shows. Outside
 * systemd (no $NOTIFY_SOCKET), or in a build without libsystemd, every
 * call does nothing. Loop thread only.
 */
#ifndef GM_NOTIFY_H
#define GM_NOTIFY_H

#include <uv.h>

/* READY=1 with status as STATUS=. */
void gm_notify_ready(const char *status);

/* STOPPING=1 with status as STATUS=. */
void gm_notify_stopping(const char *status);

/*
 * When systemd asked for watchdog pings for this process (WatchdogSec=,
 * read through sd_watchdog_enabled), starts a timer on loop that sends
 * WATCHDOG=1 at half that interval; else does nothing. The timer is
 * unreferenced, so it never keeps the loop alive by itself, and it is
 * closed by whoever closes every handle of the loop (uv_walk). One per
 * process, as $WATCHDOG_USEC is. Returns GM_OK, or GM_EINTERNAL (logged)
 * when the timer cannot be started.
 */
int gm_notify_watchdog_start(uv_loop_t *loop);

#endif
