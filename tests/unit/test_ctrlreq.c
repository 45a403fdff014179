/*
 * test_ctrlreq.c - unit tests for proto/gm_ctrlreq: every op and member
 * read from well-formed bodies, then a table of bodies that must be
 * refused, each with its one code: not one strict JSON object (EJSON),
 * a wrong or missing op or a bad value (EINVAL), a member the op does
 * not take (EFIELD).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "gm_ctrlreq.h"
#include "gm_error.h"

/* The message of the last parse. */
static char msg[160];

/* Parses exactly len bytes from an exactly-sized heap copy, so that a
 * read past the body is caught by ASan. */
static int parse_n(const char *body, size_t len, gm_ctrlreq *q)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rv;

	assert_non_null(copy);
	memcpy(copy, body, len);
	rv = gm_ctrlreq_parse(copy, len, q, msg, sizeof(msg));
	free(copy);
	return rv;
}

static int parse(const char *body, gm_ctrlreq *q)
{
	return parse_n(body, strlen(body), q);
}

static void test_ops(void **state)
{
	static const struct {
		const char *body;
		int op;
		unsigned members;
		uint64_t job, timeout;
	} rows[] = {
	    {"{\"op\":\"ping\"}", GM_CTRLREQ_PING, 0, 0, 0},
	    {" \n\t{ \"op\" : \"stats\" } \r\n", GM_CTRLREQ_STATS, 0, 0, 0},
	    {"{\"op\":\"status\",\"job\":1}", GM_CTRLREQ_STATUS,
	     GM_CTRLREQ_M_JOB, 1, 0},
	    {"{\"job\":18446744073709551615,\"op\":\"cancel\"}",
	     GM_CTRLREQ_CANCEL, GM_CTRLREQ_M_JOB, UINT64_MAX, 0},
	    {"{\"op\":\"wait\",\"job\":9007199254740993}", GM_CTRLREQ_WAIT,
	     GM_CTRLREQ_M_JOB, 9007199254740993ull, 0},
	    {"{\"op\":\"wait\",\"job\":7,\"timeout_ms\":0}", GM_CTRLREQ_WAIT,
	     GM_CTRLREQ_M_JOB | GM_CTRLREQ_M_TIMEOUT, 7, 0},
	    {"{\"op\":\"wait\",\"job\":7,\"timeout_ms\":1000000000000}",
	     GM_CTRLREQ_WAIT, GM_CTRLREQ_M_JOB | GM_CTRLREQ_M_TIMEOUT, 7,
	     1000000000000ull},
	    {"{\"op\":\"drain\"}", GM_CTRLREQ_DRAIN, 0, 0, 0},
	    {"{\"op\":\"resume\"}", GM_CTRLREQ_RESUME, 0, 0, 0},
	    {"{\"op\":\"jobs\"}", GM_CTRLREQ_JOBS, 0, 0, 0},
	    /* Escapes that spell the same text are the same op. */
	    {"{\"\\u006fp\":\"p\\u0069ng\"}", GM_CTRLREQ_PING, 0, 0, 0},
	};
	gm_ctrlreq q;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		int rv = parse(rows[i].body, &q);

		if (rv != GM_OK)
			fail_msg("%s: %s", rows[i].body, msg);
		assert_int_equal(q.op, rows[i].op);
		assert_int_equal(q.members, rows[i].members);
		assert_true(q.job == rows[i].job);
		assert_true(q.timeout_ms == rows[i].timeout);
	}
	assert_string_equal(gm_ctrlreq_op_name(GM_CTRLREQ_WAIT), "wait");
	assert_null(gm_ctrlreq_op_name(GM_CTRLREQ_NONE));
	assert_null(gm_ctrlreq_op_name(GM_CTRLREQ_OP_COUNT));
	assert_non_null(strstr(gm_ctrlreq_ops, "resume"));
	/* drain and resume alone are an admin's. */
	for (int op = GM_CTRLREQ_NONE; op <= GM_CTRLREQ_OP_COUNT; op++)
		assert_int_equal(gm_ctrlreq_op_admin(op),
				 op == GM_CTRLREQ_DRAIN ||
				     op == GM_CTRLREQ_RESUME);
}

