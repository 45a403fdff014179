/*
 * test_fairq.c - gm_fairq, the waiting jobs of the scheduler: FIFO per
 * connection, connections taking turns within a priority, by work (a
 * table of job sizes: huge jobs against small ones get equal work, not
 * equal jobs), a newcomer served after those that had no more than it,
 * a job that is peeked but not taken keeping its connection's turn,
 * removal from anywhere, removal by a predicate, and the counts, on a
 * queue filled to its capacity; and turns taken by principal, not by
 * connection (a table: several connections of one principal against one
 * of another share one turn, in arrival order). Jobs here are bare gm_sched_job
 * records: nothing runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "gm_fairq.h"

#define CAP 512

static gm_sched_request reqs[CAP];
static gm_sched_job jobs[CAP];
static unsigned used;

/* A one-job request of connection conn at priority prio. */
static gm_sched_job *job(uint32_t conn, uint8_t prio)
{
	gm_sched_request *r = &reqs[used];
	gm_sched_job *j = &jobs[used++];

	assert_true(used <= CAP);
	memset(r, 0, sizeof(*r));
	memset(j, 0, sizeof(*j));
	r->conn = conn;
	r->batch.priority = prio;
	r->njobs = 1;
	r->jobs = j;
	j->req = r;
	return j;
}

static gm_fairq *open_q(void)
{
	gm_fairq *q;

	used = 0;
	assert_int_equal(gm_fairq_create(CAP, &q), GM_OK);
	return q;
}

/* Pushes the jobs of a NULL-ended list in its order. */
static void push_all(gm_fairq *q, gm_sched_job *const *j)
{
	for (; *j != NULL; j++)
		gm_fairq_push(q, *j);
}

/* Takes every job at priority p and checks they come as want[]. */
static void expect_order(gm_fairq *q, unsigned p, gm_sched_job *const *want,
			 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_ptr_equal(gm_fairq_peek(q, p), want[i]);
		assert_ptr_equal(gm_fairq_take(q, p), want[i]);
	}
	assert_null(gm_fairq_peek(q, p));
	assert_int_equal(gm_fairq_count(q, p), 0);
}

/* Connection 1 queues three jobs before 2 and 3 queue theirs: they
 * alternate, each connection in its own order. */
static void test_round_robin(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *a1 = job(1, 1), *a2 = job(1, 1), *a3 = job(1, 1);
	gm_sched_job *b1 = job(2, 1), *b2 = job(2, 1), *c1 = job(3, 1);

	push_all(q, (gm_sched_job *[]){a1, a2, a3, b1, b2, c1, NULL});
	assert_int_equal(gm_fairq_count(q, 1), 6);
	assert_int_equal(gm_fairq_total(q), 6);
	expect_order(q, 1, (gm_sched_job *[]){a1, b1, c1, a2, b2, a3}, 6);
	assert_int_equal(gm_fairq_total(q), 0);
	gm_fairq_destroy(q);
}

/* Priorities are separate queues; a connection's flows at two
 * priorities do not share a turn. */
static void test_priorities_apart(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *lo = job(1, 0), *hi = job(1, 3), *hi2 = job(2, 3);

	push_all(q, (gm_sched_job *[]){lo, hi, hi2, NULL});
	assert_int_equal(gm_fairq_count(q, 0), 1);
	assert_int_equal(gm_fairq_count(q, 3), 2);
	assert_int_equal(gm_fairq_count(q, 1), 0);
	assert_int_equal(gm_fairq_count(q, 9), 0);
	expect_order(q, 3, (gm_sched_job *[]){hi, hi2}, 2);
	expect_order(q, 0, (gm_sched_job *[]){lo}, 1);
	gm_fairq_destroy(q);
}

/* A connection that arrives while others wait starts at the tag of the
 * last job taken: after those that have had no more than that (b, which
 * has had nothing yet), before those that have had more (a); one whose
 * flow emptied and refills starts again at that clock. */
