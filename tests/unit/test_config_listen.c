/*
 * test_config_listen.c - gm_config: the "listen" list, admin, the
 * cross-key checks, allow lists, metrics_listen, the JSON dump, and what
 * gm_config_free leaves.
 */
#include "config_fx.h"

static void test_listen(void **state)
{
	char url[64];
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	/* The first --listen replaces the defaults, later ones add. */
	assert_int_equal(add_listen(&c, "ipc:///tmp/a.sock", 1), GM_OK);
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "ipc:///tmp/a.sock");
	assert_int_equal(add_listen(&c, "tcp://[::1]:7000", 0), GM_OK);
	assert_int_equal(c.nlisten, 2);
	assert_string_equal(c.listen[1], "tcp://[::1]:7000");
	assert_int_equal(add_listen(&c, "tcp://[::1]:7000", 0), GM_ECONFIG);
	assert_string_equal(msg, "config key \"listen\": \"tcp://[::1]:7000\" "
				 "is listed twice");
	assert_int_equal(c.nlisten, 2);
	for (unsigned i = 2; i < GM_CONFIG_MAX_LISTEN; i++) {
		snprintf(url, sizeof(url), "tcp://127.0.0.1:%u", 7000 + i);
		assert_int_equal(add_listen(&c, url, 0), GM_OK);
	}
	assert_int_equal(c.nlisten, GM_CONFIG_MAX_LISTEN);
	assert_int_equal(add_listen(&c, "tcp://h:1", 0), GM_ECONFIG);
	assert_non_null(strstr(msg, "config key \"listen\""));
	assert_int_equal(c.nlisten, GM_CONFIG_MAX_LISTEN);
	/* --set listen=URL is one URL in place of the list. */
	assert_int_equal(set(&c, "listen", "tcp://h:1"), GM_OK);
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "tcp://h:1");
	gm_config_free(&c);
}

/* Who is admin: admin_uids is root alone by default, "" makes it
 * nobody; admin_subjects takes a subject whole, commas and all, from
 * the command line, matched exactly. */
static void test_admin(void **state)
{
	char subject[300];
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_true(gm_config_admin_uid(&c, 0));
	assert_false(gm_config_admin_uid(&c, 1000));
	assert_false(gm_config_admin_subject(&c, "CN=ops"));
	assert_int_equal(set(&c, "admin_uids", ""), GM_OK);
	assert_false(gm_config_admin_uid(&c, 0));
	assert_int_equal(set(&c, "admin_uids", "1000,0"), GM_OK);
	assert_true(gm_config_admin_uid(&c, 0) &&
		    gm_config_admin_uid(&c, 1000));
	assert_int_equal(set(&c, "admin_subjects", "CN=ops,O=lab"), GM_OK);
	assert_int_equal(c.nadmin_subjects, 1);
	assert_true(gm_config_admin_subject(&c, "CN=ops,O=lab"));
	assert_false(gm_config_admin_subject(&c, "CN=ops"));
	assert_false(gm_config_admin_subject(&c, "cn=ops,o=lab"));
	assert_int_equal(
	    load(&c, "{\"admin_subjects\": [\"CN=a\", \"CN=b,O=c\"]}"), GM_OK);
	assert_true(gm_config_admin_subject(&c, "CN=b,O=c"));
	assert_false(gm_config_admin_subject(&c, "CN=ops,O=lab"));
	assert_int_equal(set(&c, "admin_subjects", ""), GM_OK);
	assert_int_equal(c.nadmin_subjects, 0);
	memset(subject, 'x', 256);
	memcpy(subject, "CN=", 3);
	subject[256] = '\0';
	assert_int_equal(set(&c, "admin_subjects", subject), GM_ECONFIG);
	assert_non_null(strstr(msg, "must be 1 to 255 bytes"));
	subject[255] = '\0';
	assert_int_equal(set(&c, "admin_subjects", subject), GM_OK);
	gm_config_free(&c);
	/* Freed, the defaults are back, root included. */
	assert_true(gm_config_admin_uid(&c, 0));
}

static void test_check(void **state)
{
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_int_equal(check(&c), GM_OK);
	/* Plain TCP, allowed by default, refused once allow_plain_tcp is
	 * false; the other schemes are not. */
	assert_int_equal(add_listen(&c, "tcp://127.0.0.1:1", 0), GM_OK);
	assert_int_equal(check(&c), GM_OK);
	assert_int_equal(set(&c, "allow_plain_tcp", "false"), GM_OK);
	assert_int_equal(check(&c), GM_ECONFIG);
	assert_string_equal(msg, "config key \"listen\": \"tcp://127.0.0.1:1\" "
				 "is plain TCP, unauthenticated, and "
				 "\"allow_plain_tcp\" is false: use tls+tcp:// "
				 "or ipc://");
	assert_int_equal(set(&c, "listen", "ipc:///tmp/x.sock"), GM_OK);
	assert_int_equal(check(&c), GM_OK);
	assert_int_equal(load(&c, "{\"listen\": [\"tls+tcp://0.0.0.0:1\"]}"),
			 GM_OK);
	assert_int_equal(check(&c), GM_ECONFIG);
	assert_string_equal(msg,
			    "config key \"listen\": \"tls+tcp://0.0.0.0:1\""
			    " needs \"tls_cert\", \"tls_key\" and \"tls_ca\"");
	assert_int_equal(set(&c, "tls_cert", "/c.pem"), GM_OK);
	assert_int_equal(check(&c), GM_ECONFIG);
	assert_string_equal(msg, "config keys \"tls_cert\" and \"tls_key\" go "
				 "together, but \"tls_key\" is null");
	assert_int_equal(set(&c, "tls_key", "/k.pem"), GM_OK);
	assert_int_equal(check(&c), GM_ECONFIG);
	assert_int_equal(set(&c, "tls_ca", "/ca.pem"), GM_OK);
	assert_int_equal(check(&c), GM_OK);
	gm_config_free(&c);
}