/* Whether the n bytes at s are valid UTF-8. */
static int valid_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	while (p < end) {
		size_t k = *p < 0x80 ? 1 : *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : 2;

		if (*p >= 0x80 && *p < 0xC0)
			return 0;
		if ((size_t)(end - p) < k)
			return 0;
		for (size_t i = 1; i < k; i++)
			if ((p[i] & 0xC0) != 0x80)
				return 0;
		p += k;
	}
	return 1;
}

/* A member name cut to fit a message is cut between characters: the
 * message stays valid UTF-8, whatever the cut falls on. */
static void test_long_name_cut(void **state)
{
	char body[160];
	gm_ctrlreq q;

	(void)state;
	for (int pad = 0; pad < 4; pad++) {
		int n = snprintf(body, sizeof(body), "{\"op\":\"ping\",\"");

		for (int i = 0; i < pad; i++)
			body[n++] = 'a';
		for (int i = 0; i < 12; i++)
			n += snprintf(body + n, sizeof(body) - (size_t)n,
				      "\xe6\x97\xa5");
		snprintf(body + n, sizeof(body) - (size_t)n, "\":1}");
		assert_int_equal(parse(body, &q), GM_EFIELD);
		assert_non_null(strstr(msg, "..."));
		if (!valid_utf8(msg, strlen(msg)))
			fail_msg("pad %d: not UTF-8: %s", pad, msg);
	}
}

/* The slowest bodies per byte to parse, at the default cap and at the
 * ceiling of max_ctrl_bytes; the best of several runs at 64 KiB must
 * take under a millisecond, so that a control request never holds the
 * daemon's loop for longer. Each is read whole, then refused for its
 * member (EFIELD). */
/* Writes the members "m0":0 .. "m<n-1>":<n-1>, comma-separated, at b;
 * returns their length. */
static int put_members(char *b, int n)
{
	int at = 0;

	for (int i = 0; i < n; i++)
		at += sprintf(b + at, "%s\"m%d\":%d", i ? "," : "", i, i);
	return at;
}

static void test_time_at_cap(void **state)
{
	static const char *const names[] = {"3-byte UTF-8", "\\u escapes",
					    "numbers", "256-member objects"};
	static char object[4096];
	const char *const units[] = {"\xe6\x97\xa5", "\\u00e9", "123456789,",
				     object};
	static const size_t caps[] = {64u << 10, 256u << 10};
	gm_ctrlreq q;

	(void)state;
	/* Each of its names is checked against those before it. */
	object[0] = '{';
	strcpy(object + 1 + put_members(object + 1, 256), "},");
	for (size_t c = 0; c < 2; c++)
		for (int k = 0; k < 4; k++) {
			size_t cap = caps[c], n, u = strlen(units[k]);
			char *b = malloc(cap);
			double best = 1e9;

			assert_non_null(b);
			n = (size_t)sprintf(b, "{\"op\":\"ping\",\"x\":%s",
					    k >= 2 ? "[" : "\"");
			while (n + u + 3 <= cap) {
				memcpy(b + n, units[k], u);
				n += u;
			}
			n += (size_t)sprintf(b + n, "%s",
					     k >= 2 ? "1]}" : "\"}");
			for (int r = 0; r < 20; r++) {
				struct timespec t0, t1;
				double us;

				clock_gettime(CLOCK_MONOTONIC, &t0);
				assert_int_equal(
				    gm_ctrlreq_parse((const uint8_t *)b, n, &q,
						     msg, sizeof(msg)),
				    GM_EFIELD);
				clock_gettime(CLOCK_MONOTONIC, &t1);
				us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 +
				     (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
				best = us < best ? us : best;
			}
			fprintf(stderr, "%zu KiB of %s: %.1f us\n", cap >> 10,
				names[k], best);
			if (c == 0)
				assert_true(best < 1000.0);
			free(b);
		}
}

/* Bodies with bytes that strlen would cut, given with their length (the
 * literal's, its NUL left out). */
#define BODY(s) s, sizeof(s) - 1

static void test_binary(void **state)
{
	static const struct {
		const char *body;
		size_t len;
		int code;
	} rows[] = {
	    /* "ping\0drain": a raw NUL in a string. */
	    {BODY("{\"op\":\"ping\0drain\"}"), GM_EJSON},
	    /* A NUL after the object. */
	    {BODY("{\"op\":\"ping\"}\0"), GM_EJSON},
	    /* Invalid UTF-8: a lone continuation byte, an overlong '/',
	     * a surrogate, past U+10FFFF, a truncated sequence. */
	    {BODY("{\"op\":\"p\x80ng\"}"), GM_EJSON},
	    {BODY("{\"op\":\"\xc0\xafping\"}"), GM_EJSON},
	    {BODY("{\"op\":\"\xed\xa0\x80\"}"), GM_EJSON},
	    {BODY("{\"op\":\"\xf4\x90\x80\x80\"}"), GM_EJSON},
	    {BODY("{\"op\":\"ping\"}\xe2\x82"), GM_EJSON},
	    /* A UTF-8 byte order mark is not white space. */
	    {BODY("\xef\xbb\xbf{\"op\":\"ping\"}"), GM_EJSON},
	    {BODY(""), GM_EJSON},
	};
	gm_ctrlreq q;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		int rv = parse_n(rows[i].body, rows[i].len, &q);
		if (rv != rows[i].code)
			fail_msg("row %zu: got %s (%s), want %s", i,
				 gm_errname(rv), msg, gm_errname(rows[i].code));
	}
}

