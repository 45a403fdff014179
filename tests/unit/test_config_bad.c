/*
 * test_config_bad.c - gm_config: files, reloads, and a table of bad
 * documents and overrides with the exact code and message each one must
 * produce.
 */
#include "config_fx.h"

static char *write_temp(const char *text, size_t len)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_config.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_files(void **state)
{
	char want[512];
	gm_config c, d;
	char *path, *big;

	(void)state;
	gm_config_defaults(&c);
	gm_config_defaults(&d);

	assert_int_equal(load_file(&c, "/nonexistent/gemmd.json"), GM_EIO);
	snprintf(want, sizeof(want), "/nonexistent/gemmd.json: %s",
		 strerror(ENOENT));
	assert_string_equal(msg, want);

	assert_int_equal(load_file(&c, "/tmp"), GM_EIO);
	snprintf(want, sizeof(want), "/tmp: %s", strerror(EISDIR));
	assert_string_equal(msg, want);

	/* A FIFO nobody writes to is refused at once, not waited on. */
	{
		char dir[] = "/tmp/gemmd-test-fifo.XXXXXX", fifo[64];

		assert_non_null(mkdtemp(dir));
		snprintf(fifo, sizeof(fifo), "%s/gemmd.json", dir);
		assert_int_equal(mkfifo(fifo, 0600), 0);
		assert_int_equal(load_file(&c, fifo), GM_EIO);
		snprintf(want, sizeof(want), "%s: not a regular file", fifo);
		assert_string_equal(msg, want);
		unlink(fifo);
		rmdir(dir);
	}

	path = write_temp("{\n\t\"streams\": 8,\n\t\"kernel\": tiled\n}\n", 35);
	assert_int_equal(load_file(&c, path), GM_EJSON);
	snprintf(want, sizeof(want), "%s: bad JSON at line 3, column 12", path);
	assert_string_equal(msg, want);
	unlink(path);

	path = write_temp("{\"streams\": 99}", 15);
	assert_int_equal(load_file(&c, path), GM_ECONFIG);
	snprintf(want, sizeof(want),
		 "%s: config key \"streams\": 99 is out of range 1..64", path);
	assert_string_equal(msg, want);
	unlink(path);

	/* Refused on its size alone, however valid. */
	big = malloc(GM_CONFIG_MAX_FILE + 1);
	assert_non_null(big);
	memset(big, ' ', GM_CONFIG_MAX_FILE + 1);
	big[0] = '{';
	big[GM_CONFIG_MAX_FILE] = '}';
	path = write_temp(big, GM_CONFIG_MAX_FILE + 1);
	free(big);
	assert_int_equal(load_file(&c, path), GM_ECONFIG);
	assert_non_null(strstr(msg, "1048577 bytes"));
	unlink(path);

	path = write_temp("{\"streams\": 8}\n", 15);
	assert_int_equal(load_file(&c, path), GM_OK);
	assert_int_equal(c.engine.streams, 8);
	unlink(path);

	/* After all the failures, only the good file took effect. */
	d.engine.streams = 8;
	assert_config_equal(&c, &d);
	gm_config_free(&c);
}

/*
 * Bad documents: each must fail with exactly this code and message and
 * leave the configuration as it was (every case starts from defaults
 * with "streams" at 8, so a partial apply would show).
 */
