/*
 * test_batch.c - unit tests of gm_batch: which jobs share a batched call,
 * their slots, and the copies planned for a run. Plans are checked two
 * ways: the exact copies for the layouts the daemon and its clients use
 * (jobs back to back, as in a slab or a region), and, for random
 * layouts, by carrying the copies out with memcpy between a host buffer
 * and a pretend slab and comparing every operand byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gm_batch.h"
#include "gm_error.h"
#include "gm_testref.h"

#define JOBS_MAX   64
#define COPIES_MAX (4 * JOBS_MAX)

static uint64_t rs;

static gm_job_desc desc(int dtype, uint32_t m, uint32_t n, uint32_t k,
			int has_c)
{
	gm_job_desc d = {0};

	d.dtype = (uint8_t)dtype;
	d.kernel = GM_KERNEL_CUBLAS;
	d.flags = has_c ? GM_JOB_HAS_C : 0;
	d.m = m;
	d.n = n;
	d.k = k;
	d.alpha = 1.5;
	d.beta = has_c ? -0.5 : 0.0;
	return d;
}

/* ---- keys ---------------------------------------------------------------- */

static void test_same(void **state)
{
	gm_job_desc x = desc(GM_FP32, 64, 64, 64, 1), y = x;

	assert_true(gm_batch_same(&x, &y));
	assert_int_equal(gm_batch_hash(&x), gm_batch_hash(&y));
#define DIFFERS(field, value)                        \
	do {                                         \
		y = x;                               \
		y.field = value;                     \
		assert_false(gm_batch_same(&x, &y)); \
		assert_false(gm_batch_same(&y, &x)); \
	} while (0)
	DIFFERS(dtype, GM_FP64);
	DIFFERS(kernel, GM_KERNEL_TILED);
	DIFFERS(trans_a, 1);
	DIFFERS(trans_b, 1);
	DIFFERS(layout, GM_COL_MAJOR);
	DIFFERS(flags, 0);
	DIFFERS(m, 63);
	DIFFERS(n, 65);
	DIFFERS(k, 1);
	DIFFERS(alpha, 1.25);
	DIFFERS(beta, 0.5);
#undef DIFFERS
	/* Scalars compare bit for bit: -0 is not 0. */
	y = x;
	y.alpha = -0.0;
	x.alpha = 0.0;
	assert_false(gm_batch_same(&x, &y));
	/* Without C, beta is not used and does not separate jobs. */
	x = desc(GM_FP16, 8, 9, 10, 0);
	y = x;
	y.beta = 3.0;
	assert_true(gm_batch_same(&x, &y));
	assert_int_equal(gm_batch_hash(&x), gm_batch_hash(&y));
}

static void test_slot(void **state)
{
	gm_job_sizes sz = {.a = 140, .b = 260, .c = 364, .out = 364};
	gm_batch_slot s;

	gm_batch_slot_of(&sz, &s);
	assert_int_equal(s.b, 256);
	assert_int_equal(s.c, 256 + 512);
	assert_int_equal(s.bytes, 256 + 512 + 512);
	sz = (gm_job_sizes){.a = 16384, .b = 16384, .c = 0, .out = 16384};
	gm_batch_slot_of(&sz, &s);
	assert_int_equal(s.b, 16384);
	assert_int_equal(s.c, 32768);
	assert_int_equal(s.bytes, 49152);
}

/* ---- plans ----------------------------------------------------------------
 */

/* The copies planned for jobs of one descriptor, its sizes and slot. */
struct plan {
	gm_batch_copy c[COPIES_MAX];
	int n;
	gm_job_sizes sz;
	gm_batch_slot s;
};

static void plan_of(struct plan *p, const gm_job_desc *d)
{
	gm_job_sizes_of(d, &p->sz);
	gm_batch_slot_of(&p->sz, &p->s);
}

static void collect(void *arg, const gm_batch_copy *c)
{
	struct plan *p = arg;

	assert_true(p->n < COPIES_MAX);
	/* What cudaMemcpy2DAsync asks of a strided copy. */
	assert_true(c->rows >= 1 && c->width > 0);
	assert_true(c->hpitch >= c->width && c->dpitch >= c->width);
	p->c[p->n++] = *c;
}

/* Plans the copies of n jobs into p, afresh. */
static void plan(struct plan *p, gm_job *j, uint32_t n, uint64_t dev, int dir,
		 int has_c)
{
	p->n = 0;
	gm_batch_plan(j, n, &p->s, dev, dir, has_c, collect, p);
}

/* n jobs of d whose A, B, C and result lie at host offsets a, b, c, out
 * from the start of job i at base + i * stride. */