/* Nesting is counted in levels: the top object is level 1, each object
 * or array inside one level more; 16 levels pass the JSON checks (and
 * fail as an unknown member), 17 are not accepted as JSON. */
static void test_deep(void **state)
{
	static const struct {
		const char *open, *close;
	} kinds[] = {{"[", "]"}, {"{\"a\":", "}"}, {"[{\"a\":", "}]"}};
	char body[512];
	gm_ctrlreq q;

	(void)state;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++)
		for (int levels = 16; levels <= 17; levels++) {
			/* levels - 1 inside the top object, which the
			 * last kind's pairs reach two at a time. */
			int inside = levels - 1, each = k == 2 ? 2 : 1, n, rv;

			n = snprintf(body, sizeof(body),
				     "{\"op\":\"ping\",\"x\":%s",
				     inside % each ? "[" : "");
			for (int i = 0; i < inside / each; i++)
				n +=
				    snprintf(body + n, sizeof(body) - (size_t)n,
					     "%s", kinds[k].open);
			n += snprintf(body + n, sizeof(body) - (size_t)n, "1");
			for (int i = 0; i < inside / each; i++)
				n +=
				    snprintf(body + n, sizeof(body) - (size_t)n,
					     "%s", kinds[k].close);
			snprintf(body + n, sizeof(body) - (size_t)n, "%s}",
				 inside % each ? "]" : "");
			rv = parse(body, &q);
			if (rv != (levels == 16 ? GM_EFIELD : GM_EJSON))
				fail_msg("%d levels of %s: got %s (%s)", levels,
					 kinds[k].open, gm_errname(rv), msg);
		}
}

/* At most 256 members in any object: the top one ("op" counts) or one
 * inside it, as deep as it is. */