static const struct bad_doc {
	const char *doc;
	int code;
	const char *msg;
} bad_docs[] = {
    {"{\"stremas\": 4}", GM_ECONFIG, "unknown config key \"stremas\""},
    {"{\"streams\": 0}", GM_ECONFIG,
     "config key \"streams\": 0 is out of range 1..64"},
    {"{\"streams\": 65}", GM_ECONFIG,
     "config key \"streams\": 65 is out of range 1..64"},
    {"{\"conn_max_inflight\": \"ten\"}", GM_ECONFIG,
     "config key \"conn_max_inflight\": expected an integer, got \"ten\""},
    {"{\"conn_max_inflight\": \"10\"}", GM_ECONFIG,
     "config key \"conn_max_inflight\": expected an integer, got \"10\""},
    {"{\"conn_max_inflight\": 1.5}", GM_ECONFIG,
     "config key \"conn_max_inflight\": expected an integer, got 1.5"},
    {"{\"streams\": true}", GM_ECONFIG,
     "config key \"streams\": expected an integer, got true"},
    {"{\"queue_depth\": -1}", GM_ECONFIG,
     "config key \"queue_depth\": -1 is out of range 1..1048576"},
    {"{\"queue_depth_per_priority\": [1, 2]}", GM_ECONFIG,
     "config key \"queue_depth_per_priority\": expected an integer or an "
     "array of 4 integers, got [1,2]"},
    {"{\"queue_depth_per_priority\": [1, 2, 3, 4, 5]}", GM_ECONFIG,
     "config key \"queue_depth_per_priority\": expected an integer or an "
     "array of 4 integers, got [1,2,3,4,5]"},
    {"{\"queue_depth_per_priority\": [1, \"2\", 3, 4]}", GM_ECONFIG,
     "config key \"queue_depth_per_priority\": expected an integer or an "
     "array of 4 integers, got [1,\"2\",3,4]"},
    {"{\"queue_depth_per_priority\": [1, 2, 3, 2000000]}", GM_ECONFIG,
     "config key \"queue_depth_per_priority\": 2000000 is out of range "
     "0..1048576"},
    {"{\"queue_depth_per_priority\": -1}", GM_ECONFIG,
     "config key \"queue_depth_per_priority\": -1 is out of range "
     "0..1048576"},
    {"{\"detach_keep_s\": 0}", GM_ECONFIG,
     "config key \"detach_keep_s\": 0 is out of range 1..604800"},
    {"{\"max_dim\": 1e30}", GM_ECONFIG,
     "config key \"max_dim\": 1e+30 is out of range 1..1048576"},
    {"{\"pool_bytes\": \"2T\"}", GM_ECONFIG,
     "config key \"pool_bytes\": \"2T\" is out of range 1M..1T"},
    {"{\"pool_bytes\": 512}", GM_ECONFIG,
     "config key \"pool_bytes\": 512 is out of range 1M..1T"},
    {"{\"pool_bytes\": \"12Q\"}", GM_ECONFIG,
     "config key \"pool_bytes\": expected a size (an integer or \"512M\"), "
     "got \"12Q\""},
    {"{\"pool_bytes\": \"1 G\"}", GM_ECONFIG,
     "config key \"pool_bytes\": expected a size (an integer or \"512M\"), "
     "got \"1 G\""},
    {"{\"max_message_bytes\": \"99999999999999999999K\"}", GM_ECONFIG,
     "config key \"max_message_bytes\": \"99999999999999999999K\" is out of "
     "range 4K..16G"},
    {"{\"device_pool_bytes\": \"17179869184T\"}", GM_ECONFIG,
     "config key \"device_pool_bytes\": \"17179869184T\" is out of range "
     "0..1T"},
    {"{\"max_ctrl_bytes\": \"257K\"}", GM_ECONFIG,
     "config key \"max_ctrl_bytes\": \"257K\" is out of range 1K..256K"},
    {"{\"admin_uids\": [0, 0]}", GM_ECONFIG,
     "config key \"admin_uids\": 0 is listed twice"},
    {"{\"admin_uids\": 0}", GM_ECONFIG,
     "config key \"admin_uids\": expected an array of numeric ids, got 0"},
    {"{\"admin_subjects\": \"CN=a\"}", GM_ECONFIG,
     "config key \"admin_subjects\": expected an array of strings, got "
     "\"CN=a\""},
    {"{\"admin_subjects\": [\"CN=a\", 1]}", GM_ECONFIG,
     "config key \"admin_subjects\": expected an array of strings, got "
     "[\"CN=a\",1]"},
    {"{\"admin_subjects\": [\"CN=a\", \"CN=a\"]}", GM_ECONFIG,
     "config key \"admin_subjects\": \"CN=a\" is listed twice"},
    {"{\"admin_subjects\": [\"\"]}", GM_ECONFIG,
     "config key \"admin_subjects\": \"\" must be 1 to 255 bytes"},
    {"{\"engine\": \"gpu\"}", GM_ECONFIG,
     "config key \"engine\": expected one of auto, cpu, cuda, got \"gpu\""},
    {"{\"log_level\": 3}", GM_ECONFIG,
     "config key \"log_level\": expected one of error, warn, info, debug, "
     "got 3"},
    {"{\"kernel\": \"CUBLAS\"}", GM_ECONFIG,
     "config key \"kernel\": expected one of cublas, tiled, got \"CUBLAS\""},
    {"{\"issue_order\": null}", GM_ECONFIG,
     "config key \"issue_order\": expected one of breadth, depth, got null"},
    {"{\"mapped_output\": \"yes\"}", GM_ECONFIG,
     "config key \"mapped_output\": expected true or false, got \"yes\""},
    {"{\"mapped_output\": 1}", GM_ECONFIG,
     "config key \"mapped_output\": expected true or false, got 1"},
    {"{\"tls_cert\": 5}", GM_ECONFIG,
     "config key \"tls_cert\": expected a file path or null, got 5"},
    {"{\"tls_key\": \"\"}", GM_ECONFIG,
     "config key \"tls_key\": expected a file path or null, got \"\""},
    {"{\"listen\": \"ipc:///x\"}", GM_ECONFIG,
     "config key \"listen\": expected an array of URL strings, got "
     "\"ipc:///x\""},
    {"{\"listen\": [\"ipc:///x\", 7]}", GM_ECONFIG,
     "config key \"listen\": expected an array of URL strings, got "
     "[\"ipc:///x\",7]"},
    {"{\"listen\": []}", GM_ECONFIG,
     "config key \"listen\": 0 URLs is out of range 1..16"},
    {"{\"listen\": [\"http://h:80\"]}", GM_ECONFIG,
     "config key \"listen\": \"http://h:80\" must start with ipc://, tcp:// "
     "or tls+tcp://"},
    {"{\"listen\": [\"tcp://\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://\" has no address"},
    /* A TCP URL's port is 1..65535, in decimal digits, and there. */
    {"{\"listen\": [\"tcp://127.0.0.1:99999\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://127.0.0.1:99999\" is not "
     "tcp://HOST:PORT with a port of 1..65535"},
    {"{\"listen\": [\"ipc:///s\", \"tcp://127.0.0.1:-1\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://127.0.0.1:-1\" is not "
     "tcp://HOST:PORT with a port of 1..65535"},
    {"{\"listen\": [\"tcp://127.0.0.1\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://127.0.0.1\" is not tcp://HOST:PORT "
     "with a port of 1..65535"},
    {"{\"listen\": [\"tls+tcp://[::1]\"]}", GM_ECONFIG,
     "config key \"listen\": \"tls+tcp://[::1]\" is not "
     "tls+tcp://HOST:PORT with a port of 1..65535"},
    {"{\"listen\": [\"tcp://h:0\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://h:0\" is not tcp://HOST:PORT with a "
     "port of 1..65535"},
    {"{\"listen\": [\"tcp://:5555\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://:5555\" is not tcp://HOST:PORT with "
     "a port of 1..65535"},
    {"{\"listen\": [\"tcp://h:5555/x\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://h:5555/x\" is not tcp://HOST:PORT "
     "with a port of 1..65535"},
    {"{\"listen\": [\"tcp://h:1\", \"ipc:///s\", \"tcp://h:1\"]}", GM_ECONFIG,
     "config key \"listen\": \"tcp://h:1\" is listed twice"},
    {"{\"listen\": [\"tcp://h:1\", \"tcp://h:2\", \"tcp://h:3\", "
     "\"tcp://h:4\", \"tcp://h:5\", \"tcp://h:6\", \"tcp://h:7\", "
     "\"tcp://h:8\", \"tcp://h:9\", \"tcp://h:10\", \"tcp://h:11\", "
     "\"tcp://h:12\", \"tcp://h:13\", \"tcp://h:14\", \"tcp://h:15\", "
     "\"tcp://h:16\", \"tcp://h:17\"]}",
     GM_ECONFIG, "config key \"listen\": 17 URLs is out of range 1..16"},
    {"{\"streams\": 4, \"streams\": 5}", GM_ECONFIG,
     "config key \"streams\" appears twice"},
    /* A good key before a bad one must not stick. */
    {"{\"kernel\": \"tiled\", \"streams\": 2, \"cpu_threads\": 2000}",
     GM_ECONFIG, "config key \"cpu_threads\": 2000 is out of range 0..1024"},
    {"{\"cpu_piece_us\": 99}", GM_ECONFIG,
     "config key \"cpu_piece_us\": 99 is out of range 100..10000000"},
    {"[1, 2]", GM_ECONFIG,
     "config document: expected a JSON object, got [1,2]"},
    {"\"streams\"", GM_ECONFIG,
     "config document: expected a JSON object, got \"streams\""},
    {"{\"streams\": 4", GM_EJSON, "bad JSON at line 1, column 13"},
    {"{\"streams\": 4,}", GM_EJSON, "bad JSON at line 1, column 15"},
    {"{\n  \"streams\": four\n}", GM_EJSON, "bad JSON at line 2, column 14"},
    {"{\"streams\": 4} {}", GM_EJSON, "bad JSON at line 1, column 16"},
    {"", GM_EJSON, "bad JSON at line 1, column 1"},
};