static void lay_out(gm_job *j, uint32_t n, const gm_job_desc *d, char *base,
		    uint64_t stride, uint64_t a, uint64_t b, uint64_t c,
		    uint64_t out)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		char *p = base + i * stride;

		memset(&j[i], 0, sizeof(j[i]));
		j[i].d = *d;
		j[i].a = p + a;
		j[i].b = p + b;
		j[i].c = d->flags & GM_JOB_HAS_C ? p + c : NULL;
		j[i].out = p + out;
		j[i].next = i + 1 < n ? &j[i + 1] : NULL;
	}
}

/* Jobs back to back, as the daemon lays out a request's jobs in its
 * slab: [A | B | result], 64^3 fp32: one strided copy each way. */
static void test_plan_back_to_back(void **state)
{
	static char host[8 * 3 * 16384];
	gm_job_desc d = desc(GM_FP32, 64, 64, 64, 0);
	gm_job j[8];
	struct plan p;

	plan_of(&p, &d);
	lay_out(j, 8, &d, host, 3 * 16384, 0, 16384, 0, 32768);
	plan(&p, j, 8, 4096, GM_BATCH_IN, 0);
	assert_int_equal(p.n, 1);
	assert_ptr_equal(p.c[0].host, host);
	assert_int_equal(p.c[0].dev, 4096);
	assert_int_equal(p.c[0].width, 32768);
	assert_int_equal(p.c[0].hpitch, 3 * 16384);
	assert_int_equal(p.c[0].dpitch, p.s.bytes);
	assert_int_equal(p.c[0].rows, 8);
	plan(&p, j, 8, 4096, GM_BATCH_OUT, 0);
	assert_int_equal(p.n, 1);
	assert_ptr_equal(p.c[0].host, host + 32768);
	assert_int_equal(p.c[0].dev, 4096 + 32768);
	assert_int_equal(p.c[0].width, 16384);
	assert_int_equal(p.c[0].rows, 8);
}

/* Operands whose sizes are not multiples of the alignment: the host gap
 * from A to B is not the device gap, so each has its own copy; with
 * C, C and B do not join either. */
static void test_plan_unaligned(void **state)
{
	static char host[4 * 4096];
	gm_job_desc d = desc(GM_FP32, 7, 13, 5, 1);
	gm_job j[4];
	struct plan p;
	uint64_t at;

	plan_of(&p, &d);
	at = p.sz.a + p.sz.b;
	lay_out(j, 4, &d, host, 4096, 0, p.sz.a, at, at + p.sz.c);
	plan(&p, j, 4, 0, GM_BATCH_IN, 1);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.c[0].width, p.sz.a);
	assert_int_equal(p.c[1].dev, p.s.b);
	assert_int_equal(p.c[1].width, p.sz.b);
	assert_ptr_equal(p.c[2].host, host + at);
	assert_int_equal(p.c[2].dev, p.s.c);
	assert_int_equal(p.c[2].width, p.sz.c);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(p.c[i].rows, 4);
		assert_int_equal(p.c[i].hpitch, 4096);
	}
}

/* One job, or jobs at no common stride: one piece per job, A and B in
 * one piece where they are adjacent as on the device. */
static void test_plan_pieces(void **state)
{
	static char host[1 << 16];
	gm_job_desc d = desc(GM_FP64, 16, 16, 32, 0);
	gm_job j[3];
	struct plan p;

	plan_of(&p, &d); /* a = b = 4096, out = 2048 */
	lay_out(j, 3, &d, host, 0, 0, 4096, 0, 8192);
	j[1].a = host + 20000; /* A elsewhere: B no longer follows it */
	j[1].b = host + 30000;
	j[1].out = host + 40000;
	j[2].a = host + 50000;
	j[2].b = host + 50000 + 4096;
	j[2].out = host + 60000;
	plan(&p, j, 3, 0, GM_BATCH_IN, 0);
	assert_int_equal(p.n, 4);
	assert_ptr_equal(p.c[0].host, host);
	assert_int_equal(p.c[0].width, 8192);
	assert_ptr_equal(p.c[1].host, host + 20000);
	assert_int_equal(p.c[1].width, 4096);
	assert_int_equal(p.c[1].dev, p.s.bytes);
	assert_ptr_equal(p.c[2].host, host + 30000);
	assert_int_equal(p.c[2].dev, p.s.bytes + p.s.b);
	assert_ptr_equal(p.c[3].host, host + 50000);
	assert_int_equal(p.c[3].dev, 2 * p.s.bytes);
	assert_int_equal(p.c[3].width, 8192);
	for (int i = 0; i < 4; i++)
		assert_int_equal(p.c[i].rows, 1);
	plan(&p, j, 1, 0, GM_BATCH_OUT, 0);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.c[0].rows, 1);
	assert_int_equal(p.c[0].dev, p.s.c);
}

