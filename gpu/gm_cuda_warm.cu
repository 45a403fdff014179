/*
 * gm_cuda_warm.cu - a device's warm-up, run by its issue thread before
 * it takes the waves queued behind it.
 *
 * CUDA loads a library's kernels when they are first launched, and
 * cuBLAS sets up its handles and heuristics on first use: without a
 * warm-up the first job of each dtype paid 45 to 130 ms for it, and
 * each kernel from a module not yet loaded some 40 ms more (an H100,
 * tests/gpu/test_gpu_daemon's first jobs). cuBLAS picks kernels by
 * shape, so the warm-up runs a ladder of square shapes per dtype, on
 * zeros: batches (cuBLASLt, gm_cuda_lt.h) of the small shapes on every
 * stream, single jobs (cublasGemmEx) of the larger ones on stream 0,
 * and for fp64 and fp32 the tiled kernel in every transpose, alone and
 * batched, and one call captured as a CUDA graph (small jobs alone keep
 * theirs so, gm_cuda_direct.h). The device memory comes from the pool (as much
 * as the largest shape that fits in half of it) and goes back to it.
 */
#include "gm_cuda_warm.h"

#include <stdio.h>

#include "gm_cuda_dev.h"
#include "gm_cuda_direct.h"
#include "gm_cuda_err.h"
#include "gm_cuda_gemm.h"

static const int dtypes[] = {GM_FP64, GM_FP32, GM_TF32, GM_FP16, GM_BF16};
/* Small jobs, batched; then jobs of their own. */
static const uint32_t batched[] = {8, 64, 256, 512};
static const uint32_t single[] = {512, 1024, 2048};

#define TILED_N	 64
#define FP64	 8ull
#define ROOM(n)	 (3 * FP64 * (n) * (n)) /* one job of n^3 in fp64 */
#define SLOTS(n) (2 * ROOM(n))		/* two slots, for a batch */

/* A row-major job of n^3, no C. */
static gm_job_desc warm_desc(int dtype, int kernel, uint32_t n, int ta, int tb)
{
	gm_job_desc d = {};

	d.dtype = (uint8_t)dtype;
	d.kernel = (uint8_t)kernel;
	d.trans_a = (uint8_t)ta;
	d.trans_b = (uint8_t)tb;
	d.m = d.n = d.k = n;
	d.alpha = 1;
	return d;
}

/* d as a batch of two in mem, and, when alone is set, on its own. */
static int run_d(struct gm_cuda_stream *st, const gm_job_desc *d, char *mem,
		 int alone, char *msg, size_t msglen)
{
	gm_batch_slot s;
	gm_job_sizes sz;
	int rv;

	gm_job_sizes_of(d, &sz);
	gm_batch_slot_of(&sz, &s);
	if (alone &&
	    (rv = gm_cuda_gemm(st->blas, st->s, d, d->kernel, mem, mem + s.b,
			       mem + s.c, msg, msglen)) != GM_OK)
		return rv;
	return gm_cuda_gemm_batch(st->blas, st->dev->lt, st->ws, st->s, d,
				  d->kernel, mem, mem + s.b, mem + s.c, s.bytes,
				  2, msg, msglen);
}

/* The large shapes that fit in bytes, one job each. */
static int warm_single(struct gm_cuda_stream *st, int dtype, char *mem,
		       uint64_t bytes, char *msg, size_t msglen)
{
	for (size_t i = 0; i < sizeof(single) / sizeof(single[0]); i++) {
		gm_job_desc d =
		    warm_desc(dtype, GM_KERNEL_CUBLAS, single[i], 0, 0);
		uint64_t op = ROOM(single[i]) / 3;
		int rv;

		if (ROOM(single[i]) > bytes)
			break;
		rv = gm_cuda_gemm(st->blas, st->s, &d, d.kernel, mem, mem + op,
				  mem + 2 * op, msg, msglen);
		if (rv != GM_OK)
			return rv;
	}
	return GM_OK;
}

