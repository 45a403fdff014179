/*
 * config_fx.c - what the tests in test_config.c, test_config_listen.c,
 * test_config_bad.c share; see config_fx.h.
 */
#include "config_fx.h"

char msg[256];

int load(gm_config *c, const char *doc)
{
	return gm_config_load_string(c, doc, strlen(doc), msg, sizeof(msg));
}

int load_file(gm_config *c, const char *path)
{
	return gm_config_load_file(c, path, msg, sizeof(msg));
}

int set(gm_config *c, const char *key, const char *value)
{
	return gm_config_set(c, key, value, msg, sizeof(msg));
}

int add_listen(gm_config *c, const char *url, int replace)
{
	return gm_config_add_listen(c, url, replace, msg, sizeof(msg));
}

int check(const gm_config *c)
{
	return gm_config_check(c, msg, sizeof(msg));
}

void assert_same_string(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

void assert_config_equal(const gm_config *a, const gm_config *b)
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

const char *const all_changed =
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

void assert_all_changed(const gm_config *c)
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