static void test_bad_documents(void **state)
{
	gm_config c, before;

	(void)state;
	gm_config_defaults(&before);
	before.engine.streams = 8;
	for (size_t i = 0; i < sizeof(bad_docs) / sizeof(bad_docs[0]); i++) {
		const struct bad_doc *t = &bad_docs[i];
		int rv;

		gm_config_defaults(&c);
		c.engine.streams = 8;
		msg[0] = '\0';
		rv = load(&c, t->doc);
		if (rv != t->code || strcmp(msg, t->msg) != 0)
			fail_msg("case %zu %s: got %s \"%s\", want %s \"%s\"",
				 i, t->doc, gm_errname(rv), msg,
				 gm_errname(t->code), t->msg);
		assert_config_equal(&c, &before);
		gm_config_free(&c);
	}
}

/* Bad command-line overrides: same rules, command-line syntax. */
static const struct bad_set {
	const char *key, *value;
	const char *msg;
} bad_sets[] = {
    {"stremas", "4", "unknown config key \"stremas\""},
    {"streams", "0", "config key \"streams\": 0 is out of range 1..64"},
    {"streams", "-1", "config key \"streams\": -1 is out of range 1..64"},
    {"streams", "", "config key \"streams\": expected an integer, got \"\""},
    {"streams", "4x",
     "config key \"streams\": expected an integer, got \"4x\""},
    {"streams", " 4",
     "config key \"streams\": expected an integer, got \" 4\""},
    {"streams", "+4",
     "config key \"streams\": expected an integer, got \"+4\""},
    {"conn_max_inflight", "0x10",
     "config key \"conn_max_inflight\": expected an integer, got \"0x10\""},
    {"conn_max_inflight", "1K",
     "config key \"conn_max_inflight\": expected an integer, got \"1K\""},
    {"conn_max_inflight", "18446744073709551616",
     "config key \"conn_max_inflight\": 18446744073709551616 is out of range "
     "1..65536"},
    {"pool_bytes", "1P",
     "config key \"pool_bytes\": expected a size (an integer or \"512M\"), got "
     "\"1P\""},
    {"pool_bytes", "1g",
     "config key \"pool_bytes\": expected a size (an integer or \"512M\"), got "
     "\"1g\""},
    {"pool_bytes", "1025G",
     "config key \"pool_bytes\": 1025G is out of range "
     "1M..1T"},
    {"mapped_output", "1",
     "config key \"mapped_output\": expected true or false, got \"1\""},
    {"http_max_connections", "0",
     "config key \"http_max_connections\": 0 is out of range 1..65536"},
    {"http_max_header_bytes", "512",
     "config key \"http_max_header_bytes\": 512 is out of range 1K..1M"},
    {"metrics_cache_ms", "60001",
     "config key \"metrics_cache_ms\": 60001 is out of range 0..60000"},
    {"queue_depth_per_priority", "1,2,3",
     "config key \"queue_depth_per_priority\": expected an integer or an "
     "array of 4 integers, got \"1,2,3\""},
    {"queue_depth_per_priority", "1,2,3,",
     "config key \"queue_depth_per_priority\": expected an integer or an "
     "array of 4 integers, got \"1,2,3,\""},
    {"queue_depth_per_priority", "1,2,x,4",
     "config key \"queue_depth_per_priority\": expected an integer or an "
     "array of 4 integers, got \"1,2,x,4\""},
    {"queue_depth_per_priority", "1,2,3,9999999",
     "config key \"queue_depth_per_priority\": 9999999 is out of range "
     "0..1048576"},
    {"engine", "",
     "config key \"engine\": expected one of auto, cpu, cuda, got "
     "\"\""},
    {"listen", "udp://h:1",
     "config key \"listen\": \"udp://h:1\" must start with ipc://, tcp:// or "
     "tls+tcp://"},
    {"listen", "tcp://127.0.0.1:99999",
     "config key \"listen\": \"tcp://127.0.0.1:99999\" is not "
     "tcp://HOST:PORT with a port of 1..65535"},
    {"listen", "tcp://127.0.0.1:+80",
     "config key \"listen\": \"tcp://127.0.0.1:+80\" is not "
     "tcp://HOST:PORT with a port of 1..65535"},
    {"listen", "tcp://127.0.0.1:",
     "config key \"listen\": \"tcp://127.0.0.1:\" is not tcp://HOST:PORT "
     "with a port of 1..65535"},
};

