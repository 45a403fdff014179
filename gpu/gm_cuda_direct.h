/*
 * gm_cuda_direct.h - a small job alone, run straight on its host memory.
 *
 * A job that comes alone (a batch of one) and is small enough runs with
 * no copies at all: its multiplication reads A, B and C from mapped
 * pinned host memory (the arena, or a region) and writes the result
 * there, each byte crossing the link once, by the kernel itself. What
 * is left on its path is the launch: cuBLASLt's own host work (some
 * 10 us a call on an H100, more than the 64^3 kernel) goes once per
 * place, into a CUDA graph that later jobs of the same shape, scalars,
 * operand addresses and stream replay with one launch. A place is
 * graphed the second time it is seen, so a client that never reuses its
 * buffers pays no capture; graphs are kept per device, the least
 * recently used given up when the table is full.
 *
 * The call is the one a batch makes (gm_cuda_gemm_batch, with the
 * batch's algorithm and stride, count 1), so the job's bits are those
 * it gets in a batch of any size: only where the bytes come from
 * changes. Private to the CUDA engine; one per device, used by its issue
 * thread only.
 */
#ifndef GM_CUDA_DIRECT_H
#define GM_CUDA_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#include "gm_job.h"

struct gm_cuda_direct;
struct gm_cuda_stream;

/* A table for jobs of at most max_bytes of host memory (A + B + C +
 * result); 1 runs none directly. GM_OK or GM_ENOMEM with msg. */
int gm_cuda_direct_open(uint64_t max_bytes, struct gm_cuda_direct **out,
			char *msg, size_t msglen);

/* Gives up every graph; after the device's streams are idle. */
void gm_cuda_direct_close(struct gm_cuda_direct *g);

/* Whether j, checked and with its kernel resolved, of sizes sz, may run
 * directly: small enough, every operand in mapped memory that the
 * device addresses as the host does, and aligned as a batch's slots
 * are. (Its result overlaps no input but C itself, as gm_job.h has it
 * of every job: C goes into it before the call.) */
int gm_cuda_direct_fits(const struct gm_cuda_direct *g, const gm_job *j,
			const gm_job_sizes *sz);

/* Enqueues j's multiplication on st, in place in j->out (which holds C
 * by now when j has C). GM_OK, or a code with the text in msg. */
int gm_cuda_direct_run(struct gm_cuda_direct *g, struct gm_cuda_stream *st,
		       gm_job *j, char *msg, size_t msglen);

/* Makes, launches and gives up one graph of a tiny batch of one in mem
 * (device memory of at least 3 * 8^3 fp32) on st, so that the first
 * job graphed does not pay CUDA's first capture. GM_OK also when no
 * graph can be made (jobs then run uncaptured); else the code of a
 * launch that failed, with msg. */
int gm_cuda_direct_warm(struct gm_cuda_stream *st, char *mem, char *msg,
			size_t msglen);

#endif
