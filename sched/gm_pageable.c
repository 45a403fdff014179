/*
 * gm_pageable.c - the admission of requests larger than the staging
 * pool into pageable memory, and its count; see gm_pageable.h.
 */
#include "gm_pageable.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "gm_error.h"

uint64_t gm_pageable_init(gm_pageable *p, uint64_t limit, uint64_t host_bytes,
			  unsigned share_percent)
{
	memset(p, 0, sizeof(*p));
	if (host_bytes != 0 && limit > host_bytes / 2)
		limit = host_bytes / 2;
	p->limit = limit;
	p->share = gm_share_cap(limit, share_percent);
	return limit;
}

/* Whether who would pass its share with bytes more: it may always hold
 * one request, however large, so that any request within the cap runs
 * in the end. */
static bool over_share(const gm_pageable *p, const gm_share *who,
		       uint64_t bytes)
{
	return who != NULL && who->pageable > 0 &&
	       bytes > p->share - (who->pageable < p->share ? who->pageable
							    : p->share);
}

int gm_pageable_admit(gm_pageable *p, uint64_t pool_size, uint64_t bytes,
		      const gm_share *who, bool *pageable, char *text,
		      size_t len)
{
	char need[GM_SIZE_TEXT], pool[GM_SIZE_TEXT], cap[GM_SIZE_TEXT],
	    held[GM_SIZE_TEXT];

	*pageable = false;
	if (bytes <= pool_size)
		return GM_OK;
	gm_size_text(bytes, need);
	gm_size_text(pool_size, pool);
	gm_size_text(p->limit, cap);
	if (bytes > p->limit) {
		p->too_big++;
		if (p->limit == 0)
			snprintf(text, len,
				 "needs %s, more than pool_bytes=%s "
				 "(pageable_max_bytes=0)",
				 need, pool);
		else
			snprintf(text, len,
				 "needs %s, more than pool_bytes=%s and "
				 "pageable_max_bytes=%s",
				 need, pool, cap);
		return GM_ETOOBIG;
	}
	if (bytes > p->limit - p->bytes) {
		p->busy++;
		snprintf(text, len,
			 "needs %s; pageable_max_bytes=%s has %s held: try "
			 "again later",
			 need, cap, gm_size_text(p->bytes, held));
		return GM_EBUSY;
	}
	if (over_share(p, who, bytes)) {
		p->busy++;
		snprintf(text, len,
			 "needs %s, over principal_share_percent: %s of %s "
			 "held, try again later (%s)",
			 need, gm_size_text(who->pageable, held),
			 gm_size_text(p->share, pool), who->name);
		return GM_EBUSY;
	}
	*pageable = true;
	return GM_OK;
}

int gm_pageable_take(gm_pageable *p, gm_share *who, uint64_t bytes, void **mem)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return GM_ENOMEM;
	/* Gigabytes read from a socket and copied tile by tile: huge pages
	 * spare most of the faults and TLB misses, where the host has
	 * them. Advice only. */
	(void)madvise(m, bytes, MADV_HUGEPAGE);
	*mem = m;
	p->bytes += bytes;
	p->held++;
	p->requests++;
	if (who != NULL)
		who->pageable += bytes;
	if (p->bytes > p->peak_bytes)
		p->peak_bytes = p->bytes;
	return GM_OK;
}

void gm_pageable_give(gm_pageable *p, gm_share *who, void *mem, uint64_t bytes)
{
	munmap(mem, bytes);
	if (who != NULL)
		who->pageable -= bytes;
	p->bytes -= bytes;
	p->held--;
}
