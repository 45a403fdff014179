/*
 * test_config.c - gm_config: the defaults, the shipped config/gemmd.json
 * (found through GEMMD_SRCDIR), every key set from a document and from
 * the command line, the "listen" list, cross-key checks, the JSON dump,
 * and a table of bad documents and overrides with the exact code and
 * message each one must produce.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gm_config.h"
#include "gm_ooc.h"
#include "gm_error.h"

#define GIB (UINT64_C(1) << 30)

static int load(gm_config *c, const char *doc, char *msg, size_t len)
{
	return gm_config_load_string(c, doc, strlen(doc), msg, len);
}

static void assert_same_string(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

/* Field by field, so that the check does not lean on gm_config_to_json. */
static void assert_config_equal(const gm_config *a, const gm_config *b)
{
	assert_int_equal(a->nlisten, b->nlisten);
	for (unsigned i = 0; i < a->nlisten; i++)
		assert_string_equal(a->listen[i], b->listen[i]);
	assert_int_equal(a->queue_depth, b->queue_depth);
	assert_memory_equal(a->queue_depth_prio, b->queue_depth_prio,
			    sizeof(a->queue_depth_prio));
	assert_int_equal(a->detach_keep_s, b->detach_keep_s);
	assert_int_equal(a->detach_max_bytes, b->detach_max_bytes);
	assert_int_equal(a->max_message_bytes, b->max_message_bytes);
	assert_int_equal(a->max_ctrl_bytes, b->max_ctrl_bytes);
	assert_int_equal(a->max_jobs, b->max_jobs);
	assert_int_equal(a->max_dim, b->max_dim);
	assert_int_equal(a->log_level, b->log_level);
	assert_int_equal(a->log_format, b->log_format);
	assert_same_string(a->tls_cert, b->tls_cert);
	assert_same_string(a->tls_key, b->tls_key);
	assert_same_string(a->tls_ca, b->tls_ca);
	assert_same_string(a->metrics_listen, b->metrics_listen);
	assert_int_equal(a->metrics_cache_ms, b->metrics_cache_ms);
	assert_int_equal(a->http_max_conns, b->http_max_conns);
	assert_int_equal(a->http_header_ms, b->http_header_ms);
	assert_int_equal(a->http_idle_ms, b->http_idle_ms);
	assert_int_equal(a->http_header_bytes, b->http_header_bytes);
	assert_int_equal(a->max_conns, b->max_conns);
	assert_int_equal(a->max_conns_peer, b->max_conns_peer);
	assert_int_equal(a->max_conns_anon, b->max_conns_anon);
	assert_int_equal(a->admin_conns, b->admin_conns);
	assert_int_equal(a->handshake_ms, b->handshake_ms);
	assert_int_equal(a->stall_ms, b->stall_ms);
	assert_int_equal(a->send_ms, b->send_ms);
	assert_int_equal(a->conn_inflight, b->conn_inflight);
	assert_int_equal(a->conn_unsent_bytes, b->conn_unsent_bytes);
	assert_int_equal(a->engine.kind, b->engine.kind);
	assert_int_equal(a->engine.pool_bytes, b->engine.pool_bytes);
	assert_int_equal(a->pageable_max_bytes, b->pageable_max_bytes);
	assert_int_equal(a->engine.device_pool_bytes,
			 b->engine.device_pool_bytes);
	assert_int_equal(a->engine.streams, b->engine.streams);
	assert_int_equal(a->engine.issue_order, b->engine.issue_order);
	assert_int_equal(a->engine.kernel, b->engine.kernel);
	assert_int_equal(a->engine.mapped_output, b->engine.mapped_output);
	assert_int_equal(a->engine.cpu_threads, b->engine.cpu_threads);
	assert_int_equal(a->engine.cpu_piece_us, b->engine.cpu_piece_us);
	assert_int_equal(a->engine.spin_us, b->engine.spin_us);
	assert_int_equal(a->engine.ooc_share_pct, b->engine.ooc_share_pct);
	assert_int_equal(a->regions, b->regions);
	assert_same_string(a->region_socket, b->region_socket);
	assert_int_equal(a->region_max_count, b->region_max_count);
	assert_int_equal(a->region_max_bytes, b->region_max_bytes);
	assert_int_equal(a->nadmin_uids, b->nadmin_uids);
	for (unsigned i = 0; i < a->nadmin_uids; i++)
		assert_int_equal(a->admin_uids[i], b->admin_uids[i]);
	assert_int_equal(a->nadmin_subjects, b->nadmin_subjects);
	for (unsigned i = 0; i < a->nadmin_subjects; i++)
		assert_string_equal(a->admin_subjects[i], b->admin_subjects[i]);
	assert_int_equal(a->allow_plain_tcp, b->allow_plain_tcp);
}

