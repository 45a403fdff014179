/*
 * test_client.c - the client library against a scripted peer that
 * speaks the daemon's side of protocol v2 (tests/support/gm_testpeer.h):
 * results read into the jobs, pipelined requests answered out of order
 * and interleaved, many small jobs and large zero-copy operands, ERROR
 * refusals, a connection dropped in the middle of a reply, a stall and
 * the late reply after the timeout, replies to unknown ids and
 * duplicates, garbage and a version-1 daemon, a refused connection,
 * at-most-once across a redial, a lazy client waiting for its daemon.
 * Control calls, waits and detached requests, TLS and closing with calls
 * in flight are in test_client_ctrl.c; staging, striping and several
 * daemons in test_client_paths.c.
 */
#include "client_fx.h"

/* ---- results ---- */

/* Three jobs of different shapes and options through one request. */
static void test_roundtrip(void **state)
{
	struct fixture *fx = *state;
	tjob j[3];
	gemmd_job jobs[3];
	gm_testframe f;
	gm_batch b;

	tjob_make(&j[0], GEMMD_FP64, GEMMD_ROW_MAJOR, 5, 7, 3, 0, 0, 0);
	tjob_make(&j[1], GEMMD_FP32, GEMMD_COL_MAJOR, 9, 4, 6, 1, 0, 1);
	tjob_make(&j[2], GEMMD_FP64, GEMMD_ROW_MAJOR, 2, 3, 4, 0, 1, 1);
	for (int i = 0; i < 3; i++)
		jobs[i] = j[i].job;
	fx_submit_read(fx, jobs, 3, 5000, &f);
	assert_int_equal(f.h.type, GM_MSG_GEMM);
	assert_int_equal(f.h.count, 3);
	assert_int_equal(gm_testframe_check(&f, &b), GM_OK);
	assert_int_equal(b.priority, GEMMD_PRIORITY_DEFAULT);
	assert_int_equal(gm_testconn_reply_all(fx->conn, &f), GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(async_wait(fx), GM_OK);
	for (int i = 0; i < 3; i++)
		assert_true(jobs[i].t.total_us == 5);
	tjobs_check(j, jobs, 3);
}

/* Two requests pipelined on one connection, their jobs answered in an
 * order of the peer's choosing, interleaved. */
static void test_out_of_order(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		int req;
		uint32_t job;
	} order[] = {{1, 1}, {0, 2}, {0, 0}, {1, 0}, {0, 1}};
	tjob a[3], b[2];
	gemmd_job ja[3], jb[2];
	struct async wa, wb;
	gm_testframe f[2];

	for (int i = 0; i < 3; i++) {
		tjob_make(&a[i], GEMMD_FP64, GEMMD_ROW_MAJOR, 4 + i, 3, 2, 0, 0,
			  0);
		ja[i] = a[i].job;
	}
	for (int i = 0; i < 2; i++) {
		tjob_make(&b[i], GEMMD_FP32, GEMMD_ROW_MAJOR, 3, 5 + i, 2, 0, 0,
			  0);
		jb[i] = b[i].job;
	}
	fx_client(fx, 0);
	async_start(fx->cl, ja, 3, 5000, &wa);
	async_start(fx->cl, jb, 2, 5000, &wb);
	fx_accept(fx);
	/* Both requests arrive before either is answered. */
	assert_int_equal(gm_testconn_read(fx->conn, &f[0], 5000), GM_OK);
	assert_int_equal(gm_testconn_read(fx->conn, &f[1], 5000), GM_OK);
	assert_int_not_equal(f[0].h.id, f[1].h.id);
	for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++)
		assert_int_equal(
		    gm_testconn_reply(fx->conn, &f[order[i].req], order[i].job),
		    GM_OK);
	assert_int_equal(async_end(&wa), GM_OK);
	assert_int_equal(async_end(&wb), GM_OK);
	tjobs_check(a, ja, 3);
	tjobs_check(b, jb, 2);
	gm_testframe_free(&f[0]);
	gm_testframe_free(&f[1]);
}

