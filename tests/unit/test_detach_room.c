/*
 * test_detach_room.c - gm_detach (detach_fx.h): a result that could
 * not be kept, parked waits whose timeout passes, cancel of running and
 * finished jobs, results kept detach_keep_s then dropped, records
 * forgotten after as long again, and the byte bound (oldest records, then
 * oldest results, dropped for room; EBUSY when unfinished jobs alone
 * would not fit).
 */
#include "detach_fx.h"

/* A job whose reply could not be kept (no memory for its copy) reads
 * failed with ENOMEM, and a parked wait is told so. */
static void test_no_memory_for_result(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r1 = req(4), *r2 = req(4);
	uint64_t id1 = add(t, r1), id2 = add(t, r2);
	int w;

	r1->jobs[0].state = GM_SCHED_JOB_DONE;
	gm_detach_done(t, id1, NULL, 0);
	assert_string_equal(state_of(t, id1), "failed");
	assert_int_equal(counts(t).results, 0);
	assert_int_equal(wait_job(t, me, id2, -1, &w, 3), GM_OK);
	r2->jobs[0].state = GM_SCHED_JOB_DONE;
	gm_detach_done(t, id2, NULL, 0);
	assert_int_equal(ans.n, 1);
	assert_null(ans.result);
	assert_int_equal(ans.code, GM_ENOMEM);
	assert_int_equal(counts(t).waits, 0);
	assert_int_equal(counts(t).pending, 0);
	close_t(t);
}

/* A parked wait whose timeout passes is answered ETIMEDOUT by the
 * sweep; the job is still waited for later. */
static void test_wait_timeout(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r = req(4);
	uint64_t id = add(t, r);
	double before = gm_clock_now_us();
	int w;

	assert_true(gm_detach_next_due(t) == 0.0);
	assert_int_equal(wait_job(t, me, id, 5, &w, 1), GM_OK);
	assert_true(gm_detach_next_due(t) >= before + 5000.0);
	gm_detach_sweep(t);
	assert_int_equal(ans.n, 0);
	sleep_ms(10);
	gm_detach_sweep(t);
	assert_int_equal(ans.n, 1);
	assert_int_equal(ans.code, GM_ETIMEDOUT);
	assert_null(ans.result);
	assert_int_equal(counts(t).waits, 0);
	assert_true(gm_detach_next_due(t) == 0.0);
	finish(t, r, id, GM_OK);
	assert_int_equal(ans.n, 1);
	assert_string_equal(state_of(t, id), "done");
	close_t(t);
}

/* Cancel: a running job runs on and its result is dropped, answering a
 * parked wait ECANCELED; a kept result is dropped; a gone one stays as
 * it is. */
static void test_cancel(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r1 = req(4), *r2 = req(4);
	uint64_t id1 = add(t, r1), id2 = add(t, r2);
	int w, st;

	r1->jobs[0].state = GM_SCHED_JOB_RUNNING;
	assert_int_equal(gm_detach_cancel(t, me, id1, &st), GM_OK);
	assert_int_equal(st, GM_JOBSTATE_RUNNING);
	assert_int_equal(wait_job(t, me, id1, -1, &w, 3), GM_OK);
	finish(t, r1, id1, GM_OK);
	assert_int_equal(ans.n, 1);
	assert_int_equal(ans.code, GM_ECANCELED);
	assert_null(ans.result);
	/* It ran to a status 0, but reads canceled, ECANCELED. */
	assert_string_equal(state_of(t, id1), "canceled");
	assert_true(status_num(t, id1, "status") == GM_ECANCELED);
	assert_int_equal(wait_job(t, me, id1, -1, &w, 4), GM_ECANCELED);

	finish(t, r2, id2, GM_OK);
	assert_int_equal(counts(t).results, 1);
	assert_int_equal(gm_detach_cancel(t, me, id2, &st), GM_OK);
	assert_int_equal(st, GM_JOBSTATE_CANCELED);
	assert_true(status_num(t, id2, "status") == GM_ECANCELED);
	assert_int_equal(counts(t).results, 0);
	assert_int_equal(gm_detach_cancel(t, me, id2, &st), GM_OK);
	assert_int_equal(st, GM_JOBSTATE_CANCELED);
	assert_int_equal(gm_detach_cancel(t, me, 999, &st), GM_ENOTFOUND);
	close_t(t);
}