/* Every key away from its default. */
static const char *const all_changed =
    "{\"listen\": [\"tcp://127.0.0.1:5555\", \"tls+tcp://0.0.0.0:5556\"],"
    " \"conn_max_inflight\": 8, \"queue_depth\": 100,"
    " \"queue_depth_per_priority\": [10, 0, 30, 40],"
    " \"detach_keep_s\": 60, \"detach_max_bytes\": \"64M\","
    " \"max_message_bytes\": \"64M\", \"max_jobs_per_request\": 7,"
    " \"max_ctrl_bytes\": \"8K\", \"max_connections\": 100,"
    " \"max_connections_per_peer\": 10, \"handshake_timeout_ms\": 500,"
    " \"max_connections_anonymous\": 20, \"admin_connections\": 0,"
    " \"stall_timeout_ms\": 600, \"send_timeout_ms\": 700,"
    " \"conn_max_unsent_bytes\": \"1M\","
    " \"max_dim\": 4096, \"log_level\": \"debug\", \"log_format\": \"json\","
    " \"tls_cert\": \"/etc/gemmd/cert.pem\","
    " \"tls_key\": \"/etc/gemmd/key.pem\", \"tls_ca\": \"/etc/gemmd/ca.pem\","
    " \"metrics_listen\": \"127.0.0.1:9464\", \"metrics_cache_ms\": 0,"
    " \"http_max_connections\": 5, \"http_header_timeout_ms\": 300,"
    " \"http_idle_timeout_ms\": 400, \"http_max_header_bytes\": \"2K\","
    " \"engine\": \"cpu\", \"pool_bytes\": 268435456,"
    " \"pageable_max_bytes\": \"3G\","
    " \"device_pool_bytes\": \"2G\", \"streams\": 16,"
    " \"issue_order\": \"depth\", \"kernel\": \"tiled\","
    " \"mapped_output\": true, \"cpu_threads\": 12, \"spin_us\": 50,"
    " \"ooc_share_percent\": 60,"
    " \"regions\": false, \"region_socket\": \"/run/r.sock\","
    " \"region_max_count\": 3, \"region_max_bytes\": \"2G\","
    " \"admin_uids\": [1000], \"admin_subjects\": [\"CN=ops,O=lab\"],"
    " \"allow_plain_tcp\": false}";

