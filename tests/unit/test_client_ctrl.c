/*
 * test_client_ctrl.c - the client library against a scripted peer of
 * protocol v2 (client_fx.h): control calls and replies that come before
 * the send completed, waits and detached requests, a reply of the wrong
 * type, closing with calls in flight, TLS.
 */
#include "client_fx.h"

/* ---- control calls ---- */

/* Replies that come before the library has heard its send complete:
 * the request counts as written from the moment its bytes go to the
 * stream, so its reply is routed to it. */
static void test_reply_before_send_done(void **state)
{
	struct fixture *fx = *state;

	fx_client(fx, 0);
	fx_accept(fx);
	for (int i = 0; i < 300; i++)
		serve_ping(fx);
}

static void test_ctrl(void **state)
{
	struct fixture *fx = *state;
	struct bg cc;
	gm_testframe f;

	fx_client(fx, 0);
	ctrl_start(fx, &cc, "{\"op\":\"stats\"}");
	fx_accept(fx);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(f.h.type, GM_MSG_CTRL);
	assert_int_equal(f.h.length, strlen("{\"op\":\"stats\"}"));
	assert_memory_equal(f.buf + GM_HDR_SIZE, "{\"op\":\"stats\"}",
			    f.h.length);
	assert_int_equal(gm_testconn_ctrl_reply(fx->conn, f.h.id,
						"{\"ok\":true,\"stats\":{}}"),
			 GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(bg_end(&cc), GM_OK);
	assert_string_equal(cc.reply, "{\"ok\":true,\"stats\":{}}");
	free(cc.reply);
	/* A refusal is its code and message. */
	ctrl_start(fx, &cc, "{\"op\":\"status\",\"job\":5}");
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(
	    gm_testconn_ctrl_reply(fx->conn, f.h.id,
				   "{\"ok\":false,\"code\":27,\"error\":"
				   "\"ENOTFOUND\",\"message\":\"no job 5\"}"),
	    GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(bg_end(&cc), GM_ENOTFOUND);
	assert_string_equal(cc.msg, "no job 5");
}

/* A wait answered by a GEMM_REPLY of index 0 with the id of the CTRL
 * request; a detached request answered by its ids. */
static void test_wait_and_detach(void **state)
{
	struct fixture *fx = *state;
	struct bg cc;
	gemmd_job w = {0};
	uint64_t ids[2];
	gm_testframe f;
	tjob j[2];
	gemmd_job jobs[2];
	double res[6] = {1, 2, 3, 4, 5, 6};
	gm_reply_job r = {.dtype = GM_FP64,
			  .m = 2,
			  .n = 3,
			  .result_bytes = sizeof(res),
			  .t = {1, 1, 1, 1, 9}};

	fx_client(fx, 0);
	wait_start(fx, &cc, 42, &w);
	fx_accept(fx);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_non_null(strstr((char *)f.buf + GM_HDR_SIZE, "\"wait\""));
	assert_int_equal(gm_testconn_job_reply(fx->conn, f.h.id, 0, &r, res),
			 GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(bg_end(&cc), GM_OK);
	assert_int_equal(w.status, GM_OK);
	assert_int_equal(w.m, 2);
	assert_int_equal(w.n, 3);
	assert_memory_equal(w.out, res, sizeof(res));
	assert_true(w.t.total_us == 9);
	free(w.out);
	/* Detached: the ids, in job order. */
	tjobs_make(j, jobs, 2, GEMMD_FP64, 3, 3, 3);
	detach_start(fx, &cc, jobs, 2, ids);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(gm_testframe_check(&f, &cc.batch), GM_OK);
	assert_int_equal(cc.batch.flags, GM_BATCH_DETACH);
	assert_int_equal(gm_testconn_ctrl_reply(fx->conn, f.h.id,
						"{\"ok\":true,\"jobs\":[5,6]}"),
			 GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(bg_end(&cc), GM_OK);
	assert_int_equal(ids[0], 5);
	assert_int_equal(ids[1], 6);
	tjob_free(&j[0]);
	tjob_free(&j[1]);
}

/* Replies of the wrong type: a GEMM_REPLY to a control request, a
 * CTRL_REPLY to a GEMM request. */
static void test_wrong_reply_type(void **state)
{
	struct fixture *fx = *state;
	gm_reply_job r = {.dtype = GM_FP64, .m = 1, .n = 1, .result_bytes = 8};
	double one = 1;
	struct bg cc;
	gm_testframe f;
	tjob j;
	gemmd_job job;

	fx_client(fx, 0);
	ctrl_start(fx, &cc, "{\"op\":\"ping\"}");
	fx_accept(fx);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(gm_testconn_job_reply(fx->conn, f.h.id, 0, &r, &one),
			 GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(bg_end(&cc), GM_EMSGTYPE);
	tjobs_make(&j, &job, 1, GEMMD_FP64, 3, 3, 3);
	async_submit(fx, &job, 1, 5000);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(
	    gm_testconn_ctrl_reply(fx->conn, f.h.id, "{\"ok\":true}"), GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(async_wait(fx), GM_EMSGTYPE);
	/* The connection goes on. */
	serve_ping(fx);
	tjob_free(&j);
}

/* gemmd_close with calls in flight: their callbacks run, GM_ECANCELED,
 * before it returns. */
static void test_close_in_flight(void **state)
{
	struct fixture *fx = *state;
	struct async a;
	tjob j;
	gemmd_job job;
	gm_testframe f;

	tjobs_make(&j, &job, 1, GEMMD_FP64, 8, 8, 8);
	fx_client(fx, 0);
	async_start(fx->cl, &job, 1, GEMMD_FOREVER, &a);
	fx_accept(fx);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	gm_testframe_free(&f);
	gemmd_close(fx->cl);
	fx->cl = NULL;
	assert_int_equal(sem_trywait(&a.sem), 0);
	assert_int_equal(a.rv, GM_ECANCELED);
	assert_int_equal(job.status, GM_ECANCELED);
	tjob_free(&j);
}

/* tls+tcp://, the daemon's certificate checked against an IP address. */
static void test_tls(void **state)
{
	struct fixture *fx = *state;
	gemmd_open_opts o;
	gm_tls_ctx *sctx;
	tjob j;
	gemmd_job job;

	if (!fx_pki(fx, &sctx))
		skip();
	assert_int_equal(
	    gm_testpeer_open("tls+tcp://127.0.0.1:0", sctx, &fx->peer), GM_OK);
	snprintf(fx->url, sizeof(fx->url), "%s", gm_testpeer_url(fx->peer));
	o = (gemmd_open_opts){.tls_ca_file = fx->pki.ca,
			      .tls_cert_file = fx->pki.ccert,
			      .tls_key_file = fx->pki.ckey};
	assert_int_equal(gemmd_open(fx->url, &o, &fx->cl), GM_OK);
	tjob_make(&j, GEMMD_FP64, GEMMD_ROW_MAJOR, 40, 30, 20, 0, 0, 1);
	job = j.job;
	async_submit(fx, &job, 1, 5000);
	fx_accept(fx);
	serve_pending(fx);
	tjobs_check(&j, &job, 1);
	fx_free_peer(fx);
	gm_tls_ctx_free(sctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    FX_TEST(test_reply_before_send_done),
	    FX_TEST(test_ctrl),
	    FX_TEST(test_wait_and_detach),
	    FX_TEST(test_wrong_reply_type),
	    FX_TEST(test_close_in_flight),
	    FX_TEST(test_tls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
