/*
 * test_config.c - gm_config: the defaults, the shipped config/gemmd.json
 * (found through GEMMD_SRCDIR), every key set from a document and from
 * the command line, bounds and sizes, per-priority keys, log levels.
 * The listen-side keys are in test_config_listen.c, files, reloads and
 * the tables of bad documents and overrides in test_config_bad.c.
 */
#include "config_fx.h"

static void test_defaults(void **state)
{
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "ipc:///run/gemmd/gemmd.sock");
	assert_int_equal(c.conn_inflight, 256);
	assert_int_equal(c.max_ctrl_bytes, 64 * 1024);
	assert_int_equal(c.max_conns, 1024);
	assert_int_equal(c.max_conns_peer, 128);
	assert_int_equal(c.max_conns_anon, 256);
	assert_int_equal(c.admin_conns, 4);
	assert_int_equal(c.handshake_ms, 10000);
	assert_int_equal(c.stall_ms, 30000);
	assert_int_equal(c.send_ms, 30000);
	assert_int_equal(c.conn_unsent_bytes, 256u << 20);
	assert_int_equal(c.queue_depth, 4096);
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		assert_int_equal(c.queue_depth_prio[p], 0);
	assert_int_equal(c.detach_keep_s, 300);
	assert_int_equal(c.detach_max_bytes, GIB);
	assert_int_equal(c.max_message_bytes, GIB);
	assert_int_equal(c.max_jobs, 4096);
	assert_int_equal(c.max_dim, 65536);
	assert_int_equal(c.log_level, GM_LOG_INFO);
	assert_null(c.tls_cert);
	assert_null(c.tls_key);
	assert_null(c.tls_ca);
	assert_null(c.metrics_listen);
	assert_int_equal(c.metrics_cache_ms, 1000);
	assert_int_equal(c.http_max_conns, 64);
	assert_int_equal(c.http_header_ms, 5000);
	assert_int_equal(c.http_idle_ms, 10000);
	assert_int_equal(c.http_header_bytes, 8192);
	assert_int_equal(c.engine.kind, GM_ENGINE_AUTO);
	assert_int_equal(c.engine.pool_bytes, GIB);
	assert_int_equal(c.pageable_max_bytes, 16 * GIB);
	assert_int_equal(c.engine.device_pool_bytes, 0);
	assert_int_equal(c.engine.streams, 8);
	assert_int_equal(c.engine.issue_order, GM_ISSUE_BREADTH);
	assert_int_equal(c.engine.kernel, GM_KERNEL_CUBLAS);
	assert_int_equal(c.engine.mapped_output, 0);
	assert_int_equal(c.engine.cpu_threads, 0);
	assert_int_equal(c.engine.cpu_piece_us, GM_CPU_PIECE_US);
	assert_int_equal(c.engine.spin_us, GM_SPIN_US);
	assert_int_equal(c.engine.ooc_share_pct, GM_OOC_SHARE_PCT);
	assert_int_equal(c.regions, 1);
	assert_null(c.region_socket);
	assert_int_equal(c.region_max_count, 64);
	assert_int_equal(c.region_max_bytes, 16 * GIB);
	assert_int_equal(c.nadmin_uids, 1);
	assert_int_equal(c.admin_uids[0], 0);
	assert_int_equal(c.nadmin_subjects, 0);
	assert_int_equal(c.allow_plain_tcp, 1);
	gm_config_free(&c);
}

static void test_load_every_key(void **state)
{
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_int_equal(load(&c, all_changed), GM_OK);
	assert_all_changed(&c);
	/* Keys a document leaves out keep their value. */
	assert_int_equal(load(&c, "{\"streams\": 2}"), GM_OK);
	assert_int_equal(c.engine.streams, 2);
	assert_int_equal(c.conn_inflight, 8);
	assert_int_equal(load(&c, "{\"tls_ca\": null}"), GM_OK);
	assert_null(c.tls_ca);
	gm_config_free(&c);
}

/* The shipped file names every key with its default: loaded over a
 * configuration where every key differs, it must give the defaults. */
