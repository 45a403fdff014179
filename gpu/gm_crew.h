/*
 * gm_crew.h - a few threads that run one function over a range of items
 * with the calling thread, for work that comes in bursts: the CUDA
 * engine's staging copies and the CPU engine's runs of small jobs.
 *
 * A call hands each thread a ticket (gm_handoff.h): the caller and every
 * crew thread take items off one atomic counter until none is left, and
 * the call returns once every ticket is back, so that no thread can
 * still be using the call's items afterwards. The threads sleep on the
 * ticket queue between calls: a call wakes each of them once, whatever
 * its number of items. Plain C, no CUDA.
 */
#ifndef GM_CREW_H
#define GM_CREW_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gm_crew gm_crew;

/* Runs item i of a call; arg is the call's. */
typedef void (*gm_crew_fn)(void *arg, uint64_t i);

/* Starts threads helpers (0: calls run on the caller alone). GM_OK, or
 * GM_ENOMEM with nothing left behind. */
int gm_crew_open(unsigned threads, gm_crew **out);

/* Stops the threads (no call may be running) and frees c. NULL is
 * fine. */
void gm_crew_close(gm_crew *c);

/* Threads of c besides the caller. */
unsigned gm_crew_size(const gm_crew *c);

/* Runs fn(arg, i) for every i < n, the calling thread taking part, and
 * returns when all have returned. Blocks; one caller at a time. */
void gm_crew_run(gm_crew *c, gm_crew_fn fn, void *arg, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
