/*
 * gm_small.c - a batch of small jobs and its layout; see gm_small.h.
 */
#include "gm_small.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_batch.h"
#include "gm_bench.h"

#define ES 4 /* fp32 */

static uint64_t up(uint64_t x)
{
	return (x + GM_BATCH_ALIGN - 1) & ~(uint64_t)(GM_BATCH_ALIGN - 1);
}

double sb_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double sb_median(double *v, int n)
{
	return gm_bench_median(v, (size_t)n);
}

static uint32_t pick(uint64_t *s, uint32_t lo, uint32_t hi)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return lo + (uint32_t)((*s >> 33) % (hi - lo + 1));
}

sb_batch *sb_batch_make(const char *name, uint32_t jobs, uint32_t lo,
			uint32_t hi, uint64_t seed)
{
	sb_batch *b = calloc(1, sizeof(*b));
	uint64_t at = 0, s = seed;

	if (b == NULL)
		return NULL;
	b->name = name;
	b->jobs = jobs;
	b->m = calloc(jobs, sizeof(*b->m));
	b->n = calloc(jobs, sizeof(*b->n));
	b->k = calloc(jobs, sizeof(*b->k));
	b->at = calloc(jobs, sizeof(*b->at));
	if (!b->m || !b->n || !b->k || !b->at) {
		sb_batch_free(b);
		return NULL;
	}
	for (uint32_t i = 0; i < jobs; i++) {
		uint64_t a, bb, o;

		b->m[i] = pick(&s, lo, hi);
		b->n[i] = pick(&s, lo, hi);
		b->k[i] = pick(&s, lo, hi);
		a = (uint64_t)b->m[i] * b->k[i] * ES;
		bb = (uint64_t)b->k[i] * b->n[i] * ES;
		o = (uint64_t)b->m[i] * b->n[i] * ES;
		b->at[i] = at;
		at += up(a) + up(bb) + up(o);
		b->in += a + bb;
		b->out += o;
		b->flops += 2.0 * b->m[i] * b->n[i] * b->k[i];
	}
	b->bytes = at;
	return b;
}

void sb_batch_free(sb_batch *b)
{
	if (b == NULL)
		return;
	free(b->m);
	free(b->n);
	free(b->k);
	free(b->at);
	free(b);
}

uint64_t sb_batch_b(const sb_batch *b, uint32_t i)
{
	return b->at[i] + up((uint64_t)b->m[i] * b->k[i] * ES);
}

uint64_t sb_batch_out(const sb_batch *b, uint32_t i)
{
	return sb_batch_b(b, i) + up((uint64_t)b->k[i] * b->n[i] * ES);
}

void sb_batch_job(const sb_batch *b, uint32_t i, char *base, gm_job *j)
{
	memset(j, 0, sizeof(*j));
	j->d.dtype = GM_FP32;
	j->d.kernel = GM_KERNEL_CUBLAS;
	j->d.m = b->m[i];
	j->d.n = b->n[i];
	j->d.k = b->k[i];
	j->d.alpha = 1;
	j->a = base + b->at[i];
	j->b = base + sb_batch_b(b, i);
	j->out = base + sb_batch_out(b, i);
}

void sb_batch_fill(const sb_batch *b, char *base)
{
	for (uint32_t i = 0; i < b->jobs; i++) {
		gm_bench_random(GEMMD_FP32, base + b->at[i],
				(size_t)b->m[i] * b->k[i], 2 * i + 1);
		gm_bench_random(GEMMD_FP32, base + sb_batch_b(b, i),
				(size_t)b->k[i] * b->n[i], 2 * i + 2);
		memset(base + sb_batch_out(b, i), 0xff,
		       (size_t)b->m[i] * b->n[i] * ES);
	}
}

/* Element (r, c) of job i's result, recomputed in double. */
static double dot(const sb_batch *b, uint32_t i, const char *base, uint32_t r,
		  uint32_t c)
{
	const float *a = (const float *)(base + b->at[i]);
	const float *bb = (const float *)(base + sb_batch_b(b, i));
	double s = 0;

	for (uint32_t p = 0; p < b->k[i]; p++)
		s += (double)a[(size_t)r * b->k[i] + p] *
		     bb[(size_t)p * b->n[i] + c];
	return s;
}

double sb_batch_check(const sb_batch *b, const char *base)
{
	const uint32_t jobs[2] = {0, b->jobs - 1};
	double worst = 0;

	for (int q = 0; q < 2; q++) {
		uint32_t i = jobs[q];
		const float *o = (const float *)(base + sb_batch_out(b, i));

		for (uint32_t e = 0; e < 16; e++) {
			uint32_t r = (e * 37) % b->m[i],
				 c = (e * 101) % b->n[i];
			double got = o[(size_t)r * b->n[i] + c];
			double err = fabs(got - dot(b, i, base, r, c)) /
				     sqrt((double)b->k[i]);

			worst = isnan(got)    ? INFINITY
				: err > worst ? err
					      : worst;
		}
	}
	return worst;
}
