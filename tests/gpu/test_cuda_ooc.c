/*
 * test_cuda_ooc.c - jobs larger than their share of the device, and jobs
 * in pageable memory, run out of core by the CUDA engine, checked against
 * the CPU engine.
 *
 * The device pool is forced small (1 MiB: a 512 KiB share) so that a
 * 1000 x 900 x 1100 job is cut into tens of tiles and panels: every
 * transpose, layout and C, fp64 and fp32 with cuBLAS and the tiled
 * kernel, fp16 and bf16 with cuBLAS (in a pool where they need one panel
 * per tile: a half-precision tile is rounded to its dtype between
 * panels), half of them staged from copy_in / copy_out as the socket
 * path does. The same from pageable memory, every operand or some; a
 * pageable job large enough that its blocks cross the staging buffers
 * in several chunks; small jobs submitted beside a long tiled job come
 * back before it. The device pool and memory are back where they were
 * after each case. In fault-injection builds, an out-of-memory and a
 * real sticky fault land in the middle of a tiled job: one error per
 * job, never a result presented as success. Exits 77 without a GPU.
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
#include "gm_ooc.h"
#include "gputest.h"

#define KIB	   1024ull
#define SMALL_POOL (1 * MIB)
#define SHARE_PCT  50 /* ooc_share_percent: a tiled job holds half */

static const struct shape tall = {1000, 900, 1100};

static gm_engine_config ooc_config(uint64_t device_pool)
{
	gm_engine_config c = cuda_config();

	c.device_pool_bytes = device_pool;
	c.ooc_share_pct = SHARE_PCT;
	return c;
}

/* Says how d is tiled in a pool of pool bytes; returns its panels. */
static uint32_t show_plan(const gm_job_desc *d, uint64_t pool)
{
	gm_ooc_plan p;

	assert_int_equal(gm_ooc_plan_make(d, gm_ooc_share(pool, SHARE_PCT),
					  GM_OOC_LINE_BYTES, &p),
			 GM_OK);
	printf("  %s %ux%ux%u, %llu KiB pool: %u x %u tiles of %u x %u, %u "
	       "panels of %u, %.1f MB in\n",
	       gm_dtype_name(d->dtype), d->m, d->n, d->k,
	       (unsigned long long)(pool / KIB), p.tm, p.tn, p.mt, p.nt, p.nk,
	       p.kb, p.h2d_bytes / 1e6);
	assert_true(gm_ooc_tiles(&p) > 1);
	return p.nk;
}

static void check_tiled(int dtype, int kernel, uint64_t pool)
{
	gm_job_desc d[16];
	size_t n = combos(d, dtype, kernel, &tall);

	show_plan(&d[0], pool);
	check_wave(&gpu, d, n, 0, "tiled");
}

/* ---- cases -------------------------------------------------------------- */

static void test_fp64(void **state)
{
	gm_engine_config cfg = ooc_config(SMALL_POOL);

	bench_open(&gpu, &cfg);
	check_tiled(GM_FP64, GM_KERNEL_CUBLAS, SMALL_POOL);
	check_tiled(GM_FP64, GM_KERNEL_TILED, SMALL_POOL);
	bench_close(&gpu, 1);
}

static void test_fp32(void **state)
{
	gm_engine_config cfg = ooc_config(SMALL_POOL);

	bench_open(&gpu, &cfg);
	check_tiled(GM_FP32, GM_KERNEL_CUBLAS, SMALL_POOL);
	check_tiled(GM_FP32, GM_KERNEL_TILED, SMALL_POOL);
	bench_close(&gpu, 1);
}

/* Half precision in a pool where each tile takes one panel. */
static void test_half(void **state)
{
	gm_engine_config cfg = ooc_config(8 * MIB);
	gm_job_desc d[16];

	bench_open(&gpu, &cfg);
	combos(d, GM_FP16, GM_KERNEL_CUBLAS, &tall);
	assert_int_equal(show_plan(&d[0], 8 * MIB), 1);
	check_tiled(GM_FP16, GM_KERNEL_CUBLAS, 8 * MIB);
	check_tiled(GM_BF16, GM_KERNEL_CUBLAS, 8 * MIB);
	check_tiled(GM_TF32, GM_KERNEL_CUBLAS, 8 * MIB);
	bench_close(&gpu, 1);
}

/* ---- pageable memory ----------------------------------------------------- */

/* Moves the operands of t that flags names (GM_PAGEABLE_*) into ordinary
 * memory, mem[i] for operand i (A, B, C, result), and poisons their
 * places in the arena, which the engine must not read. */
