/*
 * test_ooc_schedule.c - gm_ooc's schedule carried out on the CPU
 * (ooc_fx.h), by a small simulator: the operations go to three queues
 * (copies in, GEMMs, copies out), as on three CUDA streams, and are then
 * carried out in a random interleaving that respects only the events
 * they wait for, with memcpy for copies and BLAS for GEMMs on a pretend
 * device memory poisoned with NaN. A missing event lets some interleaving
 * overwrite a buffer before its reader ran, or read one before it was
 * written; a wrong block, line stride or beta shows up in the result,
 * which is checked against the long double reference for every
 * transpose, layout, dtype, with and without C.
 */
#include "ooc_fx.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_schedule),
	    cmocka_unit_test(test_schedule_ranges),
	    cmocka_unit_test(test_schedule_shapes),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