static void assert_all_changed(const gm_config *c)
{
	assert_int_equal(c->nlisten, 2);
	assert_string_equal(c->listen[0], "tcp://127.0.0.1:5555");
	assert_string_equal(c->listen[1], "tls+tcp://0.0.0.0:5556");
	assert_int_equal(c->conn_inflight, 8);
	assert_int_equal(c->max_ctrl_bytes, 8192);
	assert_int_equal(c->max_conns, 100);
	assert_int_equal(c->max_conns_peer, 10);
	assert_int_equal(c->max_conns_anon, 20);
	assert_int_equal(c->admin_conns, 0);
	assert_int_equal(c->handshake_ms, 500);
	assert_int_equal(c->stall_ms, 600);
	assert_int_equal(c->send_ms, 700);
	assert_int_equal(c->conn_unsent_bytes, 1u << 20);
	assert_int_equal(c->queue_depth, 100);
	assert_int_equal(c->queue_depth_prio[0], 10);
	assert_int_equal(c->queue_depth_prio[1], 0);
	assert_int_equal(c->queue_depth_prio[2], 30);
	assert_int_equal(c->queue_depth_prio[3], 40);
	assert_int_equal(c->detach_keep_s, 60);
	assert_int_equal(c->detach_max_bytes, 64u << 20);
	assert_int_equal(c->max_message_bytes, 64u << 20);
	assert_int_equal(c->max_jobs, 7);
	assert_int_equal(c->max_dim, 4096);
	assert_int_equal(c->log_level, GM_LOG_DEBUG);
	assert_int_equal(c->log_format, GM_LOG_FORMAT_JSON);
	assert_string_equal(c->tls_cert, "/etc/gemmd/cert.pem");
	assert_string_equal(c->tls_key, "/etc/gemmd/key.pem");
	assert_string_equal(c->tls_ca, "/etc/gemmd/ca.pem");
	assert_string_equal(c->metrics_listen, "127.0.0.1:9464");
	assert_int_equal(c->metrics_cache_ms, 0);
	assert_int_equal(c->http_max_conns, 5);
	assert_int_equal(c->http_header_ms, 300);
	assert_int_equal(c->http_idle_ms, 400);
	assert_int_equal(c->http_header_bytes, 2048);
	assert_int_equal(c->engine.kind, GM_ENGINE_CPU);
	assert_int_equal(c->engine.pool_bytes, 256u << 20);
	assert_int_equal(c->pageable_max_bytes, 3 * GIB);
	assert_int_equal(c->engine.device_pool_bytes, 2 * GIB);
	assert_int_equal(c->engine.streams, 16);
	assert_int_equal(c->engine.issue_order, GM_ISSUE_DEPTH);
	assert_int_equal(c->engine.kernel, GM_KERNEL_TILED);
	assert_int_equal(c->engine.mapped_output, 1);
	assert_int_equal(c->engine.cpu_threads, 12);
	assert_int_equal(c->engine.spin_us, 50);
	assert_int_equal(c->engine.ooc_share_pct, 60);
	assert_int_equal(c->regions, 0);
	assert_string_equal(c->region_socket, "/run/r.sock");
	assert_int_equal(c->region_max_count, 3);
	assert_int_equal(c->region_max_bytes, 2 * GIB);
	assert_int_equal(c->nadmin_uids, 1);
	assert_int_equal(c->admin_uids[0], 1000);
	assert_int_equal(c->nadmin_subjects, 1);
	assert_string_equal(c->admin_subjects[0], "CN=ops,O=lab");
	assert_int_equal(c->allow_plain_tcp, 0);
}

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
	char msg[256] = "";
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_int_equal(load(&c, all_changed, msg, sizeof(msg)), GM_OK);
	assert_all_changed(&c);
	/* Keys a document leaves out keep their value. */
	assert_int_equal(load(&c, "{\"streams\": 2}", msg, sizeof(msg)), GM_OK);
	assert_int_equal(c.engine.streams, 2);
	assert_int_equal(c.conn_inflight, 8);
	assert_int_equal(load(&c, "{\"tls_ca\": null}", msg, sizeof(msg)),
			 GM_OK);
	assert_null(c.tls_ca);
	gm_config_free(&c);
}

/* The shipped file names every key with its default: loaded over a
 * configuration where every key differs, it must give the defaults. */