/* Rows that would overlap on the host (a stride shorter than the
 * operand), or addresses that go down, are no strided copy. */
static void test_plan_not_strided(void **state)
{
	static char host[1 << 16];
	gm_job_desc d = desc(GM_FP32, 8, 8, 8, 0); /* 256 bytes each */
	gm_job j[4];
	struct plan p;

	plan_of(&p, &d);
	lay_out(j, 4, &d, host, 128, 0, 8192, 0, 16384);
	plan(&p, j, 4, 0, GM_BATCH_IN, 0);
	assert_int_equal(p.n, 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(p.c[i].rows, 1);
	lay_out(j, 4, &d, host + 4096, 1024, 0, 256, 0, 512);
	for (int i = 0; i < 4; i++) {
		j[i].a = host + 4096 - i * 1024;
		j[i].b = j[i].a + 256;
	}
	plan(&p, j, 4, 0, GM_BATCH_IN, 0);
	assert_int_equal(p.n, 4); /* A and B adjacent: one piece each */
	plan(&p, j, 4, 0, GM_BATCH_OUT, 0);
	assert_int_equal(p.n, 1); /* the results still go up */
	assert_int_equal(p.c[0].rows, 4);
	/* Jobs that share inputs: B of job i is A of job i + 1. Each is
	 * strided, but A and B together would be rows wider than the
	 * stride. */
	lay_out(j, 4, &d, host, 256, 0, 256, 0, 8192);
	plan(&p, j, 4, 0, GM_BATCH_IN, 0);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.c[0].rows, 4);
	assert_int_equal(p.c[1].rows, 4);
	assert_int_equal(p.c[1].dev, p.s.b);
}

/* Carries out the copies of p from host to slab (IN) or back. */
static void apply(const struct plan *p, char *slab, int dir)
{
	for (int i = 0; i < p->n; i++) {
		const gm_batch_copy *c = &p->c[i];

		for (uint32_t r = 0; r < c->rows; r++) {
			char *h = c->host + r * c->hpitch;
			char *s = slab + c->dev + r * c->dpitch;

			if (dir == GM_BATCH_IN)
				memcpy(s, h, c->width);
			else
				memcpy(h, s, c->width);
		}
	}
}

/* Random layouts: operands at a random common stride, at random
 * places, or some of each; every byte must land in its slot and every
 * result back in place, nothing else on the host written. */
static void test_plan_random(void **state)
{
	enum { HOST = 1 << 20 };
	static char host[HOST], copy[HOST], slab[1 << 20];
	int round;

	for (round = 0; round < 300; round++) {
		uint32_t n = 1 + gm_testref_next(&rs) % 24;
		int has_c = gm_testref_next(&rs) & 1;
		gm_job_desc d = desc(round % 2 ? GM_FP32 : GM_FP16,
				     1 + gm_testref_next(&rs) % 20,
				     1 + gm_testref_next(&rs) % 20,
				     1 + gm_testref_next(&rs) % 20, has_c);
		gm_job j[JOBS_MAX];
		struct plan p;
		uint64_t off[4], row,
		    dev = GM_BATCH_ALIGN * (gm_testref_next(&rs) % 4);
		int mode = gm_testref_next(&rs) % 3;

		plan_of(&p, &d);
		/* One job's operands in order, with random gaps; the
		 * result in place of C half of the time. */
		off[0] = gm_testref_next(&rs) % 64;
		off[1] = off[0] + p.sz.a +
			 (gm_testref_next(&rs) % 3 == 0
			      ? 0
			      : gm_testref_next(&rs) % 300);
		off[2] = off[1] + p.sz.b + gm_testref_next(&rs) % 40;
		off[3] = has_c && round % 4 == 1
			     ? off[2]
			     : off[2] + p.sz.c + gm_testref_next(&rs) % 40;
		row = off[3] + p.sz.out + gm_testref_next(&rs) % 64;
		assert_true(row * n < HOST);
		lay_out(j, n, &d, host, row, off[0], off[1], off[2], off[3]);
		if (mode == 1) /* results scattered */
			for (uint32_t i = 0; i < n; i++)
				j[i].out = host + HOST / 2 + (n - i) * 4096;
		if (mode == 2) /* B of one job moved */
			j[n / 2].b = host + HOST / 2 + HOST / 4;
		for (size_t i = 0; i < HOST; i++)
			host[i] = (char)gm_testref_next(&rs);
		memset(slab, 0x5a, sizeof(slab));
		plan(&p, j, n, dev, GM_BATCH_IN, has_c);
		apply(&p, slab, GM_BATCH_IN);
		for (uint32_t i = 0; i < n; i++) {
			char *at = slab + dev + i * p.s.bytes;

			assert_memory_equal(at, j[i].a, p.sz.a);
			assert_memory_equal(at + p.s.b, j[i].b, p.sz.b);
			if (has_c)
				assert_memory_equal(at + p.s.c, j[i].c, p.sz.c);
		}
		/* Results: made on the device, copied back. */
		for (uint32_t i = 0; i < n; i++)
			for (uint64_t b = 0; b < p.sz.out; b++)
				slab[dev + i * p.s.bytes + p.s.c + b] =
				    (char)gm_testref_next(&rs);
		memcpy(copy, host, HOST);
		plan(&p, j, n, dev, GM_BATCH_OUT, has_c);
		apply(&p, slab, GM_BATCH_OUT);
		for (uint32_t i = 0; i < n; i++) {
			char *o = j[i].out;

			assert_memory_equal(
			    o, slab + dev + i * p.s.bytes + p.s.c, p.sz.out);
			memcpy(copy + (o - host), o, p.sz.out);
		}
		assert_memory_equal(copy, host, HOST);
	}
}