static void test_shipped_file(void **state)
{
	const char *srcdir = getenv("GEMMD_SRCDIR");
	char path[4096];
	gm_config c, d;

	(void)state;
	if (srcdir == NULL)
		fail_msg("GEMMD_SRCDIR must name the source tree");
	snprintf(path, sizeof(path), "%s/config/gemmd.json", srcdir);
	gm_config_defaults(&c);
	gm_config_defaults(&d);
	assert_int_equal(load(&c, all_changed), GM_OK);
	if (load_file(&c, path) != GM_OK)
		fail_msg("%s", msg);
	assert_config_equal(&c, &d);
	gm_config_free(&c);
}

/* Each key through gm_config_set, in command-line syntax. */
static void test_set_every_key(void **state)
{
	static const char *const sets[][2] = {
	    {"listen", "tcp://127.0.0.1:5555"},
	    {"conn_max_inflight", "8"},
	    {"max_ctrl_bytes", "8K"},
	    {"max_connections", "100"},
	    {"max_connections_per_peer", "10"},
	    {"max_connections_anonymous", "20"},
	    {"admin_connections", "0"},
	    {"handshake_timeout_ms", "500"},
	    {"stall_timeout_ms", "600"},
	    {"send_timeout_ms", "700"},
	    {"conn_max_unsent_bytes", "1M"},
	    {"queue_depth", "100"},
	    {"queue_depth_per_priority", "10,0,30,40"},
	    {"detach_keep_s", "60"},
	    {"detach_max_bytes", "64M"},
	    {"max_message_bytes", "64M"},
	    {"max_jobs_per_request", "7"},
	    {"max_dim", "4096"},
	    {"log_level", "debug"},
	    {"log_format", "json"},
	    {"tls_cert", "/etc/gemmd/cert.pem"},
	    {"tls_key", "/etc/gemmd/key.pem"},
	    {"tls_ca", "/etc/gemmd/ca.pem"},
	    {"engine", "cpu"},
	    {"pool_bytes", "268435456"},
	    {"pageable_max_bytes", "3G"},
	    {"device_pool_bytes", "2G"},
	    {"streams", "16"},
	    {"issue_order", "depth"},
	    {"kernel", "tiled"},
	    {"mapped_output", "true"},
	    {"cpu_threads", "12"},
	    {"cpu_piece_us", "5000"},
	    {"spin_us", "50"},
	    {"ooc_share_percent", "60"},
	    {"metrics_listen", "127.0.0.1:9464"},
	    {"metrics_cache_ms", "0"},
	    {"http_max_connections", "5"},
	    {"http_header_timeout_ms", "300"},
	    {"http_idle_timeout_ms", "400"},
	    {"http_max_header_bytes", "2K"},
	    {"regions", "false"},
	    {"region_socket", "/run/r.sock"},
	    {"region_max_count", "3"},
	    {"region_max_bytes", "2G"},
	    {"admin_uids", "1000"},
	    {"admin_subjects", "CN=ops,O=lab"},
	    {"allow_plain_tcp", "false"},
	};
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		if (set(&c, sets[i][0], sets[i][1]) != GM_OK)
			fail_msg("%s=%s: %s", sets[i][0], sets[i][1], msg);
	assert_int_equal(add_listen(&c, "tls+tcp://0.0.0.0:5556", 0), GM_OK);
	assert_all_changed(&c);
	assert_int_equal(set(&c, "tls_ca", ""), GM_OK);
	assert_null(c.tls_ca);
	assert_int_equal(set(&c, "mapped_output", "false"), GM_OK);
	assert_int_equal(c.engine.mapped_output, 0);
	gm_config_free(&c);
}

