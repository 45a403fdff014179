/*
 * gm_big.c - the operands of gemmd_ooc_bench's job (gm_big.h): mapping
 * them as a region is mapped, filling and copying them on every core
 * (a 32768^2 fp64 matrix is 8 GiB: one thread would take seconds), and
 * checking a few elements of a result.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gm_big.h"

#define THREADS_MAX 64
#define SAMPLES	    32

uint64_t bg_mat_bytes(const bg_case *c)
{
	return (uint64_t)c->n * c->n * (c->dtype == GEMMD_FP64 ? 8 : 4);
}

double bg_flops(const bg_case *c)
{
	return 2.0 * c->n * (double)c->n * c->n;
}

double bg_tflops(const bg_case *c, double ms)
{
	return ms > 0 ? bg_flops(c) / ms / 1e9 : 0;
}

double bg_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bg_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bg_mats_map(const bg_case *c, int shared, bg_mats *m, char *err,
		size_t errlen)
{
	uint64_t bytes = 3 * bg_mat_bytes(c);
	int fd = -1;

	m->mat = bg_mat_bytes(c);
	if (shared &&
	    ((fd = memfd_create("gemmd-ooc-bench", MFD_CLOEXEC)) < 0 ||
	     ftruncate(fd, (off_t)bytes) != 0)) {
		snprintf(err, errlen, "memfd of %llu bytes: %m",
			 (unsigned long long)bytes);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	m->base =
	    mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 shared ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, fd, 0);
	if (fd >= 0)
		close(fd); /* the mapping keeps the memory */
	if (m->base == MAP_FAILED) {
		snprintf(err, errlen, "mapping %llu bytes: %m",
			 (unsigned long long)bytes);
		return -1;
	}
	m->a = m->base;
	m->b = m->base + m->mat;
	m->out = m->base + 2 * m->mat;
	return 0;
}

void bg_mats_unmap(bg_mats *m)
{
	if (m->base != NULL && m->base != MAP_FAILED)
		munmap(m->base, 3 * m->mat);
	m->base = NULL;
}

/* ---- work on every core ------------------------------------------------- */

struct part {
	void (*fn)(struct part *p);
	char *dst;
	const char *src;
	uint64_t lo, hi; /* bytes, or elements for a fill */
	int dtype;
	uint64_t seed;
};

static void *part_main(void *arg)
{
	struct part *p = arg;

	p->fn(p);
	return NULL;
}

static unsigned threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > THREADS_MAX ? THREADS_MAX : (unsigned)n;
}

/* Runs proto->fn over [0, total) cut into a part per core. */
static void on_all_cores(const struct part *proto, uint64_t total,
			 uint64_t unit)
{
	struct part p[THREADS_MAX];
	pthread_t t[THREADS_MAX];
	int started[THREADS_MAX];
	unsigned n = threads();
	uint64_t per = (total / n + unit - 1) / unit * unit;

	for (unsigned i = 0; i < n; i++) {
		p[i] = *proto;
		p[i].lo = i * per < total ? i * per : total;
		p[i].hi = p[i].lo + per < total ? p[i].lo + per : total;
		started[i] = pthread_create(&t[i], NULL, part_main, &p[i]) == 0;
		if (!started[i])
			proto->fn(&p[i]);
	}
	for (unsigned i = 0; i < n; i++)
		if (started[i])
			pthread_join(t[i], NULL);
}

/* Element i of a stream of uniform values in [-1, 1). */
static double value(uint64_t seed, uint64_t i)
{
	uint64_t z =
	    seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xBF58476D1CE4E5B9ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1p-52 - 1.0;
}

static void fill_part(struct part *p)
{
	for (uint64_t i = p->lo; i < p->hi; i++) {
		double v = value(p->seed, i);

		if (p->dtype == GEMMD_FP64)
			((double *)p->dst)[i] = v;
		else
			((float *)p->dst)[i] = (float)v;
	}
}

static void copy_part(struct part *p)
{
	memcpy(p->dst + p->lo, p->src + p->lo, p->hi - p->lo);
}

void bg_mats_fill(const bg_case *c, bg_mats *m, uint64_t seed)
{
	uint64_t elems = (uint64_t)c->n * c->n;
	struct part p = {fill_part, m->a, NULL, 0, 0, c->dtype, seed};

	on_all_cores(&p, elems, 1);
	p.dst = m->b;
	p.seed = seed + 1;
	on_all_cores(&p, elems, 1);
}

void bg_copy(void *dst, const void *src, uint64_t bytes)
{
	struct part p = {copy_part, dst, src, 0, 0, 0, 0};

	on_all_cores(&p, bytes, 4096);
}

void bg_poison(const bg_case *c, char *out)
{
	memset(out, 0xff, bg_mat_bytes(c)); /* NaN in fp64 and fp32 */
}

/* ---- checking ----------------------------------------------------------- */

static double at(const bg_case *c, const char *p, uint64_t i)
{
	return c->dtype == GEMMD_FP64 ? ((const double *)p)[i]
				      : ((const float *)p)[i];
}

double bg_check(const bg_case *c, const char *a, const char *b, const char *out)
{
	uint64_t n = c->n;
	double worst = 0;

	for (uint64_t s = 0; s < SAMPLES; s++) {
		uint64_t r = (s * 7919 + 13) % n, col = (s * 104729 + 7) % n;
		double want = 0, got = at(c, out, r * n + col), e;

		for (uint64_t k = 0; k < n; k++)
			want += at(c, a, r * n + k) * at(c, b, k * n + col);
		e = fabs(got - want) / sqrt((double)n);
		if (isnan(e))
			return e;
		worst = e > worst ? e : worst;
	}
	return worst;
}
