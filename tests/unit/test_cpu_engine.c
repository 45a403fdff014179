/*
 * test_cpu_engine.c - unit tests of the CPU engine, driven through
 * gm_engine.h the way the daemon drives it (gm_testengine.h): open,
 * submit waves, collect jobs from the done callback, close. Results are
 * checked against a naive long double reference for every transpose
 * pair, both layouts, fp64 and fp32, with and without C, on outputs
 * poisoned with NaN first so that an element left unwritten shows.
 * Inputs are fresh random numbers; the seed is printed and GM_TEST_SEED
 * replays one. Then waves mixing jobs OpenBLAS runs on one thread with
 * larger ones, the start callback and its clock, the warm-up, the
 * thread count.
 */
#include "gm_testengine.h"

static void test_open_cpu(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	gm_device_stats s;
	uint64_t size = 0;
	uint8_t *arena = gm_engine_arena(e, &size);

	assert_string_equal(gm_engine_name(e), "cpu");
	assert_int_equal(gm_engine_devices(e), 1);
	assert_int_equal(gm_engine_faulted(e), 0);
	assert_non_null(arena);
	assert_int_equal(size, 1u << 20);
	arena[0] = 1;
	arena[size - 1] = 1;
	gm_engine_device_stats(e, 0, &s);
	assert_memory_equal(s.name, "cpu (OpenBLAS, ", 15);
	assert_int_equal(s.jobs, 0);
	gm_engine_close(e);
}

static void test_open_auto(void **state)
{
	gm_engine *e;

	if (gm_engine_cuda_count() > 0)
		skip();
	e = open_engine(GM_ENGINE_AUTO, 0);
	assert_string_equal(gm_engine_name(e), "cpu");
	gm_engine_close(e);
}

static void test_open_cuda_not_built(void **state)
{
	gm_engine_config cfg = {.kind = GM_ENGINE_CUDA, .pool_bytes = 4096};
	gm_engine *e = (gm_engine *)1;
	char msg[128] = "";

	if (GEMMD_HAVE_CUDA)
		skip();
	assert_int_equal(gm_engine_cuda_count(), 0);
	assert_int_equal(
	    gm_engine_open(&cfg, on_done, &w, &e, msg, sizeof(msg)), GM_ENODEV);
	assert_null(e);
	assert_string_equal(msg, "this gemmd was built without CUDA");
}

static void test_open_bad_config(void **state)
{
	gm_engine_config cfg = {.kind = GM_ENGINE_CPU, .pool_bytes = 0};
	gm_engine *e = (gm_engine *)1;
	char msg[128] = "";

	assert_int_equal(
	    gm_engine_open(&cfg, on_done, &w, &e, msg, sizeof(msg)), GM_EINVAL);
	assert_null(e);
	assert_string_equal(msg, "pool_bytes 0 is not a usable size");
	cfg.kind = 7;
	cfg.pool_bytes = 4096;
	assert_int_equal(
	    gm_engine_open(&cfg, on_done, &w, &e, msg, sizeof(msg)), GM_EINVAL);
	assert_null(e);
	assert_string_equal(msg, "unknown engine kind 7");
}

/* A pool larger than the host's memory is refused before anything is
 * mapped, the message naming the key and what the host has; the
 * host's whole memory, or less, is not. */
