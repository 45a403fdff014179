/*
 * gm_tiled.h - the shared-memory tiled GEMM kernel, callable from C.
 *
 * The course's kernel: 16x16 thread blocks, each stepping 16x16 tiles of
 * op(A) and op(B) through shared memory so that every global load of a
 * warp is coalesced, whichever operand is transposed. It exists beside
 * cuBLAS as a selectable, cross-checked baseline, for fp64 and fp32.
 * Plain C: the stream is passed as the runtime's opaque struct pointer,
 * so this header needs no CUDA include.
 */
#ifndef GM_TILED_H
#define GM_TILED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st; /* cudaStream_t */

/* count row-major problems C <- alpha*op(A)*op(B) + beta*C on the device,
 * problem i with its operands stride_* elements after those of problem
 * i - 1; each is computed exactly as it would be alone. A column-major
 * caller swaps the operands (see gm_cuda_gemm.cu). */
typedef struct gm_tiled_args {
	int dtype;		/* GM_FP64 or GM_FP32 */
	int trans_a, trans_b;	/* op(X) = X^T when set */
	uint32_t m, n, k;	/* op(A) is m x k, op(B) k x n, C m x n */
	double alpha, beta;	/* beta == 0: C is not read, as in BLAS */
	const void *a, *b;	/* device pointers */
	void *c;		/* device pointer, or mapped host memory */
	uint64_t lda, ldb, ldc; /* row strides in elements */
	uint32_t count;		/* problems, at most GM_TILED_COUNT_MAX */
	uint64_t stride_a, stride_b, stride_c; /* elements */
} gm_tiled_args;

/* Problems one launch takes (the grid's z extent). */
#define GM_TILED_COUNT_MAX 65535u

/* Enqueues the kernel on stream and returns immediately. Returns the
 * launch's cudaError_t value: 0, or the code of a bad launch (a fault in
 * the kernel shows up later, on the stream). Issuing thread only; never
 * blocks. */
int gm_tiled_gemm(const gm_tiled_args *g, struct CUstream_st *stream);

#ifdef __cplusplus
}
#endif
#endif
