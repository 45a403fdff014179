/*
 * gm_cuda_take.h - a context and its device memory for the issue thread
 * (gm_cuda_issue.cu). Private to the CUDA engine.
 */
#ifndef GM_CUDA_TAKE_H
#define GM_CUDA_TAKE_H

#include "gm_cuda_dev.h"

#define GM_CUDA_WOULD_WAIT (-1) /* full now, and told not to wait */
#define GM_CUDA_TAKEN	   (-2) /* the jobs were taken back while they waited */

/*
 * Gets the jobs *j and the *n - 1 linked after it (a job of its own, or
 * a batch) a context with bytes of the device pool. With may_wait,
 * sleeps while the device is full but has work in flight that will free
 * memory; without, returns GM_CUDA_WOULD_WAIT so the caller can first
 * issue what it holds. While they wait for memory the jobs are still
 * queued, d's current chain: a job may be taken back
 * (gm_cuda_dev_take_back), and one that passes its deadline goes back
 * ETIMEDOUT; *j and *n say what is left, and GM_CUDA_TAKEN that nothing
 * is (none of them is ours any more, not even to read). Other failures
 * are *j's, with the text in its msg. Issue thread.
 */
int gm_cuda_take_ctx(struct gm_cuda_dev *d, gm_job **j, uint32_t *n,
		     uint64_t bytes, int may_wait, struct gm_cuda_ctx **out);

#endif