static void test_many_members(void **state)
{
	static const struct {
		const char *before, *after; /* around the object of n */
		int n, code;
	} rows[] = {
	    {"{\"op\":\"ping\",", "}", 255, GM_EFIELD},
	    {"{\"op\":\"ping\",", "}", 256, GM_EJSON},
	    {"{\"op\":\"ping\",\"x\":{", "}}", 256, GM_EFIELD},
	    {"{\"op\":\"ping\",\"x\":{", "}}", 257, GM_EJSON},
	    {"{\"op\":\"ping\",\"x\":[[[{", "}]]]}", 256, GM_EFIELD},
	    {"{\"op\":\"ping\",\"x\":[[[{", "}]]]}", 257, GM_EJSON},
	};
	char *body = malloc(16384);
	gm_ctrlreq q;

	(void)state;
	assert_non_null(body);
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		int n = sprintf(body, "%s", rows[i].before), rv;

		n += put_members(body + n, rows[i].n);
		sprintf(body + n, "%s", rows[i].after);
		msg[0] = '\0';
		rv = parse(body, &q);
		if (rv != rows[i].code ||
		    (rv == GM_EJSON && strstr(msg, "256") == NULL))
			fail_msg("row %zu: got %s (%s), want %s", i,
				 gm_errname(rv), msg, gm_errname(rows[i].code));
	}
	free(body);
}