static void test_newcomer_last(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *a1 = job(1, 2), *a2 = job(1, 2), *b1 = job(2, 2);
	gm_sched_job *b2 = job(2, 2), *c1 = job(3, 2), *a3 = job(1, 2);

	push_all(q, (gm_sched_job *[]){a1, a2, b1, b2, NULL});
	assert_ptr_equal(gm_fairq_take(q, 2), a1);
	/* a has had one job, b and c none: b (there first), c, then a. */
	gm_fairq_push(q, c1);
	expect_order(q, 2, (gm_sched_job *[]){b1, c1, a2, b2}, 4);
	gm_fairq_push(q, a3);
	expect_order(q, 2, (gm_sched_job *[]){a3}, 1);
	gm_fairq_destroy(q);
}

/* Peeking does not pass the turn (a job that does not fit yet keeps its
 * place); removing jobs from the middle keeps the others' order, and
 * removing the last of a flow whose turn it is passes the turn on. */
static void test_remove(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *a1 = job(1, 1), *a2 = job(1, 1), *a3 = job(1, 1);
	gm_sched_job *b1 = job(2, 1), *c1 = job(3, 1);

	push_all(q, (gm_sched_job *[]){a1, a2, a3, b1, c1, NULL});
	assert_ptr_equal(gm_fairq_peek(q, 1), a1);
	assert_ptr_equal(gm_fairq_peek(q, 1), a1);
	gm_fairq_remove(q, a2);
	gm_fairq_remove(q, a1); /* the head: a keeps its turn */
	assert_ptr_equal(gm_fairq_peek(q, 1), a3);
	gm_fairq_remove(q, a3); /* a empties: the turn goes to b */
	assert_ptr_equal(gm_fairq_peek(q, 1), b1);
	gm_fairq_remove(q, c1);
	assert_int_equal(gm_fairq_total(q), 1);
	expect_order(q, 1, (gm_sched_job *[]){b1}, 1);
	gm_fairq_destroy(q);
}

static int odd_conn(gm_sched_job *j, void *arg)
{
	(*(int *)arg)++;
	return j->req->conn % 2 == 1;
}

/* remove_if hands back what it removed and leaves the rest in order,
 * over every priority. */
static void test_remove_if(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *a1 = job(1, 1), *b1 = job(2, 1), *a2 = job(1, 1);
	gm_sched_job *b2 = job(2, 1), *c1 = job(3, 0), *d1 = job(4, 0);
	gm_sched_job *got;
	int seen = 0, n = 0;

	push_all(q, (gm_sched_job *[]){a1, b1, a2, b2, c1, d1, NULL});
	got = gm_fairq_remove_if(q, odd_conn, &seen);
	assert_int_equal(seen, 6);
	for (; got != NULL; got = got->qnext, n++)
		assert_int_equal(got->req->conn % 2, 1);
	assert_int_equal(n, 3);
	assert_int_equal(gm_fairq_total(q), 3);
	expect_order(q, 1, (gm_sched_job *[]){b1, b2}, 2);
	expect_order(q, 0, (gm_sched_job *[]){d1}, 1);
	assert_null(gm_fairq_remove_if(q, odd_conn, &seen));
	gm_fairq_destroy(q);
}

/* Full, with every job its own connection: as many flows as the
 * capacity, taken in arrival order; then again, so that flows freed
 * are reused. */
static void test_full(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *all[CAP];

	for (int round = 0; round < 2; round++) {
		used = 0;
		for (unsigned i = 0; i < CAP; i++) {
			all[i] = job(1000 + i * 7919u, 2);
			gm_fairq_push(q, all[i]);
		}
		assert_int_equal(gm_fairq_total(q), CAP);
		expect_order(q, 2, all, CAP);
	}
	gm_fairq_destroy(q);
}

/* A job of work times GM_FAIRQ_JOB_WORK: its FLOPs (m alone) and bytes
 * make up the rest. */
static gm_sched_job *job_of(uint32_t conn, uint32_t m, uint64_t bytes)
{
	gm_sched_job *j = job(conn, 1);

	j->job.d.m = m;
	j->job.d.n = j->job.d.k = m != 0 ? 1 : 0;
	j->bytes = bytes;
	return j;
}

/* Heavy jobs of one connection against light ones (GM_FAIRQ_JOB_WORK
 * each) of another: ratio light jobs between two heavy ones. */
struct work_case {
	uint32_t m;	/* heavy: 2m FLOPs */
	uint64_t bytes; /* and bytes */
	unsigned ratio; /* heavy work over light */
};

