/*
 * test_ctrl.c - control requests over the wire, through raw frames
 * (gm_rawc.h) only, against a real gemmd on the CPU engine: the strict
 * reading of CTRL bodies (one object, nothing after it, valid UTF-8, no
 * NUL, no member twice, integers that are integers, no member an op
 * does not take), each refusal its own code in a CTRL_REPLY that is
 * itself valid JSON, with the connection going on; the check order of
 * PROTOCOL.md 7.3 where several checks apply, for CTRL and detached
 * GEMM requests; a body over max_ctrl_bytes refused from its header
 * alone, before any of it is sent, while another client is served and
 * the daemon's memory stays put; and how long the strict parse holds
 * the loop: pings timed beside a flood of bodies at the ceiling.
 */
#include <poll.h>
#include <sys/wait.h>

#include "hostile_fx.h"

/* Error codes (PROTOCOL.md 9). */
enum {
	EINVAL_ = 1,
	EDIM_ = 7,
	EFIELD_ = 12,
	ETOOBIG_ = 13,
	EJSON_ = 25,
	ENOTFOUND_ = 27,
	EDRAINING_ = 30,
	EACCES_ = 31,
	EUNSUPPORTED_ = 6,
};

/* Sends the len bytes of body as CTRL id on fd and reads its CTRL_REPLY:
 * 0 for {"ok":true,...}, else its "code". The reply must be JSON; its
 * message goes to msg (len 256) when not NULL. */
static int ctrl_n(int fd, uint64_t id, const char *body, size_t len, char *msg)
{
	uint8_t h[RC_HDR];
	const cJSON *m;
	rc_frame f;
	cJSON *doc;
	int code;

	rc_put_hdr(h, RC_CTRL, id, 0, len);
	assert_int_equal(rc_write(fd, h, RC_HDR), 0);
	assert_int_equal(rc_write(fd, body, len), 0);
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(f.type, RC_CTRL_REPLY);
	assert_int_equal(f.id, id);
	doc = cJSON_ParseWithLength((const char *)f.body, f.length);
	if (doc == NULL)
		fail_msg("reply is not JSON: %.*s", (int)f.length, f.body);
	code = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ok"))
		   ? 0
		   : (int)cJSON_GetNumberValue(
			 cJSON_GetObjectItemCaseSensitive(doc, "code"));
	m = cJSON_GetObjectItemCaseSensitive(doc, "message");
	if (msg != NULL)
		snprintf(msg, 256, "%s",
			 cJSON_IsString(m) ? m->valuestring : "");
	cJSON_Delete(doc);
	rc_frame_free(&f);
	return code;
}

static int ctrl(int fd, uint64_t id, const char *body, char *msg)
{
	return ctrl_n(fd, id, body, strlen(body), msg);
}

/* Whether the daemon says it is draining, asked on fd. */
static int draining(int fd)
{
	char *doc;
	int on;

	assert_int_equal(rc_ctrl(fd, 999, "{\"op\":\"ping\"}", &doc, WAIT_MS),
			 0);
	on = strstr(doc, "\"draining\":true") != NULL;
	free(doc);
	return on;
}

/* ---- strict bodies ---- */

#define BODY(s) s, sizeof(s) - 1

