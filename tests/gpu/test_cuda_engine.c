/*
 * test_cuda_engine.c - the CUDA engine, checked against the CPU engine.
 *
 * Every dtype, transpose pair, layout, kernel and with/without C runs on
 * sizes from 1x1x1 to 1024x1000x999 with fresh random inputs; the CPU
 * engine recomputes each job in fp64 from the very values the GPU saw
 * (fp16, bf16 and tf32 inputs rounded first) and the relative Frobenius
 * error must stay under a bound scaled to the dtype and K. Outputs are
 * poisoned with NaN first, so an element never written fails. Further
 * cases: depth-first issue with a device pool too small for a whole wave
 * (jobs wait inside the engine), mapped output, unsupported and too-big
 * jobs, no device memory or jobs left behind, and, in fault-injection
 * builds, an injected out-of-memory and a real sticky fault (last: it
 * poisons the process's CUDA context). Exits 77 (skipped) without a GPU.
 * GM_TEST_QUICK=1 keeps to the small sizes and skips the sticky fault
 * (for compute-sanitizer); GM_TEST_FILTER=pattern picks cases;
 * GM_TEST_SEED=n repeats a run.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "gm_build.h"
#include "gm_engine.h"
#include "gm_testref.h"
#include "gm_pool.h"

#define WAVE_MAX     32
#define WAIT_SECONDS 300
#define MIB	     (1024ull * 1024)
#define LEAK_SLACK   (64 * MIB) /* driver and cuBLAS caches come and go */
#define SUBMIT_MAX_S 0.05	/* submit only links jobs: never this slow */
#define IDLE_CPU_MAX 0.05	/* CPU seconds per second of an idle engine */

/* One job run twice: on the engine under test and, in fp64, on the CPU. */
struct tjob {
	gm_job job, ref;
	gm_job_sizes sz;
	void *slab;	      /* in the tested engine's arena */
	void *in, *copy_out;  /* when the job uses copy_in / copy_out */
	double *ra, *rb, *rc; /* reference operands, fp64 */
	double cnorm;	      /* Frobenius norm of C as stored */
	int returned;	      /* times the done callback saw job */
};

/* A tested engine with its arena books and completion count. */
struct bench {
	gm_engine *e;
	gm_pool *pool;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t done;
	uint64_t jobs; /* submitted and returned, for device_stats */
};

#define DEV_MAX 16

static struct bench cpu; /* the reference, open for the whole run */
static struct bench gpu; /* the engine under test in the current case */
static uint64_t seed;
static int quick;
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
	b->done++;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static void bench_open(struct bench *b, const gm_engine_config *cfg)
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
		if (cudaSetDevice(i) != cudaSuccess ||
		    cudaMemGetInfo(&out[i], &total) != cudaSuccess)
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

/* What device_stats says about all devices of an engine. */
struct totals {
	uint64_t jobs, mem_used;
	unsigned named, sized, busy, without_jobs;
};

static struct totals device_totals(struct bench *b)
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
static void bench_close(struct bench *b, int check_memory)
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

static void wait_done(struct bench *b, size_t n)
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

static double seconds(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Submits jobs as one wave, checks submit did not wait for them, and
 * waits until all came back. */
static void run_wave(struct bench *b, gm_job **jobs, size_t n)
{
	size_t before = b->done;
	double t0 = seconds(CLOCK_MONOTONIC);

	assert_int_equal(gm_engine_submit(b->e, jobs, n), GM_OK);
	assert_true(seconds(CLOCK_MONOTONIC) - t0 < SUBMIT_MAX_S);
	wait_done(b, before + n);
	b->jobs += n;
}

static gm_engine_config cuda_config(void)
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
static void make_job(struct bench *b, struct tjob *t, const gm_job_desc *d,
		     int copy)
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
static void make_ref(struct tjob *t)
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

static void free_job(struct bench *b, struct tjob *t)
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

static void check_result(const struct tjob *t, int mapped)
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
	if (mapped)
		assert_true(j->d2h_us == 0);
	else if (j->d.kernel == GM_KERNEL_CUBLAS)
		assert_true(j->h2d_us > 0 && j->kernel_us > 0 && j->d2h_us > 0);
	assert_true(j->device >= 0);
}

