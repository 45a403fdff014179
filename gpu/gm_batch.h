/*
 * gm_batch.h - how small jobs are coalesced: which jobs may share one
 * batched call, where each job's operands sit in a batch's device slab,
 * and which copies move them.
 *
 * A batch is a list of jobs (linked by gm_job.next) made of runs: a run
 * is a stretch of jobs that share a key (gm_batch_same) and so one
 * batched GEMM call. Each job of a run has a slot in the slab: A, then B,
 * then C's place where the result is made, each at a multiple of
 * GM_BATCH_ALIGN, so that the run's operands lie at one constant stride
 * on the device whatever their host addresses. The copies of a run are
 * planned from the host addresses: an operand found at a constant stride
 * across the run's jobs (as jobs laid out back to back are) crosses in
 * one strided copy for the whole run, and neighbouring operands whose
 * host gap equals their device gap share it; an operand at arbitrary
 * addresses crosses in one piece per job, and the caller sends those
 * pieces as one batched copy. Plain C, no CUDA: the CUDA engine issues
 * what it plans (gm_cuda_batch.cu).
 */
#ifndef GM_BATCH_H
#define GM_BATCH_H

#include <stdint.h>

#include "gm_job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Slot alignment: what cuBLAS needs for its fastest kernels, and what
 * the kernels chosen for a run assume of every job's operands. */
#define GM_BATCH_ALIGN 256

/* Non-zero when x and y may run in one batched call: dtype, kernel,
 * transposes, layout, m, n, k, alpha and C-ness equal, and beta too
 * when they have C (without C, beta is not used). Scalars compare bit
 * for bit. */
int gm_batch_same(const gm_job_desc *x, const gm_job_desc *y);

/* A hash of the fields gm_batch_same compares. */
uint64_t gm_batch_hash(const gm_job_desc *d);

/* A job's slot on the device: A at 0, B at b, C and the result at c;
 * bytes is the distance from one slot to the next. */
typedef struct gm_batch_slot {
	uint64_t b, c, bytes;
} gm_batch_slot;

void gm_batch_slot_of(const gm_job_sizes *sz, gm_batch_slot *s);

/*
 * One copy between host memory and a slab: rows rows of width bytes,
 * row i at host + i * hpitch and at slab offset dev + i * dpitch. rows
 * is 1 for a piece of one job; hpitch == dpitch == width means the rows
 * are one contiguous span on both sides.
 */
typedef struct gm_batch_copy {
	char *host;
	uint64_t dev;
	uint64_t width;
	uint64_t hpitch, dpitch;
	uint32_t rows;
} gm_batch_copy;

typedef void (*gm_batch_emit_fn)(void *arg, const gm_batch_copy *c);

enum gm_batch_dir {
	GM_BATCH_IN,  /* A, B and C (when with_c) to the device */
	GM_BATCH_OUT, /* results back */
};

/*
 * Plans the copies of one run: count jobs from first (linked by next),
 * all with slot s, the run's first slot at slab offset dev. Calls emit
 * once per copy, the strided ones first, then the pieces in job order.
 * Pure; any thread.
 */
void gm_batch_plan(gm_job *first, uint32_t count, const gm_batch_slot *s,
		   uint64_t dev, int dir, int with_c, gm_batch_emit_fn emit,
		   void *arg);

/*
 * The small jobs of a wave sorted by key: one group per key, each in
 * wave order, the groups in the order their first job came. Batches are
 * then cut from them: a group that fills half a batch or more gets
 * batches of its own, cut evenly; smaller groups, one after another,
 * share a batch as its runs. Jobs are linked through gm_job.next. Used
 * by one thread; allocates only at create.
 */
typedef struct gm_batch_groups gm_batch_groups;

/* Room for max_groups keys at once. GM_OK or GM_ENOMEM. */
int gm_batch_groups_create(uint32_t max_groups, gm_batch_groups **out);
void gm_batch_groups_destroy(gm_batch_groups *g);

/* Adds job, of bytes host bytes and a slot of slot_bytes, to its key's
 * group. GM_OK, or GM_ENOMEM (job not taken) when a new key finds every
 * group in use: cut what is there first. */
int gm_batch_groups_add(gm_batch_groups *g, gm_job *job, uint64_t bytes,
			uint64_t slot_bytes);

/* Takes job out of its group: 1, or 0 when no group holds it. */
int gm_batch_groups_remove(gm_batch_groups *g, gm_job *job);

/*
 * Cuts the next batch, of at most max_bytes host bytes (a single job may
 * be larger) and max_jobs jobs: *head gets its jobs, linked in run order
 * and ending in NULL, *dev_bytes the slab it needs. Returns its number
 * of jobs, 0 when no job is left (the groups are then empty and reusable).
 */
uint32_t gm_batch_groups_cut(gm_batch_groups *g, uint64_t max_bytes,
			     uint32_t max_jobs, gm_job **head,
			     uint64_t *dev_bytes);

#ifdef __cplusplus
}
#endif
#endif
