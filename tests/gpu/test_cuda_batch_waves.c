/*
 * test_cuda_batch_waves.c - small jobs coalesced by the CUDA engine
 * (cuda_batch_fx.h, gputest.h): a wave that mixes coalescible jobs with
 * jobs too large to coalesce, jobs that fail their checks (only those
 * fail, each with its own code) and a job too big for the device pool
 * (tiled beside the others); a device pool so small that batches must
 * split and wait beside a tiled job; an injected out-of-memory that
 * fails exactly one job of a batch (fault-injection builds); a small job
 * alone, run on its host memory with no copies, with the bits it has in
 * a batch; and the warm-up. Exits 77 (skipped) without a GPU.
 */
#include "cuda_batch_fx.h"

/* ---- waves with failures ---------------------------------------------- */

static gm_job_desc square(int dtype, uint32_t n, int has_c)
{
	gm_job_desc d = {0};

	d.dtype = (uint8_t)dtype;
	d.kernel = GM_KERNEL_CUBLAS;
	d.flags = has_c ? GM_JOB_HAS_C : 0;
	d.m = d.n = d.k = n;
	d.alpha = 1.5;
	d.beta = -0.75;
	return d;
}

enum { SMALL_A = 12, SMALL_B = 6, LARGE = 2, N_OK = SMALL_A + SMALL_B + LARGE };

/* A wave of coalescible jobs of two keys, jobs too large to coalesce,
 * jobs that fail their checks and a job too big for the device pool,
 * all interleaved: each bad job fails with its own code and alone, the
 * others come back right, the small ones as they come alone, the big
 * one tiled. */
static void test_mixed_wave(void **state)
{
	static struct tjob t[N_OK], bad[4];
	static char *saved[N_OK];
	gm_job *wave[N_OK + 4], *refs[N_OK + 1];
	gm_engine_config cfg = cuda_config();
	gm_job_desc d;
	static const int codes[3] = {GM_EUNSUPPORTED, GM_EUNSUPPORTED,
				     GM_EINVAL};
	size_t i, n = 0;

	cfg.device_pool_bytes = 64ull << 20;
	bench_open(&gpu, &cfg);
	for (i = 0; i < N_OK; i++) {
		d = i < SMALL_A		    ? square(GM_FP32, 64, 0)
		    : i < SMALL_A + SMALL_B ? square(GM_FP64, 24, 1)
					    : square(GM_FP32, 600, 1);
		make_job(&gpu, &t[i], &d, i % 7 == 3);
		make_ref(&t[i]);
		refs[i] = &t[i].ref;
	}
	for (i = 0; i < 4; i++) {
		d = i < 3 ? square(GM_FP32, 64, 0) : square(GM_FP64, 2048, 1);
		make_job(&gpu, &bad[i], &d, 0);
	}
	bad[0].job.d.dtype = GM_FP16; /* the tiled kernel has no fp16 */
	bad[0].job.d.kernel = GM_KERNEL_TILED;
	bad[1].job.d.m = 0;
	bad[2].job.b = NULL;
	/* bad[3]: 128 MiB on the device, more than the pool: tiled. */
	make_ref(&bad[3]);
	refs[N_OK] = &bad[3].ref;
	run_wave(&cpu, refs, N_OK + 1);
	bad[3].returned = 0; /* its reference's callback counted there */
	run_alone(&gpu, t, SMALL_A + SMALL_B, saved);
	for (i = 0; i < N_OK; i++) {
		wave[n++] = &t[i].job;
		if (i % 5 == 2)
			wave[n++] = &bad[i / 5].job;
	}
	assert_int_equal(n, N_OK + 4);
	for (i = SMALL_A + SMALL_B; i < N_OK; i++)
		saved[i] = NULL;
	for (i = 0; i < N_OK; i++)
		poison(&t[i]);
	run_wave(&gpu, wave, n);
	for (i = 0; i < 3; i++) {
		assert_int_equal(bad[i].job.status, codes[i]);
		assert_true(bad[i].job.msg[0] != '\0');
		assert_int_equal(bad[i].returned, 1);
	}
	assert_int_equal(bad[3].returned, 1);
	check_result(&bad[3], 0);
	for (i = 0; i < N_OK; i++) {
		check_result(&t[i], 0);
		if (saved[i] != NULL)
			assert_memory_equal(result_of(&t[i]), saved[i],
					    t[i].sz.out);
	}
	assert_int_equal(gm_engine_faulted(gpu.e), 0);
	bad[2].job.b = bad[2].job.a;
	free_all(&gpu, t, N_OK, saved);
	for (i = 0; i < 4; i++)
		free_job(&gpu, &bad[i]);
	bench_close(&gpu, 1);
}

