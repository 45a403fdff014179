/*
 * gm_notify.c - sd_notify(3) messages to the service manager. Without
 * libsystemd (GEMMD_HAVE_SYSTEMD 0) each function is empty, so callers
 * need no #if of their own.
 */
#include "gm_notify.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gm_build.h"
#include "gm_error.h"
#include "gm_log.h"

#if GEMMD_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

/* Process-wide, like the watchdog settings in the environment. */
static uv_timer_t watchdog;

static void notify(const char *state, const char *status)
{
	int rv = sd_notifyf(0, "%s\nSTATUS=%s", state, status);

	if (rv < 0)
		GM_LOG(GM_LOG_WARN, "sd_notify %s: %s", state, strerror(-rv));
}

void gm_notify_ready(const char *status)
{
	notify("READY=1", status);
}

void gm_notify_stopping(const char *status)
{
	notify("STOPPING=1", status);
}

static void ping(uv_timer_t *t)
{
	sd_notify(0, "WATCHDOG=1");
}

int gm_notify_watchdog_start(uv_loop_t *loop)
{
	uint64_t usec = 0;
	uint64_t ms;
	int rv;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return GM_OK;
	/* Half the interval, as sd_watchdog_enabled(3) advises, so one
	 * late turn of the loop does not get the service killed. */
	ms = usec / 2000 != 0 ? usec / 2000 : 1;
	/* An initialized timer is closed with every handle of the loop. */
	if ((rv = uv_timer_init(loop, &watchdog)) != 0 ||
	    (rv = uv_timer_start(&watchdog, ping, 0, ms)) != 0) {
		GM_LOG(GM_LOG_ERROR, "systemd watchdog: %s", uv_strerror(rv));
		return GM_EINTERNAL;
	}
	uv_unref((uv_handle_t *)&watchdog);
	GM_LOG(GM_LOG_INFO, "systemd watchdog: pinging every %llu ms",
	       (unsigned long long)ms);
	return GM_OK;
}

#else

void gm_notify_ready(const char *status)
{
}

void gm_notify_stopping(const char *status)
{
}

int gm_notify_watchdog_start(uv_loop_t *loop)
{
	return GM_OK;
}

#endif
