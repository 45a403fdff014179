/*
 * gm_cuda_fault.cu - the test-only faults of gm_cuda_fault.h. The sticky
 * fault is a real one, an illegal-address store, because only the device
 * can put a context into that state; the pointer comes in as an argument
 * so the compiler cannot see it and drop the store.
 */
#include "gm_cuda_fault.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if GEMMD_FAULT_INJECTION
__global__ void store_to(volatile int *p)
{
	*p = 1;
}

int gm_cuda_fault_arm(void)
{
	const char *f = getenv("GEMMD_INJECT_FAULT");

	if (f != NULL && strcmp(f, "oom") == 0)
		return GM_CUDA_FAULT_OOM;
	if (f != NULL && strcmp(f, "sticky") == 0)
		return GM_CUDA_FAULT_STICKY;
	return GM_CUDA_FAULT_NONE;
}

cudaError_t gm_cuda_fault_launch(cudaStream_t stream)
{
	/* Low addresses are never mapped on the device. */
	store_to<<<1, 1, 0, stream>>>((volatile int *)(uintptr_t)0x10);
	return cudaGetLastError();
}
#else
int gm_cuda_fault_arm(void)
{
	return GM_CUDA_FAULT_NONE;
}

cudaError_t gm_cuda_fault_launch(cudaStream_t)
{
	return cudaErrorNotSupported;
}
#endif

int gm_cuda_fault_take(int *armed, int kind)
{
	int expected = kind;

	return __atomic_compare_exchange_n(armed, &expected, GM_CUDA_FAULT_NONE,
					   0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}
