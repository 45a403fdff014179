/*
 * gm_admit.h - admitting GEMM requests, on the loop thread: a request
 * whose frame passed the wire checks is checked against the daemon's
 * state (PROTOCOL.md 8 steps 19-24: regions, draining or stopping, queue
 * room, room for detached results, the staging pool's size or room
 * beyond it in pageable memory) and refused whole, or accepted: its
 * queue room and frame room reserved, recorded (gm_request.h), and given
 * its slab now or when the pool has room (gm_poolq.h), or at once in
 * pageable memory when it is larger than the pool (gm_pageable.h). From
 * there its state machine (gm_request.h) takes it. Control requests are
 * gm_ctrl's.
 */
#ifndef GM_ADMIT_H
#define GM_ADMIT_H

#include "gm_conn.h"
#include "gm_poolq.h"
#include "gm_request.h"

/* A GEMM frame on c passed PROTOCOL.md 8 steps 1-18: h, its batch b,
 * its head and descriptors (valid during the call), payload bytes to
 * come. Returns the request's record, accepted, holding c: in PAYLOAD
 * with its slab (rq->wait.slab), or in WAIT_POOL, c woken once the pool
 * grants the slab (gm_request.h); c then places its jobs
 * (gm_request_place), reads its payload into the slab and advances it
 * (PAYLOAD_IN), or, closed meanwhile, lets it go (CLOSED).
 * NULL when it is refused: answered with an ERROR, counted, and its
 * payload to be discarded. */
gm_request *gm_admit_gemm(gm_loop *l, gm_conn *c, const gm_hdr *h,
			  const gm_batch *b, const uint8_t *head,
			  const uint8_t *desc, uint64_t payload);

/* Makes l->poolq, in front of l->pool under the keys pool_bypass_max,
 * pool_bypass_ms and principal_share_percent, and l->shares, the
 * principals' it counts in. GM_OK or GM_ENOMEM; on failure
 * gm_admit_close frees what was made. Loop thread, at start. */
int gm_admit_open(gm_loop *l);

/* Frees l->poolq and l->shares (NULL ones skipped), once no request is
 * left. */
void gm_admit_close(gm_loop *l);

#endif
