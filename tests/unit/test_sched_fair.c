/*
 * test_sched_fair.c - the scheduler in front of the real CPU engine
 * (sched_fx.h): fairness between connections and principals, cancel,
 * expiry, priority limits, the engine's queue, the stats. The seed is
 * printed and GM_TEST_SEED replays one.
 */
#include "sched_fx.h"

/*
 * Two connections queue four jobs each behind a blocker at the same
 * priority, the first all of its own before the second any: they start
 * taking turns, each in its own order. A request of several jobs takes
 * one turn per job.
 */
static void test_fairness(void **state)
{
	struct treq *blk, *a[4], *b[4], *multi;
	size_t next = 1;

	h_open(cost_of(&SMALL), 32);
	blk = submit_ok(conn_req(9, &SMALL));
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit(a[i] = conn_req(1, &SMALL)), GM_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit(b[i] = conn_req(2, &SMALL)), GM_OK);
	multi = new_req(3, GM_BATCH_PRIO_DEFAULT, 0, &SMALL, 1);
	multi->r->conn = 3;
	assert_int_equal(submit(multi), GM_OK);
	drain();
	assert_int_equal(h.nback, 12);
	assert_ptr_equal(h.back[0], &blk->r->jobs[0].job);
	for (int i = 0; i < 4; i++) {
		assert_ptr_equal(h.back[next++], &a[i]->r->jobs[0].job);
		assert_ptr_equal(h.back[next++], &b[i]->r->jobs[0].job);
		if (i < 3)
			assert_ptr_equal(h.back[next++],
					 &multi->r->jobs[i].job);
		check_all_ok(a[i]);
		check_all_ok(b[i]);
	}
	check_all_ok(multi);
	h_close();
}

/* Two principals, as the daemon keys them (any stable address). */
static const char who_a, who_b;

/* Where job j came back, of the h.nback jobs back. */
static size_t back_at(const gm_job *j)
{
	for (size_t i = 0; i < h.nback; i++)
		if (h.back[i] == j)
			return i;
	fail_msg("job never back");
	return 0;
}

/*
 * Turns are the principal's, not the connection's: behind a blocker,
 * principal A queues eight jobs over nconn connections (in turn), then
 * principal B four over one. A's jobs start in the order they came,
 * whatever their connection, and B's second job starts at b1_at: with
 * the principals named, A and B alternate however many connections A
 * has; with none named, each of A's connections takes a turn of its own.
 */
static void test_fair_principals(void **state)
{
	static const struct {
		uint32_t nconn;
		int keyed;
		size_t b1_at;
	} cases[] = {
	    {1, 1, 4},	/* blk a0 b0 a1 b1 */
	    {2, 1, 4},	/* the same over two connections */
	    {4, 1, 4},	/* and over four */
	    {2, 0, 6},	/* blk a0 a1 b0 a2 a3 b1 */
	    {4, 0, 10}, /* blk a0..a3 b0 a4..a7 b1 */
	};

	for (size_t c = 0; c < NELEMS(cases); c++) {
		struct treq *blk, *a[8], *b[4];

		h_open(cost_of(&SMALL), 32);
		blk = submit_ok(conn_req(9, &SMALL));
		for (uint32_t i = 0; i < 8; i++) {
			a[i] = conn_req(10 + i % cases[c].nconn, &SMALL);
			a[i]->r->principal = cases[c].keyed ? &who_a : NULL;
			assert_int_equal(submit(a[i]), GM_OK);
		}
		for (int i = 0; i < 4; i++) {
			b[i] = conn_req(2, &SMALL);
			b[i]->r->principal = cases[c].keyed ? &who_b : NULL;
			assert_int_equal(submit(b[i]), GM_OK);
		}
		drain();
		assert_int_equal(h.nback, 13);
		assert_ptr_equal(h.back[0], &blk->r->jobs[0].job);
		for (int i = 1; i < 8; i++)
			assert_true(back_at(&a[i - 1]->r->jobs[0].job) <
				    back_at(&a[i]->r->jobs[0].job));
		assert_int_equal(back_at(&b[1]->r->jobs[0].job),
				 cases[c].b1_at);
		for (int i = 0; i < 8; i++)
			check_all_ok(a[i]);
		for (int i = 0; i < 4; i++)
			check_all_ok(b[i]);
		check_all_ok(blk);
		h_close();
	}
}