/* 512 small jobs: their operands copied into a few writes, their
 * replies (in reverse order) read a bufferful at a time. */
static void test_many_small(void **state)
{
	struct fixture *fx = *state;
	enum { N = 512 };
	tjob *j = calloc(N, sizeof(*j));
	gemmd_job *jobs = calloc(N, sizeof(*jobs));
	gm_testframe f;

	tjobs_make(j, jobs, N, GEMMD_FP32, 8, 8, 8);
	fx_submit_read(fx, jobs, N, 10000, &f);
	assert_int_equal(gm_testframe_check(&f, NULL), GM_OK);
	for (uint32_t i = N; i-- > 0;)
		assert_int_equal(gm_testconn_reply(fx->conn, &f, i), GM_OK);
	assert_int_equal(async_wait(fx), GM_OK);
	tjobs_check(j, jobs, N);
	gm_testframe_free(&f);
	free(j);
	free(jobs);
}

/* Operands larger than the coalescing threshold go out straight from
 * the caller's memory, more pieces than one write takes. */
static void test_large_operands(void **state)
{
	struct fixture *fx = *state;
	enum { N = 6 };
	tjob j[N];
	gemmd_job jobs[N];
	gm_testframe f;

	tjobs_make(j, jobs, N, GEMMD_FP64, 96, 80, 64);
	fx_submit_read(fx, jobs, N, 10000, &f);
	assert_int_equal(gm_testframe_check(&f, NULL), GM_OK);
	assert_int_equal(gm_testconn_reply_all(fx->conn, &f), GM_OK);
	assert_int_equal(async_wait(fx), GM_OK);
	tjobs_check(j, jobs, N);
	gm_testframe_free(&f);
}

/* ---- refusals and failures ---- */

/* An ERROR refuses the request whole; the connection goes on. */
static void test_error_refusal(void **state)
{
	struct fixture *fx = *state;
	tjob j[2];
	gemmd_job jobs[2];
	gm_testframe f;

	tjobs_make(j, jobs, 2, GEMMD_FP64, 3, 3, 3);
	fx_submit_read(fx, jobs, 2, 5000, &f);
	assert_int_equal(gm_testconn_error(fx->conn, f.h.id, GM_EBUSY,
					   "queue full, try again later"),
			 GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(async_wait(fx), GM_EBUSY);
	assert_int_equal(jobs[0].status, GM_EBUSY);
	assert_int_equal(jobs[1].status, GM_EBUSY);
	assert_string_equal(jobs[1].message, "queue full, try again later");
	tjob_untouched(&j[0]);
	/* The same connection serves the next request. */
	serve_one(fx, jobs, 2);
	assert_int_equal(gm_testpeer_accepted(fx->peer), 1);
	tjobs_check(j, jobs, 2);
}

/* The connection drops half way through the second job's result: the
 * first keeps its result, the call fails GM_ETRANSPORT, and the next
 * call is served on a new connection. */
static void test_drop_mid_reply(void **state)
{
	struct fixture *fx = *state;
	tjob j[2];
	gemmd_job jobs[2];
	gm_testframe f;
	gm_reply_job r;
	void *res;

	tjobs_make(j, jobs, 2, GEMMD_FP64, 64, 64, 8);
	fx_submit_read(fx, jobs, 2, 5000, &f);
	assert_int_equal(gm_testconn_reply(fx->conn, &f, 0), GM_OK);
	assert_int_equal(gm_testpeer_compute(fx->peer, &f, 1, &r, &res), GM_OK);
	write_cut_reply(fx->conn, f.h.id, 1, &r, res, r.result_bytes / 2);
	free(res);
	gm_testconn_close(fx->conn);
	gm_testframe_free(&f);
	assert_int_equal(async_wait(fx), GM_ETRANSPORT);
	assert_non_null(strstr(fx->last_error, "connection lost before the "
					       "reply; the request was not "
					       "resent"));
	j[0].job = jobs[0];
	tjob_check(&j[0]);
	assert_int_equal(jobs[1].status, GM_ETRANSPORT);
	/* A redial serves the next call. */
	fx_accept_next(fx);
	serve_one(fx, jobs, 2);
	tjobs_check(j, jobs, 2);
}

/* A stalled daemon: the call times out, its buffers untouched; the late
 * reply is read and dropped, and the connection serves the next call. */
static void test_timeout_late_reply(void **state)
{
	struct fixture *fx = *state;
	tjob j;
	gemmd_job job;
	gm_testframe f;
	double t0;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 32, 32, 32);
	fx_client(fx, 0);
	t0 = now_ms();
	async_submit(fx, &job, 1, 300);
	fx_accept(fx);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(async_wait(fx), GM_ETIMEDOUT);
	assert_true(now_ms() - t0 < 300 + 700);
	assert_string_equal(fx->last_error, "no reply within 300 ms");
	assert_int_equal(job.status, GM_ETIMEDOUT);
	tjob_untouched(&j);
	assert_int_equal(gm_testconn_reply_all(fx->conn, &f), GM_OK);
	gm_testframe_free(&f);
	serve_one(fx, &job, 1);
	j.job = job;
	tjob_check(&j);
	assert_int_equal(gm_testpeer_accepted(fx->peer), 1);
	tjob_free(&j);
}