/* Makes n jobs of d, their references computed on the CPU, wave[i] the
 * i-th job. */
static void make_same(struct tjob *t, size_t n, const gm_job_desc *d,
		      gm_job **wave)
{
	gm_job *refs[JOBS_MAX];

	for (size_t i = 0; i < n; i++) {
		make_job(&gpu, &t[i], d, 0);
		make_ref(&t[i]);
		refs[i] = &t[i].ref;
		wave[i] = &t[i].job;
	}
	run_wave(&cpu, refs, n);
}

/* A device pool of 1 MiB: batches are cut small and wait for each
 * other's memory, and for the half of it that a job larger than the
 * pool, tiled, holds. */
static void test_small_pool(void **state)
{
	enum { N = 64 };
	static struct tjob t[N + 1];
	static char *saved[N];
	gm_job *wave[N + 1];
	gm_engine_config cfg = cuda_config();
	gm_job_desc d = square(GM_FP32, 64, 1);
	size_t i;

	cfg.device_pool_bytes = 1ull << 20;
	bench_open(&gpu, &cfg);
	make_same(t, N, &d, wave);
	d = square(GM_FP32, 300, 0); /* 1 MiB and more on the device */
	make_job(&gpu, &t[N], &d, 0);
	make_ref(&t[N]);
	wave[N] = &t[N].ref;
	run_wave(&cpu, &wave[N], 1);
	wave[N] = &t[N].job;
	run_alone(&gpu, t, N, saved);
	for (i = 0; i < N; i++)
		poison(&t[i]);
	run_wave(&gpu, wave, N + 1);
	check_result(&t[N], 0);
	for (i = 0; i < N; i++) {
		check_result(&t[i], 0);
		assert_memory_equal(result_of(&t[i]), saved[i], t[i].sz.out);
	}
	free_all(&gpu, t, N, saved);
	free_job(&gpu, &t[N]);
	bench_close(&gpu, 1);
}

/* Runs t alone, its C first put back from c0 when it updates C in
 * place; whether it ran on its host memory, with no copies. */
static int run_one(struct tjob *t, const void *c0)
{
	gm_job *j = &t->job;

	poison(t);
	if (j->out == j->c)
		memcpy(j->c, c0, t->sz.c);
	run_wave(&gpu, &j, 1);
	assert_int_equal(j->status, GM_OK);
	check_result(t, 0);
	return j->h2d_us == 0 && j->d2h_us == 0;
}

enum { ALONE = 8, DIRECT_RUNS = 3 };

/* The jobs of test_alone_direct, from seed s each time: fp32 and fp16
 * 64^3, with C elsewhere, in place (c0 keeps C) and without, one staged
 * from a payload; their references computed on the CPU. */
static void make_alone(struct tjob *t, char **c0, gm_job **wave, uint64_t s)
{
	gm_job *refs[ALONE];
	gm_job_desc d;

	seed = s;
	for (size_t i = 0; i < ALONE; i++) {
		d = square(i & 1 ? GM_FP16 : GM_FP32, 64, i % 4 != 3);
		make_job(&gpu, &t[i], &d, i == 5);
		if (i % 4 == 2)
			t[i].job.out = t[i].job.c; /* in place */
		c0[i] = malloc(t[i].sz.c + 1);
		assert_non_null(c0[i]);
		if (t[i].sz.c)
			memcpy(c0[i], t[i].job.c, t[i].sz.c);
		make_ref(&t[i]);
		refs[i] = &t[i].ref;
		wave[i] = &t[i].job;
	}
	run_wave(&cpu, refs, ALONE);
}

