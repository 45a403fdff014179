/*
 * test_sched.c - unit tests of the bounded queue and scheduler in front
 * of the real CPU engine (sched_fx.h): results, a full queue,
 * back-pressure, the budget and its reserve, unsupported jobs, priority,
 * head of line, deadlines, stop. Nothing here measures time: the tests
 * hold the engine's budget by not completing a job, so queueing,
 * back-pressure and priority order are deterministic, and deadlines are
 * passed by waiting before the pump that must notice them. Inputs are
 * fresh random numbers; the seed is printed and GM_TEST_SEED replays one.
 * Fairness, cancel, expiry, the engine's queue and the stats are in
 * test_sched_fair.c.
 */
#include "sched_fx.h"

/* Results through the scheduler, with a budget that holds every job at
 * once and with one that holds only two of the largest. */
static void test_results(void **state)
{
	static const uint32_t dims[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 17, 40}};
	const struct shape big = {GM_FP64, 0, 0, 0, 1, 33, 17, 40};
	uint64_t budgets[] = {1u << 20, 2 * cost_of(&big)};
	struct treq *tr[NELEMS(dims)];

	for (size_t p = 0; p < NELEMS(budgets); p++) {
		h_open(budgets[p], NELEMS(dims) * MAXJOBS);
		for (size_t i = 0; i < NELEMS(dims); i++) {
			tr[i] = new_req_all_kinds(dims[i][0], dims[i][1],
						  dims[i][2]);
			assert_int_equal(submit(tr[i]), GM_OK);
		}
		drain();
		for (size_t i = 0; i < NELEMS(dims); i++)
			check_all_ok(tr[i]);
		h_close();
	}
}

/* A request enters whole or not at all. */
static void test_queue_full(void **state)
{
	enum { DEPTH = 8 };
	struct treq *over, *blocker, *a, *b, *c, *d;

	h_open(cost_of(&SMALL), DEPTH);
	over = new_req_of(DEPTH + 1, &SMALL);
	assert_int_equal(submit(over), GM_EBUSY);
	assert_int_equal(gm_sched_requests(h.sched), 0);

	/* The blocker holds the budget: what follows stays queued. Once
	 * started it is no longer queued. */
	blocker = submit_ok(new_req_of(1, &SMALL));
	wait_started(1);
	assert_int_equal(gm_sched_on_engine(h.sched), 1);
	assert_int_equal(gm_sched_in_queue(h.sched), 0);
	a = submit_ok(new_req_of(5, &SMALL));
	assert_int_equal(gm_sched_in_queue(h.sched), 5);
	b = new_req_of(4, &SMALL);
	assert_int_equal(submit(b), GM_EBUSY);
	assert_int_equal(gm_sched_in_queue(h.sched), 5);
	assert_int_equal(gm_sched_requests(h.sched), 2);
	c = submit_ok(new_req_of(DEPTH - 5, &SMALL));
	assert_int_equal(gm_sched_in_queue(h.sched), DEPTH);
	d = new_req_of(1, &SMALL);
	assert_int_equal(submit(d), GM_EBUSY);
	assert_int_equal(gm_sched_requests(h.sched), 3);

	drain();
	check_all_ok(blocker);
	check_all_ok(a);
	check_all_ok(c);
	assert_int_equal(over->done + b->done + d->done, 0);
	h_close();
}

/* Equal jobs through a budget that holds `fits` of them: never more on
 * the engine, and never fewer while any wait. */
static void test_back_pressure(void **state)
{
	static const unsigned fits[] = {1, 3};
	const struct shape s = {GM_FP64, GM_COL_MAJOR, 1, 0, 1, 24, 20, 28};
	struct treq *tr[3];

	for (size_t f = 0; f < NELEMS(fits); f++) {
		h_open(fits[f] * cost_of(&s), 16);
		for (size_t i = 0; i < NELEMS(tr); i++) {
			tr[i] = submit_ok(new_req_of(4, &s));
		}
		while (gm_sched_requests(h.sched) > 0) {
			assert_true(gm_sched_on_engine(h.sched) <= fits[f]);
			if (gm_sched_in_queue(h.sched) > 0)
				assert_int_equal(gm_sched_on_engine(h.sched),
						 fits[f]);
			assert_int_equal(gm_sched_inflight_bytes(h.sched),
					 gm_sched_on_engine(h.sched) *
					     cost_of(&s));
			take_one();
		}
		assert_int_equal(h.peak_inflight, fits[f]);
		for (size_t i = 0; i < NELEMS(tr); i++)
			check_all_ok(tr[i]);
		h_close();
	}
}