static int warm_stream(struct gm_cuda_stream *st, char *mem, uint64_t bytes,
		       int first, char *msg, size_t msglen)
{
	gm_job_desc d;
	int rv;

	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
		for (size_t k = 0; k < sizeof(batched) / sizeof(batched[0]);
		     k++) {
			d = warm_desc(dtypes[i], GM_KERNEL_CUBLAS, batched[k],
				      0, 0);
			if (SLOTS(batched[k]) <= bytes &&
			    (rv = run_d(st, &d, mem, 0, msg, msglen)) != GM_OK)
				return rv;
		}
		if (first && (rv = warm_single(st, dtypes[i], mem, bytes, msg,
					       msglen)) != GM_OK)
			return rv;
		if (dtypes[i] != GM_FP64 && dtypes[i] != GM_FP32)
			continue;
		for (int t = 0; t < 4; t++) {
			d = warm_desc(dtypes[i], GM_KERNEL_TILED, TILED_N,
				      t & 1, t >> 1);
			if ((rv = run_d(st, &d, mem, 1, msg, msglen)) != GM_OK)
				return rv;
		}
	}
	GM_CUDA_TRY(cudaStreamSynchronize(st->s), msg, msglen);
	return GM_OK;
}

/* bytes of the pool, waiting while jobs in flight hold it; NULL when it
 * cannot be had. */
static void *take(struct gm_cuda_dev *d, uint64_t bytes)
{
	void *p = NULL;

	pthread_mutex_lock(&d->mu);
	while (gm_pool_alloc(d->pool, bytes, &p) == GM_ENOMEM && d->inflight) {
		d->mem_waits++;
		pthread_cond_wait(&d->issue_cv, &d->mu);
		d->mem_waits--;
	}
	pthread_mutex_unlock(&d->mu);
	return p;
}

static void give(struct gm_cuda_dev *d, void *p)
{
	pthread_mutex_lock(&d->mu);
	gm_pool_free(d->pool, p);
	gm_cuda_dev_freed(d);
	pthread_mutex_unlock(&d->mu);
}

/* The room the warm-up takes: its largest shape that fits in half the
 * pool, and never less than the tiled kernel's batch. */
static uint64_t room(const struct gm_cuda_dev *d)
{
	uint64_t half = gm_pool_size(d->pool) / 2, bytes = SLOTS(TILED_N);

	for (size_t k = 0; k < sizeof(batched) / sizeof(batched[0]); k++)
		if (SLOTS(batched[k]) <= half && SLOTS(batched[k]) > bytes)
			bytes = SLOTS(batched[k]);
	for (size_t i = 0; i < sizeof(single) / sizeof(single[0]); i++)
		if (ROOM(single[i]) <= half && ROOM(single[i]) > bytes)
			bytes = ROOM(single[i]);
	return bytes;
}

int gm_cuda_warm_run(struct gm_cuda_dev *d, char *msg, size_t msglen)
{
	uint64_t bytes = room(d);
	cudaStream_t s0 = d->streams[0].s;
	cudaError_t e;
	char *mem;
	int rv = GM_OK;

	if ((mem = (char *)take(d, bytes)) == NULL) {
		snprintf(msg, msglen, "no GPU memory for the warm-up");
		return GM_ENOMEM;
	}
	/* Zeros: no value that could trap, in any dtype. */
	if ((e = cudaMemsetAsync(mem, 0, bytes, s0)) == cudaSuccess)
		e = cudaStreamSynchronize(s0);
	if (e != cudaSuccess)
		rv = gm_cuda_fail(e, "zeroing the warm-up's memory", __FILE__,
				  __LINE__, msg, msglen);
	for (unsigned i = 0; rv == GM_OK && i < d->nstreams; i++)
		rv = warm_stream(&d->streams[i], mem, bytes, i == 0, msg,
				 msglen);
	if (rv == GM_OK)
		rv = gm_cuda_direct_warm(&d->streams[0], mem, msg, msglen);
	if (rv == GM_EGPUFAULT)
		gm_cuda_dev_fault(d, msg);
	else
		give(d, mem);
	return rv;
}
