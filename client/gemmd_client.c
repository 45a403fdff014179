/*
 * gemmd_client.c - a client opened, dialed to more daemons and closed;
 * the regions it makes on its first daemon's hand-off socket. A daemon
 * dialed over ipc:// gets its staging of plain pointers here too.
 */
#include "gemmd.h"

#include <stdlib.h>

#include "gmc_call.h"
#include "gmc_client.h"
#include "gmc_conn.h"
#include "gmc_daemon.h"
#include "gmc_error.h"
#include "gmc_shm.h"
#include "gmc_stage.h"
#include "gmc_workers.h"

/* ---- opening and closing ---- */

/* Stops, shuts down and frees a daemon no call was routed to, and its
 * stage. */
static void stop_daemon(gmc_daemon *dm)
{
	gmc_stage *st = dm->stage;

	gmc_daemon_stop(dm);
	gmc_stage_free(st);
}

/* Adds a daemon at url to cl and dials it; without GEMMD_OPEN_LAZY
 * waits up to timeout_ms for the first connection, and on failure
 * forgets it. */
static int add_daemon(gemmd_client *cl, const char *url,
		      const gemmd_open_opts *o, int timeout_ms)
{
	gmc_todo t = GMC_TODO_INIT(cl);
	gmc_daemon *dm, **all;
	int rv;

	if ((rv = gmc_daemon_new(cl, url, o, &dm)) != GM_OK)
		return rv;
	if (dm->kind == GM_URL_IPC && !(o->flags & GEMMD_OPEN_NO_SHM) &&
	    (rv = gmc_stage_new(dm, o->staging_bytes, &dm->stage)) != GM_OK) {
		gmc_daemon_free(dm);
		return rv;
	}
	pthread_mutex_lock(&cl->mu);
	gmc_daemon_start(dm, &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
	if (!(o->flags & GEMMD_OPEN_LAZY) &&
	    (rv = gmc_daemon_await(dm, timeout_ms)) != GM_OK) {
		stop_daemon(dm);
		return rv;
	}
	pthread_mutex_lock(&cl->mu);
	all = realloc(cl->daemons, (cl->ndaemons + 1) * sizeof(*all));
	if (all != NULL) {
		cl->daemons = all;
		all[cl->ndaemons++] = dm;
	}
	pthread_mutex_unlock(&cl->mu);
	if (all == NULL) {
		stop_daemon(dm);
		return gmc_error_set(GM_ENOMEM, "out of memory");
	}
	return GM_OK;
}

static void client_free(gemmd_client *cl)
{
	gmc_workers_free(cl->workers);
	gmc_timer_free(cl->timer);
	for (unsigned i = 0; i < cl->ndaemons; i++) {
		gmc_stage_free(cl->daemons[i]->stage);
		gmc_daemon_free(cl->daemons[i]);
	}
	free(cl->daemons);
	gmc_idmap_free(&cl->parts);
	gm_poller_free(cl->poller);
	pthread_cond_destroy(&cl->cv);
	pthread_mutex_destroy(&cl->mu);
	free(cl);
}

int gemmd_open_timeout(const char *url, const gemmd_open_opts *opts,
		       gemmd_client **out, int timeout_ms)
{
	static const gemmd_open_opts none;
	gemmd_client *cl;
	int rv;

	if (out == NULL)
		return gmc_error_set(GM_EINVAL, "no place for the client");
	*out = NULL;
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_error_set(GM_EINVAL, "timeout %d ms, must be > 0",
				     timeout_ms);
	if (url == NULL && ((url = getenv("GEMMD_URL")) == NULL || !*url))
		url = GEMMD_DEFAULT_URL;
	if ((cl = calloc(1, sizeof(*cl))) == NULL)
		return gmc_error_set(GM_ENOMEM, "out of memory");
	pthread_mutex_init(&cl->mu, NULL);
	pthread_cond_init(&cl->cv, NULL);
	if (gmc_timer_new(&cl->timer) != GM_OK ||
	    gm_poller_new(GM_POLLER_TAKE_BACK, &cl->poller) != GM_OK) {
		client_free(cl);
		return gmc_error_set(GM_ENOMEM, "out of memory");
	}
	if ((rv = add_daemon(cl, url, opts ? opts : &none, timeout_ms)) !=
	    GM_OK) {
		client_free(cl);
		return rv;
	}
	gmc_error_clear();
	*out = cl;
	return GM_OK;
}

int gemmd_open(const char *url, const gemmd_open_opts *opts, gemmd_client **out)
{
	return gemmd_open_timeout(url, opts, out, GEMMD_OPEN_TIMEOUT_MS);
}

int gemmd_dial(gemmd_client *c, const char *url, const gemmd_open_opts *opts)
{
	static const gemmd_open_opts none;
	int rv;

	if (c == NULL || url == NULL)
		return gmc_error_set(GM_EINVAL, "no client or no URL");
	if ((rv = add_daemon(c, url, opts ? opts : &none,
			     GEMMD_OPEN_TIMEOUT_MS)) == GM_OK)
		gmc_error_clear();
	return rv;
}

void gemmd_close(gemmd_client *cl)
{
	gmc_todo t;

	if (cl == NULL)
		return;
	t = GMC_TODO_INIT(cl);
	pthread_mutex_lock(&cl->mu);
	cl->closing = true;
	for (unsigned i = 0; i < cl->ndaemons; i++)
		gmc_daemon_stopping(cl->daemons[i]);
	while (cl->calls != NULL)
		gmc_call_end(cl->calls, GM_ECANCELED, "the client closed", &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
	for (unsigned i = 0; i < cl->ndaemons; i++)
		gmc_daemon_shutdown(cl->daemons[i]);
	/* The tells that polling callers handed to the timer thread run
	 * before it stops. */
	pthread_mutex_lock(&cl->mu);
	while (cl->deferred > 0)
		pthread_cond_wait(&cl->cv, &cl->mu);
	pthread_mutex_unlock(&cl->mu);
	client_free(cl);
}

int gemmd_region_create_timeout(gemmd_client *c, uint64_t bytes,
				gemmd_region **out, int timeout_ms)
{
	int rv;

	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL || bytes == 0)
		return gmc_error_set(GM_EINVAL, "no client, no place for "
						"the region, or 0 bytes");
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_error_set(GM_EINVAL, "timeout %d ms, must be > 0",
				     timeout_ms);
	/* Regions are made with the daemon gemmd_open dialed. */
	if ((rv = gmc_shm_create(c->daemons[0]->shm, bytes, timeout_ms, out)) ==
	    GM_OK)
		gmc_error_clear();
	return rv;
}

int gemmd_region_create(gemmd_client *c, uint64_t bytes, gemmd_region **out)
{
	return gemmd_region_create_timeout(c, bytes, out,
					   gmc_shm_create_ms(bytes));
}

int gemmd_region_release(gemmd_region *r)
{
	if (r == NULL)
		return gmc_error_set(GM_EINVAL, "no region");
	return gmc_shm_release(r, GMC_SHM_RELEASE_MS);
}
