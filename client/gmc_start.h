/*
 * gmc_start.h - private to the client library: the layer of calls (see
 * README.md). A call (gmc_call.h) is made for what a public function
 * was given, routed to a daemon (gmc_daemon.h), its frames built and its
 * parts queued on the daemon's connections or handed to its staging
 * (gmc_stage.h); its clock starts then. When its deadline passes it
 * ends GM_ETIMEDOUT; when I/O on its memory outlasts its grace after it
 * ended, the connections doing it are closed.
 */
#ifndef GMC_START_H
#define GMC_START_H

#include <stdint.h>

#include "gmc_call.h"
#include "gmc_client.h"

/* A call of kind for jobs[0..n-1] (none for a control call), told to nt,
 * its deadline timeout_ms from now. Not under the lock. GM_ENOMEM with
 * gemmd_last_error() set. */
int gmc_start_new(gemmd_client *c, int kind, gemmd_job *jobs, uint32_t n,
		  int timeout_ms, const gmc_call_notify *nt, gmc_call **out);

/* Routes k to a daemon, builds its frames and queues them: for a GEMM
 * or detached call from its jobs' descriptions d and batch b, for a
 * control call or a wait from json. On GM_OK the call is under way and
 * may already have ended (k is no longer the caller's); on failure k
 * was never started (gmc_call_free), with gemmd_last_error() set. Not
 * under the lock. */
int gmc_start_call(gemmd_client *c, gmc_call *k, const gm_job_desc *d,
		   const gm_batch *b, const char *json);

#endif
