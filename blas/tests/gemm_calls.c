/*
 * gemm_calls.c - a program that calls BLAS GEMM the ways programs do,
 * for the shim's tests: the Fortran dgemm_ and sgemm_ (column-major) and
 * cblas_dgemm / cblas_sgemm in both layouts, every transpose, leading
 * dimensions larger than the matrices, alpha and beta (beta 0 with NaN
 * in C, which BLAS must not read). Each result is checked against a long
 * double reference, and C's padding must be left alone. Linked against
 * the system BLAS; run under LD_PRELOAD=libgemmd_blas.so. Prints
 * "calls N" (how many GEMMs it made) and exits 0 when all were right.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void dgemm_(const char *, const char *, const blasint *, const blasint *,
	    const blasint *, const double *, const double *, const blasint *,
	    const double *, const blasint *, const double *, double *,
	    const blasint *);
void sgemm_(const char *, const char *, const blasint *, const blasint *,
	    const blasint *, const float *, const float *, const blasint *,
	    const float *, const blasint *, const float *, float *,
	    const blasint *);

enum api { FORTRAN, CBLAS };

struct gemm_case {
	enum api api;
	int fp64;
	int row_major; /* cblas only */
	int ta, tb;
	int m, n, k, pad; /* every leading dimension is dense + pad */
	double alpha, beta;
};

static const struct gemm_case cases[] = {
    {FORTRAN, 1, 0, 0, 0, 67, 45, 39, 0, 1.0, 0.0},
    {FORTRAN, 1, 0, 1, 0, 67, 45, 39, 3, 1.5, -0.5},
    {FORTRAN, 1, 0, 0, 1, 33, 70, 21, 0, -1.0, 2.0},
    {FORTRAN, 1, 0, 1, 1, 50, 50, 50, 7, 0.5, 0.0},
    {FORTRAN, 0, 0, 0, 0, 64, 48, 80, 5, 1.0, 1.0},
    {FORTRAN, 0, 0, 1, 1, 31, 17, 90, 0, 2.0, 0.0},
    {CBLAS, 1, 1, 0, 0, 90, 60, 30, 0, 1.0, 0.0},
    {CBLAS, 1, 1, 1, 0, 90, 60, 30, 11, 1.0, 0.25},
    {CBLAS, 1, 1, 0, 1, 40, 80, 20, 2, -2.0, 1.0},
    {CBLAS, 1, 0, 1, 1, 45, 35, 25, 4, 1.0, -1.0},
    {CBLAS, 0, 1, 0, 0, 77, 66, 55, 0, 1.0, 0.0},
    {CBLAS, 0, 0, 1, 0, 77, 66, 55, 9, 0.75, 0.5},
};

static unsigned long long seed;

static double uniform(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(seed >> 11) / 9007199254740992.0 * 2 - 1;
}

/* A stored rows x cols with leading dimension ld, in an order. */
struct mat {
	int rows, cols, ld, row_major;
	double *v; /* as doubles; converted for fp32 calls */
};

static size_t at(const struct mat *x, int i, int j)
{
	return x->row_major ? (size_t)i * x->ld + j : (size_t)j * x->ld + i;
}

static size_t count(const struct mat *x)
{
	return (size_t)x->ld * (x->row_major ? x->rows : x->cols);
}

/* Random values, exact in the case's precision so that an fp32 call's
 * copies in and out change nothing it did not compute. */
static struct mat make(int rows, int cols, int pad, int row_major, int fp64)
{
	struct mat x = {rows, cols, (row_major ? cols : rows) + pad, row_major,
			NULL};
	size_t i, n = count(&x);

	x.v = malloc(n * sizeof(double));
	for (i = 0; i < n; i++)
		x.v[i] = fp64 ? uniform() : (float)uniform();
	return x;
}

/* op(x)(i, j) */
static double op(const struct mat *x, int t, int i, int j)
{
	return t ? x->v[at(x, j, i)] : x->v[at(x, i, j)];
}

