/*
 * test_ooc.c - unit tests of gm_ooc: the tile planner's arithmetic, the
 * blocks it copies, and its schedule carried out on the CPU.
 *
 * The schedule is run by a small simulator: the operations go to three
 * queues (copies in, GEMMs, copies out), as on three CUDA streams, and
 * are then carried out in a random interleaving that respects only the
 * events they wait for, with memcpy for copies and BLAS for GEMMs on a
 * pretend device memory poisoned with NaN. A missing event lets some
 * interleaving overwrite a buffer before its reader ran, or read one
 * before it was written; a wrong block, line stride or beta shows up in
 * the result, which is checked against the long double reference for
 * every transpose, layout, dtype, with and without C.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <cmocka.h>

#include "gm_error.h"
#include "gm_ooc.h"
#include "gm_testref.h"

#define OPS_MAX 200000
#define KIB	1024ull
#define GIB	(1024ull * 1024 * 1024)
#define ROUNDS	4 /* random interleavings of each schedule */

static uint64_t rs;

static uint32_t rnd(uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(gm_testref_next(&rs) % (hi - lo + 1));
}

static gm_job_desc desc(int dtype, uint32_t m, uint32_t n, uint32_t k)
{
	gm_job_desc d = {0};

	d.dtype = (uint8_t)dtype;
	d.kernel = GM_KERNEL_CUBLAS;
	d.m = m;
	d.n = n;
	d.k = k;
	d.alpha = 1.5;
	return d;
}

/* ---- the plan ------------------------------------------------------ */

/* What every plan promises, whatever the job and budget. */
static void check_plan(const gm_ooc_plan *p, uint64_t budget)
{
	const gm_job_desc *d = &p->d;
	uint64_t sum = 0;

	assert_true(p->bytes <= budget);
	for (int x = 0; x < GM_OOC_OPERANDS; x++) {
		assert_true(p->slots[x] >= 1 && p->slots[x] <= GM_OOC_SLOTS);
		assert_int_equal(p->slot_bytes[x] % GM_OOC_ALIGN, 0);
		assert_int_equal(gm_ooc_slot_offset(p, x, 0) % GM_OOC_ALIGN, 0);
		sum += p->slots[x] * p->slot_bytes[x];
	}
	assert_int_equal(sum, p->bytes);
	assert_true(p->mt >= 1 && p->mt <= d->m);
	assert_true(p->nt >= 1 && p->nt <= d->n);
	assert_true(p->kb >= 1 && p->kb <= d->k);
	/* The tiles and panels cover the job, none of them empty. */
	assert_int_equal(p->tm, (d->m + p->mt - 1) / p->mt);
	assert_int_equal(p->tn, (d->n + p->nt - 1) / p->nt);
	assert_int_equal(p->nk, (d->k + p->kb - 1) / p->kb);
	assert_true(p->h2d_bytes >= (uint64_t)p->esize * d->k * (d->m + d->n));
	assert_int_equal(p->d2h_bytes, (uint64_t)p->esize * d->m * d->n);
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
	assert_int_equal(gm_ooc_plan_make(&d, share, 1, &p), GM_OK);
	check_plan(&p, share);
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
	assert_int_equal(gm_ooc_plan_make(&d, share, GM_OOC_LINE_BYTES, &p),
			 GM_OK);
	check_plan(&p, share);
	assert_int_equal(p.mt, 8192);
	assert_int_equal(p.nt, 10944);
	assert_int_equal(p.kb, 2240);
	assert_int_equal(p.nk, 15);
	assert_int_equal(p.h2d_bytes, 8ull * 32768 * 32768 * 7);
	assert_int_equal(p.h2d_lines, 15ull * 3 * 32768 + 12ull * 32768);
	/* fp32 of the same shape: twice the elements per byte. */
	d.dtype = GM_FP32;
	assert_int_equal(gm_ooc_plan_make(&d, share, GM_OOC_LINE_BYTES, &p),
			 GM_OK);
	check_plan(&p, share);
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
	assert_int_equal(gm_ooc_plan_make(&d, share, GM_OOC_LINE_BYTES, &p),
			 GM_OK);
	check_plan(&p, share);
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
	assert_int_equal(
	    gm_ooc_plan_make(&d, 1ull << 30, GM_OOC_LINE_BYTES, &p), GM_OK);
	check_plan(&p, 1ull << 30);
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

	assert_int_equal(
	    gm_ooc_plan_make(&d, 8ull << 20, GM_OOC_LINE_BYTES, &p), GM_OK);
	check_plan(&p, 8ull << 20);
	assert_int_equal(p.nk, 1);
	assert_int_equal(p.tn, 1);
	/* B (256 x 64) stays; A streams once. */
	assert_int_equal(p.slots[GM_OOC_B], 1);
	assert_int_equal(p.h2d_bytes, 8ull * 256 * (20000 + 64));
	d = desc(GM_FP64, 8, 8, 9000);
	assert_int_equal(
	    gm_ooc_plan_make(&d, 1ull << 30, GM_OOC_LINE_BYTES, &p), GM_OK);
	check_plan(&p, 1ull << 30);
	assert_int_equal(p.nk, 2);
	assert_int_equal(p.kb, 4544); /* 4500 rounded up to 64 */
}

