/*
 * test_detach.c - gm_detach, the table of detached jobs (detach_fx.h):
 * random ids, owners (another principal's job is not found), states and
 * the status document, waits answered at once or parked and answered on
 * completion. Results that could not be kept, wait timeouts, cancel,
 * the byte bound and expiry are in test_detach_room.c.
 */
#include "detach_fx.h"

/* Ids are random in 1..2^53 - 1 and the status document carries them
 * as exact digits; it follows a job from queued to done. */
static void test_ids_and_status(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r1 = req(4), *r2 = req(8);
	uint64_t id1 = add(t, r1), id2 = add(t, r2);
	const cJSON *tm;
	char *json, digits[40];
	cJSON *doc;

	assert_true(id1 >= 1 && id1 <= GM_DETACH_ID_MAX);
	assert_true(id2 >= 1 && id2 <= GM_DETACH_ID_MAX);
	assert_true(id2 != id1 && id2 != id1 + 1);
	assert_int_equal(gm_detach_status(t, me, id1, &json), GM_OK);
	snprintf(digits, sizeof(digits), "{\"ok\":true,\"job\":%" PRIu64 ",",
		 id1);
	assert_non_null(strstr(json, digits));
	free(json);
	assert_string_equal(state_of(t, id1), "queued");
	r1->jobs[0].state = GM_SCHED_JOB_RUNNING;
	assert_string_equal(state_of(t, id1), "running");
	assert_int_equal(counts(t).pending, 2);
	finish(t, r1, id1, GM_OK);
	doc = status_doc(t, id1);
	assert_string_equal(cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(doc, "state")),
			    "done");
	assert_true(
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "result")));
	assert_int_equal(
	    cJSON_GetObjectItemCaseSensitive(doc, "priority")->valueint, 2);
	assert_string_equal(cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(doc, "dtype")),
			    "fp64");
	tm = cJSON_GetObjectItemCaseSensitive(doc, "timings");
	assert_true(
	    cJSON_GetObjectItemCaseSensitive(tm, "kernel_us")->valuedouble ==
	    2.5);
	cJSON_Delete(doc);
	json = (char *)"untouched";
	assert_int_equal(gm_detach_status(t, me, GM_DETACH_ID_MAX + 1, &json),
			 GM_ENOTFOUND);
	assert_null(json);
	assert_int_equal(counts(t).jobs, 2);
	assert_int_equal(counts(t).pending, 1);
	assert_int_equal(counts(t).results, 1);
	finish(t, r2, id2, GM_OK);
	close_t(t);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* 4096 ids of one request: all distinct, in range, spread over the
 * whole range (about half of them in its upper half) and not runs of
 * neighbours, so that one id tells nothing of another. */
static void test_ids_random(void **state)
{
	enum { N = 4096 };
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r = req(1);
	uint64_t *ids = calloc(N, sizeof(*ids));
	int upper = 0, neighbours = 0;

	assert_non_null(ids);
	assert_int_equal(gm_detach_room(t, N, N * gm_detach_cost(0)), GM_OK);
	for (int i = 0; i < N; i++)
		ids[i] = gm_detach_add(t, r, 0, me);
	qsort(ids, N, sizeof(*ids), cmp_u64);
	for (int i = 0; i < N; i++) {
		assert_true(ids[i] >= 1 && ids[i] <= GM_DETACH_ID_MAX);
		assert_true(i == 0 || ids[i] != ids[i - 1]);
		upper += ids[i] > GM_DETACH_ID_MAX / 2;
		neighbours += i != 0 && ids[i] - ids[i - 1] < 1024;
	}
	/* Binomial(4096, 1/2): 1500..2600 is over 17 standard deviations
	 * wide; two of 4096 random ids 1024 apart: odds of about 2^-30. */
	assert_true(upper > 1500 && upper < 2600);
	assert_int_equal(neighbours, 0);
	free(ids);
	close_t(t);
}

/* A job is its owner's: to another uid and to an anonymous client its
 * id reads as unknown (status, wait and cancel all ENOTFOUND with the
 * text an id never given gets, and nothing changes), while its owner,
 * with a principal of its own uid made anew, finds it, takes its result
 * and cancels its other job. */
