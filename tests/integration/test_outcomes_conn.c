/*
 * test_outcomes_conn.c - gemmd on the CPU engine through raw frames
 * (outcomes_fx.h): requests pipelined on many connections that close
 * without reading a reply: every request gemmd accepted is counted, its
 * jobs ok or failed, once the connections are gone; detached results
 * that take the room of others; and gemmd stopped while jobs are queued,
 * detached ones among them: what comes after is refused, what came before
 * is answered.
 */
#include "outcomes_fx.h"

/* Writes the n bytes at p to fd within WAIT_MS, whether or not the
 * daemon reads them as they come: 0, or -1. */
static int write_within(int fd, const uint8_t *p, size_t n)
{
	double until = it_now_us() + WAIT_MS * 1e3;
	size_t off = 0;

	while (off < n && it_now_us() < until) {
		ssize_t k =
		    send(fd, p + off, n - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k > 0)
			off += (size_t)k;
		else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		else
			usleep(1000);
	}
	return off == n ? 0 : -1;
}

/*
 * Connections that pipeline conn_max_inflight requests and close
 * without reading a reply, the last request cut in the middle of its
 * payload: gemmd accepted it from its head, and the close abandons it
 * before it can run. Once they are gone every request accepted is
 * counted, each of its jobs once, ok or failed (the abandoned ones
 * ECANCELED), and gemmd holds nothing. Its own daemon, whose queue
 * holds every request, so that none is refused.
 */
static void test_pipelined_then_closed(void **state)
{
	enum { CONNS = 8, REQS = 256 };
	const char *args[] = {"--set", "cpu_threads=1", NULL};
	/* A 1 x 1 result: replies never fill the socket gemmd writes. */
	rc_job j = {.dtype = 1, .m = 1, .n = 1, .k = 1024, .alpha = 1};
	counts before, now;
	int fds[CONNS];
	uint8_t *req;
	char key[64];
	it_daemon d;
	size_t len;

	j.a = j.b = zeros;
	assert_int_equal(it_launch(&d, args), 0);
	before = counts_now(&d);
	assert_non_null(req = rc_gemm(1, 1, 0, 0, &j, 1, &len));
	for (int c = 0; c < CONNS; c++) {
		assert_true((fds[c] = rc_connect(d.ipc, NULL)) >= 0);
		for (int r = 0; r < REQS - 1; r++)
			assert_int_equal(write_within(fds[c], req, len), 0);
		assert_int_equal(write_within(fds[c], req, len / 2), 0);
	}
	/* Every request accepted, the cut ones waiting for their
	 * payloads: */
	assert_int_equal(it_wait_stat(&d, "requests.total",
				      before.total + CONNS * REQS, WAIT_MS),
			 before.total + CONNS * REQS);
	for (int c = 0; c < CONNS; c++)
		close(fds[c]);
	free(req);
	assert_idle(&d, "pipelined connections closed");
	now = counts_now(&d);
	assert_int_equal((long)(now.total - before.total), CONNS * REQS);
	assert_int_equal((long)(now.ok - before.ok), CONNS * (REQS - 1));
	assert_int_equal((long)(now.failed - before.failed), CONNS);
	assert_int_equal((long)(now.refused - before.refused), 0);
	assert_int_equal((long)it_rstat(&d, "jobs.by_status.ECANCELED"), CONNS);
	snprintf(key, sizeof(key), "jobs.by_uid.%u.failed", (unsigned)getuid());
	assert_int_equal((long)it_rstat(&d, key), CONNS);
	assert_int_equal(it_finish(&d), 0);
}

/*
 * Room for detached results is checked when a request's head comes and
 * taken when its payload is in: a detached request whose room another
 * took while its payload came (the other's job still queued, holding
 * its room) is refused then, EBUSY, one ERROR; its jobs count as
 * rejected, and the other runs.
 */