static void call(const struct gemm_case *g, const struct mat *a,
		 const struct mat *b, struct mat *c)
{
	size_t i, na = count(a), nb = count(b), nc = count(c);
	float *fa, *fb, *fc;
	float falpha = (float)g->alpha, fbeta = (float)g->beta;
	const char *ta = g->ta ? "T" : "N", *tb = g->tb ? "T" : "N";
	enum CBLAS_ORDER o = g->row_major ? CblasRowMajor : CblasColMajor;
	enum CBLAS_TRANSPOSE cta = g->ta ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE ctb = g->tb ? CblasTrans : CblasNoTrans;

	if (g->fp64) {
		if (g->api == FORTRAN)
			dgemm_(ta, tb, &g->m, &g->n, &g->k, &g->alpha, a->v,
			       &a->ld, b->v, &b->ld, &g->beta, c->v, &c->ld);
		else
			cblas_dgemm(o, cta, ctb, g->m, g->n, g->k, g->alpha,
				    a->v, a->ld, b->v, b->ld, g->beta, c->v,
				    c->ld);
		return;
	}
	fa = malloc(na * 4), fb = malloc(nb * 4), fc = malloc(nc * 4);
	for (i = 0; i < na; i++)
		fa[i] = (float)a->v[i];
	for (i = 0; i < nb; i++)
		fb[i] = (float)b->v[i];
	for (i = 0; i < nc; i++)
		fc[i] = (float)c->v[i];
	if (g->api == FORTRAN)
		sgemm_(ta, tb, &g->m, &g->n, &g->k, &falpha, fa, &a->ld, fb,
		       &b->ld, &fbeta, fc, &c->ld);
	else
		cblas_sgemm(o, cta, ctb, g->m, g->n, g->k, falpha, fa, a->ld,
			    fb, b->ld, fbeta, fc, c->ld);
	for (i = 0; i < nc; i++)
		c->v[i] = fc[i];
	free(fa), free(fb), free(fc);
}

/* Runs case g; 0 when its result is right and C's padding untouched. */
static int run(int index, const struct gemm_case *g)
{
	int rm = g->api == CBLAS && g->row_major;
	struct mat a =
	    make(g->ta ? g->k : g->m, g->ta ? g->m : g->k, g->pad, rm, g->fp64);
	struct mat b =
	    make(g->tb ? g->n : g->k, g->tb ? g->k : g->n, g->pad, rm, g->fp64);
	struct mat c = make(g->m, g->n, g->pad, rm, g->fp64);
	double *c0 = malloc(count(&c) * sizeof(double));
	double eps = g->fp64 ? 0x1p-52 : 0x1p-23, worst = 0;
	int i, j, l, bad = 0;

	if (g->beta == 0) /* BLAS does not read C: NaN must not leak */
		for (i = 0; i < g->m; i++)
			for (j = 0; j < g->n; j++)
				c.v[at(&c, i, j)] = NAN;
	memcpy(c0, c.v, count(&c) * sizeof(double));
	call(g, &a, &b, &c);
	for (i = 0; i < g->m; i++) {
		for (j = 0; j < g->n; j++) {
			long double s = 0, err;

			for (l = 0; l < g->k; l++)
				s += (long double)op(&a, g->ta, i, l) *
				     op(&b, g->tb, l, j);
			s *= g->alpha;
			if (g->beta != 0)
				s += (long double)g->beta * c0[at(&c, i, j)];
			err = fabsl(s - c.v[at(&c, i, j)]);
			if (!(err <= 8 * eps * g->k * (1 + fabs(g->beta))))
				bad = 1;
			worst = fmax(worst, (double)err);
		}
	}
	/* Padding: everything of C's storage outside the matrix. */
	for (size_t p = 0; p < count(&c); p++) {
		size_t line = p / (size_t)c.ld, off = p % (size_t)c.ld;

		if (off >= (size_t)(rm ? c.cols : c.rows) &&
		    memcmp(&c.v[p], &c0[p], sizeof(double)) != 0) {
			fprintf(stderr, "case %d: C's padding changed at %zu\n",
				index, line);
			bad = 1;
			break;
		}
	}
	if (bad)
		fprintf(stderr, "case %d: max error %.3g\n", index, worst);
	free(a.v), free(b.v), free(c.v), free(c0);
	return bad;
}

int main(void)
{
	size_t i, n = sizeof(cases) / sizeof(cases[0]);
	int bad = 0;

	seed = (unsigned long long)time(NULL) ^ (unsigned long long)clock();
	for (i = 0; i < n; i++)
		bad |= run((int)i, &cases[i]);
	printf("calls %zu\n", n);
	return bad;
}