static void test_owner(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r1 = req(4), *r2 = req(4);
	uint64_t id1 = add(t, r1), id2 = add(t, r2);
	gm_principal *me_again = principal(GM_URL_IPC, 1000);
	gm_principal *others[] = {other, anon};
	char unknown[128], *json;
	int w, st;

	assert_int_equal(
	    gm_detach_wait(t, me, 424242, 0, &w, 1, unknown, sizeof(unknown)),
	    GM_ENOTFOUND);
	finish(t, r1, id1, GM_OK);
	r2->jobs[0].state = GM_SCHED_JOB_RUNNING;
	for (int i = 0; i < 2; i++) {
		gm_principal *p = others[i];

		assert_int_equal(gm_detach_status(t, p, id1, &json),
				 GM_ENOTFOUND);
		assert_null(json);
		assert_int_equal(wait_job(t, p, id1, -1, &w, 2), GM_ENOTFOUND);
		/* The same words as for an id never given, but its own. */
		assert_non_null(strstr(said, "no detached job"));
		assert_non_null(strstr(unknown, "no detached job"));
		assert_int_equal(gm_detach_cancel(t, p, id1, &st),
				 GM_ENOTFOUND);
		assert_int_equal(gm_detach_cancel(t, p, id2, &st),
				 GM_ENOTFOUND);
	}
	assert_int_equal(ans.n, 0);
	assert_int_equal(counts(t).results, 1);
	assert_int_equal(counts(t).waits, 0);
	assert_string_equal(state_of(t, id2), "running");
	assert_int_equal(wait_job(t, me_again, id1, -1, &w, 3), GM_OK);
	check_result(3, GM_OK);
	assert_int_equal(gm_detach_cancel(t, me_again, id2, &st), GM_OK);
	assert_int_equal(st, GM_JOBSTATE_RUNNING);
	finish(t, r2, id2, GM_OK);
	assert_string_equal(state_of(t, id2), "canceled");
	gm_principal_release(me_again);
	close_t(t);
}

/* A finished job's wait is answered at once and takes the result; an
 * unfinished one parks until the job finishes; one wait at a time. */
static void test_wait(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r1 = req(4), *r2 = req(4), *r3 = req(4);
	uint64_t id1 = add(t, r1), id2 = add(t, r2), id3 = add(t, r3);
	int w1, w2;

	finish(t, r1, id1, GM_OK);
	assert_int_equal(wait_job(t, me, id1, -1, &w1, 5), GM_OK);
	assert_int_equal(ans.n, 1);
	assert_ptr_equal(ans.w, &w1);
	check_result(5, GM_OK);
	/* Taken: still done, status 0, no result. */
	assert_string_equal(state_of(t, id1), "done");
	assert_true(status_num(t, id1, "status") == GM_OK);
	{
		cJSON *doc = status_doc(t, id1);

		assert_true(cJSON_IsFalse(
		    cJSON_GetObjectItemCaseSensitive(doc, "result")));
		cJSON_Delete(doc);
	}
	assert_int_equal(wait_job(t, me, id1, -1, &w1, 6), GM_ENOTFOUND);
	assert_non_null(strstr(said, "taken by an earlier wait"));

	assert_int_equal(wait_job(t, me, id2, 0, &w1, 7), GM_ETIMEDOUT);
	assert_int_equal(wait_job(t, me, id2, -1, &w1, 8), GM_OK);
	assert_int_equal(ans.n, 1);
	assert_int_equal(counts(t).waits, 1);
	assert_int_equal(wait_job(t, me, id2, -1, &w2, 9), GM_EBUSY);
	finish(t, r2, id2, GM_OK);
	assert_int_equal(ans.n, 2);
	assert_ptr_equal(ans.w, &w1);
	check_result(8, GM_OK);
	assert_int_equal(counts(t).waits, 0);
	assert_int_equal(counts(t).results, 0);

	/* A failed job's outcome is a result too. */
	finish(t, r3, id3, GM_EUNSUPPORTED);
	assert_string_equal(state_of(t, id3), "failed");
	assert_int_equal(wait_job(t, me, id3, 0, &w2, 10), GM_OK);
	check_result(10, GM_EUNSUPPORTED);
	assert_int_equal(wait_job(t, me, 12345, 0, &w2, 11), GM_ENOTFOUND);
	close_t(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ids_and_status),
	    cmocka_unit_test(test_ids_random),
	    cmocka_unit_test(test_owner),
	    cmocka_unit_test(test_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