/* What gm_config_reload saw: "key taken was now" lines. */
static char reload_log[1024];

static void on_change(void *arg, const char *key, bool taken, const char *was,
		      const char *now)
{
	size_t n = strlen(reload_log);

	(void)arg;
	snprintf(reload_log + n, sizeof(reload_log) - n, "%s %d %s %s\n", key,
		 taken, was, now);
}

/* SIGHUP's reload: keys marked reloadable are taken, the others kept
 * and reported as changed but not taken; unchanged keys are silent. */
static void test_reload(void **state)
{
	gm_config c, next;

	(void)state;
	gm_config_defaults(&c);
	gm_config_defaults(&next);
	assert_int_equal(load(&c, "{\"allow_uids\": [5], \"streams\": 4}"),
			 GM_OK);
	assert_int_equal(
	    load(&next, "{\"log_level\": \"debug\", \"pool_bytes\": \"2G\","
			" \"allow_uids\": [7, 8], \"streams\": 4,"
			" \"queue_depth_per_priority\": [1, 2, 3, 4],"
			" \"http_max_connections\": 9,"
			" \"metrics_listen\": \"127.0.0.1:1\"}"),
	    GM_OK);
	reload_log[0] = '\0';
	assert_int_equal(gm_config_reload(&c, &next, on_change, NULL), GM_OK);
	assert_string_equal(reload_log,
			    "queue_depth_per_priority 1 [0,0,0,0] [1,2,3,4]\n"
			    "log_level 1 \"info\" \"debug\"\n"
			    "allow_uids 1 [5] [7,8]\n"
			    "metrics_listen 0 null \"127.0.0.1:1\"\n"
			    "http_max_connections 1 64 9\n"
			    "pool_bytes 0 1073741824 2147483648\n");
	assert_int_equal(c.log_level, GM_LOG_DEBUG);
	assert_int_equal(c.nallow_uids, 2);
	assert_int_equal(c.allow_uids[1], 8);
	assert_int_equal(c.queue_depth_prio[3], 4);
	assert_int_equal(c.http_max_conns, 9);
	assert_int_equal(c.engine.pool_bytes, GIB);
	assert_null(c.metrics_listen);
	/* Again: nothing differs in what was taken; what was not still
	 * does. */
	reload_log[0] = '\0';
	assert_int_equal(gm_config_reload(&c, &next, on_change, NULL), GM_OK);
	assert_string_equal(reload_log,
			    "metrics_listen 0 null \"127.0.0.1:1\"\n"
			    "pool_bytes 0 1073741824 2147483648\n");
	gm_config_free(&next);
	gm_config_free(&c);
}

