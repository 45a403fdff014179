/*
 * gm_bench.c - what the benchmarks share: the sizes of a case's jobs,
 * random operands and medians (gm_bench.h).
 */
#include <stdlib.h>

#include "gm_bench.h"

uint64_t gm_case_in_bytes(const gm_case *c)
{
	return 2 * gm_case_out_bytes(c);
}

uint64_t gm_case_out_bytes(const gm_case *c)
{
	return (uint64_t)c->n * c->n * (c->dtype == GEMMD_FP64 ? 8 : 4);
}

double gm_case_flops(const gm_case *c)
{
	return 2.0 * c->n * c->n * (double)c->n * c->jobs;
}

void gm_bench_random(int dtype, void *p, size_t n, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t z = (s += 0x9E3779B97F4A7C15ull);
		double v;

		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		z ^= z >> 31;
		v = (double)(z >> 11) * 0x1p-52 - 1.0;
		if (dtype == GEMMD_FP64)
			((double *)p)[i] = v;
		else
			((float *)p)[i] = (float)v;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double gm_bench_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