/* ---- waves -------------------------------------------------------------- */

struct shape {
	uint32_t m, n, k;
};

static const struct shape shapes[] = {
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
static size_t combos(gm_job_desc *d, int dtype, int kernel,
		     const struct shape *s)
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

static void report(const struct tjob *t, size_t n, const char *what)
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
static void run_both(struct bench *b, struct tjob *t, size_t n)
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

/* Runs desc[0..n-1] on b and on the CPU and compares. Every other job
 * of the small shapes goes through copy_in / copy_out. */
static void check_wave(struct bench *b, const gm_job_desc *desc, size_t n,
		       int mapped, const char *what)
{
	struct tjob t[WAVE_MAX];
	size_t i;

	for (i = 0; i < n; i++)
		make_job(b, &t[i], &desc[i], desc[i].m < 1024 && (i & 1));
	run_both(b, t, n);
	for (i = 0; i < n; i++)
		check_result(&t[i], mapped);
	report(t, n, what);
	for (i = 0; i < n; i++)
		free_job(b, &t[i]);
}

static void check_dtype(struct bench *b, int dtype, int kernel, int mapped,
			const char *what)
{
	gm_job_desc d[16];
	size_t s, n;

	for (s = 0; s < shape_count(); s++) {
		n = combos(d, dtype, kernel, &shapes[s]);
		check_wave(b, d, n, mapped, what);
	}
}

/* ---- cases -------------------------------------------------------------- */

static void test_all_dtypes(int dtype)
{
	gm_engine_config cfg = cuda_config();
	struct totals t;

	bench_open(&gpu, &cfg);
	check_dtype(&gpu, dtype, GM_KERNEL_CUBLAS, 0, "breadth");
	if (dtype == GM_FP64 || dtype == GM_FP32)
		check_dtype(&gpu, dtype, GM_KERNEL_TILED, 0, "breadth");
	/* Waves are spread: every device ran jobs and was busy. */
	t = device_totals(&gpu);
	assert_int_equal(t.without_jobs, 0);
	assert_int_equal(t.busy, gm_engine_devices(gpu.e));
	bench_close(&gpu, 1);
}

static void test_fp64(void **state)
{
	test_all_dtypes(GM_FP64);
}

static void test_fp32(void **state)
{
	test_all_dtypes(GM_FP32);
}

static void test_tf32(void **state)
{
	test_all_dtypes(GM_TF32);
}

static void test_fp16(void **state)
{
	test_all_dtypes(GM_FP16);
}

static void test_bf16(void **state)
{
	test_all_dtypes(GM_BF16);
}

/* Depth-first issue, and a device pool that holds two of the largest
 * jobs: the rest of a wave waits inside the engine. */
static void test_depth_small_pool(void **state)
{
	gm_engine_config cfg = cuda_config();

	cfg.issue_order = GM_ISSUE_DEPTH;
	cfg.device_pool_bytes = 64 * MIB;
	cfg.streams = 3;
	bench_open(&gpu, &cfg);
	check_dtype(&gpu, GM_FP64, GM_KERNEL_CUBLAS, 0, "depth");
	check_dtype(&gpu, GM_FP64, GM_KERNEL_TILED, 0, "depth");
	check_dtype(&gpu, GM_FP16, GM_KERNEL_CUBLAS, 0, "depth");
	bench_close(&gpu, 1);
}

static void test_mapped_output(void **state)
{
	gm_engine_config cfg = cuda_config();

	cfg.mapped_output = 1;
	bench_open(&gpu, &cfg);
	check_dtype(&gpu, GM_FP64, GM_KERNEL_CUBLAS, 1, "mapped");
	check_dtype(&gpu, GM_FP32, GM_KERNEL_TILED, 1, "mapped");
	check_dtype(&gpu, GM_BF16, GM_KERNEL_CUBLAS, 1, "mapped");
	bench_close(&gpu, 1);
}

/* An engine with nothing to do sleeps: its threads wait on condition
 * variables, not in a polling loop. The CPU engine's BLAS threads may
 * spin a little after work, so the measurement starts after a pause. */
static void test_idle_cpu(void **state)
{
	gm_engine_config cfg = cuda_config();
	struct timespec pause = {0, 500 * 1000 * 1000}, second = {1, 0};
	double cpu0, wall0, used;
	gm_job_desc d[16];

	bench_open(&gpu, &cfg);
	combos(d, GM_FP32, GM_KERNEL_CUBLAS, &shapes[2]);
	check_wave(&gpu, d, 16, 0, "warm");
	nanosleep(&pause, NULL);
	cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
	wall0 = seconds(CLOCK_MONOTONIC);
	nanosleep(&second, NULL);
	used = (seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0) /
	       (seconds(CLOCK_MONOTONIC) - wall0);
	printf("  idle engine: %.2f%% of one CPU\n", used * 100);
	assert_true(used < IDLE_CPU_MAX);
	bench_close(&gpu, 1);
}

/* Runs one job expected to fail with code before reaching the device. */
static void expect_refused(struct bench *b, const gm_job_desc *d, int code)
{
	struct tjob t;
	gm_job *j = &t.job;

	make_job(b, &t, d, 0);
	run_wave(b, &j, 1);
	assert_int_equal(t.returned, 1);
	assert_int_equal(j->status, code);
	assert_true(j->msg[0] != '\0');
	free_job(b, &t);
}

static void test_refused(void **state)
{
	gm_engine_config cfg = cuda_config();
	gm_job_desc d = {0};
	char msg[GM_MSG_TEXT + 1];

	cfg.device_pool_bytes = 64 * MIB;
	bench_open(&gpu, &cfg);
	d.dtype = GM_FP16;
	d.kernel = GM_KERNEL_TILED;
	d.m = d.n = d.k = 8;
	d.alpha = 1;
	assert_int_equal(gm_engine_supports(gpu.e, &d, msg, sizeof(msg)),
			 GM_EUNSUPPORTED);
	expect_refused(&gpu, &d, GM_EUNSUPPORTED);
	/* Three 32 MiB operands on the device: more than the whole pool. */
	d.dtype = GM_FP64;
	d.kernel = GM_KERNEL_CUBLAS;
	d.m = d.n = d.k = 2048;
	assert_int_equal(gm_engine_supports(gpu.e, &d, msg, sizeof(msg)),
			 GM_OK);
	expect_refused(&gpu, &d, GM_ETOOBIG);
	assert_int_equal(gm_engine_faulted(gpu.e), 0);
	bench_close(&gpu, 1);
}

#if GEMMD_FAULT_INJECTION
static void small_wave(struct bench *b, struct tjob *t, size_t n)
{
	gm_job_desc d[16];
	struct shape s = {257, 129, 65};
	size_t i;

	combos(d, GM_FP64, GM_KERNEL_CUBLAS, &s);
	for (i = 0; i < n; i++)
		make_job(b, &t[i], &d[i], 0);
}

static void open_armed(struct bench *b, const char *fault)
{
	gm_engine_config cfg = cuda_config();

	cfg.pool_bytes = 256 * MIB;
	setenv("GEMMD_INJECT_FAULT", fault, 1);
	bench_open(b, &cfg);
	unsetenv("GEMMD_INJECT_FAULT");
}

/* One job fails as if cudaMalloc had; the engine goes on serving. */
static void test_fault_oom(void **state)
{
	struct tjob t[4];
	int i, failed = 0;

	open_armed(&gpu, "oom");
	small_wave(&gpu, t, 4);
	run_both(&gpu, t, 4);
	for (i = 0; i < 4; i++) {
		if (t[i].job.status == GM_ENOMEM)
			failed++;
		else
			check_result(&t[i], 0);
	}
	assert_int_equal(failed, 1);
	assert_int_equal(gm_engine_faulted(gpu.e), 0);
	for (i = 0; i < 4; i++)
		free_job(&gpu, &t[i]);
	check_dtype(&gpu, GM_FP32, GM_KERNEL_CUBLAS, 0, "oom");
	bench_close(&gpu, 1);
}

/* A real illegal-address fault: the whole wave fails with GM_EGPUFAULT,
 * the engine says it is faulted and refuses more work. */
static void test_fault_sticky(void **state)
{
	struct tjob t[8];
	gm_job *jobs[8];
	int i, faulted_dev = -1;

	if (quick)
		skip();
	open_armed(&gpu, "sticky");
	small_wave(&gpu, t, 8);
	for (i = 0; i < 8; i++)
		jobs[i] = &t[i].job;
	run_wave(&gpu, jobs, 8);
	for (i = 0; i < 8; i++)
		if (t[i].job.status == GM_EGPUFAULT)
			faulted_dev = t[i].job.device;
	assert_true(faulted_dev >= 0);
	/* Every job on the faulted GPU fails; with several GPUs, jobs on
	 * the others may finish. */
	for (i = 0; i < 8; i++) {
		assert_int_equal(t[i].returned, 1);
		if (t[i].job.device != faulted_dev)
			continue;
		assert_int_equal(t[i].job.status, GM_EGPUFAULT);
		assert_non_null(strstr(t[i].job.msg, "illegal"));
	}
	for (i = 0; i < 8; i++)
		if (t[i].job.device == faulted_dev)
			break;
	printf("  sticky: %s\n", t[i].job.msg);
	assert_int_equal(gm_engine_faulted(gpu.e), 1);
	assert_int_equal(gm_engine_submit(gpu.e, jobs, 1), GM_EGPUFAULT);
	assert_int_equal(gpu.done, 8); /* the refused job never came back */
	for (i = 0; i < 8; i++)
		free_job(&gpu, &t[i]);
	bench_close(&gpu, 0);
}
#endif

/* ---- setup -------------------------------------------------------------- */

/* Opens the reference engine, and one CUDA engine to bring the device
 * up, so that the memory baseline includes the context. */
static int setup(void **state)
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
static int close_gpu(void **state)
{
	if (gpu.e != NULL)
		bench_close(&gpu, 0);
	return 0;
}

static int teardown(void **state)
{
	gm_pool_destroy(cpu.pool);
	gm_engine_close(cpu.e);
	return 0;
}

int main(void)
{
	const char *s = getenv("GM_TEST_SEED");
	const char *filter = getenv("GM_TEST_FILTER");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fp64, close_gpu),
		cmocka_unit_test_teardown(test_fp32, close_gpu),
		cmocka_unit_test_teardown(test_tf32, close_gpu),
		cmocka_unit_test_teardown(test_fp16, close_gpu),
		cmocka_unit_test_teardown(test_bf16, close_gpu),
		cmocka_unit_test_teardown(test_depth_small_pool, close_gpu),
		cmocka_unit_test_teardown(test_mapped_output, close_gpu),
		cmocka_unit_test_teardown(test_refused, close_gpu),
		cmocka_unit_test_teardown(test_idle_cpu, close_gpu),
#if GEMMD_FAULT_INJECTION
		cmocka_unit_test_teardown(test_fault_oom, close_gpu),
		cmocka_unit_test(
		    test_fault_sticky), /* last: kills the context */
#endif
	};

	if (gm_engine_cuda_count() == 0) {
		printf("no CUDA device: skipped\n");
		return 77;
	}
	quick = getenv("GM_TEST_QUICK") != NULL;
	seed = s != NULL ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
	printf("GM_TEST_SEED=%llu\n", (unsigned long long)seed);
	if (filter != NULL)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, setup, teardown);
}