static const struct work_case works[] = {
    {0, 0, 1},		       /* equal: one each */
    {0, 1u << 18, 2},	       /* 2^18 bytes count 2^20 */
    {3u << 19, 0, 4},	       /* 3 * 2^20 FLOPs */
    {99u << 19, 0, 100},       /* a hundred times the work */
    {15u << 19, 1u << 18, 17}, /* FLOPs and bytes */
};

/*
 * A connection with three heavy jobs against one with many light ones:
 * they start heavy, ratio light, heavy, ... (the heavy one first: both
 * start at the same tag, it came first), and while both wait, the work
 * each has had differs by at most one heavy job. Then the light
 * connection's rest.
 */
static void test_work(void **state)
{
	for (size_t c = 0; c < sizeof(works) / sizeof(works[0]); c++) {
		const struct work_case *w = &works[c];
		gm_fairq *q = open_q();
		gm_sched_job *heavy[3], *light[3 * 100 + 5];
		unsigned nlight = 3 * w->ratio + 5, li = 0;
		double got[2] = {0, 0}, unit = GM_FAIRQ_JOB_WORK;

		for (int i = 0; i < 3; i++)
			gm_fairq_push(q, heavy[i] = job_of(1, w->m, w->bytes));
		for (unsigned i = 0; i < nlight; i++)
			gm_fairq_push(q, light[i] = job_of(2, 0, 0));
		assert_true(gm_fairq_work(heavy[0]) == w->ratio * unit);
		assert_true(gm_fairq_work(light[0]) == unit);
		for (int h = 0; h < 3; h++) {
			gm_sched_job *j = gm_fairq_take(q, 1);

			assert_ptr_equal(j, heavy[h]);
			got[0] += gm_fairq_work(j);
			for (unsigned i = 0; i < w->ratio; i++) {
				assert_ptr_equal(gm_fairq_take(q, 1),
						 light[li++]);
				got[1] += unit;
				assert_true(fabs(got[0] - got[1]) <=
					    w->ratio * unit);
			}
		}
		expect_order(q, 1, &light[li], nlight - li);
		gm_fairq_destroy(q);
	}
}

/* A connection whose flow empties keeps no credit and no debt: after a
 * huge job, back with a small one, it starts at the tag of the last job
 * taken, beside a connection that never left. */
static void test_no_credit(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *huge = job_of(1, 99u << 19, 0), *b1 = job_of(2, 0, 0);
	gm_sched_job *b2 = job_of(2, 0, 0), *b3 = job_of(2, 0, 0);
	gm_sched_job *a2 = job_of(1, 0, 0);

	push_all(q, (gm_sched_job *[]){huge, b1, b2, b3, NULL});
	assert_ptr_equal(gm_fairq_take(q, 1), huge); /* 1 leaves */
	assert_ptr_equal(gm_fairq_take(q, 1), b1);
	/* The clock is b1's start (0): a comes back at 0, b is at 1. */
	gm_fairq_push(q, a2);
	expect_order(q, 1, (gm_sched_job *[]){a2, b2, b3}, 3);
	gm_fairq_destroy(q);
}

/* A flow held aside shows the next one's job; removing a held flow's
 * last job drops it; unholding puts the others back by their tags. */
static void test_hold(void **state)
{
	gm_fairq *q = open_q();
	gm_sched_job *a1 = job(1, 2), *b1 = job(2, 2), *c1 = job(3, 2);
	gm_sched_job *c2 = job(3, 2), *d1 = job(4, 2);

	push_all(q, (gm_sched_job *[]){a1, b1, c1, c2, d1, NULL});
	gm_fairq_hold(q, 2);
	assert_ptr_equal(gm_fairq_peek(q, 2), b1);
	gm_fairq_hold(q, 2);
	assert_ptr_equal(gm_fairq_take(q, 2), c1); /* c has had a job */
	assert_ptr_equal(gm_fairq_peek(q, 2), d1);
	gm_fairq_hold(q, 2);
	assert_ptr_equal(gm_fairq_peek(q, 2), c2);
	gm_fairq_remove(q, b1); /* held, and its last job */
	gm_fairq_unhold(q);
	assert_int_equal(gm_fairq_total(q), 3);
	expect_order(q, 2, (gm_sched_job *[]){a1, d1, c2}, 3);
	gm_fairq_destroy(q);
}