static void make_pageable(struct tjob *t, unsigned flags, void *mem[4])
{
	void **ptr[4] = {&t->job.a, &t->job.b, &t->job.c, &t->job.out};
	uint64_t sz[4] = {t->sz.a, t->sz.b, t->sz.c, t->sz.out};

	for (int i = 0; i < 4; i++) {
		mem[i] = NULL;
		if (!(flags & (1u << i)) || sz[i] == 0)
			continue;
		assert_non_null(mem[i] = malloc(sz[i]));
		memcpy(mem[i], *ptr[i], sz[i]);
		memset(*ptr[i], 0xff, sz[i]);
		*ptr[i] = mem[i];
	}
	t->job.host_pageable = (uint8_t)flags;
}

/* desc[0..n-1] with the operands flags[i % nflags] names pageable. */
static void check_pageable(const gm_job_desc *desc, size_t n,
			   const unsigned *flags, size_t nflags)
{
	static struct tjob t[WAVE_MAX];
	static void *mem[WAVE_MAX][4];
	size_t i;

	for (i = 0; i < n; i++) {
		make_job(&gpu, &t[i], &desc[i], 0);
		make_pageable(&t[i], flags[i % nflags], mem[i]);
	}
	run_both(&gpu, t, n);
	for (i = 0; i < n; i++)
		check_result(&t[i], 0);
	report(t, n, "pageable");
	for (i = 0; i < n; i++) {
		for (int k = 0; k < 4; k++)
			free(mem[i][k]);
		free_job(&gpu, &t[i]);
	}
}

static void test_pageable(void **state)
{
	static const unsigned all = GM_PAGEABLE_ALL;
	static const unsigned some[] = {GM_PAGEABLE_A | GM_PAGEABLE_OUT,
					GM_PAGEABLE_B | GM_PAGEABLE_C,
					GM_PAGEABLE_ALL};
	gm_engine_config cfg = ooc_config(SMALL_POOL);
	gm_job_desc d[16];
	size_t n;

	bench_open(&gpu, &cfg);
	n = combos(d, GM_FP64, GM_KERNEL_CUBLAS, &tall);
	check_pageable(d, n, &all, 1);
	n = combos(d, GM_FP32, GM_KERNEL_CUBLAS, &tall);
	check_pageable(d, n, some, 3);
	bench_close(&gpu, 1);
}

/* A pageable job that fits the device: one tile, whose blocks (A of
 * 2500 x 960 fp64, 19 MB) cross the 8 MiB staging buffers in chunks. */
static void test_pageable_chunks(void **state)
{
	static const unsigned all = GM_PAGEABLE_ALL;
	gm_engine_config cfg = ooc_config(256 * MIB);
	gm_job_desc d[16];
	struct shape s = {2500, 2300, 2700};

	bench_open(&gpu, &cfg);
	combos(d, GM_FP64, GM_KERNEL_CUBLAS, &s);
	check_pageable(&d[0], 1, &all, 1);  /* row-major */
	check_pageable(&d[13], 1, &all, 1); /* column-major, C, A^T */
	bench_close(&gpu, 1);
}

/* Small jobs submitted while a long tiled job runs come back before it:
 * the tiled job holds half the pool and low-priority streams, the small
 * ones take the rest. */
static void test_beside(void **state)
{
	enum { SMALL = 8 };
	static struct tjob big, small[SMALL];
	gm_engine_config cfg = ooc_config(64 * MIB);
	gm_job *jobs[SMALL], *refs[SMALL + 1], *bj = &big.job;
	struct shape s = {6144, 6144, 6144}, t = {64, 64, 64};
	gm_job_desc d[16];
	double t0, worst = 0;

	cfg.pool_bytes = 1200 * MIB;
	bench_open(&gpu, &cfg);
	/* First calls load cuBLAS's kernels (100 ms): not what is timed. */
	assert_int_equal(gm_engine_warmup(gpu.e, NULL, NULL), GM_OK);
	while (!gm_engine_ready(gpu.e, NULL))
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	combos(d, GM_FP64, GM_KERNEL_CUBLAS, &s);
	show_plan(&d[0], 64 * MIB);
	make_job(&gpu, &big, &d[0], 0);
	combos(d, GM_FP32, GM_KERNEL_CUBLAS, &t);
	for (int i = 0; i < SMALL; i++) {
		make_job(&gpu, &small[i], &d[i], 0);
		make_ref(&small[i]);
		jobs[i] = &small[i].job;
		refs[i] = &small[i].ref;
	}
	make_ref(&big);
	refs[SMALL] = &big.ref;
	run_wave(&cpu, refs, SMALL + 1);
	t0 = seconds(CLOCK_MONOTONIC);
	assert_int_equal(gm_engine_submit(gpu.e, &bj, 1), GM_OK);
	assert_int_equal(gm_engine_submit(gpu.e, jobs, SMALL), GM_OK);
	wait_done(&gpu, SMALL + 1);
	gpu.jobs += SMALL + 1;
	check_result(&big, 0);
	for (int i = 0; i < SMALL; i++) {
		check_result(&small[i], 0);
		assert_true(small[i].back < big.back);
		if (small[i].back - t0 > worst)
			worst = small[i].back - t0;
	}
	printf("  beside a %.0f ms tiled job, small jobs back within %.2f ms\n",
	       (big.back - t0) * 1e3, worst * 1e3);
	free_job(&gpu, &big);
	for (int i = 0; i < SMALL; i++)
		free_job(&gpu, &small[i]);
	bench_close(&gpu, 1);
}

