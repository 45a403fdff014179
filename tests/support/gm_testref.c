/*
 * gm_testref.c - random operands, dtype conversions and the long double
 * GEMM reference of the tests; see gm_testref.h.
 */
#include "gm_testref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gm_proto.h"

uint64_t gm_testref_seed(void)
{
	const char *env = getenv("GM_TEST_SEED");
	uint64_t seed;

	seed = env != NULL ? strtoull(env, NULL, 0)
			   : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (seed == 0)
		seed = 1;
	printf("seed %llu (GM_TEST_SEED replays it)\n",
	       (unsigned long long)seed);
	return seed;
}

uint64_t gm_testref_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

double gm_testref_unit(uint64_t *s)
{
	return (double)(gm_testref_next(s) >> 11) * 0x1p-52 - 1.0;
}

/* ---- dtypes ------------------------------------------------------------- */

static uint32_t bits_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float float_of(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Round to nearest, ties to even, dropping the low drop bits of u (a
 * carry out of the mantissa correctly bumps the exponent). */
static uint32_t round_off(uint32_t u, int drop)
{
	return u + ((1u << (drop - 1)) - 1) + ((u >> drop) & 1);
}

static uint16_t to_bf16(float f)
{
	uint32_t u = bits_of(f);

	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)(round_off(u, 16) >> 16);
}

static float from_bf16(uint16_t h)
{
	return float_of((uint32_t)h << 16);
}

/* The fp32 value a tensor core reads as TF32: 10 mantissa bits. */
static float to_tf32(float f)
{
	if (!isfinite(f))
		return f;
	return float_of(round_off(bits_of(f), 13) & ~0x1fffu);
}

static uint16_t to_fp16(float f)
{
	uint32_t u = bits_of(f), a = u & 0x7fffffffu;
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);

	if (a > 0x7f800000u) /* NaN stays NaN */
		return sign | 0x7e00u;
	if (a >= 0x47800000u) /* 2^16 and up, infinity: infinity */
		return sign | 0x7c00u;
	if (a < 0x38800000u) /* below 2^-14: multiples of 2^-24 */
		return sign | (uint16_t)nearbyintf(fabsf(f) * 0x1p24f);
	/* Rebias the exponent from 127 to 15; from 65520 up the rounding
	 * carries into the infinity pattern, as it should. */
	return sign | (uint16_t)(round_off(a - 0x38000000u, 13) >> 13);
}

static float from_fp16(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v;

	if (e == 0x1f)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexpf((float)m, -24);
	else
		v = ldexpf((float)(m | 0x400), e - 25);
	return (h & 0x8000) ? -v : v;
}

size_t gm_testref_esize(int dtype)
{
	return dtype == GM_FP64			      ? 8
	       : dtype == GM_FP32 || dtype == GM_TF32 ? 4
						      : 2;
}

double gm_testref_put(int dtype, void *p, size_t i, double v)
{
	switch (dtype) {
	case GM_FP64:
		((double *)p)[i] = v;
		return v;
	case GM_FP32:
		((float *)p)[i] = (float)v;
		return ((float *)p)[i];
	case GM_TF32:
		((float *)p)[i] = to_tf32((float)v);
		return ((float *)p)[i];
	case GM_FP16:
		((uint16_t *)p)[i] = to_fp16((float)v);
		return from_fp16(((uint16_t *)p)[i]);
	default:
		((uint16_t *)p)[i] = to_bf16((float)v);
		return from_bf16(((uint16_t *)p)[i]);
	}
}

double gm_testref_get(int dtype, const void *p, size_t i)
{
	switch (dtype) {
	case GM_FP64:
		return ((const double *)p)[i];
	case GM_FP32:
	case GM_TF32:
		return ((const float *)p)[i];
	case GM_FP16:
		return from_fp16(((const uint16_t *)p)[i]);
	default:
		return from_bf16(((const uint16_t *)p)[i]);
	}
}

void gm_testref_fill(int dtype, void *p, size_t n, uint64_t *s, double *ref)
{
	for (size_t i = 0; i < n; i++) {
		double v = gm_testref_put(dtype, p, i, gm_testref_unit(s));

		if (ref != NULL)
			ref[i] = v;
	}
}

/* ---- reference ---------------------------------------------------------- */

size_t gm_testref_at(int layout, int trans, uint32_t r, uint32_t c,
		     uint32_t rows, uint32_t cols)
{
	uint32_t sr = trans ? c : r, sc = trans ? r : c;
	uint32_t srows = trans ? cols : rows, scols = trans ? rows : cols;

	return layout == GM_ROW_MAJOR ? (size_t)sr * scols + sc
				      : sr + (size_t)sc * srows;
}

int gm_testref_check(const gm_testref_gemm *g)
{
	double u = g->dtype == GM_FP64 ? 0x1p-53 : 0x1p-24;
	long double err = 0, norm = 0, x;
	int nan = 0, ok;

	for (uint32_t i = 0; i < g->m; i++) {
		for (uint32_t j = 0; j < g->n; j++) {
			size_t ci =
			    gm_testref_at(g->layout, 0, i, j, g->m, g->n);
			long double ref = 0, mag = 0;
			long double got = gm_testref_get(g->dtype, g->out, ci);

			for (uint32_t p = 0; p < g->k; p++) {
				x = (long double)gm_testref_get(
					g->dtype, g->a,
					gm_testref_at(g->layout, g->trans_a, i,
						      p, g->m, g->k)) *
				    gm_testref_get(
					g->dtype, g->b,
					gm_testref_at(g->layout, g->trans_b, p,
						      j, g->k, g->n));
				ref += x;
				mag += fabsl(x);
			}
			ref *= g->alpha;
			mag *= fabs(g->alpha);
			if (g->c != NULL) {
				x = g->beta * (long double)gm_testref_get(
						  g->dtype, g->c, ci);
				ref += x;
				mag += fabsl(x);
			}
			nan |= isnan((double)got);
			err += (got - ref) * (got - ref);
			norm += mag * mag;
		}
	}
	ok = !nan && sqrtl(err) <= 4 * u * sqrt(g->k) * sqrtl(norm);
	if (!ok)
		fprintf(stderr,
			"gemm dtype %d layout %d ta %d tb %d %ux%ux%u c %d: "
			"%s, error %.3Lg > %.3g * %.3Lg\n",
			g->dtype, g->layout, g->trans_a, g->trans_b, g->m, g->n,
			g->k, g->c != NULL,
			nan ? "NaN in the result" : "no NaN", sqrtl(err),
			4 * u * sqrt(g->k), sqrtl(norm));
	return ok;
}