/* The test suite's case: 1000 x 900 x 1100 fp64 in half of 1 MiB. */
static void test_plan_small_budget(void **state)
{
	gm_job_desc d = desc(GM_FP64, 1000, 900, 1100);
	uint64_t share = gm_ooc_share(1ull << 20, 50);
	gm_ooc_plan p;

	assert_int_equal(gm_ooc_plan_make(&d, share, GM_OOC_LINE_BYTES, &p),
			 GM_OK);
	check_plan(&p, share);
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
		assert_int_equal(
		    gm_ooc_plan_make(&d, 4 * budget, GM_OOC_LINE_BYTES, &q),
		    GM_OK);
		check_plan(&q, 4 * budget);
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

/* ---- the schedule on the CPU ---------------------------------------- */

struct sim {
	const gm_ooc_plan *p;
	gm_ooc_op *ops;
	size_t n;
	uint32_t (*need)[3];	       /* per op: record counts it waits for */
	size_t *queue[GM_OOC_STREAMS]; /* op indexes per stream */
	size_t len[GM_OOC_STREAMS], at[GM_OOC_STREAMS];
	uint32_t issued[GM_OOC_EVENTS], done[GM_OOC_EVENTS];
	int recorder[GM_OOC_EVENTS]; /* the stream that records it */
	uint64_t loaded;	     /* bytes copied in */
	uint32_t *stores;	     /* per tile position */
};

static void sim_open(struct sim *s, const gm_ooc_plan *p)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->ops = calloc(OPS_MAX, sizeof(*s->ops));
	s->need = calloc(OPS_MAX, sizeof(*s->need));
	for (int i = 0; i < GM_OOC_STREAMS; i++)
		assert_non_null(s->queue[i] = calloc(OPS_MAX, sizeof(size_t)));
	s->stores = calloc(gm_ooc_tiles(p), sizeof(*s->stores));
	assert_true(s->ops && s->need && s->stores);
	for (int i = 0; i < GM_OOC_EVENTS; i++)
		s->recorder[i] = -1;
}

static void sim_close(struct sim *s)
{
	for (int i = 0; i < GM_OOC_STREAMS; i++)
		free(s->queue[i]);
	free(s->ops);
	free(s->need);
	free(s->stores);
}

/* Queues the operations of positions [first, end) as an issuer would. */
static void sim_issue(struct sim *s, uint32_t first, uint32_t end)
{
	gm_ooc_iter it;
	gm_ooc_op op;

	gm_ooc_iter_init(&it, s->p, first, end);
	while (gm_ooc_next(&it, &op)) {
		size_t i = s->n++;

		assert_true(i < OPS_MAX);
		s->ops[i] = op;
		for (int w = 0; w < op.nwait; w++)
			s->need[i][w] = s->issued[op.wait[w]];
		for (int r = 0; r < op.nrecord; r++) {
			int ev = op.record[r];

			if (s->recorder[ev] < 0)
				s->recorder[ev] = op.stream;
			assert_int_equal(s->recorder[ev], op.stream);
			s->issued[ev]++;
		}
		s->queue[op.stream][s->len[op.stream]++] = i;
		if (op.kind == GM_OOC_LOAD)
			s->loaded += (uint64_t)op.blk.lines * op.blk.width;
		if (op.kind == GM_OOC_STORE)
			s->stores[op.pos]++;
	}
}

static int ready(const struct sim *s, int st)
{
	size_t i;

	if (s->at[st] == s->len[st])
		return 0;
	i = s->queue[st][s->at[st]];
	for (int w = 0; w < s->ops[i].nwait; w++)
		if (s->done[s->ops[i].wait[w]] < s->need[i][w])
			return 0;
	return 1;
}