/* New A, B and C for each job of t at the same addresses (in the
 * payload, for a job staged from one), c0 and the references with
 * them. */
static void refill_alone(struct tjob *t, char **c0)
{
	gm_job *refs[ALONE];

	for (size_t i = 0; i < ALONE; i++) {
		struct tjob *x = &t[i];
		int dt = x->job.d.dtype;
		size_t es = gm_dtype_size(dt), n = x->sz.c / es;
		char *a = x->in != NULL ? (char *)x->in : (char *)x->job.a;
		char *b = x->in != NULL ? a + x->sz.a : (char *)x->job.b;
		char *c = x->in != NULL ? b + x->sz.b : (char *)x->job.c;

		gm_testref_fill(dt, a, x->sz.a / es, &seed, x->ra);
		gm_testref_fill(dt, b, x->sz.b / es, &seed, x->rb);
		x->cnorm = 0;
		if (n > 0) {
			gm_testref_fill(dt, c, n, &seed, x->rc);
			memcpy(c0[i], c, x->sz.c);
			for (size_t k = 0; k < n; k++)
				x->cnorm += x->rc[k] * x->rc[k];
			x->cnorm = sqrt(x->cnorm);
		}
		make_ref(x);
		refs[i] = &x->ref;
	}
	run_wave(&cpu, refs, ALONE);
}

static void free_alone(struct tjob *t, char **c0)
{
	for (size_t i = 0; i < ALONE; i++) {
		free_job(&gpu, &t[i]);
		free(c0[i]);
	}
}

/*
 * A small job alone runs on its mapped host memory, with no copies, and
 * gives the bits it gets in a batch: the first time it is seen (its
 * call made as it is), the second (the call captured as a graph) and
 * after (the graph replayed); the graph reads what its operands hold
 * when it runs (new inputs at the same places, checked against their
 * own reference). With direct_job_bytes 1 the same jobs alone go by
 * copies, with the same bits.
 */
static void test_alone_direct(void **state)
{
	static struct tjob t[ALONE];
	static char *saved[ALONE], *c0[ALONE];
	gm_job *wave[ALONE];
	gm_engine_config cfg = cuda_config();
	uint64_t s = seed;
	size_t i;

	bench_open(&gpu, &cfg);
	make_alone(t, c0, wave, s);
	for (i = 0; i < ALONE; i++)
		for (int r = 0; r < DIRECT_RUNS; r++) {
			assert_true(run_one(&t[i], c0[i]));
			if (r == 0) {
				saved[i] = malloc(t[i].sz.out);
				assert_non_null(saved[i]);
				memcpy(saved[i], result_of(&t[i]), t[i].sz.out);
			}
			assert_memory_equal(result_of(&t[i]), saved[i],
					    t[i].sz.out);
		}
	for (i = 0; i < ALONE; i++) {
		poison(&t[i]);
		if (t[i].job.out == t[i].job.c)
			memcpy(t[i].job.c, c0[i], t[i].sz.c);
	}
	run_wave(&gpu, wave, ALONE);
	for (i = 0; i < ALONE; i++) {
		check_result(&t[i], 0);
		assert_true(t[i].job.h2d_us > 0); /* coalesced: copied */
		assert_memory_equal(result_of(&t[i]), saved[i], t[i].sz.out);
	}
	refill_alone(t, c0);
	for (i = 0; i < ALONE; i++)
		assert_true(run_one(&t[i], c0[i]));
	free_alone(t, c0);
	bench_close(&gpu, 1);
	cfg.direct_job_bytes = 1;
	bench_open(&gpu, &cfg);
	make_alone(t, c0, wave, s);
	for (i = 0; i < ALONE; i++) {
		assert_false(run_one(&t[i], c0[i]));
		assert_memory_equal(result_of(&t[i]), saved[i], t[i].sz.out);
		free(saved[i]);
	}
	free_alone(t, c0);
	bench_close(&gpu, 1);
}

#if GEMMD_FAULT_INJECTION
/* An out-of-memory injected into a batch fails one job, the one whose
 * share of the slab it hits; the rest of the batch runs as usual. */
