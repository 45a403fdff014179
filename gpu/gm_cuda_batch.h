/*
 * gm_cuda_batch.h - a batch of small jobs on its stream: its copies,
 * grouped into as few as the jobs' layout allows, and its batched call
 * (gm_cuda_batch.cu). Private to the CUDA engine; issue thread.
 */
#ifndef GM_CUDA_BATCH_H
#define GM_CUDA_BATCH_H

#include "gm_cuda_dev.h"

/* A batch's phases on its stream; each returns GM_OK or a code with the
 * text in the batch's first job. */
int gm_cuda_batch_h2d(struct gm_cuda_ctx *c);
int gm_cuda_batch_kernel(struct gm_cuda_ctx *c);
int gm_cuda_batch_d2h(struct gm_cuda_ctx *c);

/* The batch's scratch for pieces: made with the device, freed with it. */
int gm_cuda_copies_open(struct gm_cuda_copies **out);
void gm_cuda_copies_close(struct gm_cuda_copies *c);

#endif