/* Two principals, as the daemon keys them (any stable address). */
static const char who_a, who_b;

/* A principal's connections against one connection of another: heavy
 * jobs (ratio times the work of a light one) of principal A, pushed in
 * turn over nconn connections, against light ones of principal B's one
 * connection; or, with keyed 0, the same with no principal named, where
 * each connection takes its own turns. */
struct principal_case {
	unsigned nconn; /* A's connections */
	uint32_t m;	/* A's jobs: 2m FLOPs */
	unsigned ratio; /* their work over a light job's */
	int keyed;	/* requests name their principal */
};

static const struct principal_case principals[] = {
    {1, 0, 1, 1},	   /* one connection each: a ring */
    {2, 0, 1, 1},	   /* two of A share one turn */
    {4, 0, 1, 1},	   /* four of A share one turn */
    {4, 3u << 19, 4, 1},   /* heavy, over four: still A's one share */
    {8, 59u << 19, 60, 1}, /* sixty times, over eight */
    {4, 0, 1, 0},	   /* unnamed: four connections, four turns */
};

/* The jobs light has had started when A's have all started: A's share
 * is its work (what B had) with a principal, nconn times B's without. */
static void test_principals(void **state)
{
	for (size_t c = 0; c < sizeof(principals) / sizeof(principals[0]);
	     c++) {
		const struct principal_case *pc = &principals[c];
		gm_fairq *q = open_q();
		enum { NA = 8 };
		gm_sched_job *a[NA], *b[NA * 60];
		unsigned nb = NA * pc->ratio, ai = 0, bi = 0;
		double got[2] = {0, 0}, unit = GM_FAIRQ_JOB_WORK;

		for (unsigned i = 0; i < NA; i++) {
			a[i] = job_of(10 + i % pc->nconn, pc->m, 0);
			a[i]->req->principal = pc->keyed ? &who_a : NULL;
		}
		for (unsigned i = 0; i < nb; i++) {
			b[i] = job_of(1, 0, 0);
			b[i]->req->principal = pc->keyed ? &who_b : NULL;
		}
		/* Arrival: A's connections each push, then B, in turn. */
		for (unsigned i = 0; i < NA || ai < nb; i++) {
			if (i < NA)
				gm_fairq_push(q, a[i]);
			for (unsigned k = 0; k < pc->ratio && ai < nb; k++)
				gm_fairq_push(q, b[ai++]);
		}
		ai = 0;
		while (ai < NA) {
			gm_sched_job *j = gm_fairq_take(q, 1);

			if (j->req->principal == &who_b || j->req->conn == 1) {
				assert_ptr_equal(j, b[bi++]);
				got[1] += gm_fairq_work(j);
			} else {
				/* A's jobs in the order they came, over
				 * all its connections. */
				assert_ptr_equal(j, a[ai++]);
				got[0] += gm_fairq_work(j);
			}
			if (pc->keyed)
				assert_true(fabs(got[0] - got[1]) <=
					    pc->ratio * unit);
		}
		if (pc->keyed) {
			assert_true(got[1] >= got[0] - pc->ratio * unit);
		} else {
			/* Each of A's connections had B's share: B had
			 * about one nconn-th of A's work. */
			assert_true(got[1] * pc->nconn <=
				    got[0] + pc->nconn * pc->ratio * unit);
			assert_true(got[1] * pc->nconn >=
				    got[0] - pc->nconn * pc->ratio * unit);
		}
		gm_fairq_remove(q, b[bi]); /* found by its principal */
		assert_int_equal(gm_fairq_total(q), nb - bi - 1);
		gm_fairq_destroy(q);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_robin),
	    cmocka_unit_test(test_priorities_apart),
	    cmocka_unit_test(test_newcomer_last),
	    cmocka_unit_test(test_remove),
	    cmocka_unit_test(test_remove_if),
	    cmocka_unit_test(test_full),
	    cmocka_unit_test(test_work),
	    cmocka_unit_test(test_no_credit),
	    cmocka_unit_test(test_hold),
	    cmocka_unit_test(test_principals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