/*
 * A job larger than the whole budget starts beside the others and takes
 * none of the bytes, so that the jobs behind it keep starting in the
 * budget; a second such job waits until the first is back, and the jobs
 * of its connection behind it wait with it (their order), while another
 * connection's still start.
 */
static void test_over_budget(void **state)
{
	const struct shape huge = {GM_FP64, 0, 0, 0, 0, 128, 128, 128};
	const struct shape mixed[] = {SMALL, huge, SMALL, huge, SMALL};
	struct treq *tr, *other;

	h_open(2 * cost_of(&SMALL), 16);
	assert_true(cost_of(&huge) > 2 * cost_of(&SMALL));
	tr = new_req(5, 1, 0, mixed, NELEMS(mixed));
	tr->r->conn = 1;
	assert_int_equal(submit(tr), GM_OK);
	/* SMALL, huge, SMALL: the second huge one waits for the first. */
	assert_int_equal(gm_sched_on_engine(h.sched), 3);
	assert_int_equal(gm_sched_in_queue(h.sched), 2);
	assert_int_equal(gm_sched_oversized_bytes(h.sched), cost_of(&huge));
	assert_int_equal(gm_sched_inflight_bytes(h.sched),
			 cost_of(&huge) + 2 * cost_of(&SMALL));
	/* The budget's bytes are full: another connection's job waits for
	 * them, not for the huge job. */
	other = submit_ok(conn_req(2, &SMALL));
	assert_int_equal(gm_sched_in_queue(h.sched), 3);
	drain();
	assert_int_equal(h.peak_inflight, 3);
	check_all_ok(tr);
	check_all_ok(other);
	h_close();
}

/* Jobs that fill the budget exactly run together; one byte less and
 * they run one at a time. */
static void test_budget_edge(void **state)
{
	static const struct {
		int64_t delta;
		uint64_t peak;
	} cases[] = {
	    {0, 2},
	    {-1, 1},
	    {+1, 2},
	};
	const struct shape s = {GM_FP64, 0, 0, 0, 0, 16, 16, 16};

	assert_int_equal(cost_of(&s), 6144);
	for (size_t i = 0; i < NELEMS(cases); i++) {
		struct treq *tr;

		h_open(2 * cost_of(&s) + cases[i].delta, 4);
		tr = submit_ok(new_req_of(2, &s));
		drain();
		assert_int_equal(h.peak_inflight, cases[i].peak);
		check_all_ok(tr);
		h_close();
	}
}

/* Room reserved counts as taken; a reserved request enters even after a
 * stop, using its room; room not used is given back. */
static void test_reserve(void **state)
{
	struct treq *tr, *other;

	h_open(1u << 20, 4);
	assert_int_equal(gm_sched_reserve(h.sched, 1, 3), GM_OK);
	assert_int_equal(gm_sched_reserved(h.sched), 3);
	assert_int_equal(gm_sched_room(h.sched, 2, 2), GM_EBUSY);
	assert_int_equal(gm_sched_room(h.sched, 2, 1), GM_OK);
	assert_int_equal(gm_sched_reserve(h.sched, 0, 2), GM_EBUSY);
	other = new_req_of(2, &SMALL);
	assert_int_equal(submit(other), GM_EBUSY);
	gm_sched_stop(h.sched);
	assert_int_equal(gm_sched_reserve(h.sched, 1, 1), GM_ESHUTDOWN);
	tr = new_req_of(2, &SMALL);
	tr->r->reserved = 1;
	assert_int_equal(submit(tr), GM_OK);
	assert_int_equal(gm_sched_reserved(h.sched), 1);
	gm_sched_unreserve(h.sched, 1, 1);
	drain();
	check_all_ok(tr);
	assert_int_equal(other->done, 0);
	h_close();
}

