/*
 * gm_big_bound.c - what a tiled job is measured against, in this process
 * on device 0: the same GEMM by cuBLAS with all three matrices resident
 * on the device (no copy at all: the compute bound), and by cuBLASXt
 * from the same host memory (the library users would otherwise call,
 * tiling through the device on its own). Also how fast 2D copies cross
 * the link by the width of their lines, the pitch being a row of A.
 *
 * Row-major out = A B is, to column-major cuBLAS, out^T = B^T A^T: B is
 * passed as the first operand and A as the second, both untransposed.
 */
#include <cublasXt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "gm_bench.h"
#include "gm_big.h"

#define CUDA_OK(expr) GM_BENCH_CUDA(expr, err, errlen)
#define BLAS_OK(expr) GM_BENCH_BLAS(expr, err, errlen)
#define REPS_MAX      9
#define COPY_BYTES    (1ull << 30) /* of one copy measurement */

static cublasStatus_t gemm(cublasHandle_t h, const bg_case *c, const void *a,
			   const void *b, void *out)
{
	const double one = 1, zero = 0;
	const float onef = 1, zerof = 0;
	int n = (int)c->n;

	if (c->dtype == GEMMD_FP64)
		return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
				   b, n, a, n, &zero, out, n);
	return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &onef, b, n, a,
			   n, &zerof, out, n);
}

struct resident {
	char *dev;
	cublasHandle_t h;
	cudaEvent_t start, end;
};

static int resident_runs(const bg_case *c, const bg_mats *m, int reps,
			 struct resident *r, double *ms, char *err,
			 size_t errlen)
{
	double v[REPS_MAX];
	float t;

	CUDA_OK(cudaMalloc((void **)&r->dev, 3 * m->mat));
	CUDA_OK(cudaMemcpy(r->dev, m->a, 2 * m->mat, cudaMemcpyHostToDevice));
	BLAS_OK(cublasCreate(&r->h));
	CUDA_OK(cudaEventCreate(&r->start));
	CUDA_OK(cudaEventCreate(&r->end));
	for (int i = 0; i <= reps; i++) { /* the first is a warm-up */
		CUDA_OK(cudaEventRecord(r->start, 0));
		BLAS_OK(gemm(r->h, c, r->dev, r->dev + m->mat,
			     r->dev + 2 * m->mat));
		CUDA_OK(cudaEventRecord(r->end, 0));
		CUDA_OK(cudaEventSynchronize(r->end));
		CUDA_OK(cudaEventElapsedTime(&t, r->start, r->end));
		if (i > 0)
			v[i - 1] = t;
	}
	*ms = bg_median(v, reps);
	return 0;
}

int bg_resident(const bg_case *c, const bg_mats *m, int reps, double *ms,
		char *err, size_t errlen)
{
	struct resident r = {0};
	int rv;

	if (reps < 1 || reps > REPS_MAX) {
		snprintf(err, errlen, "reps %d not in 1..%d", reps, REPS_MAX);
		return -1;
	}
	CUDA_OK(cudaSetDevice(0));
	rv = resident_runs(c, m, reps, &r, ms, err, errlen);
	if (r.h != NULL)
		cublasDestroy(r.h);
	if (r.start != NULL)
		cudaEventDestroy(r.start);
	if (r.end != NULL)
		cudaEventDestroy(r.end);
	cudaFree(r.dev);
	return rv;
}

/* The leading size x size x size part of the job (the whole of it when
 * size is n). */
static cublasStatus_t xt_gemm(cublasXtHandle_t h, const bg_case *c, size_t size,
			      const void *a, const void *b, void *out)
{
	const double one = 1, zero = 0;
	const float onef = 1, zerof = 0;
	size_t n = c->n, s = size;

	if (c->dtype == GEMMD_FP64)
		return cublasXtDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &one,
				     (const double *)b, n, (const double *)a, n,
				     &zero, (double *)out, n);
	return cublasXtSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &onef,
			     (const float *)b, n, (const float *)a, n, &zerof,
			     (float *)out, n);
}