/* Bounds are inclusive, and sizes take K, M, G, T as powers of 1024. */
static void test_bounds_and_sizes(void **state)
{
	static const struct {
		const char *key, *value;
		uint64_t want;
	} ok[] = {
	    {"streams", "1", 1},
	    {"streams", "64", 64},
	    {"conn_max_inflight", "65536", 65536},
	    {"max_connections", "1048576", 1048576},
	    {"handshake_timeout_ms", "10", 10},
	    {"send_timeout_ms", "3600000", 3600000},
	    {"max_ctrl_bytes", "1K", 1024},
	    {"max_ctrl_bytes", "256K", UINT64_C(256) << 10},
	    {"conn_max_unsent_bytes", "64K", 65536},
	    {"queue_depth", "1048576", 1048576},
	    {"detach_keep_s", "1", 1},
	    {"detach_keep_s", "604800", 604800},
	    {"detach_max_bytes", "0", 0},
	    {"detach_max_bytes", "1T", UINT64_C(1) << 40},
	    {"max_jobs_per_request", "65536", 65536},
	    {"max_dim", "1048576", 1048576},
	    {"cpu_threads", "0", 0},
	    {"cpu_threads", "1024", 1024},
	    {"cpu_piece_us", "100", 100},
	    {"cpu_piece_us", "10000000", 10000000},
	    {"spin_us", "0", 0},
	    {"spin_us", "100000", 100000},
	    {"ooc_share_percent", "10", 10},
	    {"ooc_share_percent", "90", 90},
	    {"max_message_bytes", "4096", 4096},
	    {"max_message_bytes", "4K", 4096},
	    {"max_message_bytes", "16G", UINT64_C(1) << 34},
	    {"pool_bytes", "1M", UINT64_C(1) << 20},
	    {"pool_bytes", "512M", UINT64_C(512) << 20},
	    {"pool_bytes", "1T", UINT64_C(1) << 40},
	    {"pool_bytes", "1048576", UINT64_C(1) << 20},
	    {"device_pool_bytes", "0", 0},
	    {"device_pool_bytes", "64K", 65536},
	    {"metrics_cache_ms", "60000", 60000},
	    {"http_max_connections", "1", 1},
	    {"http_max_connections", "65536", 65536},
	    {"http_header_timeout_ms", "10", 10},
	    {"http_idle_timeout_ms", "3600000", 3600000},
	    {"http_max_header_bytes", "1K", 1024},
	    {"http_max_header_bytes", "1M", UINT64_C(1) << 20},
	};
	char doc[128];
	gm_config c, d;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		gm_config_defaults(&c);
		gm_config_defaults(&d);
		if (set(&c, ok[i].key, ok[i].value) != GM_OK)
			fail_msg("%s=%s: %s", ok[i].key, ok[i].value, msg);
		/* The same value as a JSON string must agree with it. */
		snprintf(doc, sizeof(doc), "{\"%s\": \"%s\"}", ok[i].key,
			 ok[i].value);
		if (strchr(ok[i].value, 'K') || strchr(ok[i].value, 'M') ||
		    strchr(ok[i].value, 'G') || strchr(ok[i].value, 'T') ||
		    strstr(ok[i].key, "bytes"))
			assert_int_equal(load(&d, doc), GM_OK);
		else
			assert_int_equal(load(&d, doc), GM_ECONFIG);
		snprintf(doc, sizeof(doc), "{\"%s\": %llu}", ok[i].key,
			 (unsigned long long)ok[i].want);
		assert_int_equal(load(&d, doc), GM_OK);
		assert_config_equal(&c, &d);
		gm_config_free(&c);
		gm_config_free(&d);
	}
}

/* One number sets every priority; four set one each, lowest first. */
static void test_per_priority(void **state)
{
	static const unsigned four[] = {8, 64, 0, 4};
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_int_equal(set(&c, "queue_depth_per_priority", "16"), GM_OK);
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		assert_int_equal(c.queue_depth_prio[p], 16);
	assert_int_equal(
	    load(&c, "{\"queue_depth_per_priority\": [8, 64, 0, 4]}"), GM_OK);
	assert_memory_equal(c.queue_depth_prio, four, sizeof(four));
	assert_int_equal(load(&c, "{\"queue_depth_per_priority\": 1048576}"),
			 GM_OK);
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		assert_int_equal(c.queue_depth_prio[p], 1048576);
	gm_config_free(&c);
}

/* Each level takes its name, and the name it shows is the one it
 * takes; the daemon's log lines show the same names. */
static void test_log_levels(void **state)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {{"error", GM_LOG_ERROR},
		      {"warn", GM_LOG_WARN},
		      {"info", GM_LOG_INFO},
		      {"debug", GM_LOG_DEBUG}};
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		assert_int_equal(set(&c, "log_level", levels[i].name), GM_OK);
		assert_int_equal(c.log_level, levels[i].level);
		assert_string_equal(gm_config_log_level_name(c.log_level),
				    levels[i].name);
	}
	assert_string_equal(gm_config_log_level_name(4), "?");
	gm_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_load_every_key),
	    cmocka_unit_test(test_shipped_file),
	    cmocka_unit_test(test_set_every_key),
	    cmocka_unit_test(test_bounds_and_sizes),
	    cmocka_unit_test(test_per_priority),
	    cmocka_unit_test(test_log_levels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
