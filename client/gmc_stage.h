/*
 * gmc_stage.h - private to the client library: plain pointers over
 * ipc:// staged through a shared-memory region the library owns, so that
 * a local client's operands and results do not cross the socket
 * (PROTOCOL.md 14; issue 10, point 2).
 *
 * Each daemon dialed over ipc:// has a stage: one region, made on the
 * hand-off socket at the first call that needs it (on a worker thread:
 * the daemon registers it, which takes time with CUDA) and reused. Its
 * size is staging_bytes, or, for a call with a job larger than half of
 * it, room for two of the largest job waiting (a power of two): the
 * region grows. A region too small for the call at the head of the
 * queue is retired (no new chunks); once the chunks using it are over it
 * is released, and the larger one is made then, so that the daemon's
 * per-uid quota sees only one. The stage never shrinks while the client
 * lives. A region refused over the daemon's quota (GM_ETOOBIG,
 * region_max_bytes or region_max_count) halves the stage's limit, for
 * good, and is tried again at most that size; the calls with a job
 * larger than half the limit take the socket. A staged call is cut into chunks
 * of consecutive jobs of at most a quarter of the region, each given a block of
 * the region (first fit), so that a few chunks are in flight: the worker
 * threads copy a chunk's operands in, in pieces of GMC_STAGE_PIECE, and the
 * chunk goes out as a request of its own (job headers and region descriptors: a
 * few hundred bytes) while the next is copied; as each job's reply comes its
 * result is copied out of the region into the caller's out, and the job is
 * answered. A chunk's block is free again once its request is over and its
 * copies done.
 *
 * Calls wait for blocks in order of arrival. A chunk whose connection
 * drops may still be run by the daemon, which may then write into its
 * block: the region is no longer used for new chunks, and released (the
 * daemon keeps its own mapping until its jobs are done) once the chunks
 * still using it are over; the next region is made then. When the
 * region cannot be made for another reason (regions off, no hand-off
 * socket) the calls waiting for it, and the next ones for
 * GMC_STAGE_RETRY_S, take the socket.
 *
 * Under the client's lock unless said otherwise.
 */
#ifndef GMC_STAGE_H
#define GMC_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "gmc_call.h"
#include "gmc_client.h"
#include "gmc_workers.h"

#define GMC_STAGE_MIN_BYTES (1u << 20) /* smaller calls take the socket */
#define GMC_STAGE_RETRY_S   10

typedef struct gmc_stage gmc_stage;

/* How many threads copy staged operands in and out: the cores online,
 * 2 to 16 (the client's workers). Any thread. */
unsigned gmc_stage_threads(void);

/* A stage for dm with a region of at least bytes (0: the default), more
 * for a larger job; from then on
 * the layers below tell it of the calls it takes through the client's
 * gmc_staging (gmc_call.h). Not under the lock. GM_ENOMEM. */
int gmc_stage_new(gmc_daemon *dm, uint64_t bytes, gmc_stage **out);

/* Frees st once the client's workers are done (NULL is fine). Not
 * under the lock. */
void gmc_stage_free(gmc_stage *st);

/* Whether the GEMM call k, of jobs described by d, goes through dm's
 * stage: dm has one that is not off, every job has plain pointers, the
 * call moves at least GMC_STAGE_MIN_BYTES, and every job fits in half the
 * largest region the daemon may take, as far as the stage has learnt. */
bool gmc_stage_wants(const gmc_daemon *dm, const gmc_call *k,
		     const gm_job_desc *d);

/* Starts the started call k through dm's stage (d and b are copied). */
void gmc_stage_submit(gmc_daemon *dm, gmc_call *k, const gm_job_desc *d,
		      const gm_batch *b, gmc_todo *t);

#endif