static int xt_run(cublasXtHandle_t h, const bg_case *c, bg_mats *m, int block,
		  double *ms, int *used, char *err, size_t errlen)
{
	int dev = 0;
	double t0;

	BLAS_OK(cublasXtDeviceSelect(h, 1, &dev));
	if (block > 0)
		BLAS_OK(cublasXtSetBlockDim(h, block));
	BLAS_OK(cublasXtGetBlockDim(h, used));
	/* A warm-up on a corner: cuBLASXt sets its device up on first use. */
	BLAS_OK(xt_gemm(h, c, c->n < 1024 ? c->n : 1024, m->a, m->b, m->out));
	CUDA_OK(cudaDeviceSynchronize());
	t0 = bg_now_ms();
	BLAS_OK(xt_gemm(h, c, c->n, m->a, m->b, m->out));
	CUDA_OK(cudaDeviceSynchronize());
	*ms = bg_now_ms() - t0;
	return 0;
}

int bg_xt(const bg_case *c, bg_mats *m, int block, double *ms, int *used,
	  char *err, size_t errlen)
{
	cublasXtHandle_t h;
	int rv;

	CUDA_OK(cudaSetDevice(0));
	BLAS_OK(cublasXtCreate(&h));
	rv = xt_run(h, c, m, block, ms, used, err, errlen);
	cublasXtDestroy(h);
	return rv;
}

static int copy_runs(const bg_case *c, const bg_mats *m, uint64_t width,
		     int streams, char *dev, cudaStream_t *s, cudaEvent_t *ev,
		     double *gbps, char *err, size_t errlen)
{
	uint64_t pitch = (uint64_t)c->n * (c->dtype == GEMMD_FP64 ? 8 : 4);
	uint64_t lines = COPY_BYTES / width / streams, per;
	float ms;

	if (lines * streams > c->n) /* as many rows as A has */
		lines = c->n / streams;
	per = lines * width;
	if (width > pitch || lines == 0) {
		snprintf(err, errlen, "lines of %llu bytes do not fit A",
			 (unsigned long long)width);
		return -1;
	}
	CUDA_OK(cudaEventRecord(ev[0], s[0]));
	for (int i = 1; i < streams; i++)
		CUDA_OK(cudaStreamWaitEvent(s[i], ev[0], 0));
	for (int i = 0; i < streams; i++)
		CUDA_OK(cudaMemcpy2DAsync(
		    dev + i * per, width, m->a + i * lines * pitch, pitch,
		    width, lines, cudaMemcpyHostToDevice, s[i]));
	for (int i = 1; i < streams; i++) {
		CUDA_OK(cudaEventRecord(ev[2 + i], s[i]));
		CUDA_OK(cudaStreamWaitEvent(s[0], ev[2 + i], 0));
	}
	CUDA_OK(cudaEventRecord(ev[1], s[0]));
	CUDA_OK(cudaEventSynchronize(ev[1]));
	CUDA_OK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
	*gbps = (double)per * streams / ms / 1e6;
	return 0;
}

int bg_copy2d(const bg_case *c, const bg_mats *m, uint64_t width, int streams,
	      double *gbps, char *err, size_t errlen)
{
	cudaStream_t s[2] = {0};
	cudaEvent_t ev[4] = {0};
	char *dev = NULL;
	int rv = -1;

	if (streams < 1 || streams > 2) {
		snprintf(err, errlen, "streams %d not 1 or 2", streams);
		return -1;
	}
	if (cudaMalloc((void **)&dev, COPY_BYTES) == cudaSuccess) {
		for (int i = 0; i < 2; i++)
			cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking);
		for (int i = 0; i < 4; i++)
			cudaEventCreate(&ev[i]);
		/* A warm-up, then the one that counts. */
		rv = copy_runs(c, m, width, streams, dev, s, ev, gbps, err,
			       errlen);
		if (rv == 0)
			rv = copy_runs(c, m, width, streams, dev, s, ev, gbps,
				       err, errlen);
	} else {
		snprintf(err, errlen, "cudaMalloc of %llu bytes",
			 (unsigned long long)COPY_BYTES);
	}
	for (int i = 0; i < 2; i++)
		if (s[i] != NULL)
			cudaStreamDestroy(s[i]);
	for (int i = 0; i < 4; i++)
		if (ev[i] != NULL)
			cudaEventDestroy(ev[i]);
	cudaFree(dev);
	return rv;
}