/* A large job that does not fit keeps its connection's turn, and
 * another connection's small job that fits starts past it, although the
 * large one came first. */
static void test_fair_head_of_line(void **state)
{
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	struct treq *large, *small;

	h_open(cost_of(&big), 8);
	submit_ok(conn_req(1, &SMALL));
	large = submit_ok(conn_req(2, &big));
	small = submit_ok(conn_req(3, &SMALL));
	assert_int_equal(gm_sched_on_engine(h.sched), 2);
	assert_int_equal(gm_sched_in_queue(h.sched), 1);
	drain();
	assert_ptr_equal(h.back[1], &small->r->jobs[0].job);
	assert_ptr_equal(h.back[2], &large->r->jobs[0].job);
	check_all_ok(large);
	check_all_ok(small);
	h_close();
}

/* A queued job canceled fails with ECANCELED at once and never runs;
 * its request finishes when its last job does; running and finished
 * jobs cannot be canceled. */
static void test_cancel(void **state)
{
	struct treq *blk, *two, *one;

	h_open(cost_of(&SMALL), 8);
	blk = submit_ok(new_req_of(1, &SMALL));
	two = submit_ok(new_req_of(2, &SMALL));
	one = submit_ok(new_req_of(1, &SMALL));
	wait_back(1);
	assert_int_equal(gm_sched_job_state(&blk->r->jobs[0]),
			 GM_SCHED_JOB_RUNNING);
	assert_int_equal(gm_sched_job_state(&two->r->jobs[1]),
			 GM_SCHED_JOB_QUEUED);
	assert_int_equal(gm_sched_cancel(h.sched, &blk->r->jobs[0]),
			 GM_ENOTFOUND);
	assert_int_equal(gm_sched_cancel(h.sched, &two->r->jobs[1]), GM_OK);
	assert_int_equal(two->r->jobs[1].job.status, GM_ECANCELED);
	assert_int_equal(gm_sched_job_state(&two->r->jobs[1]),
			 GM_SCHED_JOB_DONE);
	assert_int_equal(two->done, 0);
	assert_int_equal(gm_sched_cancel(h.sched, &two->r->jobs[0]), GM_OK);
	assert_int_equal(two->done, 1);
	assert_int_equal(gm_sched_cancel(h.sched, &two->r->jobs[0]),
			 GM_ENOTFOUND);
	assert_int_equal(gm_sched_in_queue(h.sched), 1);
	drain();
	check_all_ok(blk);
	check_all_ok(one);
	assert_int_equal(h.st.errors[GM_ECANCELED], 2);
	h_close();
}

/* gm_sched_expire fails a job whose deadline passed while the engine
 * is still busy, without waiting for the queue to move, and
 * gm_sched_next_deadline then moves on to the next deadline. */