/* Within max_bytes: to make room the oldest records go first, then the
 * oldest results (a result dropped becomes a record); a request whose
 * room the unfinished jobs alone leave no space for is refused. */
static void test_room(void **state)
{
	uint64_t one = gm_detach_cost(reply_bytes(64)); /* about 32 KiB */
	uint64_t rec = gm_detach_cost(0);		/* a record alone */
	gm_detach *t = open_t(300, 3 * one + rec + 10);
	gm_sched_request *r[5];
	uint64_t id[5];
	gm_stats_detach c;
	char *json;
	int w;

	for (int i = 0; i < 3; i++) {
		id[i] = add(t, r[i] = req(64));
		finish(t, r[i], id[i], GM_OK);
	}
	/* A wait takes the first: a record now. */
	assert_int_equal(wait_job(t, me, id[0], 0, &w, 1), GM_OK);
	c = counts(t);
	assert_int_equal(c.results, 2);
	assert_int_equal(c.records, 1);
	assert_int_equal(c.bytes, 2 * one + rec);
	id[3] = add(t, r[3] = req(64)); /* fits as it is */
	assert_int_equal(counts(t).records, 1);
	/* The fifth needs the record's room, then a result's. */
	id[4] = add(t, r[4] = req(64));
	assert_int_equal(gm_detach_status(t, me, id[0], &json), GM_ENOTFOUND);
	assert_string_equal(state_of(t, id[1]), "expired");
	assert_string_equal(state_of(t, id[2]), "done");
	c = counts(t);
	assert_int_equal(c.dropped, 1);
	assert_int_equal(c.pending, 2);
	assert_int_equal(c.bytes, 3 * one + rec);
	/* Two unfinished jobs hold two results' room: two more never fit,
	 * whatever is dropped. */
	assert_int_equal(gm_detach_room(t, 2, 2 * one), GM_EBUSY);
	assert_string_equal(state_of(t, id[2]), "done");
	assert_true(counts(t).bytes <= counts(t).limit);
	finish(t, r[3], id[3], GM_OK);
	finish(t, r[4], id[4], GM_OK);
	close_t(t);
}

/* With keep_s 1 a result is dropped a second after its job finished
 * and the record a second after that. */
static void test_expiry(void **state)
{
	gm_detach *t = open_t(1, BIG);
	gm_sched_request *r = req(4);
	uint64_t id = add(t, r);
	double done;
	char *json;

	finish(t, r, id, GM_OK);
	done = gm_clock_now_us();
	assert_true(gm_detach_next_due(t) > done + 0.9e6 &&
		    gm_detach_next_due(t) <= done + 1e6);
	gm_detach_sweep(t);
	assert_string_equal(state_of(t, id), "done");
	sleep_ms(1050);
	gm_detach_sweep(t);
	assert_string_equal(state_of(t, id), "expired");
	assert_int_equal(counts(t).dropped, 1);
	assert_int_equal(counts(t).records, 1);
	sleep_ms(1050);
	gm_detach_sweep(t);
	assert_int_equal(gm_detach_status(t, me, id, &json), GM_ENOTFOUND);
	assert_int_equal(counts(t).records, 0);
	assert_int_equal(counts(t).bytes, 0);
	assert_true(gm_detach_next_due(t) == 0.0);
	close_t(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_memory_for_result),
	    cmocka_unit_test(test_wait_timeout),
	    cmocka_unit_test(test_cancel),
	    cmocka_unit_test(test_room),
	    cmocka_unit_test(test_expiry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
