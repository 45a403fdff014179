/*
 * gm_cuda_stage.h - host copies of a chunk of jobs, spread over threads.
 *
 * Socket payloads reach the engine in ordinary memory and must be copied
 * into the pinned arena before their DMA (gm_job.copy_in). One thread
 * copies about 10 GB/s, a fifth of what a copy engine moves, so a device
 * stages a whole chunk with several threads before it issues any of the
 * chunk's copies: the DMAs then run back to back instead of each waiting
 * for a memcpy. Private to the CUDA engine; no CUDA types.
 */
#ifndef GM_CUDA_STAGE_H
#define GM_CUDA_STAGE_H

#include <stddef.h>
#include <stdint.h>

struct gm_cuda_stager;

/* One copy of bytes from src to dst; pieces must not overlap. */
struct gm_cuda_piece {
	void *dst;
	const void *src;
	uint64_t bytes;
};

/* Starts threads copiers (0: copies run on the caller only). GM_OK, or
 * GM_ENOMEM with nothing left behind. */
int gm_cuda_stager_open(unsigned threads, struct gm_cuda_stager **out);

/* Stops the threads (none may be copying) and frees s. NULL is fine. */
void gm_cuda_stager_close(struct gm_cuda_stager *s);

/* Copies p[0..n-1], the calling thread taking part, and returns when
 * every byte is copied. Blocks; one caller at a time (the device's issue
 * thread). */
void gm_cuda_stager_copy(struct gm_cuda_stager *s,
			 const struct gm_cuda_piece *p, size_t n);

#endif