static void test_open_pool_over_memory(void **state)
{
	uint64_t host =
	    (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	gm_engine_config cfg = {.kind = GM_ENGINE_CPU, .pool_bytes = host + 1};
	gm_engine *e = (gm_engine *)1;
	char msg[256] = "", want[64];

	assert_int_equal(
	    gm_engine_open(&cfg, on_done, &w, &e, msg, sizeof(msg)),
	    GM_ECONFIG);
	assert_null(e);
	snprintf(want, sizeof(want), "pool_bytes %llu (",
		 (unsigned long long)host + 1);
	assert_non_null(strstr(msg, want));
	assert_non_null(strstr(msg, "memory"));
	cfg.pool_bytes = 1u << 20;
	assert_int_equal(
	    gm_engine_open(&cfg, on_done, &w, &e, msg, sizeof(msg)), GM_OK);
	gm_engine_close(e);
}

/* Every dtype, layout, transpose pair and C choice for one shape, as one
 * wave. */
static void run_shape(uint32_t m, uint32_t n, uint32_t k)
{
	enum { N = 2 * 2 * 4 * 2 };
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	struct tjob t[N];
	gm_job *wave[N];
	gm_device_stats s;
	int i;

	for (i = 0; i < N; i++) {
		make_job(&t[i], i & 1 ? GM_FP32 : GM_FP64, (i >> 1) & 1,
			 (i >> 2) & 1, (i >> 3) & 1, (i >> 4) & 1, 0, m, n, k);
		wave[i] = &t[i].job;
	}
	run_checked(e, t, wave, N, &s);
	assert_true(s.busy_us > 0.0);
	/* No copies and no streams: all of the busy time is kernel time. */
	assert_true(s.kernel_us == s.busy_us);
	assert_true(s.copy_us == 0 && s.overlap_us == 0);
	assert_int_equal(s.nstreams, 0);
	gm_engine_close(e);
}

static void test_gemm(void **state)
{
	static const uint32_t shapes[][3] = {
	    {1, 1, 1}, {7, 13, 5}, {257, 129, 65}};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		run_shape(shapes[i][0], shapes[i][1], shapes[i][2]);
}

/* Operands read from copy_in, result written to copy_out, poisoned. */
static void run_copy(int dtype, int layout, int has_c, int use_copy_out)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	size_t outn = 31 * 17, inn = 31 * 9 + 9 * 17 + (has_c ? outn : 0);
	struct tjob t;
	gm_job *job = &t.job;
	uint8_t *in_copy, *dst;

	make_job(&t, dtype, layout, 1, 0, has_c, 0, 31, 17, 9);
	in_copy = malloc(inn * t.es);
	dst = malloc(outn * t.es);
	assert_non_null(in_copy);
	assert_non_null(dst);
	memcpy(in_copy, t.a, inn * t.es);
	fill_nan(dst, dtype, outn);
	job->copy_in = t.a;
	job->copy_in_bytes = inn * t.es;
	job->a = job->b = job->c = NULL;
	if (use_copy_out) {
		job->copy_out = dst;
		job->out = NULL;
	}
	assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
	wait_done(1);
	check_result(&t, use_copy_out ? dst : t.out);
	/* The input is the client's: C is read, never written over. */
	assert_memory_equal(in_copy, t.a, inn * t.es);
	free(in_copy);
	free(dst);
	free_job(&t);
	gm_engine_close(e);
}

static void test_copy_in_out(void **state)
{
	int dtype, layout, has_c;

	for (dtype = GM_FP64; dtype <= GM_FP32; dtype++)
		for (layout = GM_ROW_MAJOR; layout <= GM_COL_MAJOR; layout++)
			for (has_c = 0; has_c <= 1; has_c++)
				run_copy(dtype, layout, has_c, 1);
}

static void test_copy_in_only(void **state)
{
	run_copy(GM_FP64, GM_ROW_MAJOR, 1, 0);
	run_copy(GM_FP32, GM_COL_MAJOR, 0, 0);
}

static void test_copy_in_short(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	struct tjob t;
	gm_job *job = &t.job;

	make_job(&t, GM_FP64, GM_ROW_MAJOR, 0, 0, 1, 0, 4, 4, 4);
	job->copy_in = t.a;
	job->copy_in_bytes = 3 * 16 * 8 - 1;
	assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
	wait_done(1);
	assert_int_equal(job->status, GM_EINVAL);
	assert_string_equal(job->msg,
			    "copy_in holds 383 bytes, the job needs 384");
	free_job(&t);
	gm_engine_close(e);
}

static void test_unsupported_dtypes(void **state)
{
	static const struct {
		int dtype;
		const char *msg;
	} cases[] = {
	    {GM_TF32, "dtype tf32 is unsupported by the cpu engine"},
	    {GM_FP16, "dtype fp16 is unsupported by the cpu engine"},
	    {GM_BF16, "dtype bf16 is unsupported by the cpu engine"},
	};
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	struct tjob t;
	gm_job *job = &t.job;
	char msg[GM_MSG_TEXT + 1];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* Buffers sized as fp32, ample for these dtypes. */
		make_job(&t, GM_FP32, GM_ROW_MAJOR, 0, 0, 0, 0, 3, 3, 3);
		t.job.d.dtype = cases[i].dtype;
		msg[0] = '\0';
		assert_int_equal(
		    gm_engine_supports(e, &t.job.d, msg, sizeof(msg)),
		    GM_EUNSUPPORTED);
		assert_string_equal(msg, cases[i].msg);
		assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
		wait_done(i + 1);
		assert_int_equal(job->status, GM_EUNSUPPORTED);
		assert_string_equal(job->msg, cases[i].msg);
		assert_int_equal(job->device, -1);
		free_job(&t);
	}
	t.job.d.dtype = GM_FP64;
	assert_int_equal(gm_engine_supports(e, &t.job.d, msg, sizeof(msg)),
			 GM_OK);
	t.job.d.dtype = GM_FP32;
	assert_int_equal(gm_engine_supports(e, &t.job.d, msg, sizeof(msg)),
			 GM_OK);
	gm_engine_close(e);
}