static void test_expire(void **state)
{
	const struct shape slow = {GM_FP64, 0, 0, 0, 0, 600, 600, 600};
	struct treq *late, *none, *far;
	double far_due;

	h_open(cost_of(&slow), 8);
	submit_ok(new_req_of(1, &slow));
	assert_true(gm_sched_next_deadline(h.sched) == 0.0);
	assert_int_equal(gm_sched_expire(h.sched), 0);
	far = submit_ok(new_req(1, 1, 600000, &SMALL, 1));
	late = submit_ok(new_req(1, 1, 1, &SMALL, 1));
	none = submit_ok(new_req(1, 1, 0, &SMALL, 1));
	far_due = far->r->recv_us + 600000 * 1000.0;
	assert_true(gm_sched_next_deadline(h.sched) ==
		    late->r->recv_us + 1000.0);
	wait_past(gm_sched_next_deadline(h.sched) + 500.0);
	assert_int_equal(gm_sched_expire(h.sched), 1);
	assert_int_equal(late->done, 1);
	assert_int_equal(late->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_int_equal(gm_sched_on_engine(h.sched), 1); /* still busy */
	assert_true(gm_sched_next_deadline(h.sched) == far_due);
	drain();
	check_all_ok(far);
	check_all_ok(none);
	h_close();
}

/* Limits per priority: a request over its priority's limit is refused
 * EBUSY while other priorities, and the overall depth, still have
 * room. */
static void test_priority_limits(void **state)
{
	static const unsigned lim[GM_BATCH_PRIO_MAX + 1] = {2, 0, 0, 1};
	struct treq *p0, *over0, *p1, *p3, *over3;

	h_open(cost_of(&SMALL), 6);
	gm_sched_set_limits(h.sched, lim);
	submit_ok(new_req_of(1, &SMALL));
	wait_started(1);
	p0 = submit_ok(new_req(2, 0, 0, &SMALL, 1));
	over0 = new_req(1, 0, 0, &SMALL, 1);
	assert_int_equal(submit(over0), GM_EBUSY);
	assert_int_equal(gm_sched_room(h.sched, 0, 1), GM_EBUSY);
	p3 = submit_ok(new_req(1, 3, 0, &SMALL, 1));
	over3 = new_req(1, 3, 0, &SMALL, 1);
	assert_int_equal(submit(over3), GM_EBUSY);
	/* Priority 1 has no limit of its own: only the depth, 6. */
	assert_int_equal(gm_sched_room(h.sched, 1, 4), GM_EBUSY);
	assert_int_equal(gm_sched_room(h.sched, 1, 3), GM_OK);
	assert_int_equal(gm_sched_room(h.sched, 4, 1), GM_EINVAL);
	p1 = submit_ok(new_req(3, 1, 0, &SMALL, 1));
	assert_int_equal(gm_sched_in_queue_prio(h.sched, 0), 2);
	assert_int_equal(gm_sched_in_queue_prio(h.sched, 1), 3);
	assert_int_equal(gm_sched_in_queue_prio(h.sched, 3), 1);
	drain();
	check_all_ok(p0);
	check_all_ok(p1);
	check_all_ok(p3);
	h_close();
}

/*
 * Jobs handed to the engine that have not started (the engine is held in
 * the done callback of a first job, so they wait in its own queue) still
 * count as queued, not running; one is canceled and one expires through
 * gm_sched_expire, both taken back from the engine, never run; one whose
 * deadline passes there with nobody asking is failed by the engine as
 * it reaches it (start_seq 0, as for those taken back); and the one
 * that runs has a queue time that lasts until its BLAS call, after the
 * engine was let go.
 */
static void test_engine_queue(void **state)
{
	struct treq *blk, *wait, *cancel, *late, *gone;
	double released;

	h_open(64 * cost_of(&SMALL), 8);
	set_gate(1);
	blk = submit_ok(new_req_of(1, &SMALL));
	wait_back(1); /* the engine is held from now on */
	assert_int_equal(gm_sched_job_state(&blk->r->jobs[0]),
			 GM_SCHED_JOB_RUNNING);
	wait = submit_ok(new_req_of(1, &SMALL));
	cancel = submit_ok(new_req_of(1, &SMALL));
	late = submit_ok(new_req(1, 1, 1, &SMALL, 1));
	assert_int_equal(gm_sched_job_state(&wait->r->jobs[0]),
			 GM_SCHED_JOB_HANDED);
	assert_int_equal(gm_sched_in_queue(h.sched), 0);
	assert_int_equal(gm_sched_on_engine(h.sched), 4);
	assert_int_equal(gm_sched_queued(h.sched), 3);
	assert_int_equal(gm_sched_queued_prio(h.sched, 1), 3);
	assert_int_equal(gm_sched_inflight(h.sched), 1);

	assert_int_equal(gm_sched_cancel(h.sched, &cancel->r->jobs[0]), GM_OK);
	assert_int_equal(cancel->done, 1);
	assert_int_equal(cancel->r->jobs[0].job.status, GM_ECANCELED);
	assert_int_equal(gm_sched_queued(h.sched), 2);
	assert_true(gm_sched_next_deadline(h.sched) ==
		    late->r->recv_us + 1000.0);
	wait_past(gm_sched_next_deadline(h.sched) + 500.0);
	assert_int_equal(gm_sched_expire(h.sched), 1);
	assert_int_equal(late->done, 1);
	assert_int_equal(late->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_int_equal(late->r->jobs[0].t.start_seq, 0);
	assert_int_equal(gm_sched_on_engine(h.sched), 2);
	assert_true(gm_sched_next_deadline(h.sched) == 0.0);

	gone = submit_ok(new_req(1, 1, 1, &SMALL, 1));
	wait_past(gone->r->recv_us + 1500.0);
	released = gm_clock_now_us();
	set_gate(0);
	drain();
	assert_int_equal(gone->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_int_equal(gone->back[0], 1);
	/* Failed by the engine or taken back from it, a job that never
	 * started has no place in the order of starts. */
	assert_int_equal(gone->r->jobs[0].t.start_seq, 0);
	assert_true(wait->r->jobs[0].t.start_seq != 0);
	check_all_ok(blk);
	check_all_ok(wait);
	assert_true(wait->r->recv_us + wait->r->jobs[0].t.queue_us >= released);
	assert_int_equal(h.st.errors[GM_ETIMEDOUT], 2);
	h_close();
}

/* The counters after a known mix of outcomes. */
static void test_stats(void **state)
{
	const struct shape blk = {GM_FP64, 0, 0, 0, 0, 52, 52, 52};
	const struct shape tiny = {GM_FP64, 0, 0, 0, 0, 4, 4, 4};
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	struct shape mix[] = {SMALL, SMALL, SMALL, big};
	struct treq *late;

	mix[1].dtype = GM_FP32;
	mix[1].has_c = 1;
	mix[2].dtype = GM_FP16;
	h_open(cost_of(&blk), 16);
	assert_int_equal(submit(new_req_of(1, &blk)), GM_OK);
	late = submit_ok(new_req(1, 1, 1, &tiny, 1));
	assert_int_equal(submit(new_req(4, 1, 0, mix, NELEMS(mix))), GM_OK);
	wait_past(late->r->recv_us + 2000.0);
	drain();

	assert_int_equal(h.st.jobs_ok, 4);
	assert_int_equal(h.st.jobs_failed, 2);
	assert_int_equal(h.st.jobs_by_dtype[GM_FP64], 4);
	assert_int_equal(h.st.jobs_by_dtype[GM_FP32], 1);
	assert_int_equal(h.st.jobs_by_dtype[GM_FP16], 1);
	assert_int_equal(h.st.errors[GM_OK], 4);
	assert_int_equal(h.st.errors[GM_EUNSUPPORTED], 1);
	assert_int_equal(h.st.errors[GM_ETIMEDOUT], 1);
	assert_true(h.st.flops ==
		    2.0 * (52 * 52 * 52 + 2 * 8 * 8 * 8 + 64 * 64 * 64));
	for (int p = 0; p < GM_PHASE_COUNT; p++)
		assert_int_equal(h.st.phase[p].count, 4);
	assert_true(h.st.phase[GM_PHASE_TOTAL].max >=
		    h.st.phase[GM_PHASE_QUEUE].max);
	/* All at priority 1 but the first, at the default (1 too). */
	assert_int_equal(h.st.queue_prio[1].count, 4);
	assert_int_equal(h.st.queue_prio[0].count, 0);
	h_close();
}

/* Jobs by uid: the first GM_STATS_UIDS uids seen are counted apart, in
 * the order they came; later ones, and only they, as "other". */
static void test_stats_uids(void **state)
{
	gm_stats st;

	gm_stats_init(&st);
	for (uint64_t u = 0; u < GM_STATS_UIDS + 8; u++)
		gm_stats_uid_job(&st, 1000 + u, u % 3 == 0 ? GM_EBUSY : GM_OK);
	gm_stats_uid_job(&st, 1000, GM_OK);
	gm_stats_uid_job(&st, 1000 + GM_STATS_UIDS, GM_OK);
	assert_int_equal(st.nuids, GM_STATS_UIDS);
	for (unsigned i = 0; i < GM_STATS_UIDS; i++)
		assert_int_equal(st.uids[i].uid, 1000 + i);
	assert_int_equal(st.uids[0].ok, 1);
	assert_int_equal(st.uids[0].failed, 1);
	assert_int_equal(st.uids[1].ok, 1);
	/* Uids 1032..1039, of which 1033, 1036 and 1039 failed, and 1032
	 * once more. */
	assert_int_equal(st.other_uids.ok, 6);
	assert_int_equal(st.other_uids.failed, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_fairness, h_free),
	    cmocka_unit_test_teardown(test_fair_head_of_line, h_free),
	    cmocka_unit_test_teardown(test_fair_principals, h_free),
	    cmocka_unit_test_teardown(test_cancel, h_free),
	    cmocka_unit_test_teardown(test_expire, h_free),
	    cmocka_unit_test_teardown(test_engine_queue, h_free),
	    cmocka_unit_test_teardown(test_priority_limits, h_free),
	    cmocka_unit_test_teardown(test_stats, h_free),
	    cmocka_unit_test(test_stats_uids),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