static void test_refused(void **state)
{
	static const struct {
		const char *body;
		int code;
		const char *msg_has;
	} rows[] = {
	    /* Not one strict JSON object. */
	    {"{\"op\":\"ping\"} x", GM_EJSON, "after the object"},
	    {"{\"op\":\"ping\"}{\"op\":\"drain\"}", GM_EJSON, "after"},
	    {"[{\"op\":\"ping\"}]", GM_EJSON, "one object"},
	    {"\"ping\"", GM_EJSON, "one object"},
	    {"{\"op\":\"ping\"", GM_EJSON, "end"},
	    {"{\"op\":\"ping\",}", GM_EJSON, "member name"},
	    {"{\"op\" \"ping\"}", GM_EJSON, "':'"},
	    {"{'op':'ping'}", GM_EJSON, "member name"},
	    {"{\"op\":\"ping\",\"op\":\"drain\"}", GM_EJSON, "twice"},
	    {"{\"op\":\"ping\",\"\\u006fp\":\"drain\"}", GM_EJSON, "twice"},
	    {"{\"op\":\"ping\\u0000drain\"}", GM_EJSON, "NUL"},
	    {"{\"op\":\"pi\nng\"}", GM_EJSON, "control character"},
	    {"{\"op\":\"ping\\x\"}", GM_EJSON, "escape"},
	    {"{\"op\":\"\\ud800\"}", GM_EJSON, "surrogate"},
	    {"{\"op\":\"\\udc00\"}", GM_EJSON, "surrogate"},
	    {"{\"op\":\"\\ud83d\\u0041\"}", GM_EJSON, "surrogate"},
	    {"{\"op\":\"\\u12\"}", GM_EJSON, "hex"},
	    {"{\"op\":\"wait\",\"job\":01}", GM_EJSON, "leading zero"},
	    {"{\"op\":\"wait\",\"job\":1.}", GM_EJSON, "digit"},
	    {"{\"op\":\"wait\",\"job\":1e}", GM_EJSON, "exponent"},
	    {"{\"op\":\"wait\",\"job\":+1}", GM_EJSON, "value"},
	    {"{\"op\":\"wait\",\"job\":-}", GM_EJSON, "digit"},
	    {"{\"op\":\"wait\",\"job\":tru}", GM_EJSON, "value"},
	    {"{\"op\":\"ping\",\"x\":{\"a\":1,}}", GM_EJSON, "member name"},
	    {"{\"op\":\"ping\",\"x\":[1,]}", GM_EJSON, "value"},
	    /* No member twice in any object, however deep; names compare
	     * decoded and whole, however long. */
	    {"{\"op\":\"ping\",\"x\":{\"a\":1,\"a\":2}}", GM_EJSON,
	     "\"a\" twice"},
	    {"{\"op\":\"ping\",\"x\":[{\"b\":{\"a\":1,\"\\u0061\":2}}]}",
	     GM_EJSON, "\"a\" twice (byte 30)"},
	    {"{\"op\":\"stats\",\"a_member_name_longer_than_thirty_two\":0,"
	     "\"a_member_name_longer_than_thirty_two\":1}",
	     GM_EJSON, "...\" twice"},
	    /* Siblings, and an object and one inside it, may share names;
	     * so may names alike in their first 32 bytes. */
	    {"{\"op\":\"ping\",\"x\":[{\"a\":1},{\"a\":2}]}", GM_EFIELD,
	     "\"x\""},
	    {"{\"op\":\"ping\",\"x\":{\"a\":{\"a\":1},\"b\":{\"a\":2}}}",
	     GM_EFIELD, "\"x\""},
	    {"{\"op\":\"ping\",\"x\":{\"op\":\"drain\"}}", GM_EFIELD, "\"x\""},
	    {"{\"op\":\"stats\",\"a_member_name_longer_than_thirty_two_1\":0,"
	     "\"a_member_name_longer_than_thirty_two_2\":1}",
	     GM_EFIELD, "..."},
	    /* What the members say. */
	    {"{}", GM_EINVAL, "\"op\""},
	    {"{\"op\":1}", GM_EINVAL, "\"op\""},
	    {"{\"op\":\"PING\"}", GM_EINVAL, "unknown op"},
	    {"{\"op\":\"pingpingpingpingpingpingpingpingping\"}", GM_EINVAL,
	     "unknown op"},
	    {"{\"op\":\"status\"}", GM_EINVAL, "needs member \"job\""},
	    {"{\"op\":\"status\",\"job\":0}", GM_EINVAL, "\"job\""},
	    {"{\"op\":\"status\",\"job\":-1}", GM_EINVAL, "\"job\""},
	    {"{\"op\":\"status\",\"job\":18446744073709551616}", GM_EINVAL,
	     "\"job\""},
	    {"{\"op\":\"status\",\"job\":\"5\"}", GM_EINVAL, "\"job\""},
	    {"{\"op\":\"status\",\"job\":5.0}", GM_EINVAL, "\"job\""},
	    {"{\"op\":\"status\",\"job\":5e0}", GM_EINVAL, "\"job\""},
	    {"{\"op\":\"wait\",\"job\":5,\"timeout_ms\":1.5}", GM_EINVAL,
	     "\"timeout_ms\""},
	    {"{\"op\":\"wait\",\"job\":5,\"timeout_ms\":\"100\"}", GM_EINVAL,
	     "\"timeout_ms\""},
	    {"{\"op\":\"wait\",\"job\":5,\"timeout_ms\":-1}", GM_EINVAL,
	     "\"timeout_ms\""},
	    {"{\"op\":\"wait\",\"job\":5,\"timeout_ms\":1000000000001}",
	     GM_EINVAL, "\"timeout_ms\""},
	    {"{\"op\":\"wait\",\"job\":5,\"timeout_ms\":null}", GM_EINVAL,
	     "\"timeout_ms\""},
	    /* Members the op does not take. */
	    {"{\"op\":\"ping\",\"job\":1}", GM_EFIELD, "\"job\""},
	    {"{\"op\":\"status\",\"job\":1,\"timeout_ms\":5}", GM_EFIELD,
	     "\"timeout_ms\""},
	    {"{\"op\":\"drain\",\"force\":true}", GM_EFIELD, "\"force\""},
	    {"{\"op\":\"stats\",\"a_member_name_longer_than_thirty_two\":0}",
	     GM_EFIELD, "..."},
	    /* JSON comes first: a bad body is EJSON whatever it names. */
	    {"{\"op\":\"nope\",\"x\":[}", GM_EJSON, "value"},
	};
	gm_ctrlreq q;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		int rv;

		msg[0] = '\0';
		rv = parse(rows[i].body, &q);
		if (rv != rows[i].code || strstr(msg, rows[i].msg_has) == NULL)
			fail_msg("%s: got %s \"%s\", want %s with \"%s\"",
				 rows[i].body, gm_errname(rv), msg,
				 gm_errname(rows[i].code), rows[i].msg_has);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ops),
	    cmocka_unit_test(test_binary),
	    cmocka_unit_test(test_deep),
	    cmocka_unit_test(test_many_members),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_long_name_cut),
	    cmocka_unit_test(test_time_at_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