static const struct body_case {
	const char *name;
	const char *body;
	size_t len;
	int code;
} body_cases[] = {
    {"a ping", BODY("{\"op\":\"ping\"}"), 0},
    {"white space around it", BODY(" \r\n\t{ \"op\" : \"ping\" }\n"), 0},
    {"bytes after the object", BODY("{\"op\":\"ping\"} x"), EJSON_},
    {"two objects", BODY("{\"op\":\"ping\"}{\"op\":\"drain\"}"), EJSON_},
    {"an escaped NUL in the op", BODY("{\"op\":\"ping\\u0000drain\"}"), EJSON_},
    {"a raw NUL in the op", BODY("{\"op\":\"ping\0drain\"}"), EJSON_},
    {"a NUL after the object", BODY("{\"op\":\"ping\"}\0"), EJSON_},
    {"invalid UTF-8", BODY("{\"op\":\"ping\",\"x\":\"\xff\"}"), EJSON_},
    {"an overlong form", BODY("{\"op\":\"ping\",\"x\":\"\xc0\xaf\"}"), EJSON_},
    {"a surrogate", BODY("{\"op\":\"ping\",\"x\":\"\xed\xa0\x80\"}"), EJSON_},
    {"UTF-8 cut short", BODY("{\"op\":\"ping\",\"x\":\"\xe6\x97\"}"), EJSON_},
    {"a member twice", BODY("{\"op\":\"ping\",\"op\":\"drain\"}"), EJSON_},
    {"not an object", BODY("[\"ping\"]"), EJSON_},
    {"nothing", BODY(""), EJSON_},
    {"a trailing comma", BODY("{\"op\":\"ping\",}"), EJSON_},
    {"nested too deep",
     BODY("{\"op\":\"ping\",\"x\":[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}"),
     EJSON_},
    {"no op", BODY("{}"), EINVAL_},
    {"an unknown op", BODY("{\"op\":\"stat\"}"), EINVAL_},
    {"an op not a string", BODY("{\"op\":1}"), EINVAL_},
    {"timeout_ms 1.5", BODY("{\"op\":\"wait\",\"job\":1,\"timeout_ms\":1.5}"),
     EINVAL_},
    {"timeout_ms \"100\"",
     BODY("{\"op\":\"wait\",\"job\":1,\"timeout_ms\":\"100\"}"), EINVAL_},
    {"timeout_ms -1", BODY("{\"op\":\"wait\",\"job\":1,\"timeout_ms\":-1}"),
     EINVAL_},
    {"job 1e3", BODY("{\"op\":\"status\",\"job\":1e3}"), EINVAL_},
    {"job 1.0", BODY("{\"op\":\"status\",\"job\":1.0}"), EINVAL_},
    {"job 0", BODY("{\"op\":\"status\",\"job\":0}"), EINVAL_},
    {"job 2^64", BODY("{\"op\":\"status\",\"job\":18446744073709551616}"),
     EINVAL_},
    {"no job", BODY("{\"op\":\"cancel\"}"), EINVAL_},
    {"job 2^64 - 1, unknown",
     BODY("{\"op\":\"status\",\"job\":18446744073709551615}"), ENOTFOUND_},
    {"job 2^53, unknown", BODY("{\"op\":\"wait\",\"job\":9007199254740992}"),
     ENOTFOUND_},
    {"a member ping does not take", BODY("{\"op\":\"ping\",\"x\":1}"), EFIELD_},
    {"timeout_ms on status",
     BODY("{\"op\":\"status\",\"job\":1,\"timeout_ms\":0}"), EFIELD_},
    /* Check order: the body before the job is looked up. */
    {"an unknown member and job",
     BODY("{\"op\":\"status\",\"job\":5,\"bogus\":1}"), EFIELD_},
    {"a bad job and a bad member, in body order",
     BODY("{\"op\":\"status\",\"job\":1.5,\"bogus\":1}"), EINVAL_},
    {"a bad member and a bad job, in body order",
     BODY("{\"op\":\"status\",\"bogus\":1,\"job\":1.5}"), EFIELD_},
    {"JSON first, whatever the members",
     BODY("{\"op\":\"nope\",\"job\":1.5,\"x\":1} x"), EJSON_},
};

/*
 * Each body of the table on one connection: its code, in a CTRL_REPLY
 * that is valid JSON; the connection goes on (a ping after each), and
 * none of the bodies that named drain drained the daemon. Over ipc://
 * as root, an admin, so that only the body decides.
 */