/* A dtype the engine cannot run fails at once; the rest still run. */
static void test_unsupported(void **state)
{
	static const struct {
		uint8_t dtype;
		const char *msg;
	} cases[] = {
	    {GM_FP16, "dtype fp16 is unsupported by the cpu engine"},
	    {GM_BF16, "dtype bf16 is unsupported by the cpu engine"},
	    {GM_TF32, "dtype tf32 is unsupported by the cpu engine"},
	};

	for (size_t i = 0; i < NELEMS(cases); i++) {
		struct shape sh[3] = {SMALL, SMALL, SMALL};
		struct treq *tr;

		sh[1].dtype = cases[i].dtype;
		sh[2].dtype = GM_FP32;
		h_open(64 * 1024, 8);
		tr = submit_ok(new_req(3, 1, 0, sh, NELEMS(sh)));
		assert_int_equal(tr->r->jobs[1].job.status, GM_EUNSUPPORTED);
		assert_string_equal(tr->r->jobs[1].job.msg, cases[i].msg);
		assert_int_equal(tr->done, 0);
		drain();
		assert_int_equal(tr->done, 1);
		check_result(tr, 0);
		check_result(tr, 2);
		h_close();
	}
}

/*
 * Jobs queued behind a blocker start highest priority first, in arrival
 * order within a priority. The CPU engine runs one job at a time in the
 * order it was handed them, so the order jobs come back is the order
 * they started. Once with a budget that holds one job (one job per wave),
 * once with a blocker as large as the budget, after which all of them fit
 * in one wave.
 */
static void test_priority(void **state)
{
	static const uint8_t prios[] = {0, 0, 2, 3, 1, 0, 3, 2, 3, 0, 1, 3};
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	const struct shape *blockers[] = {&SMALL, &big};

	for (size_t c = 0; c < NELEMS(blockers); c++) {
		struct treq *tr[NELEMS(prios)];
		size_t next = 1;

		h_open(cost_of(blockers[c]), 32);
		assert_int_equal(submit(new_req_of(1, blockers[c])), GM_OK);
		for (size_t i = 0; i < NELEMS(prios); i++) {
			/* The last one has two jobs: FIFO inside it too. */
			tr[i] = new_req(i + 1 < NELEMS(prios) ? 1 : 2, prios[i],
					0, &SMALL, 1);
			assert_int_equal(submit(tr[i]), GM_OK);
		}
		assert_int_equal(gm_sched_on_engine(h.sched), 1);
		drain();
		assert_int_equal(h.peak_inflight,
				 c == 0 ? 1 : NELEMS(prios) + 1);
		for (int p = GM_BATCH_PRIO_MAX; p >= 0; p--)
			for (size_t i = 0; i < NELEMS(prios); i++)
				for (uint32_t k = 0;
				     prios[i] == p && k < tr[i]->r->njobs; k++)
					assert_ptr_equal(
					    h.back[next++],
					    &tr[i]->r->jobs[k].job);
		assert_int_equal(next, h.nback);
		for (size_t i = 0; i < NELEMS(prios); i++)
			check_all_ok(tr[i]);
		h_close();
	}
}

/*
 * A job that does not fit now keeps its place, and jobs of other
 * connections and of lower priorities that fit start past it, up to a
 * quarter of the budget's bytes until it starts; then nothing more
 * passes, and it starts once the work ahead of it is back: a large job
 * is never starved by small ones, nor do they all wait for it.
 */
static void test_head_of_line(void **state)
{
	enum { PASS = 16, MORE = 4 };
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	struct treq *blocker, *large, *small_lo, *smalls;

	h_open(cost_of(&big), 8 + PASS + MORE);
	assert_int_equal(PASS * cost_of(&SMALL), cost_of(&big) / 4);
	blocker = submit_ok(conn_req(1, &SMALL));
	large = new_req(1, 3, 0, &big, 1);
	large->r->conn = 2;
	assert_int_equal(submit(large), GM_OK);
	small_lo = new_req(1, 0, 0, &SMALL, 1);
	small_lo->r->conn = 3;
	assert_int_equal(submit(small_lo), GM_OK);
	smalls = new_req(PASS - 1 + MORE, 3, 0, &SMALL, 1);
	smalls->r->conn = 4;
	assert_int_equal(submit(smalls), GM_OK);
	/* The low one and PASS - 1 of the high ones passed. */
	assert_int_equal(gm_sched_on_engine(h.sched), 1 + PASS);
	assert_int_equal(gm_sched_in_queue(h.sched), 1 + MORE);
	drain();
	assert_int_equal(h.nback, 2 + PASS + MORE);
	assert_int_equal(h.peak_inflight, 1 + PASS);
	assert_ptr_equal(h.back[1], &small_lo->r->jobs[0].job);
	assert_ptr_equal(h.back[1 + PASS], &large->r->jobs[0].job);
	for (int i = 0; i < MORE; i++)
		assert_ptr_equal(h.back[2 + PASS + i],
				 &smalls->r->jobs[PASS - 1 + i].job);
	check_all_ok(blocker);
	check_all_ok(large);
	check_all_ok(small_lo);
	check_all_ok(smalls);
	h_close();
}

