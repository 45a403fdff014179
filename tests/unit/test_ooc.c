/*
 * test_ooc.c - unit tests of gm_ooc: the tile planner's arithmetic and
 * the blocks it copies (ooc_fx.h). Its schedule carried out on the CPU is
 * in test_ooc_schedule.c.
 */
#include "ooc_fx.h"

/* ---- the plan ------------------------------------------------------ */

/* A plan of d in budget, made and checked (check_plan). */
static void plan_ok(const gm_job_desc *d, uint64_t budget, uint64_t line,
		    gm_ooc_plan *p)
{
	assert_int_equal(gm_ooc_plan_make(d, budget, line, p), GM_OK);
	check_plan(p, budget);
}

/* The benchmark's job: three 8 GiB fp64 operands, half of a 4 GiB
 * pool. By bytes alone, three by three tiles of 10944 (10880 the last)
 * with panels 640 deep copy the least, 6 K of A and B per element of C,
 * 51.5 GB; but row-major A then crosses in lines of 5 KiB. Four by three
 * tiles of 8192 x 10944 copy 7 K (60.1 GB) with panels 2240 deep: lines
 * of 17.5 KiB, 1.9 million of them instead of 5.4. */
static void test_plan_large(void **state)
{
	gm_job_desc d = desc(GM_FP64, 32768, 32768, 32768);
	uint64_t share = gm_ooc_share(4 * GIB, 50);
	gm_ooc_plan p;

	assert_int_equal(share, 2 * GIB);
	plan_ok(&d, share, 1, &p);
	assert_int_equal(p.mt, 10944);
	assert_int_equal(p.nt, 10944);
	assert_int_equal(p.tm, 3);
	assert_int_equal(p.tn, 3);
	assert_int_equal(p.kb, 640);
	assert_int_equal(p.nk, 52);
	assert_int_equal(p.load_c, 0);
	assert_int_equal(p.slots[GM_OOC_C], 2);
	assert_int_equal(p.h2d_bytes, 8ull * 32768 * 32768 * 6);
	assert_int_equal(p.h2d_lines, 52ull * 3 * 32768 + 9ull * 32768);
	plan_ok(&d, share, GM_OOC_LINE_BYTES, &p);
	assert_int_equal(p.mt, 8192);
	assert_int_equal(p.nt, 10944);
	assert_int_equal(p.kb, 2240);
	assert_int_equal(p.nk, 15);
	assert_int_equal(p.h2d_bytes, 8ull * 32768 * 32768 * 7);
	assert_int_equal(p.h2d_lines, 15ull * 3 * 32768 + 12ull * 32768);
	/* fp32 of the same shape: twice the elements per byte. */
	d.dtype = GM_FP32;
	plan_ok(&d, share, GM_OOC_LINE_BYTES, &p);
	assert_true(p.tm * p.tn <= 8);
	assert_true(p.kb >= 1024);
}

/* The same job through the default share, three quarters of the pool:
 * tiles of 8192 x 16384 with panels 2560 deep copy 6 K per element of C
 * (51.5 GB) in 1.1 million lines, B's 20 KiB long. */
static void test_plan_large_default(void **state)
{
	gm_job_desc d = desc(GM_FP64, 32768, 32768, 32768);
	uint64_t share = gm_ooc_share(4 * GIB, 0);
	gm_ooc_plan p;

	assert_int_equal(share, 3 * GIB);
	assert_int_equal(gm_ooc_share(4 * GIB, GM_OOC_SHARE_PCT), share);
	plan_ok(&d, share, GM_OOC_LINE_BYTES, &p);
	assert_int_equal(p.mt, 8192);
	assert_int_equal(p.nt, 16384);
	assert_int_equal(p.kb, 2560);
	assert_int_equal(p.nk, 13);
	assert_int_equal(p.h2d_lines, 1114112);
	assert_int_equal(p.h2d_bytes, 8ull * 32768 * 32768 * 6);
}