/* config/README.md lists the keys SIGHUP reloads, in one paragraph of
 * its "Reloading (SIGHUP)" section: exactly the table's. */
static void test_reload_documented(void **state)
{
	const char *srcdir = getenv("GEMMD_SRCDIR");
	static char text[1 << 17];
	char path[4096], tick[80], *list, *end, *json;
	const cJSON *key;
	cJSON *doc;
	gm_config c;
	size_t n;
	FILE *f;

	(void)state;
	assert_non_null(srcdir);
	snprintf(path, sizeof(path), "%s/config/README.md", srcdir);
	assert_non_null(f = fopen(path, "r"));
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_non_null(list = strstr(text, "## Reloading (SIGHUP)"));
	assert_non_null(list = strstr(list, "\n`log_level`"));
	assert_non_null(end = strstr(list, "\n\n"));
	*end = '\0';
	gm_config_defaults(&c);
	assert_non_null(json = gm_config_to_json(&c));
	assert_non_null(doc = cJSON_Parse(json));
	free(json);
	cJSON_ArrayForEach(key, doc)
	{
		snprintf(tick, sizeof(tick), "`%s`", key->string);
		if ((strstr(list, tick) != NULL) !=
		    gm_config_reloadable(key->string))
			fail_msg("%s: reloadable %d, listed %d", key->string,
				 gm_config_reloadable(key->string),
				 strstr(list, tick) != NULL);
	}
	assert_false(gm_config_reloadable("no_such_key"));
	cJSON_Delete(doc);
	gm_config_free(&c);
}