/* ---- groups -------------------------------------------------------------- */

/* Cuts every batch of g; checks each is linked, NULL-ended, within the
 * bounds (or a single job) and made of whole runs; returns how many. */
static int cut_all(gm_batch_groups *g, uint64_t max_bytes, uint32_t max_jobs,
		   uint32_t *sizes, gm_job **order)
{
	uint32_t n, total = 0;
	uint64_t dev;
	gm_job *head;
	int batches = 0;

	while ((n = gm_batch_groups_cut(g, max_bytes, max_jobs, &head, &dev)) !=
	       0) {
		uint32_t i = 0;

		assert_true(n <= max_jobs);
		for (gm_job *j = head; j != NULL; j = j->next)
			order[total + i++] = j;
		assert_int_equal(i, n);
		assert_true(dev > 0);
		sizes[batches++] = n;
		total += n;
	}
	assert_null(head);
	return batches;
}

static void test_groups(void **state)
{
	enum { N = 12 };
	gm_job j[N], *order[N];
	uint32_t sizes[N];
	gm_batch_groups *g;
	int i;

	assert_int_equal(gm_batch_groups_create(8, &g), GM_OK);
	/* Three keys, interleaved: each group keeps wave order, groups
	 * come in the order of their first job, all in one batch. */
	for (i = 0; i < N; i++) {
		memset(&j[i], 0, sizeof(j[i]));
		j[i].d = desc(GM_FP32, 4 + (uint32_t)(i % 3), 4, 4, 0);
		assert_int_equal(gm_batch_groups_add(g, &j[i], 100, 768),
				 GM_OK);
	}
	assert_int_equal(cut_all(g, 1 << 20, 1024, sizes, order), 1);
	assert_int_equal(sizes[0], N);
	for (i = 0; i < N; i++)
		assert_ptr_equal(order[i], &j[(i % 4) * 3 + i / 4]);
	/* Emptied: usable again, and full at eight keys. */
	for (i = 0; i < 8; i++) {
		j[i].d = desc(GM_FP64, 1 + (uint32_t)i, 2, 3, 1);
		assert_int_equal(gm_batch_groups_add(g, &j[i], 10, 768), GM_OK);
	}
	j[8].d = desc(GM_FP64, 100, 2, 3, 1);
	assert_int_equal(gm_batch_groups_add(g, &j[8], 10, 768), GM_ENOMEM);
	j[8].d = j[0].d; /* a known key still goes in */
	assert_int_equal(gm_batch_groups_add(g, &j[8], 10, 768), GM_OK);
	/* Small groups share batches up to the byte bound. */
	assert_int_equal(cut_all(g, 50, 1024, sizes, order), 2);
	assert_int_equal(sizes[0], 2 + 1 + 1 + 1); /* 20 + 3 * 10 bytes */
	assert_int_equal(sizes[1], 4);
	assert_ptr_equal(order[0], &j[0]);
	assert_ptr_equal(order[1], &j[8]);
	assert_ptr_equal(order[2], &j[1]);
	gm_batch_groups_destroy(g);
}

/* A job taken out of its group is never cut: the head, the tail and a
 * middle job of one group, and the only job of another, which leaves
 * that group empty; a job in no group is not found. */