/* Who may connect on ipc:// (PROTOCOL.md 2.1): everyone while both
 * lists are empty; else a peer whose uid is in allow_uids or whose gid
 * is in allow_gids, either one enough. */
static void test_allows(void **state)
{
	static const struct {
		const char *uids, *gids; /* --set values; "" for none */
		uint64_t uid, gid;
		bool in;
	} rows[] = {
	    {"", "", 1000, 1000, true},
	    {"", "", 0, 0, true},
	    {"1000", "", 1000, 5, true},
	    {"1000", "", 1001, 1000, false},
	    {"", "50", 7, 50, true},
	    {"", "50", 50, 7, false},
	    {"1000", "50", 1000, 7, true},
	    {"1000", "50", 7, 50, true},
	    {"1000", "50", 1000, 50, true},
	    {"1000", "50", 7, 7, false},
	    {"1,2,3", "", 3, 9, true},
	    {"", "8,9", 1, 9, true},
	    {"4294967294", "", 4294967294u, 0, true},
	    {"", "", 4294967295u, 4294967295u, true},
	    {"0", "", 4294967295u, 0, false},
	};
	gm_config c;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		gm_config_defaults(&c);
		assert_int_equal(set(&c, "allow_uids", rows[i].uids), GM_OK);
		assert_int_equal(set(&c, "allow_gids", rows[i].gids), GM_OK);
		if (gm_config_allows(&c, rows[i].uid, rows[i].gid) !=
		    rows[i].in)
			fail_msg("allow_uids [%s] allow_gids [%s], uid %llu "
				 "gid %llu: want %s",
				 rows[i].uids, rows[i].gids,
				 (unsigned long long)rows[i].uid,
				 (unsigned long long)rows[i].gid,
				 rows[i].in ? "in" : "out");
		gm_config_free(&c);
	}
}

/* metrics_listen is HOST:PORT with a port of 1..65535, or null. */
static void test_metrics_listen(void **state)
{
	static const char *const good[] = {"127.0.0.1:9464", "[::1]:9464",
					   "localhost:1", "0.0.0.0:65535"};
	static const char *const bad[] = {
	    "9464",    ":9464", "host:",       "host:0",
	    "h:65536", "h:12x", "http://h:80", "h:-1"};
	char want[256];
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_null(c.metrics_listen);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(set(&c, "metrics_listen", good[i]), GM_OK);
		assert_int_equal(check(&c), GM_OK);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(set(&c, "metrics_listen", bad[i]), GM_OK);
		assert_int_equal(check(&c), GM_ECONFIG);
		snprintf(want, sizeof(want),
			 "config key \"metrics_listen\": \"%s\" is not "
			 "HOST:PORT, e.g. \"127.0.0.1:9464\"",
			 bad[i]);
		assert_string_equal(msg, want);
	}
	assert_int_equal(set(&c, "metrics_listen", ""), GM_OK);
	assert_null(c.metrics_listen);
	assert_int_equal(check(&c), GM_OK);
	gm_config_free(&c);
}

/* The dump loads back to the same configuration. */
static void test_to_json(void **state)
{
	gm_config c, d;
	char *text, *again;

	(void)state;
	gm_config_defaults(&c);
	gm_config_defaults(&d);
	text = gm_config_to_json(&c);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"max_message_bytes\":\t1073741824"));
	assert_non_null(strstr(text, "\"tls_cert\":\tnull"));
	free(text);

	assert_int_equal(load(&c, all_changed), GM_OK);
	text = gm_config_to_json(&c);
	assert_non_null(text);
	assert_int_equal(load(&d, text), GM_OK);
	assert_config_equal(&c, &d);
	again = gm_config_to_json(&d);
	assert_string_equal(text, again);
	free(text);
	free(again);
	gm_config_free(&c);
	gm_config_free(&d);
}

static void test_free_leaves_defaults(void **state)
{
	gm_config c, d;

	(void)state;
	gm_config_defaults(&c);
	gm_config_defaults(&d);
	assert_int_equal(load(&c, all_changed), GM_OK);
	gm_config_free(&c);
	assert_config_equal(&c, &d);
	gm_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_admin),
	    cmocka_unit_test(test_listen),
	    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_metrics_listen),
	    cmocka_unit_test(test_allows),
	    cmocka_unit_test(test_to_json),
	    cmocka_unit_test(test_free_leaves_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