static void test_tiled_kernel_runs_as_blas(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	struct tjob t;
	gm_job *job = &t.job;

	make_job(&t, GM_FP64, GM_ROW_MAJOR, 0, 1, 1, 0, 33, 17, 40);
	t.job.d.kernel = GM_KERNEL_TILED;
	assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
	wait_done(1);
	check_result(&t, t.out);
	free_job(&t);
	gm_engine_close(e);
}

static void test_close_drains(void **state)
{
	enum { N = 50 };
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	static struct tjob t[N];
	gm_job *job;
	int i;

	for (i = 0; i < N; i++) {
		make_job(&t[i], GM_FP64, GM_COL_MAJOR, 0, 0, 1, 0, 96, 96, 96);
		job = &t[i].job;
		assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
	}
	gm_engine_close(e);
	assert_int_equal(done_count(), N);
	for (i = 0; i < N; i++) {
		check_result(&t[i], t[i].out);
		free_job(&t[i]);
	}
}

static void test_submit_nothing(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);

	assert_int_equal(gm_engine_submit(e, NULL, 0), GM_OK);
	gm_engine_close(e);
	assert_int_equal(done_count(), 0);
}

/* ---- bursts, starts, warm-up ---- */

/* Jobs that OpenBLAS runs on one thread (m n k <= 2^18) go to the
 * crew in bursts, larger ones alone between them: a wave that mixes
 * both comes back whole, each job once and right. */
static void test_bursts(void **state)
{
	enum { N = 600 };
	static struct tjob t[N];
	static gm_job *wave[N];
	gm_engine *e = open_engine(GM_ENGINE_CPU, 2);
	gm_device_stats s;
	int i;

	for (i = 0; i < N; i++) {
		uint32_t d = i % 50 == 49 ? 80 : 8 + (uint32_t)(i % 57);

		make_job(&t[i], i & 1 ? GM_FP32 : GM_FP64, (i >> 1) & 1,
			 (i >> 2) & 1, (i >> 3) & 1, (i >> 4) & 1, 0, d, d + 1,
			 d + 2);
		wave[i] = &t[i].job;
	}
	run_checked(e, t, wave, N, &s);
	gm_engine_close(e);
	assert_int_equal(done_count(), N);
}

/* Starts as the engine reports them: which job, and the host clock. */
static struct {
	pthread_mutex_t mu;
	gm_job *job[8];
	double at[8];
	size_t n, calls;
} starts = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0, 0};

static void on_start(gm_job *job, uint32_t n, void *arg)
{
	assert_ptr_equal(arg, &w);
	pthread_mutex_lock(&starts.mu);
	starts.calls++;
	for (; n > 0; n--, job = job->next) {
		assert_true(starts.n < 8);
		starts.job[starts.n] = job;
		starts.at[starts.n++] = now_us();
	}
	pthread_mutex_unlock(&starts.mu);
}

/*
 * Large jobs of one wave run one after another: each is told started
 * when the worker takes it, in order, and its start_us (its BLAS call)
 * comes after the one before it ended, so the time it waited behind it
 * is its own queue time, not hidden; a job already past its deadline
 * comes back GM_ETIMEDOUT, never started, its output untouched. The
 * device's busy time never passes the wall time.
 */
static void test_starts(void **state)
{
	enum { N = 3 };
	struct tjob t[N + 1];
	gm_job *wave[N + 1];
	gm_engine *e = open_engine(GM_ENGINE_CPU, 1);
	double t0 = now_us(), t1;
	gm_device_stats s;
	size_t i;

	gm_engine_on_start(e, on_start);
	starts.n = 0;
	for (i = 0; i <= N; i++) {
		make_job(&t[i], GM_FP64, GM_ROW_MAJOR, 0, 0, 0, 0, 120, 110,
			 100);
		wave[i] = &t[i].job;
	}
	t[1].job.deadline_us = t0 - 1.0; /* passed */
	t[2].job.deadline_us = t0 + 600e6;
	assert_int_equal(gm_engine_submit(e, wave, N + 1), GM_OK);
	wait_done(N + 1);
	t1 = now_us();
	assert_int_equal(starts.n, N);
	assert_ptr_equal(starts.job[0], &t[0].job);
	assert_ptr_equal(starts.job[1], &t[2].job);
	assert_ptr_equal(starts.job[2], &t[3].job);
	assert_int_equal(t[1].job.status, GM_ETIMEDOUT);
	assert_true(t[1].job.start_us == 0.0);
	assert_true(isnan(gm_testref_get(GM_FP64, t[1].out, 0)));
	for (i = 0; i < N; i++) {
		const gm_job *j = starts.job[i];

		assert_true(j->start_us >= starts.at[i]);
		assert_true(j->start_us + j->kernel_us <= t1);
		if (i > 0)
			assert_true(j->start_us >=
				    starts.job[i - 1]->start_us +
					starts.job[i - 1]->kernel_us);
	}
	check_result(&t[0], t[0].out);
	check_result(&t[2], t[2].out);
	check_result(&t[3], t[3].out);
	gm_engine_device_stats(e, 0, &s);
	assert_true(s.busy_us > 0.0 && s.busy_us <= now_us() - t0);
	for (i = 0; i <= N; i++)
		free_job(&t[i]);
	gm_engine_close(e);
}

