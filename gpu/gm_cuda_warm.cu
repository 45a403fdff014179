/*
 * gm_cuda_warm.cu - a device's warm-up, run by its issue thread before
 * it takes the waves queued behind it.
 *
 * CUDA loads a library's kernels when they are first launched, and
 * cuBLAS sets up its handles and heuristics on first use: the first job
 * of each kind after start paid about 120 ms for it. So every stream
 * runs, for every dtype, one job on its own (cublasGemmEx) and one
 * batch (cuBLASLt, gm_cuda_lt.h), and for fp64 and fp32 the tiled
 * kernel in every transpose, alone and batched, on zeros of WARM_N^3;
 * stream 0 also runs a job of WARM_BIG^3 per dtype, as jobs past the
 * small-job bound get kernels of their own. The device memory comes
 * from the pool and goes back to it.
 */
#include "gm_cuda_dev.h"

#include <stdio.h>

#include "gm_cuda_err.h"
#include "gm_cuda_gemm.h"

#define WARM_N	    64	/* a small job */
#define WARM_BIG    512 /* a job past the small-job bound */
#define BIG_OPERAND (8ull * WARM_BIG * WARM_BIG) /* in fp64 */
#define SMALL_SLOTS (2 * 3 * 8ull * WARM_N * WARM_N)

static const int dtypes[] = {GM_FP64, GM_FP32, GM_TF32, GM_FP16, GM_BF16};

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

/* Runs d alone and as a batch of two at mem, which holds two slots. */
static int run_both(struct gm_cuda_stream *st, const gm_job_desc *d, char *mem,
		    char *msg, size_t msglen)
{
	gm_batch_slot s;
	gm_job_sizes sz;
	int rv;

	gm_job_sizes_of(d, &sz);
	gm_batch_slot_of(&sz, &s);
	if ((rv = gm_cuda_gemm(st->blas, st->s, d, d->kernel, mem, mem + s.b,
			       mem + s.c, msg, msglen)) != GM_OK)
		return rv;
	return gm_cuda_gemm_batch(st->blas, st->dev->lt, st->ws, st->s, d,
				  d->kernel, mem, mem + s.b, mem + s.c, s.bytes,
				  2, msg, msglen);
}

static int warm_stream(struct gm_cuda_stream *st, char *mem, int big, char *msg,
		       size_t msglen)
{
	gm_job_desc d;
	int rv, t;

	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
		d = warm_desc(dtypes[i], GM_KERNEL_CUBLAS, WARM_N, 0, 0);
		if ((rv = run_both(st, &d, mem, msg, msglen)) != GM_OK)
			return rv;
		d = warm_desc(dtypes[i], GM_KERNEL_CUBLAS, WARM_BIG, 0, 0);
		if (big &&
		    (rv = gm_cuda_gemm(st->blas, st->s, &d, d.kernel, mem,
				       mem + BIG_OPERAND, mem + 2 * BIG_OPERAND,
				       msg, msglen)) != GM_OK)
			return rv;
		if (dtypes[i] != GM_FP64 && dtypes[i] != GM_FP32)
			continue;
		for (t = 0; t < 4; t++) {
			d = warm_desc(dtypes[i], GM_KERNEL_TILED, WARM_N, t & 1,
				      t >> 1);
			if ((rv = run_both(st, &d, mem, msg, msglen)) != GM_OK)
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
	while (gm_pool_alloc(d->pool, bytes, &p) == GM_ENOMEM && d->inflight)
		pthread_cond_wait(&d->issue_cv, &d->mu);
	pthread_mutex_unlock(&d->mu);
	return p;
}

static void give(struct gm_cuda_dev *d, void *p)
{
	pthread_mutex_lock(&d->mu);
	gm_pool_free(d->pool, p);
	pthread_cond_signal(&d->issue_cv);
	pthread_mutex_unlock(&d->mu);
}

int gm_cuda_warm_run(struct gm_cuda_dev *d, char *msg, size_t msglen)
{
	/* Room for the large job, unless that is more than half the pool;
	 * it also holds two fp64 slots of WARM_N. */
	uint64_t big = 3 * BIG_OPERAND;
	uint64_t bytes = big > gm_pool_size(d->pool) / 2 ? SMALL_SLOTS : big;
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
		rv = warm_stream(&d->streams[i], mem, i == 0 && bytes == big,
				 msg, msglen);
	if (rv == GM_EGPUFAULT)
		gm_cuda_dev_fault(d, msg);
	else
		give(d, mem);
	return rv;
}