static void copy_lines(char *dst, uint64_t dpitch, const char *src,
		       uint64_t spitch, uint64_t width, uint32_t lines)
{
	for (uint32_t l = 0; l < lines; l++)
		memcpy(dst + l * dpitch, src + l * spitch, width);
}

struct host {
	const char *a, *b, *c;
	char *out, *dev;
};

static void gemm(const gm_ooc_plan *p, const gm_ooc_op *op, char *dev)
{
	const gm_job_desc *d = &p->d;
	enum CBLAS_ORDER o =
	    d->layout == GM_ROW_MAJOR ? CblasRowMajor : CblasColMajor;
	enum CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
	void *a = dev + gm_ooc_slot_offset(p, GM_OOC_A, op->a_slot);
	void *b = dev + gm_ooc_slot_offset(p, GM_OOC_B, op->b_slot);
	void *c = dev + gm_ooc_slot_offset(p, GM_OOC_C, op->slot);
	int lda = (int)p->ld[GM_OOC_A], ldb = (int)p->ld[GM_OOC_B];
	int ldc = (int)p->ld[GM_OOC_C];

	if (d->dtype == GM_FP64)
		cblas_dgemm(o, ta, tb, op->m, op->n, op->k, d->alpha, a, lda, b,
			    ldb, op->beta, c, ldc);
	else
		cblas_sgemm(o, ta, tb, op->m, op->n, op->k, (float)d->alpha, a,
			    lda, b, ldb, (float)op->beta, c, ldc);
}

static void run_op(const gm_ooc_plan *p, const gm_ooc_op *op,
		   const struct host *h)
{
	const char *src[] = {h->a, h->b, h->c};
	char *slot = h->dev + gm_ooc_slot_offset(p, op->operand, op->slot);
	const gm_ooc_block *b = &op->blk;

	switch (op->kind) {
	case GM_OOC_LOAD:
		copy_lines(slot, b->dpitch, src[op->operand] + b->off,
			   b->hpitch, b->width, b->lines);
		break;
	case GM_OOC_GEMM:
		gemm(p, op, h->dev);
		break;
	default:
		copy_lines(h->out + b->off, b->hpitch, slot, b->dpitch,
			   b->width, b->lines);
	}
}

/* Runs every queued operation, each time on a random stream among those
 * whose next operation may start. */
static void sim_run(struct sim *s, const struct host *h)
{
	size_t left = s->n;

	memset(s->done, 0, sizeof(s->done));
	memset(s->at, 0, sizeof(s->at));
	while (left > 0) {
		int can[GM_OOC_STREAMS], n = 0, st;
		size_t i;

		for (st = 0; st < GM_OOC_STREAMS; st++)
			if (ready(s, st))
				can[n++] = st;
		assert_true(n > 0); /* else the events deadlock */
		st = can[rnd(0, (uint32_t)n - 1)];
		i = s->queue[st][s->at[st]++];
		run_op(s->p, &s->ops[i], h);
		for (int r = 0; r < s->ops[i].nrecord; r++)
			s->done[s->ops[i].record[r]]++;
		left--;
	}
}

/* A job with random operands run through its plan's schedule, split
 * into ranges of tiles (as devices would take them), each range with
 * its own device memory; checked against the reference. */