/* Replies to ids not in flight, and a second reply to a job, are read
 * and dropped. */
static void test_unknown_and_duplicate(void **state)
{
	struct fixture *fx = *state;
	tjob j;
	gemmd_job job;
	gm_testframe f;
	gm_reply_job r;
	void *res;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 16, 16, 4);
	fx_submit_read(fx, &job, 1, 5000, &f);
	assert_int_equal(gm_testpeer_compute(fx->peer, &f, 0, &r, &res), GM_OK);
	assert_int_equal(
	    gm_testconn_job_reply(fx->conn, f.h.id + 1000, 0, &r, res), GM_OK);
	assert_int_equal(gm_testconn_ctrl_reply(fx->conn, 77, "{\"ok\":true}"),
			 GM_OK);
	assert_int_equal(gm_testconn_error(fx->conn, 78, GM_EBUSY, NULL),
			 GM_OK);
	assert_int_equal(gm_testconn_job_reply(fx->conn, f.h.id, 0, &r, res),
			 GM_OK);
	memset(res, 0x7f, r.result_bytes);
	assert_int_equal(gm_testconn_job_reply(fx->conn, f.h.id, 0, &r, res),
			 GM_OK);
	free(res);
	gm_testframe_free(&f);
	assert_int_equal(async_wait(fx), GM_OK);
	j.job = job;
	tjob_check(&j);
	/* The duplicate did not land in the caller's buffer. */
	serve_ping(fx);
	tjob_check(&j);
	tjob_free(&j);
}

/* Bytes that are no frame of v2 end the connection. */
static void test_bad_frame(void **state)
{
	struct fixture *fx = *state;
	static const uint8_t junk[GM_HDR_SIZE] = "HTTP/1.1 400 Bad Request\r\n";
	tjob j;
	gemmd_job job;
	gm_testframe f;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 3, 3, 3);
	fx_submit_read(fx, &job, 1, 5000, &f);
	gm_testframe_free(&f);
	assert_int_equal(gm_testconn_write(fx->conn, junk, sizeof(junk)),
			 GM_OK);
	assert_int_equal(async_wait(fx), GM_ETRANSPORT);
	assert_non_null(strstr(fx->last_error, "bad frame from the daemon"));
	tjob_free(&j);
}