/*
 * A request whose deadline passes while it waits behind a slow job fails
 * with GM_ETIMEDOUT and never runs; requests without a deadline or with
 * a distant one behind it run.
 */
static void test_deadline(void **state)
{
	const struct shape slow = {GM_FP64, 0, 0, 0, 0, 600, 600, 600};
	struct treq *blocker, *late, *none, *far;

	h_open(cost_of(&slow), 8);
	blocker = submit_ok(new_req_of(1, &slow));
	late = submit_ok(new_req(1, 1, 1, &SMALL, 1));
	none = submit_ok(new_req(1, 1, 0, &SMALL, 1));
	far = submit_ok(new_req(1, 1, 600000, &SMALL, 1));
	/* Past the deadline before the blocker's completion pumps. */
	wait_past(late->r->recv_us + 2000.0);
	take_one();
	assert_int_equal(late->done, 1);
	assert_int_equal(late->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_string_equal(late->r->jobs[0].job.msg,
			    "deadline passed before the job started");
	/* It waited in the queue until it failed, past its deadline: its
	 * queue_us says so (PROTOCOL.md 11), the phases it never reached
	 * are 0. */
	assert_true(late->r->jobs[0].t.queue_us >= 1000.0);
	assert_true(late->r->jobs[0].t.queue_us <= late->r->jobs[0].t.total_us);
	assert_true(late->r->jobs[0].t.kernel_us == 0.0);
	drain();
	assert_int_equal(blocker->r->jobs[0].job.status, GM_OK);
	check_all_ok(none);
	check_all_ok(far);
	h_close(); /* checks that late's output is still poisoned */
}

/* The deadline passes after the first job of a request started: that
 * one finishes, the second never starts. */
static void test_deadline_partial(void **state)
{
	enum { DEADLINE_MS = 300 };
	struct treq *tr;

	h_open(cost_of(&SMALL), 8);
	tr = submit_ok(new_req(2, 1, DEADLINE_MS, &SMALL, 1));
	assert_int_equal(gm_sched_on_engine(h.sched), 1);
	assert_int_equal(gm_sched_in_queue(h.sched), 1);
	wait_past(tr->r->recv_us + DEADLINE_MS * 1000.0 + 1000.0);
	take_one();
	assert_int_equal(tr->done, 1);
	check_result(tr, 0);
	assert_int_equal(tr->r->jobs[1].job.status, GM_ETIMEDOUT);
	h_close();
}

/* After gm_sched_stop nothing new enters; what was queued still runs. */
static void test_stop(void **state)
{
	struct treq *blocker, *queued, *late, *later;

	h_open(cost_of(&SMALL), 8);
	blocker = submit_ok(new_req_of(1, &SMALL));
	queued = submit_ok(new_req_of(3, &SMALL));
	gm_sched_stop(h.sched);
	late = new_req_of(1, &SMALL);
	assert_int_equal(submit(late), GM_ESHUTDOWN);
	assert_int_equal(gm_sched_requests(h.sched), 2);
	assert_int_equal(gm_sched_in_queue(h.sched), 3);
	drain();
	check_all_ok(blocker);
	check_all_ok(queued);
	later = new_req_of(1, &SMALL);
	assert_int_equal(submit(later), GM_ESHUTDOWN);
	assert_int_equal(late->done + later->done, 0);
	h_close();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_results, h_free),
	    cmocka_unit_test_teardown(test_queue_full, h_free),
	    cmocka_unit_test_teardown(test_back_pressure, h_free),
	    cmocka_unit_test_teardown(test_over_budget, h_free),
	    cmocka_unit_test_teardown(test_budget_edge, h_free),
	    cmocka_unit_test_teardown(test_reserve, h_free),
	    cmocka_unit_test_teardown(test_unsupported, h_free),
	    cmocka_unit_test_teardown(test_priority, h_free),
	    cmocka_unit_test_teardown(test_head_of_line, h_free),
	    cmocka_unit_test_teardown(test_deadline, h_free),
	    cmocka_unit_test_teardown(test_deadline_partial, h_free),
	    cmocka_unit_test_teardown(test_stop, h_free),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
