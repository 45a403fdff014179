/*
 * gm_cuda_done.h - a stream's completion thread, which waits for the
 * stream's contexts in order and hands their jobs back
 * (gm_cuda_done.cu). Private to the CUDA engine.
 */
#ifndef GM_CUDA_DONE_H
#define GM_CUDA_DONE_H

/* The thread's body; arg is the stream (struct gm_cuda_stream). Returns
 * once the stream's queue is closed and every context is back. */
void *gm_cuda_done_main(void *arg);

#endif
