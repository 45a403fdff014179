/*
 * gm_cuda_issue.h - a device's issue thread, which turns queued waves
 * into work on the stream ring (gm_cuda_issue.cu). Private to the CUDA
 * engine.
 */
#ifndef GM_CUDA_ISSUE_H
#define GM_CUDA_ISSUE_H

/* The thread's body; arg is the device (struct gm_cuda_dev). Returns
 * once the device's wave queue is closed and what it held is issued. */
void *gm_cuda_issue_main(void *arg);

#endif