static void test_groups_remove(void **state)
{
	enum { N = 7 };
	gm_job j[N], *order[N], stranger;
	uint32_t sizes[N];
	gm_batch_groups *g;
	int i;

	assert_int_equal(gm_batch_groups_create(8, &g), GM_OK);
	for (i = 0; i < N; i++) {
		memset(&j[i], 0, sizeof(j[i]));
		j[i].d = desc(GM_FP32, i < 6 ? 4 : 5, 4, 4, 0);
		assert_int_equal(gm_batch_groups_add(g, &j[i], 100, 768),
				 GM_OK);
	}
	memset(&stranger, 0, sizeof(stranger));
	stranger.d = desc(GM_FP64, 9, 9, 9, 0);
	assert_int_equal(gm_batch_groups_remove(g, &stranger), 0);
	stranger.d = j[0].d; /* its key is there, it is not */
	assert_int_equal(gm_batch_groups_remove(g, &stranger), 0);
	assert_int_equal(gm_batch_groups_remove(g, &j[0]), 1);
	assert_int_equal(gm_batch_groups_remove(g, &j[5]), 1);
	assert_int_equal(gm_batch_groups_remove(g, &j[3]), 1);
	assert_int_equal(gm_batch_groups_remove(g, &j[3]), 0);
	assert_int_equal(gm_batch_groups_remove(g, &j[6]), 1);
	/* What is left: j1, j2, j4 in order, cut as one batch; then a
	 * job added to the emptied group still comes after them. */
	assert_int_equal(gm_batch_groups_add(g, &j[6], 100, 768), GM_OK);
	assert_int_equal(cut_all(g, 1 << 20, 1024, sizes, order), 1);
	assert_int_equal(sizes[0], 4);
	assert_ptr_equal(order[0], &j[1]);
	assert_ptr_equal(order[1], &j[2]);
	assert_ptr_equal(order[2], &j[4]);
	assert_ptr_equal(order[3], &j[6]);
	gm_batch_groups_destroy(g);
}

/* A group of half a batch or more gets batches of its own, as even as
 * the bounds allow, by bytes and by jobs; small groups before and after
 * it do not join them. */
static void test_groups_large(void **state)
{
	enum { N = 10000 };
	static gm_job j[N + 2], *order[N + 2];
	static uint32_t sizes[N];
	gm_batch_groups *g;
	int i, n;

	assert_int_equal(gm_batch_groups_create(4, &g), GM_OK);
	for (i = 0; i < 100; i++) {
		j[i].d = desc(GM_FP32, 64, 64, 64, 0);
		assert_int_equal(gm_batch_groups_add(g, &j[i], 49152, 49152),
				 GM_OK);
	}
	n = cut_all(g, 1 << 20, 8192, sizes, order);
	assert_int_equal(n, 5); /* 4.7 MiB in 1 MiB batches */
	for (i = 0; i < n; i++)
		assert_int_equal(sizes[i], 20);
	j[0].d = desc(GM_FP64, 2, 2, 2, 0);
	assert_int_equal(gm_batch_groups_add(g, &j[0], 96, 768), GM_OK);
	for (i = 1; i <= N; i++) {
		j[i].d = desc(GM_FP32, 1, 1, 1, 0);
		assert_int_equal(gm_batch_groups_add(g, &j[i], 12, 768), GM_OK);
	}
	j[N + 1].d = desc(GM_FP64, 3, 3, 3, 0);
	assert_int_equal(gm_batch_groups_add(g, &j[N + 1], 216, 768), GM_OK);
	n = cut_all(g, 1 << 20, 4096, sizes, order);
	assert_int_equal(n, 5);
	assert_int_equal(sizes[0], 1);
	assert_int_equal(sizes[1], 3334);
	assert_int_equal(sizes[2], 3333);
	assert_int_equal(sizes[3], 3333);
	assert_int_equal(sizes[4], 1);
	assert_ptr_equal(order[0], &j[0]);
	assert_ptr_equal(order[1], &j[1]);
	assert_ptr_equal(order[N], &j[N]);
	assert_ptr_equal(order[N + 1], &j[N + 1]);
	gm_batch_groups_destroy(g);
}

static int setup(void **state)
{
	rs = gm_testref_seed();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same),
	    cmocka_unit_test(test_slot),
	    cmocka_unit_test(test_plan_back_to_back),
	    cmocka_unit_test(test_plan_unaligned),
	    cmocka_unit_test(test_plan_pieces),
	    cmocka_unit_test(test_plan_not_strided),
	    cmocka_unit_test(test_plan_random),
	    cmocka_unit_test(test_groups),
	    cmocka_unit_test(test_groups_remove),
	    cmocka_unit_test(test_groups_large),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