/* A job that fits is one tile, one panel, one buffer of each. */
static void test_plan_whole(void **state)
{
	gm_job_desc d = desc(GM_FP32, 100, 200, 300);
	gm_ooc_plan p;

	d.flags = GM_JOB_HAS_C;
	d.beta = 0.5;
	plan_ok(&d, 1ull << 30, GM_OOC_LINE_BYTES, &p);
	assert_int_equal(gm_ooc_tiles(&p), 1);
	assert_int_equal(p.nk, 1);
	assert_int_equal(p.load_c, 1);
	for (int x = 0; x < GM_OOC_OPERANDS; x++)
		assert_int_equal(p.slots[x], 1);
	/* Row-major lines padded to 128 bytes: 300 -> 320, 200 -> 224. */
	assert_int_equal(p.ld[GM_OOC_A], 320);
	assert_int_equal(p.ld[GM_OOC_B], 224);
	assert_int_equal(p.ld[GM_OOC_C], 224);
	assert_int_equal(p.h2d_bytes,
			 4ull * (100 * 300 + 300 * 200 + 100 * 200));
	/* Beta 0 with C: C is not read. */
	d.beta = 0;
	assert_int_equal(
	    gm_ooc_plan_make(&d, 1ull << 30, GM_OOC_LINE_BYTES, &p), GM_OK);
	assert_int_equal(p.load_c, 0);
}

/* One panel per tile: the long operand is reused along the runs. K of
 * 9000 is more than a panel may be deep: two panels. */
static void test_plan_panels(void **state)
{
	gm_job_desc d = desc(GM_FP64, 20000, 64, 256);
	gm_ooc_plan p;

	plan_ok(&d, 8ull << 20, GM_OOC_LINE_BYTES, &p);
	assert_int_equal(p.nk, 1);
	assert_int_equal(p.tn, 1);
	/* B (256 x 64) stays; A streams once. */
	assert_int_equal(p.slots[GM_OOC_B], 1);
	assert_int_equal(p.h2d_bytes, 8ull * 256 * (20000 + 64));
	d = desc(GM_FP64, 8, 8, 9000);
	plan_ok(&d, 1ull << 30, GM_OOC_LINE_BYTES, &p);
	assert_int_equal(p.nk, 2);
	assert_int_equal(p.kb, 4544); /* 4500 rounded up to 64 */
}

/* The test suite's case: 1000 x 900 x 1100 fp64 in half of 1 MiB. */
static void test_plan_small_budget(void **state)
{
	gm_job_desc d = desc(GM_FP64, 1000, 900, 1100);
	uint64_t share = gm_ooc_share(1ull << 20, 50);
	gm_ooc_plan p;

	plan_ok(&d, share, GM_OOC_LINE_BYTES, &p);
	assert_true(gm_ooc_tiles(&p) > 16);
	assert_true(p.nk > 1);
	/* Budgets too small for 64 x 64 tiles. */
	assert_int_equal(gm_ooc_plan_make(&d, 512, GM_OOC_LINE_BYTES, &p),
			 GM_ETOOBIG);
	assert_int_equal(gm_ooc_plan_make(&d, 64 * KIB, GM_OOC_LINE_BYTES, &p),
			 GM_ETOOBIG);
	d.m = 0;
	assert_int_equal(gm_ooc_plan_make(&d, share, GM_OOC_LINE_BYTES, &p),
			 GM_EINVAL);
}

/* What a plan costs to copy in, as the planner counts it. */
static double cost(const gm_ooc_plan *p)
{
	return (double)p->h2d_bytes + (double)GM_OOC_LINE_BYTES * p->h2d_lines;
}

/* Random jobs and budgets: every plan keeps its promises, and a larger
 * budget never costs more to copy in. */
