/*
 * gm_admit.h - every request that arrives on the server, on the loop
 * thread: a control request goes to gm_ctrl; a GEMM request is checked
 * (header, jobs, regions), refused while the daemon drains or stops or
 * when the queue has no room, and otherwise recorded (gm_request.h) and
 * queued whole. A detached request is answered at once with its jobs'
 * ids.
 */
#ifndef GM_ADMIT_H
#define GM_ADMIT_H

#include <nng/nng.h>

#include "gm_server.h"

/* gm_server's request callback (arg is the gm_loop): a request arrived
 * on w. Takes msg; w is answered, now or when the jobs are back. */
void gm_admit_on(gm_work *w, nng_msg *msg, void *arg);

#endif
