/*
 * test_cpu_engine.c - unit tests of the CPU engine, driven through
 * gm_engine.h the way the daemon drives it (gm_testengine.h): open,
 * submit waves, collect jobs from the done callback, close. Results are
 * checked against a naive long double reference for every transpose
 * pair, both layouts, fp64 and fp32, with and without C, on outputs
 * poisoned with NaN first so that an element left unwritten shows.
 * Inputs are fresh random numbers; the seed is printed and GM_TEST_SEED
 * replays one. Bursts, starts, warm-up and the thread count are in
 * test_cpu_engine_starts.c.
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

static void test_gemm_1x1x1(void **state)
{
	run_shape(1, 1, 1);
}

static void test_gemm_7x13x5(void **state)
{
	run_shape(7, 13, 5);
}

static void test_gemm_257x129x65(void **state)
{
	run_shape(257, 129, 65);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_cpu),
	    cmocka_unit_test(test_open_auto),
	    cmocka_unit_test(test_open_cuda_not_built),
	    cmocka_unit_test(test_open_bad_config),
	    cmocka_unit_test(test_open_pool_over_memory),
	    cmocka_unit_test(test_gemm_1x1x1),
	    cmocka_unit_test(test_gemm_7x13x5),
	    cmocka_unit_test(test_gemm_257x129x65),
	    cmocka_unit_test(test_copy_in_out),
	    cmocka_unit_test(test_copy_in_only),
	    cmocka_unit_test(test_copy_in_short),
	    cmocka_unit_test(test_unsupported_dtypes),
	    cmocka_unit_test(test_tiled_kernel_runs_as_blas),
	    cmocka_unit_test(test_close_drains),
	    cmocka_unit_test(test_submit_nothing),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
