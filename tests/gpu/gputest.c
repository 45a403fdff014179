/*
 * gputest.c - the gpu suite's shared helpers; see gputest.h.
 */
#include "gputest.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gm_testref.h"

struct bench cpu;
struct bench gpu;
uint64_t seed;
int quick;
static size_t mem_baseline[DEV_MAX]; /* free bytes per device */

/* ---- numbers (random operands and dtypes: gm_testref) ------------------ */

/*
 * Bound on the relative Frobenius error of a result against the fp64
 * reference computed from the same (rounded) inputs. The inputs are equal,
 * so what remains is accumulation and the rounding of the output:
 * - fp64: unit roundoff 1.1e-16; even K*u for K = 999 is 1.1e-13.
 * - fp32: u = 6e-8; rounding errors of a K-term sum grow like sqrt(K)*u
 *   (random walk); 16x that leaves room: 1e-6*sqrt(K).
 * - tf32: products of the rounded inputs are exact, the sum is fp32; the
 *   bound covers hardware that truncates to 10 mantissa bits where we
 *   round, an input difference of 2^-11 relative: 2e-3.
 * - fp16: fp32 accumulation, but the stored result is rounded to 11
 *   significant bits, 4.9e-4 relative per element: 2e-3.
 * - bf16: the same with 8 significant bits, 3.9e-3: 1.5e-2.
 */
static double tolerance(int dtype, uint32_t k)
{
	switch (dtype) {
	case GM_FP64:
		return 1e-12;
	case GM_FP32:
		return 1e-6 * sqrt((double)k);
	case GM_TF32:
	case GM_FP16:
		return 2e-3;
	default:
		return 1.5e-2;
	}
}

/* ---- engines ------------------------------------------------------------ */

static void on_done(gm_job *j, void *arg)
{
	struct bench *b = arg;

	pthread_mutex_lock(&b->mu);
	((struct tjob *)j->user)->returned++;
	((struct tjob *)j->user)->back = seconds(CLOCK_MONOTONIC);
	b->done++;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

void bench_open(struct bench *b, const gm_engine_config *cfg)
{
	char msg[128] = "";
	uint64_t size;
	void *arena;
	int rv;

	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	rv = gm_engine_open(cfg, on_done, b, &b->e, msg, sizeof(msg));
	if (rv != GM_OK)
		print_error("open: %s: %s\n", gm_errname(rv), msg);
	assert_int_equal(rv, GM_OK);
	arena = gm_engine_arena(b->e, &size);
	assert_non_null(arena);
	assert_int_equal(gm_pool_create(arena, size, &b->pool), GM_OK);
}

/* Free memory of every device (at most DEV_MAX). */
static int free_memory(size_t *out)
{
	size_t total;
	int i, n = gm_engine_cuda_count();

	for (i = 0; i < n && i < DEV_MAX; i++)
		if (gm_engine_cuda_memory(i, &out[i], &total) != GM_OK)
			return -1;
	return 0;
}

static void check_memory_back(void)
{
	size_t now[DEV_MAX];
	int i;

	assert_int_equal(free_memory(now), 0);
	for (i = 0; i < gm_engine_cuda_count() && i < DEV_MAX; i++) {
		if (now[i] + LEAK_SLACK < mem_baseline[i])
			print_error(
			    "GPU %d: %llu MiB free, %llu MiB before\n", i,
			    (unsigned long long)(now[i] / MIB),
			    (unsigned long long)(mem_baseline[i] / MIB));
		assert_true(now[i] + LEAK_SLACK >= mem_baseline[i]);
	}
}

struct totals device_totals(struct bench *b)
{
	struct totals t = {0};
	unsigned i;

	for (i = 0; i < gm_engine_devices(b->e); i++) {
		gm_device_stats s;

		gm_engine_device_stats(b->e, i, &s);
		t.jobs += s.jobs;
		t.mem_used += s.mem_used;
		t.named += s.name[0] != '\0';
		t.sized += s.mem_total > 0;
		t.busy += s.busy_us > 0;
		t.without_jobs += s.jobs == 0;
	}
	return t;
}

/* Closes a CUDA engine, then checks that every slab came back before
 * and the device memory after. Checks come after the close so that a
 * failure does not leave the engine open for the next case. */
void bench_close(struct bench *b, int check_memory)
{
	struct totals t = device_totals(b);
	unsigned ndev = gm_engine_devices(b->e);

	gm_pool_destroy(b->pool);
	gm_engine_close(b->e);
	b->e = NULL;
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	if (!check_memory)
		return;
	assert_int_equal(t.named, ndev);
	assert_int_equal(t.sized, ndev);
	assert_int_equal(t.mem_used, 0);
	assert_int_equal(t.jobs, b->jobs);
	check_memory_back();
}

void wait_done(struct bench *b, size_t n)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_SECONDS;
	pthread_mutex_lock(&b->mu);
	while (b->done < n)
		if (pthread_cond_timedwait(&b->cv, &b->mu, &until) != 0)
			break;
	pthread_mutex_unlock(&b->mu);
	assert_int_equal(b->done, n);
}

