/*
 * gm_cuda_err.cu - the CUDA engine's error wrapping: which CUDA errors are
 * sticky, how CUDA and cuBLAS failures map onto gm_err, and the one log
 * line each failure leaves. gpu/ may not use the daemon's logger, so the
 * line goes to stderr in one write, which journald keeps with the
 * daemon's own lines.
 */
#include "gm_cuda_err.h"

#include <stdio.h>

int gm_cuda_sticky(cudaError_t e)
{
	switch (e) {
	case cudaErrorECCUncorrectable:
	case cudaErrorContained:
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchTimeout:
	case cudaErrorAssert:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorLaunchFailure:
	case cudaErrorMpsClientTerminated:
	case cudaErrorExternalDevice:
#if CUDART_VERSION >= 12080
	case cudaErrorTensorMemoryLeak:
#endif
		return 1;
	default:
		return 0;
	}
}

static void log_line(const char *file, int line, const char *expr,
		     const char *text)
{
	fprintf(stderr, "gemmd: %s:%d: %s: %s\n", file, line, expr, text);
}

int gm_cuda_fail(cudaError_t e, const char *expr, const char *file, int line,
		 char *msg, size_t msglen)
{
	snprintf(msg, msglen, "%s: %s", cudaGetErrorName(e),
		 cudaGetErrorString(e));
	log_line(file, line, expr, msg);
	if (e == cudaErrorMemoryAllocation)
		return GM_ENOMEM;
	return gm_cuda_sticky(e) ? GM_EGPUFAULT : GM_ECUDA;
}

int gm_cublas_fail(cublasStatus_t s, const char *expr, const char *file,
		   int line, char *msg, size_t msglen)
{
	/* cuBLAS reports a failed launch as EXECUTION_FAILED; whether the
	 * context is lost only the runtime knows. */
	cudaError_t e = cudaPeekAtLastError();

	if (gm_cuda_sticky(e))
		return gm_cuda_fail(e, expr, file, line, msg, msglen);
	snprintf(msg, msglen, "%s: %s", cublasGetStatusName(s),
		 cublasGetStatusString(s));
	log_line(file, line, expr, msg);
	return s == CUBLAS_STATUS_ALLOC_FAILED ? GM_ENOMEM : GM_ECUBLAS;
}
