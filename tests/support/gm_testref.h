/*
 * gm_testref.h - what the tests that check GEMM results share: a seeded
 * random source (GM_TEST_SEED replays a run), operands of every dtype
 * stored the way the engines read them, and a naive long double
 * reference with an error bound scaled to the dtype and K.
 *
 * dtype and layout are the wire's codes (gm_proto.h's GM_FP64 ...
 * GM_BF16, GM_ROW_MAJOR, GM_COL_MAJOR; gemmd.h's GEMMD_* have the same
 * values). Nothing here calls cmocka: callers assert on what it returns.
 */
#ifndef GM_TESTREF_H
#define GM_TESTREF_H

#include <stddef.h>
#include <stdint.h>

/* The seed of this run: GM_TEST_SEED when set, else the clock and pid;
 * never 0. Prints it, so a failed run can be replayed. */
uint64_t gm_testref_seed(void);

/* The next 64 random bits of state *s (splitmix64: any seed works, the
 * same numbers on every libc). */
uint64_t gm_testref_next(uint64_t *s);

/* A random double in [-1, 1) from state *s. */
double gm_testref_unit(uint64_t *s);

/* Bytes of one element of dtype: 8, 4 (fp32, tf32) or 2. */
size_t gm_testref_esize(int dtype);

/* Stores v as dtype at p[i], rounded to nearest-even (tf32 keeps 10
 * mantissa bits in an fp32 slot); returns the value stored. */
double gm_testref_put(int dtype, void *p, size_t i, double v);

/* Element i of dtype at p, as a double. */
double gm_testref_get(int dtype, const void *p, size_t i);

/* Fills n elements of dtype at p with fresh values in [-1, 1) from *s;
 * when ref is not NULL, ref[i] gets the value stored at p[i]. */
void gm_testref_fill(int dtype, void *p, size_t n, uint64_t *s, double *ref);

/* One GEMM, out = alpha op(A) op(B) + beta C, densely packed in layout;
 * c is NULL for a job without C. */
typedef struct gm_testref_gemm {
	int dtype, layout, trans_a, trans_b;
	uint32_t m, n, k;
	double alpha, beta;
	const void *a, *b, *c, *out;
} gm_testref_gemm;

/* Index of element (r, c) of op(X), op(X) being rows x cols and X
 * densely packed in layout, transposed when trans. */
size_t gm_testref_at(int layout, int trans, uint32_t r, uint32_t c,
		     uint32_t rows, uint32_t cols);

/*
 * Whether g->out matches the long double reference: no element NaN (so
 * none left unwritten over a NaN fill), and the Frobenius error within
 * 4 u sqrt(K) of the Frobenius norm of M = |alpha||op A||op B| + |beta||C|,
 * u the unit roundoff of the accumulation (2^-53 for fp64, else 2^-24).
 * M, the scale of the classical bound, rather than the result's own
 * norm keeps a result that cancels to nearly zero from failing a correct
 * engine; the factor 4 covers a K = 1 job's three roundings. Prints the
 * job and both sides to stderr when it does not match.
 */
int gm_testref_check(const gm_testref_gemm *g);

#endif
