/*
 * gm_cuda_err.h - turns CUDA and cuBLAS failures into gemmd error codes.
 *
 * Private to the CUDA engine's .cu files (it names CUDA types). Sample
 * code checks every call with a macro that prints and exits; a daemon
 * must not exit, so GM_CUDA_TRY keeps the samples' #expr, __FILE__,
 * __LINE__ stringification but logs one line and returns a gm_err code,
 * with the CUDA error's own name and text kept in a caller's message
 * buffer. All functions here may be called from any thread.
 */
#ifndef GM_CUDA_ERR_H
#define GM_CUDA_ERR_H

#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gm_error.h"

/*
 * Logs "file:line: expr: cudaErrorX: text", writes "cudaErrorX: text" to
 * msg and returns GM_ENOMEM for an allocation failure, GM_EGPUFAULT for a
 * sticky error, GM_ECUDA otherwise.
 */
int gm_cuda_fail(cudaError_t e, const char *expr, const char *file, int line,
		 char *msg, size_t msglen);

/* The same for a cuBLAS status: GM_ENOMEM for CUBLAS_STATUS_ALLOC_FAILED,
 * GM_EGPUFAULT when the context has taken a sticky error, else
 * GM_ECUBLAS. */
int gm_cublas_fail(cublasStatus_t s, const char *expr, const char *file,
		   int line, char *msg, size_t msglen);

/* Non-zero for the errors after which the CUDA context is unusable and
 * the process must be restarted (the runtime documents each of them as
 * leaving "the process in an inconsistent state"). */
int gm_cuda_sticky(cudaError_t e);

/* Evaluates a CUDA runtime call; on failure returns its gm_err code from
 * the enclosing function, with the text in msg (a char array or pointer
 * with msglen in scope). */
#define GM_CUDA_TRY(expr, msg, msglen)                                        \
	do {                                                                  \
		cudaError_t gm_e_ = (expr);                                   \
		if (gm_e_ != cudaSuccess)                                     \
			return gm_cuda_fail(gm_e_, #expr, __FILE__, __LINE__, \
					    (msg), (msglen));                 \
	} while (0)

#define GM_CUBLAS_TRY(expr, msg, msglen)                                  \
	do {                                                              \
		cublasStatus_t gm_s_ = (expr);                            \
		if (gm_s_ != CUBLAS_STATUS_SUCCESS)                       \
			return gm_cublas_fail(gm_s_, #expr, __FILE__,     \
					      __LINE__, (msg), (msglen)); \
	} while (0)

#endif
