/*
 * gm_pool.h - carves job slabs out of one fixed host arena.
 *
 * The arena (pinned memory on CUDA) is allocated once by the engine; the
 * pool only keeps the books: first-fit over an address-ordered free list,
 * neighbours merged on free, every slab aligned to GM_POOL_ALIGN. When no
 * slab fits now the caller keeps the job queued (back-pressure). The
 * bookkeeping itself is malloc'd, O(slabs) in size. Not thread-safe: the
 * loop thread owns a pool.
 */
#ifndef GM_POOL_H
#define GM_POOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GM_POOL_ALIGN 256 /* cuBLAS and DMA like 256-byte alignment */

typedef struct gm_pool gm_pool;

/* Creates a pool over [base, base + size). Returns GM_OK or GM_ENOMEM. */
int gm_pool_create(void *base, uint64_t size, gm_pool **out);

/* Frees the bookkeeping (not the arena). Slabs still out are forgotten. */
void gm_pool_destroy(gm_pool *p);

/* Allocates a slab of at least bytes. GM_OK; GM_ENOMEM when nothing fits
 * now (try again after a free); GM_ETOOBIG when bytes could never fit. */
int gm_pool_alloc(gm_pool *p, uint64_t bytes, void **slab);

/* The same, last fit: the slab is the top end of the highest free block
 * large enough, so that one large slab held for long (a tiled job's)
 * leaves the rest of the pool in one piece below it. */
int gm_pool_alloc_high(gm_pool *p, uint64_t bytes, void **slab);

/* Returns a slab from gm_pool_alloc or gm_pool_alloc_high. */
void gm_pool_free(gm_pool *p, void *slab);

/* Bytes handed out (rounded sizes), bytes managed, slabs out. */
uint64_t gm_pool_used(const gm_pool *p);
uint64_t gm_pool_size(const gm_pool *p);
uint64_t gm_pool_slabs(const gm_pool *p);

#ifdef __cplusplus
}
#endif
#endif