static gm_ooc_plan run_job(const gm_job_desc *d, uint64_t budget,
			   unsigned ranges)
{
	uint64_t e = gm_dtype_size(d->dtype), s = gm_testref_next(&rs);
	gm_job_sizes sz;
	gm_testref_gemm g;
	gm_ooc_plan p;
	struct host h;
	struct sim sim;
	uint32_t tiles, cut = 0;

	assert_int_equal(gm_job_sizes_of(d, &sz), GM_OK);
	/* Small budgets may not hold 64 x 64 tiles of every shape. */
	while (gm_ooc_plan_make(d, budget, GM_OOC_LINE_BYTES, &p) ==
	       GM_ETOOBIG) {
		assert_true(budget < (16 << 20));
		budget *= 2;
	}
	check_plan(&p, budget);
	h.a = malloc(sz.a);
	h.b = malloc(sz.b);
	h.c = sz.c ? malloc(sz.c) : NULL;
	h.out = malloc(sz.out);
	h.dev = malloc(p.bytes);
	assert_true(h.a && h.b && h.out && h.dev && (h.c || !sz.c));
	gm_testref_fill(d->dtype, (void *)h.a, sz.a / e, &s, NULL);
	gm_testref_fill(d->dtype, (void *)h.b, sz.b / e, &s, NULL);
	if (h.c)
		gm_testref_fill(d->dtype, (void *)h.c, sz.c / e, &s, NULL);
	tiles = gm_ooc_tiles(&p);
	for (int round = 0; round < ROUNDS; round++) {
		memset(h.out, 0xff, sz.out); /* NaN in every dtype */
		sim_open(&sim, &p);
		for (unsigned r = 0; r < ranges; r++) {
			uint32_t end =
			    r + 1 == ranges ? tiles : rnd(cut, tiles);

			memset(h.dev, 0xff, p.bytes);
			sim_issue(&sim, cut, end);
			sim_run(&sim, &h);
			sim.n = 0;
			memset(sim.len, 0, sizeof(sim.len));
			memset(sim.issued, 0, sizeof(sim.issued));
			cut = end;
		}
		for (uint32_t t = 0; t < tiles; t++)
			assert_int_equal(sim.stores[t], 1);
		if (ranges == 1 && p.nk > 1)
			assert_int_equal(sim.loaded, p.h2d_bytes);
		if (ranges == 1)
			assert_true(sim.loaded <= p.h2d_bytes);
		sim_close(&sim);
		cut = 0;
	}
	g = (gm_testref_gemm){d->dtype, d->layout, d->trans_a, d->trans_b, d->m,
			      d->n,	d->k,	   d->alpha,   d->beta,	   h.a,
			      h.b,	h.c,	   h.out};
	assert_true(gm_testref_check(&g));
	free((void *)h.a);
	free((void *)h.b);
	free((void *)h.c);
	free(h.out);
	free(h.dev);
	return p;
}

/* Every transpose, layout and C (beta 0 with C too), fp64 and fp32,
 * with budgets from one tile to many, and many panels or one. */
static void test_schedule(void **state)
{
	gm_ooc_plan p;
	static const uint64_t budgets[] = {128 * KIB, 256 * KIB, 1 << 20,
					   16 << 20};

	unsigned tiled = 0, panels = 0;

	for (int i = 0; i < 64; i++) {
		gm_job_desc d = desc(i & 32 ? GM_FP32 : GM_FP64, rnd(200, 400),
				     rnd(200, 400), rnd(1, 400));

		d.trans_a = i & 1;
		d.trans_b = (i >> 1) & 1;
		d.layout = (i >> 2) & 1;
		if (i & 8) {
			d.flags = GM_JOB_HAS_C;
			d.beta = i & 16 ? -0.75 : 0.0;
		}
		p = run_job(&d, budgets[i % 4], 1);
		tiled += gm_ooc_tiles(&p) >= 4;
		panels += p.nk > 1;
	}
	print_message("%u of 64 jobs in 4 tiles or more, %u with panels\n",
		      tiled, panels);
	assert_true(tiled >= 20 && panels >= 8);
}

/* Tiles split over two and three ranges come out the same. */
static void test_schedule_ranges(void **state)
{
	for (int i = 0; i < 16; i++) {
		gm_job_desc d =
		    desc(GM_FP64, rnd(150, 250), rnd(150, 250), rnd(1, 100));

		d.trans_a = i & 1;
		d.layout = (i >> 1) & 1;
		d.flags = i & 4 ? GM_JOB_HAS_C : 0;
		d.beta = 0.5;
		run_job(&d, 512 * KIB, 2 + (i & 1));
	}
}

/* Panels deeper than K allows, reuse along runs, one tile. */
static void test_schedule_shapes(void **state)
{
	gm_job_desc d = desc(GM_FP64, 3, 5, 9000);

	run_job(&d, 1 << 20, 1); /* two panels, of 4544 and 4456 */
	d = desc(GM_FP32, 300, 7, 40);
	run_job(&d, 40 * KIB, 1); /* one panel, tiles down one column */
	d = desc(GM_FP32, 7, 300, 40);
	d.trans_b = 1;
	run_job(&d, 40 * KIB, 1);
	d = desc(GM_FP64, 1, 1, 1);
	run_job(&d, 4 * KIB, 1);
}

static int setup(void **state)
{
	rs = gm_testref_seed();
	return 0;
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
	    cmocka_unit_test(test_schedule),
	    cmocka_unit_test(test_schedule_ranges),
	    cmocka_unit_test(test_schedule_shapes),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
