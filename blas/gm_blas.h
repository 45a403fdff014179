/*
 * gm_blas.h - private to libgemmd_blas.so, the BLAS shim: what its
 * modules share. A GEMM call of any of the four entry points
 * (gemmd_blas.c) is described once as a struct gm_blas_call; the
 * settings come from the environment (gm_blas_env.c); the connection to
 * gemmd and the shared-memory region the shim owns live in
 * gm_blas_conn.c; gm_blas_offload.c runs a call on gemmd through them.
 * Every function may be called from any thread, at once.
 */
#ifndef GM_BLAS_H
#define GM_BLAS_H

#include <stdbool.h>
#include <stdint.h>

#include "gemmd.h"

/* One GEMM as BLAS passes it, C <- alpha*op(A)*op(B) + beta*C, in
 * either storage order, each matrix with its leading dimension. */
struct gm_blas_call {
	const char *name; /* "dgemm", for the log */
	int dtype;	  /* GEMMD_FP64 or GEMMD_FP32 */
	int layout;	  /* GEMMD_ROW_MAJOR or GEMMD_COL_MAJOR */
	int trans_a, trans_b;
	int m, n, k;
	double alpha, beta;
	const void *a, *b;
	void *c;
	int lda, ldb, ldc;
};

/* The settings, read from the environment once (gm_blas_env.c). */
struct gm_blas_config {
	bool enabled;	     /* GEMMD_BLAS is not off, nor are we gemmd */
	double min_flops;    /* GEMMD_BLAS_MIN_FLOPS: 2*m*n*k below: host */
	int verbose;	     /* GEMMD_BLAS_VERBOSE: 0, 1 sent and failed
				calls, 2 every call */
	int timeout_ms;	     /* GEMMD_BLAS_TIMEOUT_MS: of a whole call, the
				region it may make included */
	int retry_ms;	     /* GEMMD_BLAS_RETRY_MS: the host computes for
				this long after gemmd could not be reached
				or did not answer */
	uint64_t region_max; /* GEMMD_BLAS_REGION_MAX: largest region */
	const char *url;     /* GEMMD_URL, for messages; NULL: default */
};

/* Measured with bench/gemmd_blas_bench on the CPU engine of a 2-core
 * host (blas/README.md): from 2*m*n*k of about 3e8 (a 530^3 GEMM) a call
 * through gemmd takes at most ~1.4x the host BLAS's own time, and its
 * fixed cost (~0.2 ms round trip) is under a tenth of it; below, that
 * cost and the copies dominate (1.9x at 1e8, 3x at 3e7). */
#define GM_BLAS_DEFAULT_MIN_FLOPS 3e8

/* The settings; the first call reads them. */
const struct gm_blas_config *gm_blas_config(void);

/* One line on stderr, "gemmd_blas: ...", when verbose >= level. */
void gm_blas_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The client, opened on first use; NULL while the shim pauses: gemmd
 * could not be reached or did not answer a while ago (retry_ms), or
 * this is a fork()ed child. After a pause, pings gemmd first. */
gemmd_client *gm_blas_client(void);

/* A call on the client ended with code (GEMMD_ETIMEDOUT or
 * GEMMD_ETRANSPORT): pause for retry_ms. */
void gm_blas_pause(int code);

/*
 * A region of c's daemon of at least bytes for one call, held for
 * reading until gm_blas_region_put: NULL when none can be had (not
 * ipc://, a quota, larger than region_max); the call then goes through
 * the socket, unless *gone: gemmd did not make it within timeout_ms, or
 * is gone (the shim pauses), and the call is the host's. The region
 * grows, once its users are done, when a call needs more. c is what
 * gm_blas_client just gave.
 */
gemmd_region *gm_blas_region_get(gemmd_client *c, uint64_t bytes,
				 int timeout_ms, bool *gone);

/* Lets go of the region gm_blas_region_get gave. retire: a request that
 * named it may still be running in the daemon (it timed out or its
 * connection dropped), so that the daemon could still write into it:
 * it is replaced, and released once no call uses it. */
void gm_blas_region_put(gemmd_region *r, bool retire);

/* Runs call on gemmd: true when C holds the result, false when the host
 * BLAS must compute it (C untouched then). Blocks. */
bool gm_blas_offload(const struct gm_blas_call *call);

#endif