double seconds(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Submits jobs as one wave, checks submit did not wait for them, and
 * waits until all came back. */
void run_wave(struct bench *b, gm_job **jobs, size_t n)
{
	size_t before = b->done;
	double t0 = seconds(CLOCK_MONOTONIC);

	assert_int_equal(gm_engine_submit(b->e, jobs, n), GM_OK);
	assert_true(seconds(CLOCK_MONOTONIC) - t0 < SUBMIT_MAX_S);
	wait_done(b, before + n);
	b->jobs += n;
}

gm_engine_config cuda_config(void)
{
	gm_engine_config c = {0};

	c.kind = GM_ENGINE_CUDA;
	c.pool_bytes = 1024 * MIB;
	c.streams = 4;
	c.issue_order = GM_ISSUE_BREADTH;
	c.kernel = GM_KERNEL_CUBLAS;
	return c;
}

/* ---- jobs --------------------------------------------------------------- */

static size_t elems(uint64_t bytes, int dtype)
{
	return bytes / gm_dtype_size(dtype);
}

/* Operands go into the arena slab, or, with copy, into a buffer of their
 * own that the engine must stage (the slab is poisoned to prove it). */
void make_job(struct bench *b, struct tjob *t, const gm_job_desc *d, int copy)
{
	uint64_t in_bytes, s = seed++;
	char *p, *src;

	memset(t, 0, sizeof(*t));
	assert_int_equal(gm_job_sizes_of(d, &t->sz), GM_OK);
	in_bytes = t->sz.a + t->sz.b + t->sz.c;
	assert_int_equal(gm_pool_alloc(b->pool, in_bytes + t->sz.out, &t->slab),
			 GM_OK);
	p = t->slab;
	t->job.d = *d;
	t->job.a = p;
	t->job.b = p + t->sz.a;
	t->job.c = t->sz.c ? p + t->sz.a + t->sz.b : NULL;
	t->job.out = p + in_bytes;
	t->job.user = t;
	src = p;
	if (copy) {
		src = t->in = malloc(in_bytes);
		t->copy_out = malloc(t->sz.out);
		assert_non_null(t->in);
		assert_non_null(t->copy_out);
		memset(p, 0xff, in_bytes);
		memset(t->copy_out, 0xff, t->sz.out);
		t->job.copy_in = t->in;
		t->job.copy_in_bytes = in_bytes;
		t->job.copy_out = t->copy_out;
	}
	t->ra = malloc(elems(t->sz.a, d->dtype) * sizeof(double));
	t->rb = malloc(elems(t->sz.b, d->dtype) * sizeof(double));
	t->rc = malloc(elems(t->sz.out, d->dtype) * sizeof(double));
	assert_true(t->ra && t->rb && t->rc);
	gm_testref_fill(d->dtype, src, elems(t->sz.a, d->dtype), &s, t->ra);
	gm_testref_fill(d->dtype, src + t->sz.a, elems(t->sz.b, d->dtype), &s,
			t->rb);
	if (t->sz.c) {
		size_t i, n = elems(t->sz.c, d->dtype);

		gm_testref_fill(d->dtype, src + t->sz.a + t->sz.b, n, &s,
				t->rc);
		for (i = 0; i < n; i++)
			t->cnorm += t->rc[i] * t->rc[i];
		t->cnorm = sqrt(t->cnorm);
	}
	memset(p + in_bytes, 0xff, t->sz.out); /* NaN in every dtype */
}

/* The same job in fp64 on the CPU; the result replaces rc. */
void make_ref(struct tjob *t)
{
	t->ref.d = t->job.d;
	t->ref.d.dtype = GM_FP64;
	t->ref.d.kernel = GM_KERNEL_CUBLAS;
	t->ref.a = t->ra;
	t->ref.b = t->rb;
	t->ref.c = t->sz.c ? t->rc : NULL;
	t->ref.out = t->rc;
	t->ref.user = t;
}

void free_job(struct bench *b, struct tjob *t)
{
	gm_pool_free(b->pool, t->slab);
	free(t->in);
	free(t->copy_out);
	free(t->ra);
	free(t->rb);
	free(t->rc);
}

/*
 * ||G - R|| / (||R|| + |beta| ||C||). The second term matters where
 * alpha*op(A)*op(B) and beta*C nearly cancel (a 1x1 result can): the
 * rounding of each term is relative to the term, not to their small sum.
 */
static double rel_error(const struct tjob *t)
{
	const void *out = t->copy_out ? t->copy_out : t->job.out;
	size_t i, n = (size_t)t->job.d.m * t->job.d.n;
	double num = 0, den = 0;

	for (i = 0; i < n; i++) {
		double g = gm_testref_get(t->job.d.dtype, out, i), r = t->rc[i];

		num += (g - r) * (g - r);
		den += r * r;
	}
	return sqrt(num) / (sqrt(den) + fabs(t->job.d.beta) * t->cnorm);
}

void check_result(const struct tjob *t, int mapped)
{
	const gm_job *j = &t->job;
	double err, tol = tolerance(j->d.dtype, j->d.k);

	if (j->status != GM_OK)
		print_error("%s %ux%ux%u: %s: %s\n", gm_dtype_name(j->d.dtype),
			    j->d.m, j->d.n, j->d.k, gm_errname(j->status),
			    j->msg);
	assert_int_equal(j->status, GM_OK);
	assert_int_equal(t->ref.status, GM_OK);
	err = rel_error(t);
	if (!(err <= tol))
		print_error("%s %ux%ux%u ta=%u tb=%u layout=%u kernel=%u c=%u: "
			    "error %.3g > %.3g\n",
			    gm_dtype_name(j->d.dtype), j->d.m, j->d.n, j->d.k,
			    j->d.trans_a, j->d.trans_b, j->d.layout,
			    j->d.kernel, j->d.flags, err, tol);
	assert_true(err <= tol);
	assert_true(isfinite(j->h2d_us + j->kernel_us + j->d2h_us));
	assert_true(j->h2d_us >= 0 && j->kernel_us >= 0 && j->d2h_us >= 0);
	/* A small job alone may run on its host memory: no copies. */
	if (mapped)
		assert_true(j->d2h_us == 0);
	else if (j->d.kernel == GM_KERNEL_CUBLAS)
		assert_true(j->kernel_us > 0 &&
			    ((j->h2d_us > 0 && j->d2h_us > 0) ||
			     (j->h2d_us == 0 && j->d2h_us == 0 &&
			      t->sz.a + t->sz.b + t->sz.c + t->sz.out <=
				  GM_DIRECT_JOB_BYTES)));
	assert_true(j->device >= 0);
}

/* ---- waves -------------------------------------------------------------- */

const struct shape shapes[] = {
    {1, 1, 1},
    {7, 13, 5},
    {257, 129, 65},
    {1024, 1000, 999},
};

static size_t shape_count(void)
{
	return quick ? 3 : sizeof(shapes) / sizeof(shapes[0]);
}

/* The 16 combinations of trans_a, trans_b, layout and C, as a wave. */
size_t combos(gm_job_desc *d, int dtype, int kernel, const struct shape *s)
{
	size_t i;

	for (i = 0; i < 16; i++) {
		memset(&d[i], 0, sizeof(d[i]));
		d[i].dtype = (uint8_t)dtype;
		d[i].kernel = (uint8_t)kernel;
		d[i].trans_a = i & 1;
		d[i].trans_b = (i >> 1) & 1;
		d[i].layout = (i >> 2) & 1;
		d[i].flags = (i >> 3) & 1 ? GM_JOB_HAS_C : 0;
		d[i].m = s->m;
		d[i].n = s->n;
		d[i].k = s->k;
		/* Exact in every dtype; without C, beta must be ignored. */
		d[i].alpha = 1.5;
		d[i].beta = d[i].flags ? -0.75 : 2.0;
	}
	return 16;
}

void report(const struct tjob *t, size_t n, const char *what)
{
	double h = 0, k = 0, d = 0,
	       flops = 2.0 * t[0].job.d.m * t[0].job.d.n * t[0].job.d.k;
	size_t i;

	for (i = 0; i < n; i++) {
		h += t[i].job.h2d_us;
		k += t[i].job.kernel_us;
		d += t[i].job.d2h_us;
	}
	printf("  %-7s %-5s %-6s %4ux%4ux%4u: mean h2d %8.1f us, kernel "
	       "%8.1f us (%7.1f GFLOP/s), d2h %8.1f us\n",
	       what, gm_dtype_name(t[0].job.d.dtype),
	       t[0].job.d.kernel == GM_KERNEL_TILED ? "tiled" : "cublas",
	       t[0].job.d.m, t[0].job.d.n, t[0].job.d.k, h / n, k / n,
	       k > 0 ? flops * n / k / 1e3 : 0.0, d / n);
}

/* Runs the jobs of t[0..n-1] on b, checks each came back once, then
 * runs their references on the CPU. */
void run_both(struct bench *b, struct tjob *t, size_t n)
{
	gm_job *jobs[WAVE_MAX], *refs[WAVE_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		make_ref(&t[i]);
		jobs[i] = &t[i].job;
		refs[i] = &t[i].ref;
	}
	run_wave(b, jobs, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(t[i].returned, 1);
		t[i].returned = 0;
	}
	run_wave(&cpu, refs, n);
}

/* Whether the engine (small_job_bytes left at its default) coalesces
 * t's job: then its result comes back in its batch's copy, mapped output
 * or not. */
static int coalesced(const struct tjob *t)
{
	return t->sz.a + t->sz.b + t->sz.c + t->sz.out <= GM_SMALL_JOB_BYTES;
}

/* Runs desc[0..n-1] on b and on the CPU and compares. Every other job
 * of the small shapes goes through copy_in / copy_out. */
void check_wave(struct bench *b, const gm_job_desc *desc, size_t n, int mapped,
		const char *what)
{
	struct tjob t[WAVE_MAX];
	size_t i;

	for (i = 0; i < n; i++)
		make_job(b, &t[i], &desc[i], desc[i].m < 1024 && (i & 1));
	run_both(b, t, n);
	for (i = 0; i < n; i++)
		check_result(&t[i], mapped && !coalesced(&t[i]));
	report(t, n, what);
	for (i = 0; i < n; i++)
		free_job(b, &t[i]);
}

void check_dtype(struct bench *b, int dtype, int kernel, int mapped,
		 const char *what)
{
	gm_job_desc d[16];
	size_t s, n;

	for (s = 0; s < shape_count(); s++) {
		n = combos(d, dtype, kernel, &shapes[s]);
		check_wave(b, d, n, mapped, what);
	}
}

/* ---- setup -------------------------------------------------------------- */

/* Opens the reference engine, and one CUDA engine to bring the device
 * up, so that the memory baseline includes the context. */
int setup(void **state)
{
	gm_engine_config c = {0};
	struct bench warm;

	c.kind = GM_ENGINE_CPU;
	c.pool_bytes = 64 * MIB;
	bench_open(&cpu, &c);
	c = cuda_config();
	bench_open(&warm, &c);
	bench_close(&warm, 0);
	return free_memory(mem_baseline);
}

/* After each case: a case that failed half-way leaves its engine open;
 * close it so the next case starts from a clean device. */
int close_gpu(void **state)
{
	if (gpu.e != NULL)
		bench_close(&gpu, 0);
	return 0;
}

int teardown(void **state)
{
	gm_pool_destroy(cpu.pool);
	gm_engine_close(cpu.e);
	return 0;
}

int gpu_main(const struct CMUnitTest *tests, size_t n)
{
	const char *s = getenv("GM_TEST_SEED");
	const char *filter = getenv("GM_TEST_FILTER");

	if (gm_engine_cuda_count() == 0) {
		printf("no CUDA device: skipped\n");
		return 77;
	}
	quick = getenv("GM_TEST_QUICK") != NULL;
	seed = s != NULL ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
	printf("GM_TEST_SEED=%llu\n", (unsigned long long)seed);
	if (filter != NULL)
		cmocka_set_test_filter(filter);
	return _cmocka_run_group_tests("tests", tests, n, setup, teardown);
}