/* Small jobs taken together are told started together, in one call
 * (one hand-off to the daemon's loop), in the order of the wave. */
static void test_burst_starts(void **state)
{
	enum { N = 6 };
	struct tjob t[N];
	gm_job *wave[N];
	gm_engine *e = open_engine(GM_ENGINE_CPU, 1);
	size_t i;

	gm_engine_on_start(e, on_start);
	starts.n = starts.calls = 0;
	for (i = 0; i < N; i++) {
		make_job(&t[i], GM_FP32, GM_ROW_MAJOR, 0, 0, 0, 0, 9, 10, 11);
		wave[i] = &t[i].job;
	}
	assert_int_equal(gm_engine_submit(e, wave, N), GM_OK);
	wait_done(N);
	assert_int_equal(starts.calls, 1);
	assert_int_equal(starts.n, N);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(starts.job[i], &t[i].job);
		check_result(&t[i], t[i].out);
		free_job(&t[i]);
	}
	gm_engine_close(e);
}

/* Warm-up runs on the worker and calls back once; jobs submitted
 * meanwhile wait behind it. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int calls, status;
	double ms;
} warm = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, -1, -1};

static void on_warm(void *arg, int status, double ms, const char *msg)
{
	assert_ptr_equal(arg, &warm);
	pthread_mutex_lock(&warm.mu);
	warm.calls++;
	warm.status = status;
	warm.ms = ms;
	pthread_cond_signal(&warm.cv);
	pthread_mutex_unlock(&warm.mu);
}

static void test_warmup(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	struct tjob t;
	gm_job *job = &t.job;
	double ms = -1;

	assert_int_equal(gm_engine_ready(e, &ms), 1);
	assert_true(ms == 0.0);
	assert_int_equal(gm_engine_warmup(e, on_warm, &warm), GM_OK);
	make_job(&t, GM_FP64, GM_ROW_MAJOR, 0, 0, 1, 0, 5, 6, 7);
	assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
	pthread_mutex_lock(&warm.mu);
	while (warm.calls == 0)
		pthread_cond_wait(&warm.cv, &warm.mu);
	pthread_mutex_unlock(&warm.mu);
	wait_done(1);
	check_result(&t, t.out);
	assert_int_equal(warm.calls, 1);
	assert_int_equal(warm.status, GM_OK);
	assert_true(warm.ms >= 0.0);
	assert_int_equal(gm_engine_ready(e, &ms), 1);
	assert_true(ms == warm.ms);
	free_job(&t);
	gm_engine_close(e);
}

static void test_thread_count(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 1);
	gm_device_stats s;

	gm_engine_device_stats(e, 0, &s);
	assert_string_equal(s.name, "cpu (OpenBLAS, 1 threads)");
	gm_engine_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_cpu),
	    cmocka_unit_test(test_open_auto),
	    cmocka_unit_test(test_open_cuda_not_built),
	    cmocka_unit_test(test_open_bad_config),
	    cmocka_unit_test(test_open_pool_over_memory),
	    cmocka_unit_test(test_gemm),
	    cmocka_unit_test(test_copy_in_out),
	    cmocka_unit_test(test_copy_in_only),
	    cmocka_unit_test(test_copy_in_short),
	    cmocka_unit_test(test_unsupported_dtypes),
	    cmocka_unit_test(test_tiled_kernel_runs_as_blas),
	    cmocka_unit_test(test_close_drains),
	    cmocka_unit_test(test_submit_nothing),
	    cmocka_unit_test(test_bursts),
	    cmocka_unit_test(test_starts),
	    cmocka_unit_test(test_burst_starts),
	    cmocka_unit_test(test_warmup),
	    cmocka_unit_test(test_thread_count),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