static void test_fault_oom_batch(void **state)
{
	enum { N = 16 };
	static struct tjob t[N];
	static char *saved[N];
	gm_job *wave[N];
	gm_engine_config cfg = cuda_config();
	gm_job_desc d = square(GM_FP32, 64, 0);
	size_t i, failed = 0;

	setenv("GEMMD_INJECT_FAULT", "oom", 1);
	bench_open(&gpu, &cfg);
	unsetenv("GEMMD_INJECT_FAULT");
	make_same(t, N, &d, wave);
	run_wave(&gpu, wave, N);
	for (i = 0; i < N; i++)
		if (t[i].job.status == GM_ENOMEM) {
			assert_non_null(strstr(t[i].job.msg, "Memory"));
			failed++;
		} else {
			check_result(&t[i], 0);
		}
	assert_int_equal(failed, 1);
	for (i = 0; i < N; i++)
		saved[i] = NULL;
	for (i = 0; i < N; i++)
		if (t[i].job.status == GM_OK) {
			saved[i] = malloc(t[i].sz.out);
			assert_non_null(saved[i]);
			memcpy(saved[i], result_of(&t[i]), t[i].sz.out);
		}
	/* The fault is spent: alone, each job gives the batch's bits. */
	for (i = 0; i < N; i++) {
		gm_job *j = &t[i].job;

		poison(&t[i]);
		run_wave(&gpu, &j, 1);
		check_result(&t[i], 0);
		if (saved[i] != NULL)
			assert_memory_equal(result_of(&t[i]), saved[i],
					    t[i].sz.out);
	}
	assert_int_equal(gm_engine_faulted(gpu.e), 0);
	free_all(&gpu, t, N, saved);
	bench_close(&gpu, 1);
}
#endif

/* ---- warm-up ----------------------------------------------------------- */

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int calls, status;
	double ms;
} warm = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, -1, -1};

static void on_warm(void *arg, int status, double ms, const char *msg)
{
	pthread_mutex_lock(&warm.mu);
	warm.calls++;
	warm.status = status;
	warm.ms = ms;
	if (msg != NULL)
		printf("  warm-up: %s\n", msg);
	pthread_cond_signal(&warm.cv);
	pthread_mutex_unlock(&warm.mu);
}

/* Warm-up runs on the engine's threads; jobs submitted meanwhile wait
 * behind it and come back right; it calls back once. */
static void test_warmup(void **state)
{
	gm_engine_config cfg = cuda_config();
	gm_job_desc d[16];
	struct tjob t[16];
	double ms = -1;
	size_t i;

	bench_open(&gpu, &cfg);
	assert_int_equal(gm_engine_ready(gpu.e, NULL), 1);
	assert_int_equal(gm_engine_warmup(gpu.e, on_warm, NULL), GM_OK);
	combos(d, GM_FP32, GM_KERNEL_CUBLAS, &small_shapes[2]);
	for (i = 0; i < 16; i++)
		make_job(&gpu, &t[i], &d[i], 0);
	run_both(&gpu, t, 16);
	pthread_mutex_lock(&warm.mu);
	while (warm.calls == 0)
		pthread_cond_wait(&warm.cv, &warm.mu);
	pthread_mutex_unlock(&warm.mu);
	for (i = 0; i < 16; i++)
		check_result(&t[i], 0);
	printf("  warm-up took %.1f ms\n", warm.ms);
	assert_int_equal(warm.calls, 1);
	assert_int_equal(warm.status, GM_OK);
	assert_true(warm.ms > 0);
	assert_int_equal(gm_engine_ready(gpu.e, &ms), 1);
	assert_true(ms == warm.ms);
	for (i = 0; i < 16; i++)
		free_job(&gpu, &t[i]);
	bench_close(&gpu, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_mixed_wave, close_gpu),
		cmocka_unit_test_teardown(test_small_pool, close_gpu),
		cmocka_unit_test_teardown(test_alone_direct, close_gpu),
#if GEMMD_FAULT_INJECTION
		cmocka_unit_test_teardown(test_fault_oom_batch, close_gpu),
#endif
		cmocka_unit_test_teardown(test_warmup, close_gpu),
	};

	return gpu_main(tests, sizeof(tests) / sizeof(tests[0]));
}