/* A daemon of protocol version 1 opens with the SP handshake. */
static void test_v1_daemon(void **state)
{
	struct fixture *fx = *state;
	static const uint8_t sp[8] = {0, 'S', 'P', 0, 0, 0x31, 0, 0};
	tjob j;
	gemmd_job job;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 3, 3, 3);
	fx_client(fx, 0);
	async_submit(fx, &job, 1, 5000);
	fx_accept(fx);
	/* A v1 daemon opens with the handshake; the request is out by then
	 * (else it would wait for the next connection, which says the same
	 * first). */
	assert_int_equal(gm_testconn_read_bytes(fx->conn, NULL, 8, 5000),
			 GM_OK);
	assert_int_equal(gm_testconn_write(fx->conn, sp, sizeof(sp)), GM_OK);
	assert_int_equal(async_wait(fx), GM_EVERSION);
	assert_int_equal(job.status, GM_EVERSION);
	tjob_free(&j);
}

/* A connection the daemon refuses (over a cap) with an ERROR of id 0
 * and closes: nothing ran, and the call says why. */
static void test_refused_connection(void **state)
{
	struct fixture *fx = *state;
	tjob j;
	gemmd_job job;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 3, 3, 3);
	fx_client(fx, 0);
	fx_accept(fx);
	assert_int_equal(gm_testconn_error(fx->conn, 0, GM_EBUSY,
					   "too many connections "
					   "(max_connections 1)"),
			 GM_OK);
	/* The request goes out on the refused connection, then it closes. */
	async_submit(fx, &job, 1, 5000);
	usleep(100 * 1000);
	gm_testconn_close(fx->conn);
	assert_int_equal(async_wait(fx), GM_EBUSY);
	assert_non_null(strstr(job.message, "max_connections"));
	tjob_free(&j);
}

/* A request written whole before its connection dropped is never
 * written again: the redialed connection carries only the next call. */
static void test_at_most_once(void **state)
{
	struct fixture *fx = *state;
	tjob j;
	gemmd_job job;
	gm_testframe f;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 8, 8, 8);
	fx_submit_read(fx, &job, 1, 5000, &f);
	gm_testframe_free(&f);
	gm_testconn_close(fx->conn);
	assert_int_equal(async_wait(fx), GM_ETRANSPORT);
	fx_accept_next(fx);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 300), GM_ETIMEDOUT);
	serve_one(fx, &job, 1);
	tjobs_check(&j, &job, 1);
}

/* A lazy client: a call waits for the daemon to appear; another, with
 * no daemon within its timeout, says so. */
static void test_lazy(void **state)
{
	struct fixture *fx = *state;
	gemmd_open_opts o = {.flags = GEMMD_OPEN_LAZY};
	tjob j;
	gemmd_job job;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 4, 4, 4);
	fx_url(fx);
	assert_int_equal(gemmd_open(fx->url, &o, &fx->cl), GM_OK);
	assert_int_equal(gemmd_ping(fx->cl, NULL, 300), GM_ETIMEDOUT);
	assert_non_null(strstr(gemmd_last_error(),
			       "no connection to the daemon within 300 ms"));
	async_submit(fx, &job, 1, 10000);
	usleep(200 * 1000);
	fx_peer(fx);
	fx_accept(fx);
	serve_pending(fx);
	tjobs_check(&j, &job, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    FX_TEST(test_roundtrip),
	    FX_TEST(test_out_of_order),
	    FX_TEST(test_many_small),
	    FX_TEST(test_large_operands),
	    FX_TEST(test_error_refusal),
	    FX_TEST(test_drop_mid_reply),
	    FX_TEST(test_timeout_late_reply),
	    FX_TEST(test_unknown_and_duplicate),
	    FX_TEST(test_bad_frame),
	    FX_TEST(test_v1_daemon),
	    FX_TEST(test_refused_connection),
	    FX_TEST(test_at_most_once),
	    FX_TEST(test_lazy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
