/*
 * gm_testpeer_impl.h - private to the scripted peer: what its two files
 * share.
 */
#ifndef GM_TESTPEER_IMPL_H
#define GM_TESTPEER_IMPL_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>

#include "gm_stream.h"
#include "gm_testpeer.h"

#define TESTPEER_REGIONS_MAX 64

struct gm_testregion {
	uint64_t id, size;
	uint8_t *base;
	int fd; /* the hand-off connection that registered it */
};

struct gm_testpeer {
	char url[256];
	gm_listener *l;
	pthread_mutex_t mu; /* conns, regions */
	gm_stream **conns;  /* accepted, in order */
	unsigned nconns;
	gm_testconn **tconns; /* handed to the test */
	unsigned ntconns;
	sem_t accepted;
	/* the hand-off socket */
	int handoff_fd;
	char handoff_path[108];
	pthread_t handoff_thread;
	bool handoff_stop;
	struct gm_testregion regions[TESTPEER_REGIONS_MAX];
	unsigned nregions;
	uint64_t next_region;
};

/* Stops the hand-off thread, unmaps every region. */
void gm_testpeer_handoff_stop(gm_testpeer *p);

#endif
