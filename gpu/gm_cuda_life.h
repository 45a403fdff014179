/*
 * gm_cuda_life.h - opening and closing one device of the CUDA engine
 * (gm_cuda_life.cu). Private to the CUDA engine.
 */
#ifndef GM_CUDA_LIFE_H
#define GM_CUDA_LIFE_H

#include "gm_cuda_dev.h"

/* Sets up device index: streams, handles, memory, threads. On failure
 * returns a code with msg and leaves nothing behind. Loop thread. */
int gm_cuda_life_open(struct gm_cuda_shared *sh, int index,
		      struct gm_cuda_dev **out, char *msg, size_t msglen);

/* Blocks until every job queued on d came back, then frees d. */
void gm_cuda_life_close(struct gm_cuda_dev *d);

#endif
