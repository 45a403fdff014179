/*
 * gmc_shm.h - private to the client library: a client's shared-memory
 * regions. Each is a sealed memfd mapped here and handed to the daemon
 * over the hand-off socket (PROTOCOL.md, "Regions"), which maps and
 * registers it and answers with the region's id.
 *
 * A client opens one hand-off connection, at its first region, and
 * keeps it: the daemon ties the client's regions to it, so that a
 * process that dies without a word still gets its regions released. One
 * record is in flight on it at a time, under the set's lock. Any thread.
 *
 * Every exchange has a deadline, from the dial to the reply: a daemon
 * that is stopped or hung must not hold a caller past its timeout. An
 * exchange that misses it leaves its reply owed on the connection; the
 * next exchange reads the replies owed first, within its own deadline,
 * and releases a region registered for a caller that had given up. A
 * connection that owes too many is closed, as one that failed: the
 * daemon lets go of the regions made on it.
 */
#ifndef GMC_SHM_H
#define GMC_SHM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"

typedef struct gmc_shm gmc_shm;

/* A block of a region handed out by gemmd_region_alloc. */
typedef struct gmc_shm_block {
	uint64_t off, len;
} gmc_shm_block;

/* A region: made and released here, allocated from in gemmd_region.c. */
struct gemmd_region {
	gmc_shm *g;
	uint64_t id, size;
	unsigned conn; /* the hand-off connection it was made on */
	void *base;
	pthread_mutex_t mu;  /* the blocks */
	gmc_shm_block *used; /* sorted by offset */
	size_t nused, cap;
	gemmd_region *next; /* the set's, under its lock */
};

/* The regions of a client that dials url, and opts->region_socket
 * (socket; NULL: beside url's socket when url is ipc://, else none).
 * GM_ENOMEM. */
int gmc_shm_new(const char *url, const char *socket, gmc_shm **out);

/* Closes the hand-off connection (the daemon then releases every region
 * of it), unmaps and frees every region, and frees g. NULL is fine. */
void gmc_shm_free(gmc_shm *g);

/* Shuts the hand-off connection down, so that an exchange waiting on a
 * daemon that does not answer returns (GM_ETRANSPORT): for gemmd_close.
 * Any thread. */
void gmc_shm_hangup(gmc_shm *g);

/* The timeout of making a region of bytes when the caller gives none:
 * 10 s, and 4 ms per MiB for the daemon to register it (about 1 ms per
 * MiB with CUDA: DESIGN.md). */
int gmc_shm_create_ms(uint64_t bytes);

/* The timeout of releasing a region when the caller gives none. */
#define GMC_SHM_RELEASE_MS 10000

/* Makes a region of bytes, hands it to the daemon within timeout_ms (>
 * 0, or GEMMD_FOREVER) and adds it to g. Blocks. GM_OK, or an error with
 * gemmd_last_error() set: the daemon's refusal, GM_ETIMEDOUT when it did
 * not answer in time, GM_ETRANSPORT when the hand-off connection fails,
 * GM_ENOMEM. */
int gmc_shm_create(gmc_shm *g, uint64_t bytes, int timeout_ms,
		   gemmd_region **out);

/* Takes r out of its set, tells the daemon within timeout_ms
 * (GM_ETRANSPORT when the connection r was made on is gone: the region
 * is released there already; GM_ETIMEDOUT) and unmaps and frees r in
 * any case. Blocks. */
int gmc_shm_release(gemmd_region *r, int timeout_ms);

#endif