/* A device pool whose share cannot hold 64 x 64 tiles: refused, with
 * the key to raise. */
static void test_too_small(void **state)
{
	gm_engine_config cfg = ooc_config(64 * KIB);
	gm_job_desc d[16];
	struct tjob t;
	gm_job *j = &t.job;

	bench_open(&gpu, &cfg);
	combos(d, GM_FP64, GM_KERNEL_CUBLAS, &tall);
	make_job(&gpu, &t, &d[0], 0);
	run_wave(&gpu, &j, 1);
	assert_int_equal(j->status, GM_ETOOBIG);
	assert_non_null(strstr(j->msg, "device_pool_bytes"));
	free_job(&gpu, &t);
	bench_close(&gpu, 1);
}

#if GEMMD_FAULT_INJECTION
static void open_armed(const char *fault)
{
	gm_engine_config cfg = ooc_config(SMALL_POOL);

	setenv("GEMMD_INJECT_FAULT", fault, 1);
	bench_open(&gpu, &cfg);
	unsetenv("GEMMD_INJECT_FAULT");
}

/* Three tiled jobs, nothing else (a small job would meet the armed
 * fault first); every job comes back once, and those that say GM_OK are
 * right. Returns the jobs that failed with code. */
static int faulty_wave(struct tjob *t, int code)
{
	gm_job_desc d[16];
	int failed = 0;

	combos(d, GM_FP64, GM_KERNEL_CUBLAS, &tall);
	for (int i = 0; i < 3; i++)
		make_job(&gpu, &t[i], &d[i * 6], 0);
	run_both(&gpu, t, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(t[i].returned, 1);
		if (t[i].job.status == code) {
			failed++;
			assert_true(t[i].job.msg[0] != '\0');
			printf("  %s: %s\n", gm_errname(code), t[i].job.msg);
		} else {
			check_result(&t[i], 0);
		}
	}
	return failed;
}

/* An out-of-memory half-way through a tiled job fails that job alone;
 * the engine goes on tiling. */
static void test_fault_oom(void **state)
{
	struct tjob t[3];

	open_armed("oom");
	assert_int_equal(faulty_wave(t, GM_ENOMEM), 1);
	assert_int_equal(t[0].job.status, GM_ENOMEM); /* the runner's first */
	assert_int_equal(gm_engine_faulted(gpu.e), 0);
	for (int i = 0; i < 3; i++)
		free_job(&gpu, &t[i]);
	check_tiled(GM_FP64, GM_KERNEL_CUBLAS, SMALL_POOL);
	bench_close(&gpu, 1);
}

/* A real illegal-address fault half-way through a tiled job: that job
 * and those queued behind it fail with GM_EGPUFAULT, the engine is
 * faulted and refuses more work. */
static void test_fault_sticky(void **state)
{
	struct tjob t[3];
	gm_job *j = &t[0].job;

	if (quick)
		skip();
	open_armed("sticky");
	assert_int_equal(faulty_wave(t, GM_EGPUFAULT), 3);
	for (int i = 0; i < 3; i++)
		assert_non_null(strstr(t[i].job.msg, "illegal"));
	assert_int_equal(gm_engine_faulted(gpu.e), 1);
	assert_int_equal(gm_engine_submit(gpu.e, &j, 1), GM_EGPUFAULT);
	assert_int_equal(gpu.done, 3); /* the refused job never came back */
	for (int i = 0; i < 3; i++)
		free_job(&gpu, &t[i]);
	bench_close(&gpu, 0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fp64, close_gpu),
		cmocka_unit_test_teardown(test_fp32, close_gpu),
		cmocka_unit_test_teardown(test_half, close_gpu),
		cmocka_unit_test_teardown(test_pageable, close_gpu),
		cmocka_unit_test_teardown(test_pageable_chunks, close_gpu),
		cmocka_unit_test_teardown(test_beside, close_gpu),
		cmocka_unit_test_teardown(test_too_small, close_gpu),
#if GEMMD_FAULT_INJECTION
		cmocka_unit_test_teardown(test_fault_oom, close_gpu),
		cmocka_unit_test(
		    test_fault_sticky), /* last: kills the context */
#endif
	};

	return gpu_main(tests, sizeof(tests) / sizeof(tests[0]));
}