static void test_strict_bodies(void **state)
{
	char msg[256];
	it_daemon d;
	int fd;

	assert_int_equal(it_launch(&d, NULL), 0);
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	for (size_t i = 0; i < sizeof(body_cases) / sizeof(body_cases[0]);
	     i++) {
		const struct body_case *c = &body_cases[i];
		int got = ctrl_n(fd, 10 + i, c->body, c->len, msg);

		if (got != c->code)
			fail_msg("%s: code %d (%s), want %d", c->name, got, msg,
				 c->code);
		assert_int_equal(ctrl(fd, 1000 + i, "{\"op\":\"ping\"}", NULL),
				 0);
	}
	assert_false(draining(fd));
	close(fd);
	assert_int_equal(it_finish(&d), 0);
}

/* A refusal quotes what the client sent, escaped: a member name with a
 * quote, a backslash and a control character comes back whole in a
 * reply that parses. */
static void test_refusal_is_json(void **state)
{
	char msg[256];
	it_daemon d;
	int fd;

	assert_int_equal(it_launch(&d, NULL), 0);
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	assert_int_equal(
	    ctrl(fd, 1, "{\"op\":\"ping\",\"a\\\"b\\\\c\\u0001\":1}", msg),
	    EFIELD_);
	assert_non_null(strstr(msg, "a\"b\\c\x01"));
	assert_int_equal(
	    ctrl(fd, 2, "{\"op\":\"ping\",\"\xe6\x97\xa5\":1}", msg), EFIELD_);
	assert_non_null(strstr(msg, "\xe6\x97\xa5"));
	close(fd);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- check order ---- */

/*
 * PROTOCOL.md 7.3: over plain tcp:// (anonymous, never admin) a drain
 * with a bad body is refused for the body (EFIELD, EJSON) and a good
 * one for who asks (EACCES); an admin's drain is not refused. A
 * detached request naming a region is EUNSUPPORTED whether the region
 * exists or not and over either transport, before the regions are
 * looked up; while draining a malformed request is refused for its
 * malformation, a well-formed one EDRAINING.
 */
static void test_check_order(void **state)
{
	static double a[4], b[4];
	rc_job reg = region_job(b);
	rc_job j = rc_job_on(1, 1, 1, a, b);
	rc_job bad = j;
	char msg[256];
	uint8_t *req;
	size_t len;
	it_daemon d;
	rc_frame f;
	int fd, adm;

	assert_int_equal(it_launch(&d, NULL), 0);
	assert_true((fd = rc_connect(d.tcp, NULL)) >= 0);
	assert_true((adm = rc_connect(d.ipc, NULL)) >= 0);
	assert_int_equal(ctrl(fd, 1, "{\"op\":\"drain\",\"x\":1}", msg),
			 EFIELD_);
	assert_int_equal(ctrl(fd, 2, "{\"op\":\"drain\"} x", msg), EJSON_);
	assert_int_equal(ctrl(fd, 3, "{\"op\":\"drain\"}", msg), EACCES_);
	assert_non_null(strstr(msg, "anonymous"));
	assert_non_null(strstr(msg, "admin_uids"));
	assert_int_equal(ctrl(fd, 4, "{\"op\":\"resume\"}", msg), EACCES_);
	assert_false(draining(fd));
	for (int u = 0; u < 2; u++) {
		int c = u ? fd : adm;

		assert_non_null(req = rc_gemm(5, 1, 0, 1, &reg, 1, &len));
		assert_int_equal(rc_write(c, req, len), 0);
		free(req);
		assert_int_equal(rc_read_frame(c, &f, WAIT_MS), 0);
		assert_int_equal(f.type, RC_ERROR_T);
		assert_int_equal(rc_error(&f, msg), EUNSUPPORTED_);
		rc_frame_free(&f);
	}
	assert_int_equal(ctrl(adm, 6, "{\"op\":\"drain\"}", msg), 0);
	bad.m = 0;
	assert_non_null(req = rc_gemm(7, 1, 0, 1, &bad, 1, &len));
	assert_int_equal(rc_write(fd, req, len), 0);
	free(req);
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(rc_error(&f, msg), EDIM_);
	rc_frame_free(&f);
	assert_non_null(req = rc_gemm(8, 1, 0, 1, &j, 1, &len));
	assert_int_equal(rc_write(fd, req, len), 0);
	free(req);
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(rc_error(&f, msg), EDRAINING_);
	rc_frame_free(&f);
	/* Every CTRL request is still served while drained. */
	assert_int_equal(ctrl(fd, 9, "{\"op\":\"stats\"}", msg), 0);
	assert_int_equal(ctrl(fd, 10, "{\"op\":\"status\",\"job\":3}", msg),
			 ENOTFOUND_);
	assert_int_equal(ctrl(adm, 11, "{\"op\":\"resume\"}", msg), 0);
	close(fd);
	close(adm);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- the body cap ---- */

/*
 * With max_ctrl_bytes at 1K: a header announcing a 1 GiB body, and not
 * a byte of it, is answered ETOOBIG at once (the body is never waited
 * for nor allocated) and its connection closed; a client connected
 * beside it is served throughout, a new one too; the daemon's resident
 * memory does not move. A body of exactly the cap is served.
 */
static void test_cap_from_header(void **state)
{
	const char *args[] = {"--set", "max_ctrl_bytes=1K", NULL};
	char json[1025], text[97];
	uint8_t h[RC_HDR];
	long rss0, rss1;
	double t0, ms;
	it_daemon d;
	rc_frame f;
	int fd, good;

	assert_int_equal(it_launch(&d, args), 0);
	assert_true((good = rc_connect(d.ipc, NULL)) >= 0);
	assert_int_equal(ctrl(good, 1, "{\"op\":\"ping\"}", NULL), 0);
	rss0 = it_rss_kb(d.pid);
	for (int i = 0; i < 20; i++) {
		assert_true((fd = rc_connect(i % 2 ? d.tcp : d.ipc, NULL)) >=
			    0);
		rc_put_hdr(h, RC_CTRL, 77, 0, UINT64_C(1) << 30);
		t0 = it_now_us();
		assert_int_equal(rc_write(fd, h, RC_HDR), 0);
		assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
		ms = (it_now_us() - t0) / 1e3;
		assert_int_equal(f.type, RC_ERROR_T);
		assert_int_equal(f.id, 77);
		assert_int_equal(rc_error(&f, text), ETOOBIG_);
		assert_non_null(strstr(text, "more than max_ctrl_bytes=1 KiB"));
		rc_frame_free(&f);
		assert_true(rc_closed(fd, 2000));
		close(fd);
		assert_int_equal(ctrl(good, 2 + i, "{\"op\":\"ping\"}", NULL),
				 0);
		if (i == 0)
			fprintf(stderr,
				"a 1 GiB CTRL header refused in %.2f ms\n", ms);
	}
	rss1 = it_rss_kb(d.pid);
	fprintf(stderr, "RSS %ld KiB before, %ld KiB after 20 of them\n", rss0,
		rss1);
	assert_true(rss1 < rss0 + 8 * 1024);
	memset(json, ' ', 1024);
	memcpy(json, "{\"op\":\"ping\"}", 13);
	assert_true((fd = rc_connect(d.tcp, NULL)) >= 0);
	assert_int_equal(ctrl_n(fd, 50, json, 1024, NULL), 0);
	close(fd);
	assert_int_equal(ctrl(good, 51, "{\"op\":\"ping\"}", NULL), 0);
	close(good);
	assert_int_equal(it_rstat(&d, "connections.dropped_by.protocol"), 20);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- how long a parse holds the loop ---- */

/* The body the parser takes longest over per byte (3-byte UTF-8 in a
 * string of a member the op does not take), len bytes. */
static char *slow_body(size_t len)
{
	char *b = malloc(len);
	size_t n;

	assert_non_null(b);
	n = (size_t)sprintf(b, "{\"op\":\"ping\",\"x\":\"");
	while (n + 3 <= len - 2) {
		memcpy(b + n, "\xe6\x97\xa5", 3);
		n += 3;
	}
	while (n < len - 2)
		b[n++] = 'a';
	memcpy(b + n, "\"}", 2);
	return b;
}

/* p50, p99 and max of n ping round trips on fd, in ms. */
static void time_pings(int fd, int n, double q[3])
{
	double *lat = calloc((size_t)n, sizeof(double));

	assert_non_null(lat);
	for (int i = 0; i < n; i++) {
		double t0 = it_now_us();

		assert_int_equal(ctrl(fd, 5000 + i, "{\"op\":\"ping\"}", NULL),
				 0);
		lat[i] = (it_now_us() - t0) / 1e3;
	}
	q[0] = it_quantile(lat, (size_t)n, 0.5);
	q[1] = it_quantile(lat, (size_t)n, 0.99);
	q[2] = it_quantile(lat, (size_t)n, 1.0);
	free(lat);
}

/*
 * At max_ctrl_bytes' ceiling (256K), a child floods its connection with
 * the slowest bodies to parse while the test times pings on another:
 * each body holds the loop for one parse, a fraction of a millisecond,
 * so the pings' p99 stays within milliseconds of the unloaded one
 * (asserted within 50 ms, far from the seconds an unbounded body
 * costs, and clear of a loaded host's scheduling). Printed: both, and
 * the bodies the daemon answered meanwhile.
 */
static void test_parse_holds_loop_briefly(void **state)
{
	enum { LEN = 256 << 10, PINGS = 400 };
	const char *args[] = {"--set", "max_ctrl_bytes=256K", NULL};
	double q0[3], q1[3], before, after;
	it_daemon d;
	int fd, p[2], st = 0;
	pid_t pid;

	assert_int_equal(it_launch(&d, args), 0);
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	time_pings(fd, PINGS, q0);
	before = it_rstat(&d, "requests.ctrl");
	assert_int_equal(pipe(p), 0);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		char *body = slow_body(LEN);
		int c = rc_connect(d.ipc, NULL);
		struct pollfd stop = {.fd = p[0], .events = POLLIN};
		uint8_t h[RC_HDR];
		rc_frame f;

		/* Until the parent closes its end of the pipe. */
		close(p[1]);
		for (uint64_t id = 1; c >= 0 && poll(&stop, 1, 0) == 0; id++) {
			rc_put_hdr(h, RC_CTRL, id, 0, LEN);
			if (rc_write(c, h, RC_HDR) != 0 ||
			    rc_write(c, body, LEN) != 0 ||
			    rc_read_frame(c, &f, WAIT_MS) != 0)
				_exit(1);
			rc_frame_free(&f);
		}
		_exit(0);
	}
	close(p[0]);
	usleep(200000);
	time_pings(fd, PINGS, q1);
	close(p[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	after = it_rstat(&d, "requests.ctrl");
	fprintf(stderr,
		"ping p50 / p99 / max: %.3f / %.3f / %.3f ms alone, "
		"%.3f / %.3f / %.3f ms beside %.0f bodies of 256 KiB parsed "
		"meanwhile\n",
		q0[0], q0[1], q0[2], q1[0], q1[1], q1[2],
		after - before - PINGS - 1);
	assert_true(after - before > PINGS + 50);
	assert_true(q1[1] < q0[1] + 50.0);
	close(fd);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_strict_bodies),
	    cmocka_unit_test(test_refusal_is_json),
	    cmocka_unit_test(test_check_order),
	    cmocka_unit_test(test_cap_from_header),
	    cmocka_unit_test(test_parse_holds_loop_briefly),
	};

	return IT_RUN(tests);
}
