/*
 * gm_cuda_ooc.h - a device's out-of-core runner: the thread that runs,
 * tile by tile (gm_ooc.h), the jobs its issue thread finds too large for
 * their share of the device or with operands in pageable memory, one
 * job at a time, beside the jobs the issue thread runs.
 *
 * A tiled job holds one slab of at most gm_ooc_share() of the device
 * pool, taken from the top of the pool (gm_pool_alloc_high) so that the
 * rest stays in one piece for other jobs; while the runner waits for its
 * slab, the issue thread starts nothing new, so the slab is had as soon
 * as the jobs in flight are done. The runner has three streams of its
 * own (copies in, GEMMs, copies out), at the lowest priority while the
 * ring's streams have the highest, so that a small job's kernels are
 * scheduled ahead of a large job's waiting blocks; a cuBLAS handle with
 * its own workspace; the schedule's events; and, for pageable operands,
 * pinned staging buffers that a crew of host threads packs tiles into
 * (and unpacks results out of) while the DMA of the one before runs.
 *
 * Timings of a tiled job (gm_job's h2d_us, kernel_us, d2h_us) are sums
 * over its operations: every copy in, every GEMM, every copy out, each
 * timed on the device from its start to its end, waits for other
 * streams excluded (a copy of a pageable operand, made of chunks, also
 * counts the time its stream waited for the host to pack the next
 * chunk). The three run at once, so they may add up to more than the
 * job took.
 *
 * A tile of an fp16 or bf16 job is kept in its dtype between panels, as
 * cuBLAS keeps C: with nk panels its result is rounded nk times, not
 * once, so its error grows with sqrt(nk) (the planner gives half
 * precision deep panels: nk is 1 or small unless K is very large).
 *
 * Private to the CUDA engine's .cu files.
 */
#ifndef GM_CUDA_OOC_H
#define GM_CUDA_OOC_H

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gm_cuda_tile.h"
#include "gm_job.h"
#include "gm_ooc.h"

/* Whether j, with bytes of device memory as a job on its own, runs out
 * of core on d. Issue thread. */
int gm_cuda_ooc_wanted(struct gm_cuda_dev *d, const gm_job *j, uint64_t bytes);

/* Makes d's runner (streams, handle on workspace ws of ws_bytes, events,
 * staging, crew of threads helpers); the thread starts with
 * gm_cuda_ooc_start. GM_OK, or a code with msg; what was made is freed
 * by gm_cuda_ooc_close. Loop thread, at device open. */
int gm_cuda_ooc_open(struct gm_cuda_dev *d, void *ws, uint64_t ws_bytes,
		     unsigned helpers, char *msg, size_t msglen);
int gm_cuda_ooc_start(struct gm_cuda_dev *d, char *msg, size_t msglen);

/* Queues j, checked, for the runner. Issue thread. */
void gm_cuda_ooc_queue(struct gm_cuda_dev *d, gm_job *j);

/* Stops the runner once every job queued is back; then frees it. */
void gm_cuda_ooc_stop(struct gm_cuda_dev *d);
void gm_cuda_ooc_close(struct gm_cuda_dev *d);

#endif
