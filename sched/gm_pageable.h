/*
 * gm_pageable.h - requests larger than the whole staging pool, received
 * into ordinary (pageable) host memory instead, and the cap on how much
 * of it all such requests hold at once.
 *
 * A request whose slab (gm_slab.h: its payload as on the wire, then its
 * reply frames) fits in the pool waits for pool room as ever: the pool
 * is where payloads are read straight into DMA-able memory. One that
 * could never fit would otherwise be refused ETOOBIG; with a cap
 * (pageable_max_bytes, 0: off) it gets a slab of anonymous memory of its
 * own, mapped when it is accepted and unmapped when its last reply is
 * written, and its jobs are marked gm_job.host_pageable, so that the
 * CUDA engine tiles them out of core through pinned buffers of its own
 * (the CPU engine runs them where they are). Such slabs never wait: a
 * request that would take the total past the cap is refused EBUSY (try
 * again later), one larger than the cap ETOOBIG; both messages name the
 * key. One principal (gm_share.h) may hold at most its share of the
 * cap (principal_share_percent) beside what it holds already: a request
 * that would take it past that is refused EBUSY, unless the principal
 * holds none now (so that a request as large as the cap can run).
 *
 * The struct is plain: it is both the admission's state and the counts
 * the stats document shows (gm_stats.pageable). Loop thread only.
 */
#ifndef GM_PAGEABLE_H
#define GM_PAGEABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_share.h"

typedef struct gm_pageable {
	uint64_t limit;	     /* in effect: 0 when off */
	uint64_t share;	     /* what one principal may hold of it */
	uint64_t bytes;	     /* held now, by requests alive */
	uint64_t peak_bytes; /* the most held at once */
	uint64_t held;	     /* requests holding some now */
	uint64_t requests;   /* given pageable slabs since start */
	uint64_t busy;	     /* refused EBUSY: the cap was in use */
	uint64_t too_big;    /* refused ETOOBIG: over the pool and cap */
} gm_pageable;

/*
 * Zeroes p and sets its cap: the configured limit, but at most half of
 * host_bytes (the host's memory), so that no setting lets requests take
 * the memory the rest of the host needs. 0 turns the path off. One
 * principal may hold share_percent of the cap. Returns the cap in
 * effect.
 */
uint64_t gm_pageable_init(gm_pageable *p, uint64_t limit, uint64_t host_bytes,
			  unsigned share_percent);

/*
 * The admission decision for a request of principal who (NULL: none's)
 * whose slab is bytes, with a pool of pool_size: GM_OK with *pageable
 * false (the pool's: wait for room there) or true (a pageable slab is
 * free to take now); or GM_ETOOBIG (more than the pool and than the cap,
 * or the path is off: the message names pool_bytes and
 * pageable_max_bytes) or GM_EBUSY (the cap holds other requests now, or
 * who would pass its share: the message names principal_share_percent)
 * with text, counted in p.
 */
int gm_pageable_admit(gm_pageable *p, uint64_t pool_size, uint64_t bytes,
		      const gm_share *who, bool *pageable, char *text,
		      size_t len);

/* Maps bytes of anonymous memory for a request of who (NULL: none's)
 * that gm_pageable_admit let in and counts them: GM_OK with *mem, or
 * GM_ENOMEM. */
int gm_pageable_take(gm_pageable *p, gm_share *who, uint64_t bytes, void **mem);

/* Unmaps a slab of gm_pageable_take (its bytes and who as taken). */
void gm_pageable_give(gm_pageable *p, gm_share *who, void *mem, uint64_t bytes);

#endif