static void test_detach_room_taken(void **state)
{
	/* Each result fits in DETACH_MAX, two do not. */
	rc_job j = {.dtype = 1, .m = 300, .n = 300, .k = 8, .alpha = 1};
	counts before = counts_now(&fx.d), now;
	int blocker, a, b;
	uint64_t ida, idb, job;
	size_t len;
	uint8_t *req;
	rc_frame f;
	char msg[97];

	j.a = j.b = zeros;
	blocker = send_blocker();
	assert_true((a = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_true((b = rc_connect(fx.d.ipc, NULL)) >= 0);
	ida = ++fx.next_id;
	assert_non_null(req = rc_gemm(ida, 1, 0, 1, &j, 1, &len));
	assert_int_equal(rc_write(a, req, len - 8), 0);
	assert_int_equal(
	    it_wait_stat(&fx.d, "requests.total", before.total + 2, WAIT_MS),
	    before.total + 2); /* the blocker's and a's */
	idb = ++fx.next_id;
	rc_put_hdr(req, RC_GEMM, idb, 1, len - RC_HDR);
	assert_int_equal(rc_write(b, req, len), 0);
	assert_int_equal(read_ids(b, idb, 1, &job), OK);
	assert_int_equal(rc_write(a, req + len - 8, 8), 0);
	assert_int_equal(rc_read_frame(a, &f, WAIT_MS), 0);
	assert_int_equal(f.id, ida);
	assert_int_equal(rc_error(&f, msg), EBUSY_);
	rc_frame_free(&f);
	free(req);
	quiet(a);
	end_blocker(blocker);
	assert_int_equal(wait_job(b, job), OK);
	quiet(b);
	close(a);
	close(b);
	assert_idle(&fx.d, "detached room taken");
	now = counts_now(&fx.d);
	assert_int_equal((long)(now.total - before.total), 3);
	assert_int_equal((long)(now.refused - before.refused), 1);
	assert_int_equal((long)(now.rejected - before.rejected), 1);
	assert_int_equal((long)(now.ok - before.ok), 2);
	assert_int_equal((long)(now.failed - before.failed), 0);
}

/* Whether the stats say gemmd is stopping. */
static int stopping(void)
{
	cJSON *s = it_rstats(&fx.d);
	int on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "stopping"));

	cJSON_Delete(s);
	return on;
}

/*
 * A stop (SIGTERM) while a blocker runs, a detached job queued behind it
 * with a wait parked on it, and a detached job that failed at once:
 * requests sent after it, plain or detached, are refused whole with one
 * ERROR each, ESHUTDOWN; everything accepted before is answered, the
 * blocker and the parked wait, whose job ran; gemmd exits 0. It stops
 * the table's daemon: the last test.
 */
static void test_stopping(void **state)
{
	static const outcome ok = {.name = "ok", .jobs = {S_SMALL}, .njobs = 1};
	static const outcome fp16 = {
	    .name = "fp16", .jobs = {S_FP16}, .njobs = 1};
	const outcome *after[] = {&ok, &fp16};
	uint64_t queued, failed, wait_id = ++fx.next_id;
	int blocker, a, c;
	char json[96], msg[97];
	rc_reply r;
	rc_frame f;

	blocker = send_blocker();
	assert_true((a = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_true((c = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_int_equal(read_ids(a, send_request(a, &ok, 1, 0), 1, &queued),
			 OK);
	assert_int_equal(read_ids(a, send_request(a, &fp16, 1, 0), 1, &failed),
			 OK);
	assert_int_equal(wait_job(a, failed), EUNSUPPORTED_);
	snprintf(json, sizeof(json), "{\"op\":\"wait\",\"job\":%llu}",
		 (unsigned long long)queued);
	assert_int_equal(rc_send_ctrl(a, wait_id, json), 0);
	assert_int_equal(kill(fx.d.pid, SIGTERM), 0);
	for (int i = 0; i < WAIT_MS / 10 && !stopping(); i++)
		usleep(10000);
	assert_true(stopping());
	for (size_t i = 0; i < 2; i++)
		for (int detached = 0; detached < 2; detached++) {
			uint64_t id = send_request(c, after[i], detached, 0);

			assert_int_equal(rc_read_frame(c, &f, WAIT_MS), 0);
			assert_int_equal(f.id, id);
			assert_int_equal(rc_error(&f, msg), ESHUTDOWN_);
			rc_frame_free(&f);
		}
	quiet_or_closed(c);
	end_blocker(blocker);
	assert_int_equal(rc_read_frame(a, &f, WAIT_MS), 0);
	assert_int_equal(f.id, wait_id);
	assert_int_equal(rc_reply_of(&f, &r), 0);
	assert_int_equal(r.status, OK);
	rc_frame_free(&f);
	quiet_or_closed(a);
	close(a);
	close(c);
	assert_int_equal(it_stop(&fx.d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pipelined_then_closed),
	    cmocka_unit_test(test_detach_room_taken),
	    cmocka_unit_test(test_stopping),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
