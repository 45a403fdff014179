/*
 * gm_cuda_fault.h - test-only fault injection for the CUDA engine.
 *
 * In a build with -Dfault_injection=true, GEMMD_INJECT_FAULT in the
 * environment arms one fault when an engine opens: "oom" makes the next
 * job's device allocation fail as cudaMalloc would, "sticky" makes the
 * next wave start with a kernel that writes to an illegal address, a real
 * sticky error. In other builds nothing is ever armed and the kernel is
 * not compiled in. Private to the CUDA engine's .cu files.
 */
#ifndef GM_CUDA_FAULT_H
#define GM_CUDA_FAULT_H

#include <cuda_runtime_api.h>

enum gm_cuda_fault {
	GM_CUDA_FAULT_NONE = 0,
	GM_CUDA_FAULT_OOM = 1,
	GM_CUDA_FAULT_STICKY = 2,
};

/* The fault GEMMD_INJECT_FAULT asks for, GM_CUDA_FAULT_NONE when unset,
 * unknown, or fault injection is not built. Reads the environment: call
 * once, at open, on the loop thread. */
int gm_cuda_fault_arm(void);

/* Claims the armed fault *armed if it is kind: returns 1 once and
 * disarms it, 0 otherwise. Any thread. */
int gm_cuda_fault_take(int *armed, int kind);

/* Enqueues the illegal-address kernel on stream; returns the launch's
 * error (cudaErrorNotSupported without fault injection). */
cudaError_t gm_cuda_fault_launch(cudaStream_t stream);

#endif
