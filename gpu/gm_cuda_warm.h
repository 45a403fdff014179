/*
 * gm_cuda_warm.h - a device's warm-up, run by its issue thread when
 * asked (gm_cuda_dev_warm). Private to the CUDA engine.
 */
#ifndef GM_CUDA_WARM_H
#define GM_CUDA_WARM_H

#include <stddef.h>

struct gm_cuda_dev;

/* The issue thread's warm-up of d: every dtype and kernel on every
 * stream, per job and batched, on tiny inputs. GM_OK or a code with
 * msg; a sticky error faults d. */
int gm_cuda_warm_run(struct gm_cuda_dev *d, char *msg, size_t msglen);

#endif
