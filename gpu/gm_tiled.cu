/*
 * gm_tiled.cu - the shared-memory tiled GEMM kernel (row-major).
 *
 * Thread (tx, ty) of a 16x16 block computes C(row0 + ty, col0 + tx), so a
 * warp's loads and stores of C run along a row. Each step over K loads a
 * 16x16 tile of op(A) and one of op(B) into shared memory. A transposed
 * operand is read along its stored rows and written into the tile
 * transposed, so global loads stay coalesced for every transpose
 * combination; the tiles carry one column of padding so that those
 * transposed writes do not all land in one shared-memory bank. Partial
 * tiles at the edges are filled with zeros, which makes any m, n, k work.
 * The transposes are template parameters, so the inner loop has no
 * branches. A batch of problems is the grid's z dimension: block z works
 * on problem z, with the same arithmetic as a launch of that problem
 * alone.
 */
#include "gm_tiled.h"

#include <cuda_runtime.h>

#include "gm_proto.h"

#define TILE	   16
#define GRID_Y_MAX 65535u /* gridDim.y limit; taller C is looped over */

/* tile[i][q] = op(A)(row0 + i, p0 + q), zero outside m x k. */
template <typename T, bool TA>
__device__ void load_a(T (*tile)[TILE + 1], const T *a, size_t lda, int m,
		       int k, int row0, int p0)
{
	int tx = threadIdx.x, ty = threadIdx.y;

	if (!TA) {
		int i = row0 + ty, p = p0 + tx;
		tile[ty][tx] = (i < m && p < k) ? a[(size_t)i * lda + p] : T(0);
	} else {
		int i = row0 + tx, p = p0 + ty;
		tile[tx][ty] = (i < m && p < k) ? a[(size_t)p * lda + i] : T(0);
	}
}

/* tile[q][j] = op(B)(p0 + q, col0 + j), zero outside k x n. */
template <typename T, bool TB>
__device__ void load_b(T (*tile)[TILE + 1], const T *b, size_t ldb, int k,
		       int n, int p0, int col0)
{
	int tx = threadIdx.x, ty = threadIdx.y;

	if (!TB) {
		int p = p0 + ty, j = col0 + tx;
		tile[ty][tx] = (p < k && j < n) ? b[(size_t)p * ldb + j] : T(0);
	} else {
		int p = p0 + tx, j = col0 + ty;
		tile[tx][ty] = (p < k && j < n) ? b[(size_t)j * ldb + p] : T(0);
	}
}

template <typename T, bool TA, bool TB>
__global__ void tiled_gemm(int m, int n, int k, T alpha,
			   const T *__restrict__ a, size_t lda, size_t sa,
			   const T *__restrict__ b, size_t ldb, size_t sb,
			   T beta, T *c, size_t ldc, size_t sc)
{
	__shared__ T as[TILE][TILE + 1];
	__shared__ T bs[TILE][TILE + 1];
	int col0 = blockIdx.x * TILE;
	int col = col0 + threadIdx.x;

	a += blockIdx.z * sa;
	b += blockIdx.z * sb;
	c += blockIdx.z * sc;

	/* The loop bound is the same for the whole block, so every thread
	 * reaches every __syncthreads(). */
	for (int row0 = blockIdx.y * TILE; row0 < m; row0 += gridDim.y * TILE) {
		int row = row0 + threadIdx.y;
		T sum = 0;

		for (int p0 = 0; p0 < k; p0 += TILE) {
			load_a<T, TA>(as, a, lda, m, k, row0, p0);
			load_b<T, TB>(bs, b, ldb, k, n, p0, col0);
			__syncthreads();
#pragma unroll
			for (int q = 0; q < TILE; q++)
				sum += as[threadIdx.y][q] * bs[q][threadIdx.x];
			__syncthreads();
		}
		if (row < m && col < n) {
			T *cp = c + (size_t)row * ldc + col;
			*cp = beta == T(0) ? alpha * sum
					   : alpha * sum + beta * *cp;
		}
	}
}

template <typename T, bool TA, bool TB>
static void launch(const gm_tiled_args *g, cudaStream_t s)
{
	unsigned tiles_m = (g->m + TILE - 1) / TILE;
	dim3 block(TILE, TILE);
	dim3 grid((g->n + TILE - 1) / TILE,
		  tiles_m < GRID_Y_MAX ? tiles_m : GRID_Y_MAX,
		  g->count > 1 ? g->count : 1);

	tiled_gemm<T, TA, TB><<<grid, block, 0, s>>>(
	    (int)g->m, (int)g->n, (int)g->k, (T)g->alpha, (const T *)g->a,
	    g->lda, g->stride_a, (const T *)g->b, g->ldb, g->stride_b,
	    (T)g->beta, (T *)g->c, g->ldc, g->stride_c);
}

template <typename T>
static void launch_typed(const gm_tiled_args *g, cudaStream_t s)
{
	if (!g->trans_a && !g->trans_b)
		launch<T, false, false>(g, s);
	else if (!g->trans_a)
		launch<T, false, true>(g, s);
	else if (!g->trans_b)
		launch<T, true, false>(g, s);
	else
		launch<T, true, true>(g, s);
}

extern "C" int gm_tiled_gemm(const gm_tiled_args *g, struct CUstream_st *stream)
{
	if (g->count > GM_TILED_COUNT_MAX)
		return cudaErrorInvalidValue;
	if (g->dtype == GM_FP64)
		launch_typed<double>(g, stream);
	else if (g->dtype == GM_FP32)
		launch_typed<float>(g, stream);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}
