/*
 * gm_cuda_gemm.cu - the multiplication of one job or of a batch of jobs
 * of one shape: which kernel, which cuBLAS data and compute types, and
 * how a row- or column-major job is laid out for a kernel that only
 * knows one order.
 *
 * cuBLAS is column-major; the tiled kernel is row-major. A job in the
 * other order is handed over with its operands swapped (native_call), the
 * one place in gemmd where that is done, for single jobs and batches
 * alike. A single job goes to cublasGemmEx, a batch to cuBLASLt with the
 * algorithm of its shape (gm_cuda_lt.h).
 */
#include "gm_cuda_gemm.h"

#include <stdio.h>

#include "gm_cuda_err.h"
#include "gm_tiled.h"

/* A job as a kernel of one native order sees it. */
struct call {
	int ta, tb;
	uint32_t m, n, k;
	const void *a, *b;
	uint64_t lda, ldb, ldc;
};

/* Distance between consecutive stored lines (columns when native is
 * column-major, rows otherwise) of an operand X with op(X) r x c. */
static uint64_t line_stride(int native, int trans, uint32_t r, uint32_t c)
{
	uint32_t rows = trans ? c : r; /* X itself is c x r when transposed */
	uint32_t cols = trans ? r : c;

	return native == GM_COL_MAJOR ? rows : cols;
}

/*
 * A matrix stored in one order is its transpose stored in the other, and
 * C^T = op(B)^T * op(A)^T. So a job whose layout differs from the
 * kernel's native order runs as the kernel's problem with B in A's place,
 * A in B's, and m and n exchanged; each operand keeps its transpose flag,
 * because reading a buffer in the other order already transposes it.
 */
static struct call native_call(const gm_job_desc *d, int native, const void *a,
			       const void *b)
{
	int swap = d->layout != native;
	struct call c;

	c.ta = swap ? d->trans_b : d->trans_a;
	c.tb = swap ? d->trans_a : d->trans_b;
	c.m = swap ? d->n : d->m;
	c.n = swap ? d->m : d->n;
	c.k = d->k;
	c.a = swap ? b : a;
	c.b = swap ? a : b;
	c.lda = line_stride(native, c.ta, c.m, c.k);
	c.ldb = line_stride(native, c.tb, c.k, c.n);
	c.ldc = native == GM_COL_MAJOR ? c.m : c.n;
	return c;
}

int gm_cuda_gemm_kernel(const gm_job_desc *d, int dflt)
{
	if (d->kernel != GM_KERNEL_DEFAULT)
		return d->kernel;
	return dflt != GM_KERNEL_DEFAULT ? dflt : GM_KERNEL_CUBLAS;
}

int gm_cuda_gemm_supports(const gm_job_desc *d, int kernel, char *msg,
			  size_t msglen)
{
	const char *dt = gm_dtype_name(d->dtype);

	if (dt == NULL) {
		snprintf(msg, msglen, "dtype %u unknown", d->dtype);
		return GM_EUNSUPPORTED;
	}
	if (d->trans_a > 1 || d->trans_b > 1 || d->layout > GM_COL_MAJOR) {
		snprintf(msg, msglen, "trans %u/%u, layout %u not 0 or 1",
			 d->trans_a, d->trans_b, d->layout);
		return GM_EUNSUPPORTED;
	}
	/* cuBLAS takes int dimensions and leading dimensions. */
	if (d->m == 0 || d->n == 0 || d->k == 0 || d->m > GM_MAX_DIM ||
	    d->n > GM_MAX_DIM || d->k > GM_MAX_DIM) {
		snprintf(msg, msglen, "m, n, k = %u, %u, %u out of range", d->m,
			 d->n, d->k);
		return GM_EUNSUPPORTED;
	}
	if (kernel == GM_KERNEL_CUBLAS)
		return GM_OK;
	if (kernel == GM_KERNEL_TILED &&
	    (d->dtype == GM_FP64 || d->dtype == GM_FP32))
		return GM_OK;
	if (kernel == GM_KERNEL_TILED)
		snprintf(msg, msglen,
			 "tiled kernel: fp64 and fp32 only, not %s", dt);
	else
		snprintf(msg, msglen, "kernel %d unknown", kernel);
	return GM_EUNSUPPORTED;
}

/* A batch of count problems, stride elements apart; count 1 is one job. */
struct batch {
	uint32_t count;
	int64_t stride;
};

static const struct batch single = {1, 0};

static int run_tiled(cudaStream_t stream, const gm_job_desc *d, const void *a,
		     const void *b, void *c, double beta,
		     const struct batch *bt, char *msg, size_t msglen)
{
	struct call k = native_call(d, GM_ROW_MAJOR, a, b);
	gm_tiled_args g;

	g.dtype = d->dtype;
	g.trans_a = k.ta;
	g.trans_b = k.tb;
	g.m = k.m;
	g.n = k.n;
	g.k = k.k;
	g.alpha = d->alpha;
	g.beta = beta;
	g.a = k.a;
	g.b = k.b;
	g.c = c;
	g.lda = k.lda;
	g.ldb = k.ldb;
	g.ldc = k.ldc;
	g.count = bt->count;
	g.stride_a = g.stride_b = g.stride_c = (uint64_t)bt->stride;
	GM_CUDA_TRY((cudaError_t)gm_tiled_gemm(&g, stream), msg, msglen);
	return GM_OK;
}

