/*
 * gm_pool.c - the books of one slab arena.
 *
 * The arena is tiled by a doubly linked, address-ordered list of blocks,
 * each free or handed out. Allocation is first fit: the lowest free block
 * large enough is split, its front becoming the slab (or last fit, the
 * back of the highest, for gm_pool_alloc_high). The search starts
 * at the lowest free block, which the pool keeps at hand, so that filling
 * a pool slab after slab (a request's jobs, one each) does not walk over
 * every slab already out. Freeing merges the
 * block with free neighbours at once, so two free blocks are never
 * adjacent and a fully freed pool is one block again. Keeping the slabs
 * that are out in the same list lets gm_pool_free recognise a pointer it
 * never handed out instead of corrupting the books. Every block starts on
 * GM_POOL_ALIGN and has a size that is a multiple of it, so slab
 * alignment needs nothing beyond rounding requests up.
 */
#include "gm_pool.h"

#include <assert.h>
#include <stdlib.h>

#include "gm_error.h"

struct block {
	uintptr_t addr;
	uint64_t size;
	int used;
	struct block *prev, *next;
};

struct gm_pool {
	struct block *head; /* lowest address; NULL when nothing is managed */
	struct block *free; /* the lowest free block; NULL when none is */
	uint64_t size;
	uint64_t used;
	uint64_t slabs;
};

int gm_pool_create(void *base, uint64_t size, gm_pool **out)
{
	uintptr_t lo = (uintptr_t)base;
	uintptr_t start =
	    (lo + GM_POOL_ALIGN - 1) & ~(uintptr_t)(GM_POOL_ALIGN - 1);
	gm_pool *p;

	*out = NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return GM_ENOMEM;
	/* Only whole aligned units between start and the end are managed. */
	if (start >= lo && start - lo < size)
		p->size =
		    (size - (start - lo)) & ~(uint64_t)(GM_POOL_ALIGN - 1);
	if (p->size > 0) {
		if ((p->head = calloc(1, sizeof(*p->head))) == NULL) {
			free(p);
			return GM_ENOMEM;
		}
		p->head->addr = start;
		p->head->size = p->size;
		p->free = p->head;
	}
	*out = p;
	return GM_OK;
}

void gm_pool_destroy(gm_pool *p)
{
	struct block *b, *next;

	if (p == NULL)
		return;
	for (b = p->head; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	free(p);
}

/* Cuts the first size bytes of free block b off as a block of their own,
 * leaving the rest free behind it. */
static int split(struct block *b, uint64_t size)
{
	struct block *rest;

	if ((rest = calloc(1, sizeof(*rest))) == NULL)
		return GM_ENOMEM;
	rest->addr = b->addr + size;
	rest->size = b->size - size;
	rest->prev = b;
	rest->next = b->next;
	if (b->next != NULL)
		b->next->prev = rest;
	b->next = rest;
	b->size = size;
	return GM_OK;
}

/* The first free block from b on, or NULL. */
static struct block *next_free(struct block *b)
{
	while (b != NULL && b->used)
		b = b->next;
	return b;
}

/* Rounds bytes up to the unit; GM_OK, or the code for a size that can
 * never be had. */
static int unit_size(const gm_pool *p, uint64_t bytes, uint64_t *size)
{
	if (bytes == 0)
		return GM_EINVAL;
	if (bytes > p->size)
		return GM_ETOOBIG;
	/* Cannot overflow: bytes <= p->size, itself a multiple of the unit. */
	*size = (bytes + GM_POOL_ALIGN - 1) & ~(uint64_t)(GM_POOL_ALIGN - 1);
	return GM_OK;
}

/* Hands out b, a free block of exactly size bytes. */
static void take(gm_pool *p, struct block *b, void **slab)
{
	b->used = 1;
	p->used += b->size;
	p->slabs++;
	if (b == p->free)
		p->free = next_free(b->next);
	*slab = (void *)b->addr;
}

int gm_pool_alloc(gm_pool *p, uint64_t bytes, void **slab)
{
	struct block *b;
	uint64_t size;
	int rv;

	*slab = NULL;
	if ((rv = unit_size(p, bytes, &size)) != GM_OK)
		return rv;
	for (b = p->free; b != NULL; b = b->next)
		if (!b->used && b->size >= size)
			break;
	if (b == NULL)
		return GM_ENOMEM;
	if (b->size > size && (rv = split(b, size)) != 0)
		return rv;
	take(p, b, slab);
	return GM_OK;
}

int gm_pool_alloc_high(gm_pool *p, uint64_t bytes, void **slab)
{
	struct block *b, *fit = NULL;
	uint64_t size;
	int rv;

	*slab = NULL;
	if ((rv = unit_size(p, bytes, &size)) != GM_OK)
		return rv;
	for (b = p->free; b != NULL; b = b->next)
		if (!b->used && b->size >= size)
			fit = b;
	if (fit == NULL)
		return GM_ENOMEM;
	if (fit->size > size) { /* the front stays free */
		if ((rv = split(fit, fit->size - size)) != 0)
			return rv;
		fit = fit->next;
	}
	take(p, fit, slab);
	return GM_OK;
}

/* Absorbs b->next into b; both are free. */
static void merge_next(struct block *b)
{
	struct block *n = b->next;

	b->size += n->size;
	b->next = n->next;
	if (n->next != NULL)
		n->next->prev = b;
	free(n);
}

void gm_pool_free(gm_pool *p, void *slab)
{
	uintptr_t addr = (uintptr_t)slab;
	struct block *b;

	if (slab == NULL)
		return;
	for (b = p->head; b != NULL && b->addr < addr; b = b->next)
		;
	if (b == NULL || b->addr != addr || !b->used) {
		/* A caller bug; the books stay as they were. */
		assert(!"gm_pool_free: slab not handed out by this pool");
		return;
	}
	b->used = 0;
	p->used -= b->size;
	p->slabs--;
	if (b->next != NULL && !b->next->used) {
		if (p->free == b->next)
			p->free = b;
		merge_next(b);
	}
	if (b->prev != NULL && !b->prev->used) {
		if (p->free == b)
			p->free = b->prev;
		b = b->prev;
		merge_next(b);
	}
	if (p->free == NULL || b->addr < p->free->addr)
		p->free = b;
}

uint64_t gm_pool_used(const gm_pool *p)
{
	return p->used;
}

uint64_t gm_pool_size(const gm_pool *p)
{
	return p->size;
}

uint64_t gm_pool_slabs(const gm_pool *p)
{
	return p->slabs;
}
