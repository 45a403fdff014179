/*
 * gm_blas_conn.c - the shim's connection to gemmd and the shared-memory
 * region it owns, both made on first use and shared by every thread.
 *
 * When gemmd cannot be reached, or a call timed out or lost its
 * connection, the shim pauses: the host BLAS computes everything for
 * GEMMD_BLAS_RETRY_MS, so that a program whose daemon is away or hung
 * pays for one dial or one timeout, not one per call; then a ping with a
 * short timeout says whether gemmd answers again. Making a region waits
 * within the call's timeout, and one that fails that way pauses the shim
 * too. Releasing one is never waited for: a region a lost request named
 * (the daemon may still write into it), or one too small, is released
 * on a thread of its own.
 *
 * The region only grows, when a call needs more, once the calls using
 * it are done (a read-write lock that prefers the writer). A fork()ed
 * child uses neither: nng panics when used again after fork(), and the
 * region is the parent's in the daemon's eyes; the host BLAS computes
 * all of the child's GEMMs.
 */
#include <pthread.h>
#include <time.h>

#include "gm_blas.h"

#define PROBE_MS   1000	       /* the ping after a pause */
#define REGION_MIN (16u << 20) /* the first region; then doubled */

static pthread_mutex_t conn_mu = PTHREAD_MUTEX_INITIALIZER;
static gemmd_client *client;
static double paused_until; /* monotonic seconds */
static bool probe;	    /* ping before the next offload */
static bool forked;	    /* this is a fork()ed child */

static pthread_rwlock_t region_lock;
static gemmd_region *region; /* under region_lock */
static bool region_stale;    /* replace it: under stale_mu */
static pthread_mutex_t stale_mu = PTHREAD_MUTEX_INITIALIZER;
static double region_after; /* under region_lock, for writing */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double retry_s(void)
{
	return gm_blas_config()->retry_ms / 1e3;
}

static void init_region_lock(void)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(
	    &attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&region_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
}

/* In a fork()ed child: only this thread exists, and neither the client
 * nor the region is usable. Both are dropped, not closed. */
static void forget_in_child(void)
{
	pthread_mutex_init(&conn_mu, NULL);
	pthread_mutex_init(&stale_mu, NULL);
	init_region_lock();
	client = NULL;
	region = NULL;
	region_stale = false;
	forked = true;
	gm_blas_log(1, "a fork()ed child: the host BLAS computes its GEMMs "
		       "(nng does not survive fork)");
}

static void init(void)
{
	init_region_lock();
	pthread_atfork(NULL, NULL, forget_in_child);
}

/* Under conn_mu. */
static void pause_for(int code, const char *why)
{
	paused_until = now_s() + retry_s();
	probe = true;
	gm_blas_log(1, "%s: %s: %s; the host BLAS computes for %g s", why,
		    gemmd_errname(code), gemmd_last_error(), retry_s());
}

gemmd_client *gm_blas_client(void)
{
	gemmd_client *c = NULL;
	int rv;

	pthread_once(&init_once, init);
	pthread_mutex_lock(&conn_mu);
	if (forked || now_s() < paused_until) {
		/* the host's turn */
	} else if (client == NULL &&
		   (rv = gemmd_open_timeout(NULL, NULL, &client,
					    gm_blas_config()->timeout_ms)) !=
		       GEMMD_OK) {
		client = NULL;
		pause_for(rv, "cannot reach gemmd");
	} else if (probe &&
		   (rv = gemmd_ping(client, NULL, PROBE_MS)) != GEMMD_OK) {
		pause_for(rv, "gemmd does not answer");
	} else {
		probe = false;
		c = client;
	}
	pthread_mutex_unlock(&conn_mu);
	return c;
}

void gm_blas_pause(int code)
{
	pthread_mutex_lock(&conn_mu);
	if (now_s() >= paused_until)
		pause_for(code, "a call to gemmd failed");
	pthread_mutex_unlock(&conn_mu);
}

static void *release(void *r)
{
	gemmd_region_release(r);
	return NULL;
}

/* Hands r back without waiting for the daemon: it may be busy with the
 * very request that made r stale. */
static void release_later(gemmd_region *r)
{
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, release, r) != 0)
		gm_blas_log(1, "a stale region is kept: no thread to release "
			       "it");
	pthread_attr_destroy(&attr);
}

/* Under the write lock: a region of at least bytes within timeout_ms,
 * or none (with *gone when gemmd did not answer). */
static void regrow(gemmd_client *c, uint64_t bytes, int timeout_ms, bool *gone)
{
	uint64_t max = gm_blas_config()->region_max, size = REGION_MIN;
	int rv;

	pthread_mutex_lock(&stale_mu);
	if (region != NULL &&
	    (region_stale || gemmd_region_size(region) < bytes)) {
		release_later(region);
		region = NULL;
	}
	region_stale = false;
	pthread_mutex_unlock(&stale_mu);
	if (region != NULL || now_s() < region_after)
		return;
	while (size < bytes)
		size *= 2;
	if (size > max)
		size = bytes;
	if ((rv = gemmd_region_create_timeout(c, size, &region, timeout_ms)) !=
	    GEMMD_OK) {
		region = NULL;
		region_after = now_s() + retry_s();
		*gone = rv == GEMMD_ETIMEDOUT || rv == GEMMD_ETRANSPORT;
		if (*gone) {
			gm_blas_pause(rv); /* which says why */
			return;
		}
		gm_blas_log(1,
			    "no shared-memory region of %llu bytes: %s: %s; "
			    "operands go through the socket",
			    (unsigned long long)size, gemmd_errname(rv),
			    gemmd_last_error());
	}
}

gemmd_region *gm_blas_region_get(gemmd_client *c, uint64_t bytes,
				 int timeout_ms, bool *gone)
{
	bool fits;

	*gone = false;
	if (bytes > gm_blas_config()->region_max)
		return NULL;
	for (;;) {
		pthread_rwlock_rdlock(&region_lock);
		pthread_mutex_lock(&stale_mu);
		fits = region != NULL && !region_stale &&
		       gemmd_region_size(region) >= bytes;
		pthread_mutex_unlock(&stale_mu);
		if (fits)
			return region;
		pthread_rwlock_unlock(&region_lock);
		pthread_rwlock_wrlock(&region_lock);
		regrow(c, bytes, timeout_ms, gone);
		fits = region != NULL;
		pthread_rwlock_unlock(&region_lock);
		if (!fits)
			return NULL;
	}
}

void gm_blas_region_put(gemmd_region *r, bool retire)
{
	if (retire) {
		pthread_mutex_lock(&stale_mu);
		region_stale = region_stale || r == region;
		pthread_mutex_unlock(&stale_mu);
	}
	pthread_rwlock_unlock(&region_lock);
}