static void test_plan_random(void **state)
{
	static const int dtypes[] = {GM_FP64, GM_FP32, GM_FP16};

	for (int i = 0; i < 300; i++) {
		gm_job_desc d = desc(dtypes[i % 3], rnd(1, 5000), rnd(1, 5000),
				     rnd(1, 20000));
		uint64_t budget = (uint64_t)rnd(16, 1 << 16) * KIB;
		gm_ooc_plan p, q;

		d.trans_a = rnd(0, 1);
		d.trans_b = rnd(0, 1);
		d.layout = rnd(0, 1);
		if (gm_ooc_plan_make(&d, budget, GM_OOC_LINE_BYTES, &p) !=
		    GM_OK)
			continue;
		check_plan(&p, budget);
		plan_ok(&d, 4 * budget, GM_OOC_LINE_BYTES, &q);
		assert_true(cost(&q) <= cost(&p) * (1 + 1e-9));
	}
}

/* Tiles go in a snake and cover C once. */
static void test_tiles(void **state)
{
	gm_job_desc d = desc(GM_FP32, 1000, 700, 64);
	static int seen[64][64];
	gm_ooc_tile t, prev;
	gm_ooc_plan p;

	assert_int_equal(gm_ooc_plan_make(&d, 400 * KIB, GM_OOC_LINE_BYTES, &p),
			 GM_OK);
	assert_true(gm_ooc_tiles(&p) > 4);
	assert_true(p.tm <= 64 && p.tn <= 64);
	for (uint32_t pos = 0; pos < gm_ooc_tiles(&p); pos++) {
		gm_ooc_tile_at(&p, pos, &t);
		assert_int_equal(seen[t.i][t.j]++, 0);
		assert_int_equal(t.row, t.i * p.mt);
		assert_int_equal(t.col, t.j * p.nt);
		assert_true(t.rows >= 1 && t.row + t.rows <= d.m);
		assert_true(t.cols >= 1 && t.col + t.cols <= d.n);
		assert_true(t.rows == p.mt || t.row + t.rows == d.m);
		/* Neighbours share a row or a column of tiles. */
		if (pos > 0)
			assert_true(t.i == prev.i || t.j == prev.j);
		prev = t;
	}
}

/* A block's first and last elements are where the layout puts them. */
static void test_blocks(void **state)
{
	for (int i = 0; i < 200; i++) {
		gm_job_desc d = desc(i & 1 ? GM_FP64 : GM_FP16, rnd(1, 300),
				     rnd(1, 300), rnd(1, 300));
		int x = (int)rnd(0, 2);
		uint32_t rows = x == GM_OOC_B ? d.k : d.m;
		uint32_t cols = x == GM_OOC_A ? d.k : d.n;
		uint32_t r = rnd(0, rows - 1), c = rnd(0, cols - 1);
		uint32_t nr = rnd(1, rows - r), nc = rnd(1, cols - c);
		int trans = x == GM_OOC_A   ? (d.trans_a = rnd(0, 1))
			    : x == GM_OOC_B ? (d.trans_b = rnd(0, 1))
					    : 0;
		uint64_t e = gm_dtype_size(d.dtype), last;
		gm_ooc_block b;
		gm_ooc_plan p;

		d.layout = rnd(0, 1);
		assert_int_equal(
		    gm_ooc_plan_make(&d, 1ull << 30, GM_OOC_LINE_BYTES, &p),
		    GM_OK);
		gm_ooc_block_of(&p, x, r, nr, c, nc, &b);
		assert_int_equal(b.off, e * gm_testref_at(d.layout, trans, r, c,
							  rows, cols));
		last = e * gm_testref_at(d.layout, trans, r + nr - 1,
					 c + nc - 1, rows, cols);
		assert_int_equal(b.off + (b.lines - 1) * b.hpitch + b.width - e,
				 last);
		assert_int_equal((uint64_t)b.lines * b.width, e * nr * nc);
		assert_true(b.dpitch >= b.width);
		assert_int_equal(b.dpitch, b.ld * e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan_large),
	    cmocka_unit_test(test_plan_large_default),
	    cmocka_unit_test(test_plan_whole),
	    cmocka_unit_test(test_plan_panels),
	    cmocka_unit_test(test_plan_small_budget),
	    cmocka_unit_test(test_plan_random),
	    cmocka_unit_test(test_tiles),
	    cmocka_unit_test(test_blocks),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
