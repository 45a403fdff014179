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

#include "gm_crew.h"
#include "gm_job.h"
#include "gm_ooc.h"

struct gm_cuda_dev;

/* Pinned staging for pageable operands: buffers of STAGE_BYTES, one
 * line of any operand at the most (GM_MAX_DIM fp64 elements). Eight of
 * them keep the packing of one ahead of the DMA of others. */
#define GM_CUDA_OOC_STAGES	8
#define GM_CUDA_OOC_STAGE_BYTES (8ull << 20)
/* Operations timed in flight: the runner waits for the oldest before
 * it issues more, which also bounds how far ahead it queues: a few
 * steps (three operations each), enough to keep the copies and GEMMs
 * fed, few enough that no stream holds a long wait for another. */
#define GM_CUDA_OOC_TIMED 16

enum { GM_CUDA_STAGE_FREE, GM_CUDA_STAGE_IN, GM_CUDA_STAGE_OUT };

/* A staging buffer and what its last copy left to do. */
struct gm_cuda_stage_buf {
	char *p;
	cudaEvent_t ev; /* after its last copy */
	int state;	/* GM_CUDA_STAGE_* */
	/* OUT: lines of width bytes to unpack to dst, hpitch apart. */
	char *dst;
	uint64_t hpitch, width;
	uint32_t lines;
};

/* An operation's start and end on its stream. */
struct gm_cuda_timed {
	cudaEvent_t start, end;
	int stream; /* enum gm_ooc_stream; -1: free */
};

struct gm_cuda_ooc {
	struct gm_cuda_dev *dev;
	cudaStream_t s[GM_OOC_STREAMS];
	cublasHandle_t blas; /* bound to s[GM_OOC_MUL] */
	cudaEvent_t ev[GM_OOC_EVENTS];
	cudaEvent_t end; /* after a job's last operation */
	struct gm_cuda_timed timed[GM_CUDA_OOC_TIMED];
	unsigned next_timed;
	char *stage_mem;
	struct gm_cuda_stage_buf stage[GM_CUDA_OOC_STAGES];
	unsigned next_stage;
	gm_crew *crew;
	/* The job under way: */
	double sum_us[GM_OOC_STREAMS]; /* per stream: the timings */
	int span;		       /* the device's busy span is open */
};

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

/* Takes j back from d's runner queue if it still waits there: GM_OK, or
 * GM_ENOTFOUND. Under d's mu. */
int gm_cuda_ooc_take_back(struct gm_cuda_dev *d, gm_job *j);

/* Stops the runner once every job queued is back; then frees it. */
void gm_cuda_ooc_stop(struct gm_cuda_dev *d);
void gm_cuda_ooc_close(struct gm_cuda_dev *d);

/*
 * Runs plan's tiles of j on the runner's streams with the plan's buffers
 * in dev, and waits until the device is past all of them. GM_OK, or a
 * code with the text in j->msg (GM_EGPUFAULT: the device is lost). Fills
 * o->sum_us; *end_us gets the job's end against the device's busy span,
 * -1 when unknown. Runner thread (gm_cuda_tile.cu).
 */
int gm_cuda_tile_run(struct gm_cuda_ooc *o, gm_job *j, const gm_ooc_plan *p,
		     char *dev, double *end_us);

/* The host copies of the runner, spread over its crew. */
void gm_cuda_ooc_copy(struct gm_cuda_ooc *o, void *dst, uint64_t dpitch,
		      const void *src, uint64_t spitch, uint64_t width,
		      uint64_t lines);

#endif