static void test_bad_sets(void **state)
{
	gm_config c, before;

	(void)state;
	gm_config_defaults(&before);
	gm_config_defaults(&c);
	for (size_t i = 0; i < sizeof(bad_sets) / sizeof(bad_sets[0]); i++) {
		const struct bad_set *t = &bad_sets[i];
		int rv;

		msg[0] = '\0';
		rv = set(&c, t->key, t->value);
		if (rv != GM_ECONFIG || strcmp(msg, t->msg) != 0)
			fail_msg("case %zu %s=%s: got %s \"%s\", want ECONFIG "
				 "\"%s\"",
				 i, t->key, t->value, gm_errname(rv), msg,
				 t->msg);
		assert_config_equal(&c, &before);
	}
	gm_config_free(&c);
}

/* A value too long for the message is cut, not overflowed. */
static void test_long_values(void **state)
{
	char value[4096], cut[64];
	gm_config c;

	(void)state;
	memset(value, 'x', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	gm_config_defaults(&c);
	assert_int_equal(gm_config_set(&c, "streams", value, cut, sizeof(cut)),
			 GM_ECONFIG);
	assert_int_equal(strlen(cut), sizeof(cut) - 1);
	assert_non_null(strstr(cut, "config key \"streams\""));
	gm_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_bad_documents),
	    cmocka_unit_test(test_bad_sets),
	    cmocka_unit_test(test_reload),
	    cmocka_unit_test(test_reload_documented),
	    cmocka_unit_test(test_long_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
