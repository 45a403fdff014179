/*
 * gm_cuda_tile.h - the out-of-core runner's CUDA objects and staging
 * (struct gm_cuda_ooc), and the running of one tiled job's operations on
 * them (gm_cuda_tile.cu). The runner's thread and queue, which make and
 * use these, are gm_cuda_ooc.h's.
 *
 * Private to the CUDA engine's .cu files.
 */
#ifndef GM_CUDA_TILE_H
#define GM_CUDA_TILE_H

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gm_crew.h"
#include "gm_job.h"
#include "gm_ooc.h"

/* Host copies go to the crew in items of about this many bytes. */
#define GM_CUDA_COPY_ITEM (1ull << 20)

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

/*
 * Runs plan's tiles of j on the runner's streams with the plan's buffers
 * in dev, and waits until the device is past all of them. GM_OK, or a
 * code with the text in j->msg (GM_EGPUFAULT: the device is lost). Fills
 * o->sum_us; *end_us gets the job's end against the device's busy span,
 * -1 when unknown. Runner thread (gm_cuda_tile.cu).
 */
int gm_cuda_tile_run(struct gm_cuda_ooc *o, gm_job *j, const gm_ooc_plan *p,
		     char *dev, double *end_us);

/* The host copies of the runner, spread over its crew in items of
 * about GM_CUDA_COPY_ITEM bytes. Runner thread. */
void gm_cuda_tile_copy(struct gm_cuda_ooc *o, void *dst, uint64_t dpitch,
		       const void *src, uint64_t spitch, uint64_t width,
		       uint64_t lines);

#endif
