/*
 * test_detach.c - gm_detach, the table of detached jobs: random ids,
 * owners (another principal's job is not found), states and the status
 * document, waits answered at once or parked and
 * answered on completion or timeout, cancel of running and finished
 * jobs, results kept detach_keep_s then dropped, records forgotten after
 * as long again, and the byte bound (oldest records, then oldest
 * results, dropped for room; EBUSY when unfinished jobs alone would not
 * fit). The jobs are bare scheduler records whose state the test sets
 * and whose replies it builds: nothing runs, and no job is ever queued
 * in a scheduler, so the table gets none.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_detach.h"

#define MAXREQ 16
#define BIG    (UINT64_C(1) << 30)

/* What the answer callback was last given. */
static struct answer {
	int n;
	void *w;
	uint64_t id;
	uint8_t *result;
	uint64_t len;
	int code;
	char text[160];
} ans;

static gm_sched_request *reqs[MAXREQ];
static int nreqs;

/* The principal the jobs are added for, and two others: another uid,
 * and an anonymous client. */
static gm_principal *me, *other, *anon;

static gm_principal *principal(int kind, uint64_t uid)
{
	gm_peer p = {.kind = kind, .has_cred = 1, .uid = uid};
	gm_principal *pr = gm_principal_new(&p);

	assert_non_null(pr);
	return pr;
}

static void on_answer(void *w, uint64_t id, uint8_t *result, uint64_t len,
		      int code, const char *text, void *arg)
{
	(void)arg;
	free(ans.result);
	ans.n++;
	ans.w = w;
	ans.id = id;
	ans.result = result;
	ans.len = len;
	ans.code = code;
	snprintf(ans.text, sizeof(ans.text), "%s", text ? text : "");
}

static gm_detach *open_t(unsigned keep_s, uint64_t max_bytes)
{
	gm_detach *t;

	memset(&ans, 0, sizeof(ans));
	me = principal(GM_URL_IPC, 1000);
	other = principal(GM_URL_IPC, 1001);
	anon = principal(GM_URL_TCP, 1000);
	assert_int_equal(
	    gm_detach_create(NULL, keep_s, max_bytes, on_answer, NULL, &t),
	    GM_OK);
	return t;
}

static void close_t(gm_detach *t)
{
	gm_detach_destroy(t);
	free(ans.result);
	ans.result = NULL;
	for (int i = 0; i < nreqs; i++)
		gm_sched_free_request(reqs[i]);
	nreqs = 0;
	gm_principal_release(me);
	gm_principal_release(other);
	gm_principal_release(anon);
}

/* A one-job fp64 m x m x m request, its job queued. */
static gm_sched_request *req(uint32_t m)
{
	gm_sched_request *r = gm_sched_alloc_request(1);

	assert_non_null(r);
	assert_true(nreqs < MAXREQ);
	reqs[nreqs++] = r;
	r->batch.priority = 2;
	r->jobs[0].req = r;
	r->jobs[0].state = GM_SCHED_JOB_QUEUED;
	r->jobs[0].job.d = (gm_job_desc){
	    .dtype = GM_FP64, .m = m, .n = m, .k = m, .alpha = 1.0};
	return r;
}

static uint64_t reply_bytes(uint32_t m)
{
	return GM_HDR_SIZE + GM_REPLY_JOB_SIZE + (uint64_t)m * m * 8;
}

/* Records r's job after making room for it. */
static uint64_t add(gm_detach *t, gm_sched_request *r)
{
	uint32_t m = r->jobs[0].job.d.m;

	assert_int_equal(gm_detach_room(t, 1, gm_detach_cost(reply_bytes(m))),
			 GM_OK);
	return gm_detach_add(t, r, reply_bytes(m), me);
}

/* r's reply frame (malloc'd, *len bytes): its result (every byte 0x5a)
 * when status is 0. */
