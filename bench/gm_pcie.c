/*
 * gm_pcie.c - the host-to-device bound; see gm_pcie.h.
 */
#include "gm_pcie.h"

#include <stdio.h>
#include <stdlib.h>

#include "gm_build.h"

#if GEMMD_HAVE_CUDA
#include <cuda_runtime_api.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define TRY(expr)                                              \
	do {                                                   \
		cudaError_t e_ = (expr);                       \
		if (e_ != cudaSuccess) {                       \
			snprintf(msg, msglen, "%s: %s", #expr, \
				 cudaGetErrorString(e_));      \
			goto out;                              \
		}                                              \
	} while (0)

double gm_pcie_h2d_ms(uint64_t bytes, int reps, char *msg, size_t msglen)
{
	double *t = calloc((size_t)reps + 1, sizeof(*t)), ms = -1;
	cudaEvent_t e0 = NULL, e1 = NULL;
	void *host = NULL, *dev = NULL;
	float f;

	if (t == NULL) {
		snprintf(msg, msglen, "no memory");
		return -1;
	}
	TRY(cudaHostAlloc(&host, bytes, cudaHostAllocDefault));
	TRY(cudaMalloc(&dev, bytes));
	TRY(cudaEventCreate(&e0));
	TRY(cudaEventCreate(&e1));
	for (int i = 0; i <= reps; i++) {
		TRY(cudaEventRecord(e0, 0));
		TRY(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice,
				    0));
		TRY(cudaEventRecord(e1, 0));
		TRY(cudaEventSynchronize(e1));
		TRY(cudaEventElapsedTime(&f, e0, e1));
		t[i] = f;
	}
	qsort(t + 1, (size_t)reps, sizeof(*t), cmp);
	ms = reps % 2
		 ? t[1 + reps / 2]
		 : (t[reps / 2] + t[1 + reps / 2]) / 2; /* the first warms */
out:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	cudaFree(dev);
	cudaFreeHost(host);
	free(t);
	return ms;
}
#else
double gm_pcie_h2d_ms(uint64_t bytes, int reps, char *msg, size_t msglen)
{
	(void)bytes;
	(void)reps;
	snprintf(msg, msglen, "built without CUDA");
	return -1;
}
#endif
