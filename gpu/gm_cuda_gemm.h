/*
 * gm_cuda_gemm.h - enqueues the multiplication of one job, or of a batch
 * of jobs of one shape, on a stream, with cuBLAS or the tiled kernel.
 *
 * Private to the CUDA engine's .cu files (it names cuBLAS types). Operand
 * copies, events and completion are the caller's; this only picks the
 * kernel, the data and compute types, and lays the jobs out for it.
 */
#ifndef GM_CUDA_GEMM_H
#define GM_CUDA_GEMM_H

#include <stddef.h>

#include <cublas_v2.h>

#include "gm_cuda_lt.h"
#include "gm_proto.h"

/* The kernel that runs d: d->kernel, or dflt when that is
 * GM_KERNEL_DEFAULT, or cuBLAS when both are. */
int gm_cuda_gemm_kernel(const gm_job_desc *d, int dflt);

/* GM_OK when kernel can run d, else GM_EUNSUPPORTED with a message that
 * names the field. Pure; any thread. */
int gm_cuda_gemm_supports(const gm_job_desc *d, int kernel, char *msg,
			  size_t msglen);

/*
 * Enqueues C <- alpha*op(A)*op(B) + beta*C for d on stream, where blas is
 * a handle bound to stream. a, b and c are device-visible pointers in d's
 * layout; C is read only when d has C (otherwise beta is taken as zero).
 * Returns GM_OK or the code of a launch that failed, with its text in
 * msg. Never blocks on the device. Thread that owns the stream.
 */
int gm_cuda_gemm(cublasHandle_t blas, cudaStream_t stream, const gm_job_desc *d,
		 int kernel, const void *a, const void *b, void *c, char *msg,
		 size_t msglen);

/*
 * Part of a job, as out-of-core tiles are: op(A) m x k, op(B) k x n and
 * C m x n, each stored in the job's layout with the given line stride
 * (elements from one stored row, or column, to the next), and beta
 * taken as it is (C is read unless it is 0).
 */
typedef struct gm_cuda_part {
	uint32_t m, n, k;
	uint64_t lda, ldb, ldc;
	double beta;
} gm_cuda_part;

/* Enqueues C <- alpha*op(A)*op(B) + beta*C for part p of d, as
 * gm_cuda_gemm does for the whole. */
int gm_cuda_gemm_part(cublasHandle_t blas, cudaStream_t stream,
		      const gm_job_desc *d, int kernel, const gm_cuda_part *p,
		      const void *a, const void *b, void *c, char *msg,
		      size_t msglen);

/*
 * Enqueues count jobs described by d on stream: job i's A, B and C (C in,
 * the result out) at a, b and c plus i * stride bytes, device pointers
 * aligned to GM_BATCH_ALIGN, as is stride; count at most
 * GM_CUDA_LT_COUNT. Each job's result is, bit for bit, what this call
 * gives it with any other count: cuBLAS runs through lt with the
 * algorithm of d's shape (gm_cuda_lt.h), the tiled kernel computes each
 * job alone. ws is the stream's workspace and blas the handle bound to
 * the stream (used only for a shape cuBLASLt has no algorithm for).
 * Returns as gm_cuda_gemm.
 */
int gm_cuda_gemm_batch(cublasHandle_t blas, struct gm_cuda_lt *lt, void *ws,
		       cudaStream_t stream, const gm_job_desc *d, int kernel,
		       const void *a, const void *b, void *c, uint64_t stride,
		       uint32_t count, char *msg, size_t msglen);

#endif
