/*
 * gm_job.h - one GEMM job as an engine sees it.
 *
 * The daemon owns every gm_job: it fills the description and host
 * pointers on the loop thread, hands the job to an engine with
 * gm_engine_submit(), and gets it back exactly once through the engine's
 * done callback with status and timings filled. Between the two the job
 * belongs to the engine and the daemon must not touch it.
 */
#ifndef GM_JOB_H
#define GM_JOB_H

#include <stdint.h>

#include "gm_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The text of a job failed with GM_ETIMEDOUT because its deadline
 * passed before it started, wherever it waited. */
#define GM_EXPIRED_MSG "deadline passed before the job started"

/* Bits of gm_job.host_pageable. */
#define GM_PAGEABLE_A	0x1u
#define GM_PAGEABLE_B	0x2u
#define GM_PAGEABLE_C	0x4u
#define GM_PAGEABLE_OUT 0x8u
#define GM_PAGEABLE_ALL 0xfu

typedef struct gm_job {
	gm_job_desc d; /* kernel already resolved: never GM_KERNEL_DEFAULT */

	/*
	 * Operands in host memory the engine can DMA from: a slab of the
	 * engine's arena or a registered region (gm_engine_register), unless
	 * host_pageable says otherwise.
	 * Those in the slab follow each other at the byte offsets of the
	 * wire payload. The result (m*n elements) is written to out, which
	 * overlaps no input unless it is exactly c (an update in place).
	 */
	void *a;
	void *b;
	void *c; /* NULL when the job has no C */
	void *out;

	/*
	 * Host copies the engine does on its own threads so the daemon's
	 * loop never copies payload bytes: when copy_in is set, the
	 * copy_in_bytes bytes at copy_in (A, B, C back to back, as on the
	 * wire) must first be copied to a. When some operands are in a
	 * registered region, copy_to is set: copy_in then holds only the
	 * others, in the same order, and goes to copy_to; their pointers lie
	 * in [copy_to, copy_to + copy_in_bytes) at the offsets they have in
	 * copy_in. When copy_out is set, the result ends up there
	 * instead of (or after) out. An engine that can read and write
	 * ordinary memory directly (the CPU engine) may use copy_in and
	 * copy_out in place of the operands they stand for.
	 */
	const void *copy_in;
	uint64_t copy_in_bytes;
	void *copy_to;
	void *copy_out;

	/*
	 * When the job stops being worth starting, on the monotonic clock
	 * in microseconds (gm_engine_now_us); 0: never. Set by the caller
	 * before the job is handed over: an engine that comes to start a
	 * job after it fails the job with GM_ETIMEDOUT instead of running
	 * it.
	 */
	double deadline_us;

	/*
	 * The operands (GM_PAGEABLE_* bits) that lie in ordinary, pageable
	 * host memory instead: neither in the arena nor in a registered
	 * region, as a payload too large for the arena is received. The
	 * CUDA engine cannot DMA from such memory, so it runs the job out of
	 * core (gm_ooc.h): its host threads copy each tile through pinned
	 * staging buffers of the engine's own. The CPU engine uses the
	 * memory as it is. 0 for a job whose operands are all DMA-able.
	 */
	uint8_t host_pageable;

	/* Filled by the engine before the done callback. */
	int status;			  /* gm_err */
	char msg[GM_MSG_TEXT + 1];	  /* detail for status != 0 */
	double h2d_us, kernel_us, d2h_us; /* from device events; 0 on CPU */
	/*
	 * When the job's first device operation (CUDA: its first copy to
	 * the device, or its kernel) or its BLAS call (CPU) began, on the
	 * clock of deadline_us; 0 when it never began. Until then it waited:
	 * in the engine's queue, for device memory, or on its stream behind
	 * work issued before it. h2d_us, kernel_us and d2h_us follow on
	 * from it without gaps.
	 */
	double start_us;
	int device; /* device index that ran it, -1 CPU */

	/*
	 * Whether the engine has started the job: set once, as it commits
	 * to running it (gm_engine_started), with release order, and read
	 * with gm_job_started from any thread. The caller learns of starts
	 * by reading this, not by being told: it clears started and sets
	 * prio (0..GM_BATCH_PRIO_MAX, counted by gm_engine_starts) before
	 * it hands the job over.
	 */
	int started;
	uint8_t prio;

	void *user;	     /* the daemon's, untouched by engines */
	struct gm_job *next; /* engine-private link while submitted */
} gm_job;

/* Whether job has started (gm_job.started); any thread. */
static inline int gm_job_started(const gm_job *job)
{
	return __atomic_load_n(&job->started, __ATOMIC_ACQUIRE);
}

#ifdef __cplusplus
}
#endif
#endif
