/*
 * test_gpu_daemon.c - a real gemmd on the CUDA engine, driven through the
 * client library and checked against the CPU engine in this process
 * (gpu_daemon_fx.h).
 *
 * Every dtype, transpose pair, layout, kernel and with/without C runs on
 * 1x1x1, 7x13x5, 257x129x65 and 1024x1000x999, one request of 16 jobs
 * per (dtype, kernel, shape), all requests of a case in flight at once.
 * The CPU engine recomputes each job in fp64 from the very values gemmd
 * received (fp16, bf16 and tf32 inputs rounded here first), and the
 * error, measured against |alpha||op(A)||op(B)| + |beta||C|, must stay
 * under a bound scaled to the dtype and K. Each job's timings must be
 * positive phases inside its total. After each case the stats document
 * must show the host pool, the device pools and the queue empty. Further
 * cases: mapped output; depth-first issue with tiled as the default
 * kernel and a small device pool; requests larger than the host pool,
 * through the socket into pageable memory, tiled. Concurrent jobs whose
 * phases add up and injected faults are in test_gpu_daemon_faults.c.
 * Exits 77 (skipped) without a GPU or without $GEMMD. GM_TEST_SEED=n
 * repeats a run; GM_TEST_FILTER=pattern picks cases.
 */
#include "gpu_daemon_fx.h"

static void test_fp64(void **state)
{
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP64, GEMMD_KERNEL_TILED}};

	run_case(v, 2);
}

static void test_fp32(void **state)
{
	const struct variant v[] = {{GEMMD_FP32, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP32, GEMMD_KERNEL_TILED}};

	run_case(v, 2);
}

static void test_tf32(void **state)
{
	const struct variant v[] = {{GEMMD_TF32, GEMMD_KERNEL_CUBLAS}};

	run_case(v, 1);
}

static void test_fp16(void **state)
{
	const struct variant v[] = {{GEMMD_FP16, GEMMD_KERNEL_CUBLAS}};

	run_case(v, 1);
}

static void test_bf16(void **state)
{
	const struct variant v[] = {{GEMMD_BF16, GEMMD_KERNEL_CUBLAS}};

	run_case(v, 1);
}

/* The kernels of jobs too large to coalesce write C straight into mapped
 * host memory: no D2H copy. */
static void test_mapped_output(void **state)
{
	const char *sets[] = {"mapped_output=true", NULL};
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP32, GEMMD_KERNEL_TILED},
				    {GEMMD_BF16, GEMMD_KERNEL_CUBLAS}};
	unsigned jobs;

	start_daemon(sets, NULL);
	jobs = sweep(v, 3, 1);
	check_idle(jobs, 0);
	stop_daemon();
}

/* Depth-first issue, tiled as the kernel of jobs that name none, and a
 * device pool that holds two of the largest jobs, so that most of a wave
 * waits inside the engine. */
static void test_depth_tiled_default(void **state)
{
	const char *sets[] = {"issue_order=depth", "kernel=tiled",
			      "device_pool_bytes=64M", "streams=3", NULL};
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_DEFAULT},
				    {GEMMD_FP32, GEMMD_KERNEL_DEFAULT},
				    {GEMMD_FP16, GEMMD_KERNEL_CUBLAS}};
	unsigned jobs;

	start_daemon(sets, NULL);
	jobs = sweep(v, 3, 0);
	check_idle(jobs, 0);
	stop_daemon();
}

/* Requests larger than the host pool, through the socket: received into
 * pageable memory (pageable_max_bytes) and their jobs tiled by the
 * engine out of core, from pageable memory; every transpose, layout and
 * C, both kernels, right. One request at a time, so that the cap holds
 * each; all of them in pageable memory, none of it held afterwards. */
static void test_pageable(void **state)
{
	const char *sets[] = {"pool_bytes=1M", "pageable_max_bytes=1G", NULL};
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP32, GEMMD_KERNEL_TILED},
				    {GEMMD_FP16, GEMMD_KERNEL_CUBLAS}};
	const gemmd_open_opts socket = {.flags = GEMMD_OPEN_NO_SHM};
	unsigned jobs = 0, failed = 0, nq = 0;
	struct treq q;
	gemmd_client *c;
	cJSON *st;

	start_daemon(sets, NULL);
	assert_int_equal(gemmd_open(dmn.ipc, &socket, &c), GM_OK);
	for (size_t i = 0; i < 3; i++)
		for (int sh = 2; sh < SHAPES; sh++) {
			make_req(&q, &v[i], &shapes[sh], REQ_JOBS);
			q.tiled = 1;
			submit_req(c, &q, TIMEOUT_MS);
			wait_reqs(&q, 1, TIMEOUT_MS / 1000.0);
			check_req(&q, 0, GM_OK, &failed);
			jobs += q.n;
			nq++;
			free_req(&q);
		}
	assert_int_equal(failed, 0);
	/* A request's memory goes once its last reply is written. */
	for (int i = 0; i < 100; i++) {
		st = fetch_stats(c);
		if (stat_at(st, "pageable.bytes") == 0)
			break;
		cJSON_Delete(st);
		st = NULL;
		usleep(50000);
	}
	assert_non_null(st);
	printf("  pageable: %.0f requests, peak %.0f MiB\n",
	       stat_at(st, "pageable.requests"),
	       stat_at(st, "pageable.peak_bytes") / MIB);
	assert_true(stat_at(st, "pageable.requests") == nq);
	assert_true(stat_at(st, "pageable.held") == 0);
	cJSON_Delete(st);
	gemmd_close(c);
	check_idle(jobs, 0);
	stop_daemon();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_fp64, reap_daemon),
	    cmocka_unit_test_teardown(test_fp32, reap_daemon),
	    cmocka_unit_test_teardown(test_tf32, reap_daemon),
	    cmocka_unit_test_teardown(test_fp16, reap_daemon),
	    cmocka_unit_test_teardown(test_bf16, reap_daemon),
	    cmocka_unit_test_teardown(test_mapped_output, reap_daemon),
	    cmocka_unit_test_teardown(test_depth_tiled_default, reap_daemon),
	    cmocka_unit_test_teardown(test_pageable, reap_daemon),
	};

	return GPU_DAEMON_MAIN(tests);
}
