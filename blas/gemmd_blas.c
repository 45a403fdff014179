/*
 * gemmd_blas.c - libgemmd_blas.so, a BLAS shim that sends GEMMs to
 * gemmd: cblas_sgemm, cblas_dgemm and the Fortran sgemm_, dgemm_.
 *
 * Preloaded (LD_PRELOAD) or linked ahead of the system BLAS, these
 * definitions are the ones a program's calls reach. A call large enough
 * (GEMMD_BLAS_MIN_FLOPS) goes to gemmd (gm_blas_offload); any other, and
 * any that gemmd cannot take (no daemon, busy, refused, timed out),
 * goes on to the same function of the next library in the lookup order,
 * dlsym(RTLD_NEXT): the BLAS the program would have used, so that it
 * always gets its answer. While that BLAS runs on a thread, calls it
 * makes back into these symbols (a reference CBLAS calls dgemm_) go
 * straight on to it as well.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "gm_blas.h"

/* The Fortran BLAS interface (gfortran's names; the hidden lengths of
 * the two character arguments are neither read nor passed on: a BLAS
 * reads one character of each). */
void sgemm_(const char *, const char *, const blasint *, const blasint *,
	    const blasint *, const float *, const float *, const blasint *,
	    const float *, const blasint *, const float *, float *,
	    const blasint *);
void dgemm_(const char *, const char *, const blasint *, const blasint *,
	    const blasint *, const double *, const double *, const blasint *,
	    const double *, const blasint *, const double *, double *,
	    const blasint *);

/* Libraries to look in when nothing after this one defines a name (a
 * program that loads its BLAS itself, later). */
static const char *const host_libs[] = {"libcblas.so.3", "libblas.so.3",
					"libopenblas.so.0"};

/* Calls into the host BLAS on this thread, now. */
static _Thread_local int in_host;

/* The next definition of name, the host BLAS's, remembered in *cache.
 * There is always one in a program that was linked against a BLAS;
 * without one no answer can be given, and saying so beats a wrong one. */
static void *host_symbol(const char *name, _Atomic(void *) *cache)
{
	void *f = atomic_load(cache);
	size_t i;

	if (f != NULL)
		return f;
	f = dlsym(RTLD_NEXT, name);
	for (i = 0; f == NULL && i < sizeof(host_libs) / sizeof(host_libs[0]);
	     i++) {
		void *h = dlopen(host_libs[i], RTLD_NOW | RTLD_LOCAL);

		f = h != NULL ? dlsym(h, name) : NULL;
	}
	if (f == NULL) {
		fprintf(stderr,
			"gemmd_blas: no %s in a BLAS library after this one; "
			"load libgemmd_blas.so ahead of a BLAS, not instead\n",
			name);
		abort();
	}
	atomic_store(cache, f);
	return f;
}

static int layout_of(enum CBLAS_ORDER o)
{
	return o == CblasRowMajor   ? GEMMD_ROW_MAJOR
	       : o == CblasColMajor ? GEMMD_COL_MAJOR
				    : -1;
}

static int cblas_trans(enum CBLAS_TRANSPOSE t)
{
	return t == CblasNoTrans			? 0
	       : t == CblasTrans || t == CblasConjTrans ? 1
							: -1;
}

static int fortran_trans(const char *t)
{
	switch (*t) {
	case 'N':
	case 'n':
		return 0;
	case 'T':
	case 't':
	case 'C':
	case 'c':
		return 1;
	default:
		return -1;
	}
}

/* Whether gemmd computed call; a malformed one is the host's to refuse
 * in its own words. */
static bool offloaded(const struct gm_blas_call *call)
{
	if (in_host || call->layout < 0 || call->trans_a < 0 ||
	    call->trans_b < 0)
		return false;
	return gm_blas_offload(call);
}

#define CBLAS_GEMM(name, type, dt)                                             \
	void name(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta, \
		  const enum CBLAS_TRANSPOSE tb, const blasint m,              \
		  const blasint n, const blasint k, const type alpha,          \
		  const type *a, const blasint lda, const type *b,             \
		  const blasint ldb, const type beta, type *c,                 \
		  const blasint ldc)                                           \
	{                                                                      \
		static _Atomic(void *) host;                                   \
		struct gm_blas_call call = {#name,                             \
					    dt,                                \
					    layout_of(order),                  \
					    cblas_trans(ta),                   \
					    cblas_trans(tb),                   \
					    m,                                 \
					    n,                                 \
					    k,                                 \
					    alpha,                             \
					    beta,                              \
					    a,                                 \
					    b,                                 \
					    c,                                 \
					    lda,                               \
					    ldb,                               \
					    ldc};                              \
                                                                               \
		if (offloaded(&call))                                          \
			return;                                                \
		in_host++;                                                     \
		((__typeof__(name) *)host_symbol(#name, &host))(               \
		    order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,    \
		    ldc);                                                      \
		in_host--;                                                     \
	}

#define FORTRAN_GEMM(name, type, dt)                                       \
	void name(const char *ta, const char *tb, const blasint *m,        \
		  const blasint *n, const blasint *k, const type *alpha,   \
		  const type *a, const blasint *lda, const type *b,        \
		  const blasint *ldb, const type *beta, type *c,           \
		  const blasint *ldc)                                      \
	{                                                                  \
		static _Atomic(void *) host;                               \
		struct gm_blas_call call = {#name,                         \
					    dt,                            \
					    GEMMD_COL_MAJOR,               \
					    fortran_trans(ta),             \
					    fortran_trans(tb),             \
					    *m,                            \
					    *n,                            \
					    *k,                            \
					    *alpha,                        \
					    *beta,                         \
					    a,                             \
					    b,                             \
					    c,                             \
					    *lda,                          \
					    *ldb,                          \
					    *ldc};                         \
                                                                           \
		if (offloaded(&call))                                      \
			return;                                            \
		in_host++;                                                 \
		((__typeof__(name) *)host_symbol(#name, &host))(           \
		    ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); \
		in_host--;                                                 \
	}

CBLAS_GEMM(cblas_sgemm, float, GEMMD_FP32)
CBLAS_GEMM(cblas_dgemm, double, GEMMD_FP64)
FORTRAN_GEMM(sgemm_, float, GEMMD_FP32)
FORTRAN_GEMM(dgemm_, double, GEMMD_FP64)
