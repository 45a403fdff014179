/*
 * gm_cuda_lt.h - batched multiplications through cuBLASLt with one
 * algorithm per problem shape, whatever the batch's size.
 *
 * cuBLAS picks its kernel from the whole call, batch count included, and
 * kernels differ in how they split and order the sums along K: the same
 * problem can come out with different low bits alone and in a batch of
 * 4096. gemmd promises that a small job's result does not depend on the
 * jobs it was coalesced with, so the algorithm is chosen once per shape
 * (types, transposes, m, n, k, leading dimensions and batch stride), by
 * cuBLASLt's heuristic for a batch of GM_CUDA_LT_COUNT problems, and
 * then used for every batch of that shape, from 1 problem to
 * GM_CUDA_LT_COUNT. Each problem of a batch is computed by the same
 * kernel with the same arithmetic, so its bits are the same.
 *
 * The choices sit in a fixed table made at open (descriptors initialised
 * in place, no allocation per call); a shape that is not in it is looked
 * up again, which gives the same answer. Private to the CUDA engine; one
 * per device, used by that device's issue thread only.
 */
#ifndef GM_CUDA_LT_H
#define GM_CUDA_LT_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>

/* Problems in one call, at most; the heuristic is asked for this many. */
#define GM_CUDA_LT_COUNT 8192

struct gm_cuda_lt;

/* One batched problem, column-major (gm_cuda_gemm.cu lays it out). */
typedef struct gm_cuda_lt_problem {
	cudaDataType data;
	cublasComputeType_t compute;
	cudaDataType scale;
	int ta, tb; /* op(X) = X^T when set */
	uint32_t m, n, k;
	uint64_t lda, ldb, ldc;
	const void *alpha, *beta; /* host scalars of type scale */
	const void *a, *b;	  /* device, GM_BATCH_ALIGN aligned */
	void *c;		  /* C in, the result out */
	int64_t stride;		  /* elements from one problem to the next */
	uint32_t count;		  /* 1 .. GM_CUDA_LT_COUNT */
} gm_cuda_lt_problem;

/* Makes a handle and the table for the current device; ws_bytes is the
 * workspace every call will get. GM_OK or a code with msg. */
int gm_cuda_lt_open(size_t ws_bytes, struct gm_cuda_lt **out, char *msg,
		    size_t msglen);

void gm_cuda_lt_close(struct gm_cuda_lt *lt);

/*
 * Enqueues p on stream with the algorithm of p's shape, ws being a
 * workspace of the size given at open that only this stream uses.
 * GM_OK; GM_EUNSUPPORTED (msg untouched) when cuBLASLt has no algorithm
 * for the shape, which it will say again for that shape: the caller
 * uses another path for it; else a code with msg. Never blocks on the
 * device.
 */
int gm_cuda_lt_matmul(struct gm_cuda_lt *lt, cudaStream_t stream, void *ws,
		      const gm_cuda_lt_problem *p, char *msg, size_t msglen);

#endif
