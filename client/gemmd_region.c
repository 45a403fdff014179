/*
 * gemmd_region.c - the public calls on a region once it is made (its
 * memory, size and id) and the first-fit allocator over it. Making and
 * releasing one is the client's (gemmd_client.c, gmc_shm.c).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gemmd.h"
#include "gmc_error.h"
#include "gmc_shm.h"

#define ALIGN_DEFAULT 256

void *gemmd_region_ptr(const gemmd_region *r)
{
	return r->base;
}

uint64_t gemmd_region_size(const gemmd_region *r)
{
	return r->size;
}

uint64_t gemmd_region_id(const gemmd_region *r)
{
	return r->id;
}

/* ---- the allocator ---- */

/* Whether a block of bytes fits between at and end at a multiple of
 * align; *off is then its offset. */
static int fits(uint64_t at, uint64_t end, uint64_t bytes, uint64_t align,
		uint64_t *off)
{
	uint64_t o;

	if (__builtin_add_overflow(at, align - 1, &o))
		return 0;
	o &= ~(align - 1);
	if (o > end || bytes > end - o)
		return 0;
	*off = o;
	return 1;
}

static int insert(gemmd_region *r, size_t i, uint64_t off, uint64_t len)
{
	if (r->nused == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		gmc_shm_block *b = realloc(r->used, cap * sizeof(*b));

		if (b == NULL)
			return GM_ENOMEM;
		r->used = b;
		r->cap = cap;
	}
	memmove(&r->used[i + 1], &r->used[i],
		(r->nused - i) * sizeof(*r->used));
	r->used[i] = (gmc_shm_block){off, len};
	r->nused++;
	return GM_OK;
}

int gemmd_region_alloc(gemmd_region *r, uint64_t bytes, uint64_t align,
		       uint64_t *offset)
{
	uint64_t at = 0, off = 0;
	size_t i;
	int rv = GM_ENOMEM;

	if (align == 0)
		align = ALIGN_DEFAULT;
	if (r == NULL || offset == NULL || bytes == 0 ||
	    (align & (align - 1)) != 0)
		return gmc_error_set(GM_EINVAL, "bad region allocation");
	pthread_mutex_lock(&r->mu);
	for (i = 0; i <= r->nused; i++) {
		uint64_t end = i < r->nused ? r->used[i].off : r->size;

		if (fits(at, end, bytes, align, &off)) {
			rv = insert(r, i, off, bytes);
			break;
		}
		if (i < r->nused)
			at = r->used[i].off + r->used[i].len;
	}
	pthread_mutex_unlock(&r->mu);
	if (rv != GM_OK)
		return gmc_error_set(rv,
				     "no %" PRIu64 " free bytes in the "
				     "region",
				     bytes);
	*offset = off;
	return GM_OK;
}

int gemmd_region_free(gemmd_region *r, uint64_t offset)
{
	int rv = GM_ENOTFOUND;

	if (r == NULL)
		return GM_EINVAL;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nused; i++) {
		if (r->used[i].off != offset)
			continue;
		memmove(&r->used[i], &r->used[i + 1],
			(r->nused - i - 1) * sizeof(*r->used));
		r->nused--;
		rv = GM_OK;
		break;
	}
	pthread_mutex_unlock(&r->mu);
	return rv;
}

void gemmd_region_reset(gemmd_region *r)
{
	pthread_mutex_lock(&r->mu);
	r->nused = 0;
	pthread_mutex_unlock(&r->mu);
}