/* cuBLAS types for a dtype; fp16 and bf16 accumulate in fp32. The scale
 * type follows the compute type: double for 64F, float for every 32F
 * variant. */
struct blas_types {
	cudaDataType data;
	cublasComputeType_t compute;
	cudaDataType scale;
};

static struct blas_types blas_types_of(int dtype)
{
	switch (dtype) {
	case GM_FP64:
		return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
	case GM_TF32:
		return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F};
	case GM_FP16:
		return {CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
	case GM_BF16:
		return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
	default:
		return {CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
	}
}

/* alpha and beta in the scale type; alpha and beta point at them. */
struct scalars {
	float alpha_f, beta_f;
	double alpha_d, beta_d;
	const void *alpha, *beta;
};

static void scalars_of(const struct blas_types *t, double alpha, double beta,
		       struct scalars *s)
{
	s->alpha_f = (float)alpha;
	s->beta_f = (float)beta;
	s->alpha_d = alpha;
	s->beta_d = beta;
	s->alpha = t->scale == CUDA_R_64F ? (const void *)&s->alpha_d
					  : (const void *)&s->alpha_f;
	s->beta = t->scale == CUDA_R_64F ? (const void *)&s->beta_d
					 : (const void *)&s->beta_f;
}

static cublasOperation_t op(int trans)
{
	return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

static int run_cublas(cublasHandle_t blas, const gm_job_desc *d, const void *a,
		      const void *b, void *c, double beta, char *msg,
		      size_t msglen)
{
	struct call k = native_call(d, GM_COL_MAJOR, a, b);
	struct blas_types t = blas_types_of(d->dtype);
	struct scalars s;

	scalars_of(&t, d->alpha, beta, &s);
	GM_CUBLAS_TRY(cublasGemmEx(blas, op(k.ta), op(k.tb), (int)k.m, (int)k.n,
				   (int)k.k, s.alpha, k.a, t.data, (int)k.lda,
				   k.b, t.data, (int)k.ldb, s.beta, c, t.data,
				   (int)k.ldc, t.compute, CUBLAS_GEMM_DEFAULT),
		      msg, msglen);
	return GM_OK;
}

/* A batch through cuBLASLt with its shape's algorithm; a shape it has
 * none for goes to cublasGemmStridedBatchedEx, as every batch of that
 * shape will, since cuBLASLt's answer does not change. */
static int run_cublas_batch(cublasHandle_t blas, struct gm_cuda_lt *lt,
			    void *ws, cudaStream_t stream, const gm_job_desc *d,
			    const void *a, const void *b, void *c, double beta,
			    const struct batch *bt, char *msg, size_t msglen)
{
	struct call k = native_call(d, GM_COL_MAJOR, a, b);
	struct blas_types t = blas_types_of(d->dtype);
	gm_cuda_lt_problem p;
	struct scalars s;
	int rv;

	scalars_of(&t, d->alpha, beta, &s);
	p.data = t.data;
	p.compute = t.compute;
	p.scale = t.scale;
	p.ta = k.ta;
	p.tb = k.tb;
	p.m = k.m;
	p.n = k.n;
	p.k = k.k;
	p.lda = k.lda;
	p.ldb = k.ldb;
	p.ldc = k.ldc;
	p.alpha = s.alpha;
	p.beta = s.beta;
	p.a = k.a;
	p.b = k.b;
	p.c = c;
	p.stride = bt->stride;
	p.count = bt->count;
	if ((rv = gm_cuda_lt_matmul(lt, stream, ws, &p, msg, msglen)) !=
	    GM_EUNSUPPORTED)
		return rv;
	GM_CUBLAS_TRY(cublasGemmStridedBatchedEx(
			  blas, op(k.ta), op(k.tb), (int)k.m, (int)k.n,
			  (int)k.k, s.alpha, k.a, t.data, (int)k.lda,
			  bt->stride, k.b, t.data, (int)k.ldb, bt->stride,
			  s.beta, c, t.data, (int)k.ldc, bt->stride,
			  (int)bt->count, t.compute, CUBLAS_GEMM_DEFAULT),
		      msg, msglen);
	return GM_OK;
}

/* Without C, C is taken as zero: beta 0 makes every kernel write C
 * without reading it. */
static double beta_of(const gm_job_desc *d)
{
	return (d->flags & GM_JOB_HAS_C) ? d->beta : 0.0;
}

int gm_cuda_gemm(cublasHandle_t blas, cudaStream_t stream, const gm_job_desc *d,
		 int kernel, const void *a, const void *b, void *c, char *msg,
		 size_t msglen)
{
	if (kernel == GM_KERNEL_TILED)
		return run_tiled(stream, d, a, b, c, beta_of(d), &single, msg,
				 msglen);
	return run_cublas(blas, d, a, b, c, beta_of(d), msg, msglen);
}

int gm_cuda_gemm_batch(cublasHandle_t blas, struct gm_cuda_lt *lt, void *ws,
		       cudaStream_t stream, const gm_job_desc *d, int kernel,
		       const void *a, const void *b, void *c, uint64_t stride,
		       uint32_t count, char *msg, size_t msglen)
{
	struct batch bt = {count, (int64_t)(stride / gm_dtype_size(d->dtype))};

	if (kernel == GM_KERNEL_TILED)
		return run_tiled(stream, d, a, b, c, beta_of(d), &bt, msg,
				 msglen);
	return run_cublas_batch(blas, lt, ws, stream, d, a, b, c, beta_of(d),
				&bt, msg, msglen);
}