static uint8_t *reply(const gm_sched_request *r, int status, uint64_t *len)
{
	const gm_job_desc *d = &r->jobs[0].job.d;
	uint64_t out = status == 0 ? (uint64_t)d->m * d->n * 8 : 0;
	gm_reply_job rj = {.status = (uint32_t)status,
			   .dtype = d->dtype,
			   .m = d->m,
			   .n = d->n,
			   .t = {1.5, 0, 2.5, 0, 4.0},
			   .result_bytes = out};
	uint8_t *m;

	*len = GM_HDR_SIZE + GM_REPLY_JOB_SIZE + out;
	assert_non_null(m = malloc(*len));
	if (status != 0)
		snprintf(rj.message, sizeof(rj.message), "it failed");
	gm_proto_put_hdr(m, GM_MSG_GEMM_REPLY, 77, 3, GM_REPLY_JOB_SIZE + out);
	gm_proto_put_reply_job(m + GM_HDR_SIZE, &rj);
	memset(m + GM_HDR_SIZE + GM_REPLY_JOB_SIZE, 0x5a, (size_t)out);
	return m;
}

/* Finishes r's job (id) with status. */
static void finish(gm_detach *t, gm_sched_request *r, uint64_t id, int status)
{
	uint64_t len;
	uint8_t *m = reply(r, status, &len);

	r->jobs[0].state = GM_SCHED_JOB_DONE;
	gm_detach_done(t, id, m, len);
}

static cJSON *status_doc(gm_detach *t, uint64_t id)
{
	char *json = NULL;
	cJSON *doc;

	assert_int_equal(gm_detach_status(t, me, id, &json), GM_OK);
	assert_non_null(json);
	doc = cJSON_Parse(json);
	free(json);
	assert_non_null(doc);
	return doc;
}

static const char *state_of(gm_detach *t, uint64_t id)
{
	static char state[16];
	cJSON *doc = status_doc(t, id);

	snprintf(state, sizeof(state), "%s",
		 cJSON_GetStringValue(
		     cJSON_GetObjectItemCaseSensitive(doc, "state")));
	cJSON_Delete(doc);
	return state;
}

static gm_stats_detach counts(gm_detach *t)
{
	gm_stats_detach c;

	gm_detach_counts(t, &c);
	return c;
}

/* The GEMM_REPLY a wait was answered with: its header carries the
 * wait's request id and job index 0. */
