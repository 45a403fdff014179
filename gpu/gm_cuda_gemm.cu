/*
 * gm_cuda_gemm.cu - the multiplication of one job or of a batch of jobs
 * of one shape: which kernel, which cuBLAS data and compute types, and
 * how a row- or column-major job is laid out for a kernel that only
 * knows one order.
 *
 * cuBLAS is column-major; the tiled kernel is row-major. A job in the
 * other order is handed over with its operands swapped (native_call), the
 * one place in gemmd where that is done, for single jobs, batches and
 * the tiles of an out-of-core job alike. A single job goes to cublasGemmEx, a
 * batch to cuBLASLt with the algorithm of its shape (gm_cuda_lt.h).
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

/* Distance between consecutive stored lines (rows in a row-major job,
 * columns in a column-major one) of a dense operand X with op(X)
 * r x c. */
static uint64_t line_stride(int layout, int trans, uint32_t r, uint32_t c)
{
	uint32_t rows = trans ? c : r; /* X itself is c x r when transposed */
	uint32_t cols = trans ? r : c;

	return layout == GM_COL_MAJOR ? rows : cols;
}

/* The whole of a job's dense operands, as a part. */
static gm_cuda_part whole(const gm_job_desc *d, double beta)
{
	gm_cuda_part p;

	p.m = d->m;
	p.n = d->n;
	p.k = d->k;
	p.lda = line_stride(d->layout, d->trans_a, d->m, d->k);
	p.ldb = line_stride(d->layout, d->trans_b, d->k, d->n);
	p.ldc = line_stride(d->layout, 0, d->m, d->n);
	p.beta = beta;
	return p;
}

/*
 * A matrix stored in one order is its transpose stored in the other, and
 * C^T = op(B)^T * op(A)^T. So a job whose layout differs from the
 * kernel's native order runs as the kernel's problem with B in A's place,
 * A in B's, and m and n exchanged; each operand keeps its transpose flag
 * and its line stride, because reading a buffer in the other order
 * already transposes it.
 */
static struct call native_call(const gm_job_desc *d, const gm_cuda_part *p,
			       int native, const void *a, const void *b)
{
	int swap = d->layout != native;
	struct call c;

	c.ta = swap ? d->trans_b : d->trans_a;
	c.tb = swap ? d->trans_a : d->trans_b;
	c.m = swap ? p->n : p->m;
	c.n = swap ? p->m : p->n;
	c.k = p->k;
	c.a = swap ? b : a;
	c.b = swap ? a : b;
	c.lda = swap ? p->ldb : p->lda;
	c.ldb = swap ? p->lda : p->ldb;
	c.ldc = p->ldc;
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

static int run_tiled(cudaStream_t stream, const gm_job_desc *d,
		     const gm_cuda_part *p, const void *a, const void *b,
		     void *c, const struct batch *bt, char *msg, size_t msglen)
{
	struct call k = native_call(d, p, GM_ROW_MAJOR, a, b);
	gm_tiled_args g;

	g.dtype = d->dtype;
	g.trans_a = k.ta;
	g.trans_b = k.tb;
	g.m = k.m;
	g.n = k.n;
	g.k = k.k;
	g.alpha = d->alpha;
	g.beta = p->beta;
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

static int run_cublas(cublasHandle_t blas, const gm_job_desc *d,
		      const gm_cuda_part *p, const void *a, const void *b,
		      void *c, char *msg, size_t msglen)
{
	struct call k = native_call(d, p, GM_COL_MAJOR, a, b);
	struct blas_types t = blas_types_of(d->dtype);
	struct scalars s;

	scalars_of(&t, d->alpha, p->beta, &s);
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
	gm_cuda_part part = whole(d, beta);
	struct call k = native_call(d, &part, GM_COL_MAJOR, a, b);
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
	gm_cuda_part p = whole(d, beta_of(d));

	return gm_cuda_gemm_part(blas, stream, d, kernel, &p, a, b, c, msg,
				 msglen);
}

int gm_cuda_gemm_part(cublasHandle_t blas, cudaStream_t stream,
		      const gm_job_desc *d, int kernel, const gm_cuda_part *p,
		      const void *a, const void *b, void *c, char *msg,
		      size_t msglen)
{
	if (kernel == GM_KERNEL_TILED)
		return run_tiled(stream, d, p, a, b, c, &single, msg, msglen);
	return run_cublas(blas, d, p, a, b, c, msg, msglen);
}

int gm_cuda_gemm_batch(cublasHandle_t blas, struct gm_cuda_lt *lt, void *ws,
		       cudaStream_t stream, const gm_job_desc *d, int kernel,
		       const void *a, const void *b, void *c, uint64_t stride,
		       uint32_t count, char *msg, size_t msglen)
{
	struct batch bt = {count, (int64_t)(stride / gm_dtype_size(d->dtype))};
	gm_cuda_part p = whole(d, beta_of(d));

	if (kernel == GM_KERNEL_TILED)
		return run_tiled(stream, d, &p, a, b, c, &bt, msg, msglen);
	return run_cublas_batch(blas, lt, ws, stream, d, a, b, c, beta_of(d),
				&bt, msg, msglen);
}
