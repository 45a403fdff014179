/*
 * gm_ctlshm.h - gemmctl's way of sending a job through a shared-memory
 * region instead of the socket (ipc:// only).
 */
#ifndef GM_CTLSHM_H
#define GM_CTLSHM_H

#include <stdbool.h>

#include "gemmd.h"

/* Whether url is one regions can be used with. */
bool gm_ctlshm_usable(const char *url);

/*
 * Runs the one job j on cl as gemmd_submit does, its operands copied
 * into a region made for it and its result read back from there into
 * j->out; j itself is left as the caller made it but for its status,
 * message and timings. When no region can be made (an older daemon,
 * regions off, a quota), the job goes through the socket instead.
 * Blocks.
 */
int gm_ctlshm_submit(gemmd_client *cl, gemmd_job *j,
		     const gemmd_submit_opts *opts, int timeout_ms);

#endif