static void test_shipped_file(void **state)
{
	const char *srcdir = getenv("GEMMD_SRCDIR");
	char path[4096], msg[512] = "";
	gm_config c, d;

	(void)state;
	if (srcdir == NULL)
		fail_msg("GEMMD_SRCDIR must name the source tree");
	snprintf(path, sizeof(path), "%s/config/gemmd.json", srcdir);
	gm_config_defaults(&c);
	gm_config_defaults(&d);
	assert_int_equal(load(&c, all_changed, msg, sizeof(msg)), GM_OK);
	if (gm_config_load_file(&c, path, msg, sizeof(msg)) != GM_OK)
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
	char msg[256] = "";
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		if (gm_config_set(&c, sets[i][0], sets[i][1], msg,
				  sizeof(msg)) != GM_OK)
			fail_msg("%s=%s: %s", sets[i][0], sets[i][1], msg);
	assert_int_equal(gm_config_add_listen(&c, "tls+tcp://0.0.0.0:5556", 0,
					      msg, sizeof(msg)),
			 GM_OK);
	assert_all_changed(&c);
	assert_int_equal(gm_config_set(&c, "tls_ca", "", msg, sizeof(msg)),
			 GM_OK);
	assert_null(c.tls_ca);
	assert_int_equal(
	    gm_config_set(&c, "mapped_output", "false", msg, sizeof(msg)),
	    GM_OK);
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
	char msg[256] = "", doc[128];
	gm_config c, d;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		gm_config_defaults(&c);
		gm_config_defaults(&d);
		if (gm_config_set(&c, ok[i].key, ok[i].value, msg,
				  sizeof(msg)) != GM_OK)
			fail_msg("%s=%s: %s", ok[i].key, ok[i].value, msg);
		/* The same value as a JSON string must agree with it. */
		snprintf(doc, sizeof(doc), "{\"%s\": \"%s\"}", ok[i].key,
			 ok[i].value);
		if (strchr(ok[i].value, 'K') || strchr(ok[i].value, 'M') ||
		    strchr(ok[i].value, 'G') || strchr(ok[i].value, 'T') ||
		    strstr(ok[i].key, "bytes"))
			assert_int_equal(load(&d, doc, msg, sizeof(msg)),
					 GM_OK);
		else
			assert_int_equal(load(&d, doc, msg, sizeof(msg)),
					 GM_ECONFIG);
		snprintf(doc, sizeof(doc), "{\"%s\": %llu}", ok[i].key,
			 (unsigned long long)ok[i].want);
		assert_int_equal(load(&d, doc, msg, sizeof(msg)), GM_OK);
		assert_config_equal(&c, &d);
		gm_config_free(&c);
		gm_config_free(&d);
	}
}

/* One number sets every priority; four set one each, lowest first. */
static void test_per_priority(void **state)
{
	static const unsigned four[] = {8, 64, 0, 4};
	char msg[256] = "";
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_int_equal(gm_config_set(&c, "queue_depth_per_priority", "16",
				       msg, sizeof(msg)),
			 GM_OK);
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		assert_int_equal(c.queue_depth_prio[p], 16);
	assert_int_equal(load(&c,
			      "{\"queue_depth_per_priority\": [8, 64, 0, 4]}",
			      msg, sizeof(msg)),
			 GM_OK);
	assert_memory_equal(c.queue_depth_prio, four, sizeof(four));
	assert_int_equal(load(&c, "{\"queue_depth_per_priority\": 1048576}",
			      msg, sizeof(msg)),
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
	char msg[256] = "";
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		assert_int_equal(gm_config_set(&c, "log_level", levels[i].name,
					       msg, sizeof(msg)),
				 GM_OK);
		assert_int_equal(c.log_level, levels[i].level);
		assert_string_equal(gm_config_log_level_name(c.log_level),
				    levels[i].name);
	}
	assert_string_equal(gm_config_log_level_name(4), "?");
	gm_config_free(&c);
}

