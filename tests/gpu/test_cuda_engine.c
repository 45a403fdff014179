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
 * (jobs wait inside the engine), mapped output, unsupported jobs (jobs
 * too big for the device are tiled: test_cuda_ooc.c), no device memory
 * or jobs left behind, and, in fault-injection
 * builds, an injected out-of-memory and a real sticky fault (last: it
 * poisons the process's CUDA context). Exits 77 (skipped) without a GPU.
 * GM_TEST_QUICK=1 keeps to the small sizes and skips the sticky fault
 * (for compute-sanitizer); GM_TEST_FILTER=pattern picks cases;
 * GM_TEST_SEED=n repeats a run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "gm_build.h"
#include "gputest.h"

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

/*
 * Jobs that wait for device memory are still queued. Two long jobs
 * leave 1 MiB of a 769 MiB device pool free. Behind them in their wave,
 * a third is taken back while it waits and never comes back, and a
 * fourth passes its 3 ms deadline while it waits and comes back
 * ETIMEDOUT. The next wave's eight small jobs of one shape (6 MiB) are
 * cut into two batches of four: the first waits for memory, the second
 * waits in the groups; one job of each is taken back and never comes
 * back, the other six come back right.
 */
static void test_cancel_waiting(void **state)
{
	enum { BIG = 4, SMALL = 8, ALL = BIG + SMALL };
	gm_engine_config cfg = cuda_config();
	struct timespec pause = {0, 2 * 1000 * 1000};
	gm_job_desc big = {0}, mid = {0}, small = {0};
	gm_job *w[ALL], *refs[SMALL];
	struct tjob t[ALL];
	double t0;
	int i;

	cfg.pool_bytes = 2048 * MIB;
	cfg.device_pool_bytes = 769 * MIB;
	bench_open(&gpu, &cfg);
	big.dtype = mid.dtype = GM_FP64;
	big.kernel = mid.kernel = GM_KERNEL_TILED; /* slow: tens of ms */
	big.m = big.n = big.k = 4096;		   /* 384 MiB */
	mid.m = mid.n = mid.k = 2048;		   /* 96 MiB */
	small.dtype = GM_FP32;
	small.kernel = GM_KERNEL_CUBLAS;
	small.m = small.n = small.k = 256; /* 768 KiB */
	big.alpha = mid.alpha = small.alpha = 1;
	for (i = 0; i < ALL; i++) {
		make_job(&gpu, &t[i],
			 i < 3	   ? &big
			 : i < BIG ? &mid
				   : &small,
			 0);
		make_ref(&t[i]);
		w[i] = &t[i].job;
	}
	t0 = seconds(CLOCK_MONOTONIC);
	t[3].job.deadline_us = t0 * 1e6 + 3000; /* gm_engine_now_us's clock */
	assert_int_equal(gm_engine_submit(gpu.e, w, BIG), GM_OK);
	assert_int_equal(gm_engine_submit(gpu.e, w + BIG, SMALL), GM_OK);
	nanosleep(&pause, NULL);
	assert_int_equal(gm_engine_cancel(gpu.e, w[2]), GM_OK);
	pause.tv_nsec = 8 * 1000 * 1000; /* the small wave waits by then */
	nanosleep(&pause, NULL);
	assert_int_equal(gm_engine_cancel(gpu.e, w[BIG + 1]), GM_OK);
	assert_int_equal(gm_engine_cancel(gpu.e, w[BIG + 5]), GM_OK);
	wait_done(&gpu, ALL - 3);
	gpu.jobs += ALL - 3; /* handed back: what the devices count */
	printf("  the long jobs took %.1f ms, the one past its deadline "
	       "came back after %.1f ms, the small ones after %.1f ms\n",
	       (t[1].back - t0) * 1e3, (t[3].back - t0) * 1e3,
	       (t[BIG].back - t0) * 1e3);
	assert_int_equal(t[0].job.status, GM_OK);
	assert_int_equal(t[1].job.status, GM_OK);
	assert_int_equal(t[2].returned, 0);
	assert_int_equal(t[3].returned, 1);
	assert_int_equal(t[3].job.status, GM_ETIMEDOUT);
	assert_true(t[3].back < t[0].back);
	for (i = BIG; i < ALL; i++) {
		int taken = i == BIG + 1 || i == BIG + 5;

		assert_int_equal(t[i].returned, !taken);
		assert_int_equal(t[i].job.status, GM_OK);
		refs[i - BIG] = &t[i].ref;
	}
	run_wave(&cpu, refs, SMALL); /* its returns count too */
	for (i = BIG; i < ALL; i++)
		if (i != BIG + 1 && i != BIG + 5)
			check_result(&t[i], 0);
	for (i = 0; i < ALL; i++)
		free_job(&gpu, &t[i]);
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
	/* A job larger than the pool is not refused but tiled
	 * (test_cuda_ooc.c). */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fp64, close_gpu),
		cmocka_unit_test_teardown(test_fp32, close_gpu),
		cmocka_unit_test_teardown(test_tf32, close_gpu),
		cmocka_unit_test_teardown(test_fp16, close_gpu),
		cmocka_unit_test_teardown(test_bf16, close_gpu),
		cmocka_unit_test_teardown(test_depth_small_pool, close_gpu),
		cmocka_unit_test_teardown(test_mapped_output, close_gpu),
		cmocka_unit_test_teardown(test_cancel_waiting, close_gpu),
		cmocka_unit_test_teardown(test_refused, close_gpu),
		cmocka_unit_test_teardown(test_idle_cpu, close_gpu),
#if GEMMD_FAULT_INJECTION
		cmocka_unit_test_teardown(test_fault_oom, close_gpu),
		cmocka_unit_test(
		    test_fault_sticky), /* last: kills the context */
#endif
	};

	return gpu_main(tests, sizeof(tests) / sizeof(tests[0]));
}