static void check_result(uint64_t req_id, int status)
{
	gm_hdr h;
	char msg[128];
	gm_reply_job r;

	assert_non_null(ans.result);
	assert_int_equal(ans.id, req_id);
	assert_int_equal(
	    gm_proto_get_hdr(ans.result, ans.len, &h, msg, sizeof(msg)), GM_OK);
	assert_int_equal(h.type, GM_MSG_GEMM_REPLY);
	assert_int_equal(h.id, req_id);
	assert_int_equal(h.count, 0);
	assert_int_equal(h.length + GM_HDR_SIZE, ans.len);
	assert_int_equal(gm_proto_get_reply_job(&h, ans.result + GM_HDR_SIZE,
						&r, msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(r.status, status);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* The number at key of job id's status document. */
static double status_num(gm_detach *t, uint64_t id, const char *key)
{
	cJSON *doc = status_doc(t, id);
	double v = cJSON_GetObjectItemCaseSensitive(doc, key)->valuedouble;

	cJSON_Delete(doc);
	return v;
}

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

	(void)state;
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

	(void)state;
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
	char text[128], unknown[128], *json;
	int w, st;

	(void)state;
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
		assert_int_equal(
		    gm_detach_wait(t, p, id1, -1, &w, 2, text, sizeof(text)),
		    GM_ENOTFOUND);
		/* The same words as for an id never given, but its own. */
		assert_non_null(strstr(text, "no detached job"));
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
	assert_int_equal(
	    gm_detach_wait(t, me_again, id1, -1, &w, 3, text, sizeof(text)),
	    GM_OK);
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
	char text[128];

	(void)state;
	finish(t, r1, id1, GM_OK);
	assert_int_equal(
	    gm_detach_wait(t, me, id1, -1, &w1, 5, text, sizeof(text)), GM_OK);
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
	assert_int_equal(
	    gm_detach_wait(t, me, id1, -1, &w1, 6, text, sizeof(text)),
	    GM_ENOTFOUND);
	assert_non_null(strstr(text, "taken by an earlier wait"));

	assert_int_equal(
	    gm_detach_wait(t, me, id2, 0, &w1, 7, text, sizeof(text)),
	    GM_ETIMEDOUT);
	assert_int_equal(
	    gm_detach_wait(t, me, id2, -1, &w1, 8, text, sizeof(text)), GM_OK);
	assert_int_equal(ans.n, 1);
	assert_int_equal(counts(t).waits, 1);
	assert_int_equal(
	    gm_detach_wait(t, me, id2, -1, &w2, 9, text, sizeof(text)),
	    GM_EBUSY);
	finish(t, r2, id2, GM_OK);
	assert_int_equal(ans.n, 2);
	assert_ptr_equal(ans.w, &w1);
	check_result(8, GM_OK);
	assert_int_equal(counts(t).waits, 0);
	assert_int_equal(counts(t).results, 0);

	/* A failed job's outcome is a result too. */
	finish(t, r3, id3, GM_EUNSUPPORTED);
	assert_string_equal(state_of(t, id3), "failed");
	assert_int_equal(
	    gm_detach_wait(t, me, id3, 0, &w2, 10, text, sizeof(text)), GM_OK);
	check_result(10, GM_EUNSUPPORTED);
	assert_int_equal(
	    gm_detach_wait(t, me, 12345, 0, &w2, 11, text, sizeof(text)),
	    GM_ENOTFOUND);
	close_t(t);
}

/* A parked wait whose timeout passes is answered ETIMEDOUT by the
 * sweep; the job is still waited for later. */
/* A job whose reply could not be kept (no memory for its copy) reads
 * failed with ENOMEM, and a parked wait is told so. */
static void test_no_memory_for_result(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r1 = req(4), *r2 = req(4);
	uint64_t id1 = add(t, r1), id2 = add(t, r2);
	int w;
	char text[128];

	(void)state;
	r1->jobs[0].state = GM_SCHED_JOB_DONE;
	gm_detach_done(t, id1, NULL, 0);
	assert_string_equal(state_of(t, id1), "failed");
	assert_int_equal(counts(t).results, 0);
	assert_int_equal(
	    gm_detach_wait(t, me, id2, -1, &w, 3, text, sizeof(text)), GM_OK);
	r2->jobs[0].state = GM_SCHED_JOB_DONE;
	gm_detach_done(t, id2, NULL, 0);
	assert_int_equal(ans.n, 1);
	assert_null(ans.result);
	assert_int_equal(ans.code, GM_ENOMEM);
	assert_int_equal(counts(t).waits, 0);
	assert_int_equal(counts(t).pending, 0);
	close_t(t);
}

static void test_wait_timeout(void **state)
{
	gm_detach *t = open_t(300, BIG);
	gm_sched_request *r = req(4);
	uint64_t id = add(t, r);
	double before = gm_clock_now_us();
	int w;
	char text[128];

	(void)state;
	assert_true(gm_detach_next_due(t) == 0.0);
	assert_int_equal(
	    gm_detach_wait(t, me, id, 5, &w, 1, text, sizeof(text)), GM_OK);
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
	char text[128];

	(void)state;
	r1->jobs[0].state = GM_SCHED_JOB_RUNNING;
	assert_int_equal(gm_detach_cancel(t, me, id1, &st), GM_OK);
	assert_int_equal(st, GM_JOBSTATE_RUNNING);
	assert_int_equal(
	    gm_detach_wait(t, me, id1, -1, &w, 3, text, sizeof(text)), GM_OK);
	finish(t, r1, id1, GM_OK);
	assert_int_equal(ans.n, 1);
	assert_int_equal(ans.code, GM_ECANCELED);
	assert_null(ans.result);
	/* It ran to a status 0, but reads canceled, ECANCELED. */
	assert_string_equal(state_of(t, id1), "canceled");
	assert_true(status_num(t, id1, "status") == GM_ECANCELED);
	assert_int_equal(
	    gm_detach_wait(t, me, id1, -1, &w, 4, text, sizeof(text)),
	    GM_ECANCELED);

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
	char text[128];

	(void)state;
	for (int i = 0; i < 3; i++) {
		id[i] = add(t, r[i] = req(64));
		finish(t, r[i], id[i], GM_OK);
	}
	/* A wait takes the first: a record now. */
	assert_int_equal(
	    gm_detach_wait(t, me, id[0], 0, &w, 1, text, sizeof(text)), GM_OK);
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

	(void)state;
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
	    cmocka_unit_test(test_ids_and_status),
	    cmocka_unit_test(test_ids_random),
	    cmocka_unit_test(test_owner),
	    cmocka_unit_test(test_wait),
	    cmocka_unit_test(test_no_memory_for_result),
	    cmocka_unit_test(test_wait_timeout),
	    cmocka_unit_test(test_cancel),
	    cmocka_unit_test(test_room),
	    cmocka_unit_test(test_expiry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