static void test_listen(void **state)
{
	char msg[256] = "", url[64];
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	/* The first --listen replaces the defaults, later ones add. */
	assert_int_equal(
	    gm_config_add_listen(&c, "ipc:///tmp/a.sock", 1, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "ipc:///tmp/a.sock");
	assert_int_equal(
	    gm_config_add_listen(&c, "tcp://[::1]:7000", 0, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(c.nlisten, 2);
	assert_string_equal(c.listen[1], "tcp://[::1]:7000");
	assert_int_equal(
	    gm_config_add_listen(&c, "tcp://[::1]:7000", 0, msg, sizeof(msg)),
	    GM_ECONFIG);
	assert_string_equal(msg, "config key \"listen\": \"tcp://[::1]:7000\" "
				 "is listed twice");
	assert_int_equal(c.nlisten, 2);
	for (unsigned i = 2; i < GM_CONFIG_MAX_LISTEN; i++) {
		snprintf(url, sizeof(url), "tcp://127.0.0.1:%u", 7000 + i);
		assert_int_equal(
		    gm_config_add_listen(&c, url, 0, msg, sizeof(msg)), GM_OK);
	}
	assert_int_equal(c.nlisten, GM_CONFIG_MAX_LISTEN);
	assert_int_equal(
	    gm_config_add_listen(&c, "tcp://h:1", 0, msg, sizeof(msg)),
	    GM_ECONFIG);
	assert_non_null(strstr(msg, "config key \"listen\""));
	assert_int_equal(c.nlisten, GM_CONFIG_MAX_LISTEN);
	/* --set listen=URL is one URL in place of the list. */
	assert_int_equal(
	    gm_config_set(&c, "listen", "tcp://h:1", msg, sizeof(msg)), GM_OK);
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "tcp://h:1");
	gm_config_free(&c);
}

/* Who is admin: admin_uids is root alone by default, "" makes it
 * nobody; admin_subjects takes a subject whole, commas and all, from
 * the command line, matched exactly. */
static void test_admin(void **state)
{
	char msg[256] = "", subject[300];
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_true(gm_config_admin_uid(&c, 0));
	assert_false(gm_config_admin_uid(&c, 1000));
	assert_false(gm_config_admin_subject(&c, "CN=ops"));
	assert_int_equal(gm_config_set(&c, "admin_uids", "", msg, sizeof(msg)),
			 GM_OK);
	assert_false(gm_config_admin_uid(&c, 0));
	assert_int_equal(
	    gm_config_set(&c, "admin_uids", "1000,0", msg, sizeof(msg)), GM_OK);
	assert_true(gm_config_admin_uid(&c, 0) &&
		    gm_config_admin_uid(&c, 1000));
	assert_int_equal(gm_config_set(&c, "admin_subjects", "CN=ops,O=lab",
				       msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(c.nadmin_subjects, 1);
	assert_true(gm_config_admin_subject(&c, "CN=ops,O=lab"));
	assert_false(gm_config_admin_subject(&c, "CN=ops"));
	assert_false(gm_config_admin_subject(&c, "cn=ops,o=lab"));
	assert_int_equal(load(&c,
			      "{\"admin_subjects\": [\"CN=a\", \"CN=b,O=c\"]}",
			      msg, sizeof(msg)),
			 GM_OK);
	assert_true(gm_config_admin_subject(&c, "CN=b,O=c"));
	assert_false(gm_config_admin_subject(&c, "CN=ops,O=lab"));
	assert_int_equal(
	    gm_config_set(&c, "admin_subjects", "", msg, sizeof(msg)), GM_OK);
	assert_int_equal(c.nadmin_subjects, 0);
	memset(subject, 'x', 256);
	memcpy(subject, "CN=", 3);
	subject[256] = '\0';
	assert_int_equal(
	    gm_config_set(&c, "admin_subjects", subject, msg, sizeof(msg)),
	    GM_ECONFIG);
	assert_non_null(strstr(msg, "must be 1 to 255 bytes"));
	subject[255] = '\0';
	assert_int_equal(
	    gm_config_set(&c, "admin_subjects", subject, msg, sizeof(msg)),
	    GM_OK);
	gm_config_free(&c);
	/* Freed, the defaults are back, root included. */
	assert_true(gm_config_admin_uid(&c, 0));
}

static void test_check(void **state)
{
	char msg[256] = "";
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_OK);
	/* Plain TCP, allowed by default, refused once allow_plain_tcp is
	 * false; the other schemes are not. */
	assert_int_equal(
	    gm_config_add_listen(&c, "tcp://127.0.0.1:1", 0, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_OK);
	assert_int_equal(
	    gm_config_set(&c, "allow_plain_tcp", "false", msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_ECONFIG);
	assert_string_equal(msg, "config key \"listen\": \"tcp://127.0.0.1:1\" "
				 "is plain TCP, unauthenticated, and "
				 "\"allow_plain_tcp\" is false: use tls+tcp:// "
				 "or ipc://");
	assert_int_equal(
	    gm_config_set(&c, "listen", "ipc:///tmp/x.sock", msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_OK);
	assert_int_equal(load(&c, "{\"listen\": [\"tls+tcp://0.0.0.0:1\"]}",
			      msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_ECONFIG);
	assert_string_equal(msg,
			    "config key \"listen\": \"tls+tcp://0.0.0.0:1\""
			    " needs \"tls_cert\", \"tls_key\" and \"tls_ca\"");
	assert_int_equal(
	    gm_config_set(&c, "tls_cert", "/c.pem", msg, sizeof(msg)), GM_OK);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_ECONFIG);
	assert_string_equal(msg, "config keys \"tls_cert\" and \"tls_key\" go "
				 "together, but \"tls_key\" is null");
	assert_int_equal(
	    gm_config_set(&c, "tls_key", "/k.pem", msg, sizeof(msg)), GM_OK);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_ECONFIG);
	assert_int_equal(
	    gm_config_set(&c, "tls_ca", "/ca.pem", msg, sizeof(msg)), GM_OK);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_OK);
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
	char msg[256];
	gm_config c;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		gm_config_defaults(&c);
		assert_int_equal(gm_config_set(&c, "allow_uids", rows[i].uids,
					       msg, sizeof(msg)),
				 GM_OK);
		assert_int_equal(gm_config_set(&c, "allow_gids", rows[i].gids,
					       msg, sizeof(msg)),
				 GM_OK);
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
	char msg[256] = "", want[256];
	gm_config c;

	(void)state;
	gm_config_defaults(&c);
	assert_null(c.metrics_listen);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(gm_config_set(&c, "metrics_listen", good[i],
					       msg, sizeof(msg)),
				 GM_OK);
		assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_OK);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(gm_config_set(&c, "metrics_listen", bad[i],
					       msg, sizeof(msg)),
				 GM_OK);
		assert_int_equal(gm_config_check(&c, msg, sizeof(msg)),
				 GM_ECONFIG);
		snprintf(want, sizeof(want),
			 "config key \"metrics_listen\": \"%s\" is not "
			 "HOST:PORT, e.g. \"127.0.0.1:9464\"",
			 bad[i]);
		assert_string_equal(msg, want);
	}
	assert_int_equal(
	    gm_config_set(&c, "metrics_listen", "", msg, sizeof(msg)), GM_OK);
	assert_null(c.metrics_listen);
	assert_int_equal(gm_config_check(&c, msg, sizeof(msg)), GM_OK);
	gm_config_free(&c);
}

/* The dump loads back to the same configuration. */
static void test_to_json(void **state)
{
	char msg[256] = "";
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

	assert_int_equal(load(&c, all_changed, msg, sizeof(msg)), GM_OK);
	text = gm_config_to_json(&c);
	assert_non_null(text);
	assert_int_equal(load(&d, text, msg, sizeof(msg)), GM_OK);
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
	char msg[256] = "";
	gm_config c, d;

	(void)state;
	gm_config_defaults(&c);
	gm_config_defaults(&d);
	assert_int_equal(load(&c, all_changed, msg, sizeof(msg)), GM_OK);
	gm_config_free(&c);
	assert_config_equal(&c, &d);
	gm_config_free(&c);
}

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
	char msg[512] = "", want[512];
	gm_config c, d;
	char *path, *big;

	(void)state;
	gm_config_defaults(&c);
	gm_config_defaults(&d);

	assert_int_equal(gm_config_load_file(&c, "/nonexistent/gemmd.json", msg,
					     sizeof(msg)),
			 GM_EIO);
	snprintf(want, sizeof(want), "/nonexistent/gemmd.json: %s",
		 strerror(ENOENT));
	assert_string_equal(msg, want);

	assert_int_equal(gm_config_load_file(&c, "/tmp", msg, sizeof(msg)),
			 GM_EIO);
	snprintf(want, sizeof(want), "/tmp: %s", strerror(EISDIR));
	assert_string_equal(msg, want);

	/* A FIFO nobody writes to is refused at once, not waited on. */
	{
		char dir[] = "/tmp/gemmd-test-fifo.XXXXXX", fifo[64];

		assert_non_null(mkdtemp(dir));
		snprintf(fifo, sizeof(fifo), "%s/gemmd.json", dir);
		assert_int_equal(mkfifo(fifo, 0600), 0);
		assert_int_equal(
		    gm_config_load_file(&c, fifo, msg, sizeof(msg)), GM_EIO);
		snprintf(want, sizeof(want), "%s: not a regular file", fifo);
		assert_string_equal(msg, want);
		unlink(fifo);
		rmdir(dir);
	}

	path = write_temp("{\n\t\"streams\": 8,\n\t\"kernel\": tiled\n}\n", 35);
	assert_int_equal(gm_config_load_file(&c, path, msg, sizeof(msg)),
			 GM_EJSON);
	snprintf(want, sizeof(want), "%s: bad JSON at line 3, column 12", path);
	assert_string_equal(msg, want);
	unlink(path);

	path = write_temp("{\"streams\": 99}", 15);
	assert_int_equal(gm_config_load_file(&c, path, msg, sizeof(msg)),
			 GM_ECONFIG);
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
	assert_int_equal(gm_config_load_file(&c, path, msg, sizeof(msg)),
			 GM_ECONFIG);
	assert_non_null(strstr(msg, "1048577 bytes"));
	unlink(path);

	path = write_temp("{\"streams\": 8}\n", 15);
	assert_int_equal(gm_config_load_file(&c, path, msg, sizeof(msg)),
			 GM_OK);
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
	char msg[256];
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
		rv = load(&c, t->doc, msg, sizeof(msg));
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
	char msg[256] = "";
	gm_config c, next;

	(void)state;
	gm_config_defaults(&c);
	gm_config_defaults(&next);
	assert_int_equal(
	    load(&c, "{\"allow_uids\": [5], \"streams\": 4}", msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(
	    load(&next,
		 "{\"log_level\": \"debug\", \"pool_bytes\": \"2G\","
		 " \"allow_uids\": [7, 8], \"streams\": 4,"
		 " \"queue_depth_per_priority\": [1, 2, 3, 4],"
		 " \"http_max_connections\": 9,"
		 " \"metrics_listen\": \"127.0.0.1:1\"}",
		 msg, sizeof(msg)),
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
	char msg[256];
	gm_config c, before;

	(void)state;
	gm_config_defaults(&before);
	gm_config_defaults(&c);
	for (size_t i = 0; i < sizeof(bad_sets) / sizeof(bad_sets[0]); i++) {
		const struct bad_set *t = &bad_sets[i];
		int rv;

		msg[0] = '\0';
		rv = gm_config_set(&c, t->key, t->value, msg, sizeof(msg));
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
	char value[4096], msg[64];
	gm_config c;

	(void)state;
	memset(value, 'x', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	gm_config_defaults(&c);
	assert_int_equal(gm_config_set(&c, "streams", value, msg, sizeof(msg)),
			 GM_ECONFIG);
	assert_int_equal(strlen(msg), sizeof(msg) - 1);
	assert_non_null(strstr(msg, "config key \"streams\""));
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
	    cmocka_unit_test(test_admin),
	    cmocka_unit_test(test_log_levels),
	    cmocka_unit_test(test_listen),
	    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_metrics_listen),
	    cmocka_unit_test(test_allows),
	    cmocka_unit_test(test_to_json),
	    cmocka_unit_test(test_free_leaves_defaults),
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_bad_documents),
	    cmocka_unit_test(test_bad_sets),
	    cmocka_unit_test(test_reload),
	    cmocka_unit_test(test_reload_documented),
	    cmocka_unit_test(test_long_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
