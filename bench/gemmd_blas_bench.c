/*
 * gemmd_blas_bench.c - where the BLAS shim's threshold lies: square
 * dgemm calls of growing size, each timed through the host BLAS
 * (OpenBLAS, called directly) and through libgemmd_blas.so (every call
 * sent to the gemmd at $GEMMD_URL, the threshold set to 0), medians of
 * a few calls after a warm-up, the results checked against each other.
 * A call through gemmd costs the host's time on the engine plus a fixed
 * round trip and the copies into and out of the shim's region; the
 * threshold is where that extra falls under about a tenth (the "ratio"
 * column reaches 1.10). On a GPU engine the crossover is lower: gemmd
 * is then the faster of the two above some size.
 *
 * Usage: GEMMD_URL=ipc://... gemmd_blas_bench [MAX_N]
 */
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 7

typedef void dgemm_fn(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE,
		      enum CBLAS_TRANSPOSE, blasint, blasint, blasint, double,
		      const double *, blasint, const double *, blasint, double,
		      double *, blasint);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int by_value(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Median time of REPS calls of fn on n x n matrices, after one. */
static double median_ms(dgemm_fn *fn, int n, const double *a, const double *b,
			double *c)
{
	double t[REPS];
	int i;

	fn(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n,
	   0.0, c, n);
	for (i = 0; i < REPS; i++) {
		double t0 = now_ms();

		fn(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a,
		   n, b, n, 0.0, c, n);
		t[i] = now_ms() - t0;
	}
	qsort(t, REPS, sizeof(t[0]), by_value);
	return t[REPS / 2];
}

#define SIZES_MAX 32

/* One size's operands and both results. */
struct size {
	int n;
	double *a, *b, *host, *gemmd;
	double host_ms, gemmd_ms;
};

int main(int argc, char **argv)
{
	int max_n = argc > 1 ? atoi(argv[1]) : 2048, count = 0, i;
	void *host_lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
	dgemm_fn *host =
	    host_lib ? (dgemm_fn *)dlsym(host_lib, "cblas_dgemm") : NULL;
	struct size sz[SIZES_MAX];

	if (host == NULL || getenv("GEMMD_URL") == NULL) {
		fprintf(stderr,
			"usage: GEMMD_URL=URL %s [MAX_N] (needs "
			"libopenblas.so.0)\n",
			argv[0]);
		return 2;
	}
	setenv("GEMMD_BLAS_MIN_FLOPS", "0", 1);
	for (int n = 32; n <= max_n && count < SIZES_MAX; n = n * 3 / 2) {
		size_t nn = (size_t)n * n, j;
		struct size *s = &sz[count++];

		s->n = n;
		s->a = malloc(nn * 8), s->b = malloc(nn * 8);
		s->host = malloc(nn * 8), s->gemmd = malloc(nn * 8);
		for (j = 0; j < nn; j++) {
			s->a[j] = (double)rand() / RAND_MAX - 0.5;
			s->b[j] = (double)rand() / RAND_MAX - 0.5;
		}
	}
	/* The host's pass first, then gemmd's once the host BLAS's threads
	 * have stopped spinning: they would take the cores from the
	 * daemon's on a small host. */
	for (i = 0; i < count; i++)
		sz[i].host_ms =
		    median_ms(host, sz[i].n, sz[i].a, sz[i].b, sz[i].host);
	sleep(1);
	for (i = 0; i < count; i++)
		sz[i].gemmd_ms = median_ms(cblas_dgemm, sz[i].n, sz[i].a,
					   sz[i].b, sz[i].gemmd);
	printf("%6s %10s %10s %10s %7s\n", "n", "flops", "host_ms", "gemmd_ms",
	       "ratio");
	for (i = 0; i < count; i++) {
		struct size *s = &sz[i];
		size_t nn = (size_t)s->n * s->n, j;
		double err = 0;

		for (j = 0; j < nn; j++)
			err = fmax(err, fabs(s->host[j] - s->gemmd[j]));
		printf("%6d %10.3g %10.3f %10.3f %7.2f%s\n", s->n,
		       2.0 * s->n * nn, s->host_ms, s->gemmd_ms,
		       s->gemmd_ms / s->host_ms,
		       err > 1e-9 * s->n ? "  WRONG" : "");
		free(s->a), free(s->b), free(s->host), free(s->gemmd);
	}
	return 0;
}
