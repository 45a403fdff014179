/*
 * gm_config.c - the configuration table, and everything that walks it:
 * defaults, setting a key from a JSON document or from the command line,
 * loading a document all or nothing, copying, freeing and rendering a
 * configuration; and the rules that span keys.
 *
 * Adding a key means adding a row to keys[] (plus its field in gm_config,
 * its line in config/gemmd.json and its entry in config/README.md);
 * nothing else knows a key's name. What a value of each kind reads like
 * and owns is the kind's own business (gm_config_row.h): nothing here
 * switches on a kind. Defaults are static, so a field owns heap memory
 * only once it has been set.
 */
#include "gm_config.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_config_kind.h"
#include "gm_config_list.h"
#include "gm_config_row.h"
#include "gm_config_value.h"
#include "gm_ooc.h"
#include "gm_error.h"

/* The C type a row of each kind is stored as. */
#define T_uint	 unsigned
#define T_size	 uint64_t
#define T_bool	 int
#define T_enum	 int
#define T_string char *
#define T_prios	 unsigned *
#define T_urls	 char **
#define T_strs	 char **
#define T_ids	 uint32_t *

/* The offset of field f, which must have type t: a row cannot store
 * through a pointer of the wrong type, it does not compile. */
#define AT(f, t) _Generic(((gm_config *)0)->f, t : offsetof(gm_config, f))

#define ROW(key, k, f, lo, hi, d)                                         \
	{                                                                 \
		.name = (key), .kind = &gm_config_kind_##k,               \
		.off = AT(f, T_##k), .min = (lo), .max = (hi), .def = (d) \
	}
#define ROW_ENUM(key, f, list, d)                                   \
	{                                                           \
		.name = (key), .kind = &gm_config_kind_enum,        \
		.off = AT(f, T_enum), .choices = (list), .def = (d) \
	}

/* Rows SIGHUP reloads (gm_config_reload); a row of the plain macros
 * needs a restart. */
#define ROW_LIVE(key, k, f, lo, hi, d)                                     \
	{                                                                  \
		.name = (key), .kind = &gm_config_kind_##k,                \
		.off = AT(f, T_##k), .min = (lo), .max = (hi), .def = (d), \
		.reloadable = true                                         \
	}
#define ROW_ENUM_LIVE(key, f, list, d)                               \
	{                                                            \
		.name = (key), .kind = &gm_config_kind_enum,         \
		.off = AT(f, T_enum), .choices = (list), .def = (d), \
		.reloadable = true                                   \
	}

/* An empty id list (the default) lets every peer in. Id lists are
 * checked when a peer comes, so SIGHUP reloads them. */
#define ROW_IDS(key, f, n)                                                   \
	{                                                                    \
		.name = (key), .kind = &gm_config_list_ids,                  \
		.off = AT(f, T_ids), .count_off = AT(n, unsigned), .min = 0, \
		.max = ID_MAX, .max_count = GM_CONFIG_MAX_IDS,               \
		.reloadable = true                                           \
	}

/* admin_uids: root alone, unless the configuration says otherwise. */
static uint32_t default_admin_uids[] = {0};

/* A TLS subject as gm_peer holds it (RFC 2253, at most 255 bytes). */
#define SUBJECT_MAX 255

/* (uid_t)-1 and (gid_t)-1 mean "no id" to the kernel, so no peer has it. */
#define ID_MAX (UINT32_MAX - 1)

_Static_assert(GM_CONFIG_MAX_LISTEN <= GM_CONFIG_LIST_MAX &&
		   GM_CONFIG_MAX_IDS <= GM_CONFIG_LIST_MAX,
	       "list rows fit the lists' room on the stack");

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define TIB (UINT64_C(1) << 40)

static const gm_config_choice log_levels[] = {
    {"error", GM_LOG_ERROR},
    {"warn", GM_LOG_WARN},
    {"info", GM_LOG_INFO},
    {"debug", GM_LOG_DEBUG},
    {NULL, 0},
};
static const gm_config_choice log_formats[] = {
    {"auto", GM_LOG_FORMAT_AUTO},
    {"text", GM_LOG_FORMAT_TEXT},
    {"journal", GM_LOG_FORMAT_JOURNAL},
    {"json", GM_LOG_FORMAT_JSON},
    {NULL, 0},
};
static const gm_config_choice engine_kinds[] = {
    {"auto", GM_ENGINE_AUTO},
    {"cpu", GM_ENGINE_CPU},
    {"cuda", GM_ENGINE_CUDA},
    {NULL, 0},
};
static const gm_config_choice issue_orders[] = {
    {"breadth", GM_ISSUE_BREADTH},
    {"depth", GM_ISSUE_DEPTH},
    {NULL, 0},
};
static const gm_config_choice kernels[] = {
    {"cublas", GM_KERNEL_CUBLAS},
    {"tiled", GM_KERNEL_TILED},
    {NULL, 0},
};

static char default_url[] = "ipc:///run/gemmd/gemmd.sock";
static char *default_listen[] = {default_url};

static const gm_config_row keys[] = {
    {.name = "listen",
     .kind = &gm_config_list_urls,
     .off = AT(listen, T_urls),
     .count_off = AT(nlisten, unsigned),
     .min = 1,
     .max = GM_CONFIG_MAX_LISTEN,
     .def = 1,
     .strs_def = default_listen},
    ROW("queue_depth", uint, queue_depth, 1, 1048576, 4096),
    ROW_LIVE("queue_depth_per_priority", prios, queue_depth_prio, 0, 1048576,
	     0),
    ROW("detach_keep_s", uint, detach_keep_s, 1, 604800, 300),
    ROW("detach_max_bytes", size, detach_max_bytes, 0, TIB, GIB),
    ROW_LIVE("max_message_bytes", size, max_message_bytes, 4 * KIB, 16 * GIB,
	     GIB),
    ROW_LIVE("max_ctrl_bytes", size, max_ctrl_bytes, KIB, 256 * KIB, 64 * KIB),
    ROW_LIVE("max_jobs_per_request", uint, max_jobs, 1, GM_MAX_JOBS, 4096),
    ROW_LIVE("max_dim", uint, max_dim, 1, GM_MAX_DIM, 65536),
    ROW_ENUM_LIVE("log_level", log_level, log_levels, GM_LOG_INFO),
    ROW_ENUM("log_format", log_format, log_formats, GM_LOG_FORMAT_AUTO),
    ROW("tls_cert", string, tls_cert, 0, 0, 0),
    ROW("tls_key", string, tls_key, 0, 0, 0),
    ROW("tls_ca", string, tls_ca, 0, 0, 0),
    ROW_IDS("allow_uids", allow_uids, nallow_uids),
    ROW_IDS("allow_gids", allow_gids, nallow_gids),
    {.name = "admin_uids",
     .kind = &gm_config_list_ids,
     .off = AT(admin_uids, T_ids),
     .count_off = AT(nadmin_uids, unsigned),
     .max = ID_MAX,
     .max_count = GM_CONFIG_MAX_IDS,
     .def = 1,
     .ids_def = default_admin_uids},
    {.name = "admin_subjects",
     .kind = &gm_config_list_strs,
     .off = AT(admin_subjects, T_strs),
     .count_off = AT(nadmin_subjects, unsigned),
     .max = SUBJECT_MAX,
     .max_count = GM_CONFIG_MAX_IDS},
    ROW("allow_plain_tcp", bool, allow_plain_tcp, 0, 1, 1),
    ROW("metrics_listen", string, metrics_listen, 0, 0, 0),
    ROW_LIVE("metrics_cache_ms", uint, metrics_cache_ms, 0, 60000, 1000),
    ROW_LIVE("http_max_connections", uint, http_max_conns, 1, 65536, 64),
    ROW_LIVE("http_header_timeout_ms", uint, http_header_ms, 10, 3600000, 5000),
    ROW_LIVE("http_idle_timeout_ms", uint, http_idle_ms, 10, 3600000, 10000),
    ROW_LIVE("http_max_header_bytes", size, http_header_bytes, KIB, MIB,
	     8 * KIB),
    ROW_LIVE("max_connections", uint, max_conns, 1, 1048576, 1024),
    ROW_LIVE("max_connections_per_peer", uint, max_conns_peer, 1, 1048576, 128),
    ROW_LIVE("max_connections_anonymous", uint, max_conns_anon, 1, 1048576,
	     256),
    ROW_LIVE("admin_connections", uint, admin_conns, 0, 1024, 4),
    ROW_LIVE("handshake_timeout_ms", uint, handshake_ms, 10, 3600000, 10000),
    ROW_LIVE("stall_timeout_ms", uint, stall_ms, 10, 3600000, 30000),
    ROW_LIVE("send_timeout_ms", uint, send_ms, 10, 3600000, 30000),
    ROW_LIVE("conn_max_inflight", uint, conn_inflight, 1, 65536, 256),
    ROW_LIVE("conn_max_unsent_bytes", size, conn_unsent_bytes, 64 * KIB, TIB,
	     256 * MIB),
    ROW_LIVE("payload_min_rate", size, payload_min_rate, 0, TIB, MIB),
    ROW_LIVE("payload_grace_ms", uint, payload_grace_ms, 0, 3600000, 10000),
    ROW("pool_bypass_max", uint, pool_bypass_max, 0, 1048576, 64),
    ROW("pool_bypass_ms", uint, pool_bypass_ms, 0, 3600000, 2000),
    ROW("principal_share_percent", uint, principal_share_pct, 1, 100, 25),
    ROW_ENUM("engine", engine.kind, engine_kinds, GM_ENGINE_AUTO),
    ROW("pool_bytes", size, engine.pool_bytes, MIB, TIB, GIB),
    ROW("pageable_max_bytes", size, pageable_max_bytes, 0, 64 * TIB, 16 * GIB),
    ROW("device_pool_bytes", size, engine.device_pool_bytes, 0, TIB, 0),
    ROW("streams", uint, engine.streams, 1, GM_MAX_STREAMS, 8),
    ROW_ENUM("issue_order", engine.issue_order, issue_orders, GM_ISSUE_BREADTH),
    ROW_ENUM("kernel", engine.kernel, kernels, GM_KERNEL_CUBLAS),
    ROW("mapped_output", bool, engine.mapped_output, 0, 1, 0),
    ROW("cpu_threads", uint, engine.cpu_threads, 0, 1024, 0),
    ROW("cpu_piece_us", uint, engine.cpu_piece_us, 100, 10000000,
	GM_CPU_PIECE_US),
    ROW("cpu_piece_flops", size, engine.cpu_piece_flops, 0,
	UINT64_C(1000000000000000), 0),
    ROW("spin_us", uint, engine.spin_us, 0, 100000, GM_SPIN_US),
    ROW("ooc_share_percent", uint, engine.ooc_share_pct, 10, 90,
	GM_OOC_SHARE_PCT),
    ROW("regions", bool, regions, 0, 1, 1),
    ROW("region_socket", string, region_socket, 0, 0, 0),
    ROW_LIVE("region_max_count", uint, region_max_count, 1, 65536, 64),
    ROW_LIVE("region_max_bytes", size, region_max_bytes, MIB, 64 * TIB,
	     16 * GIB),
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

#define fail gm_config_value_fail

/* Where row r is stored in c, and its entry count (lists; else NULL). */
static void *field(gm_config *c, const gm_config_row *r)
{
	return (char *)c + r->off;
}

static unsigned *count_of(gm_config *c, const gm_config_row *r)
{
	return r->count_off != 0 ? (unsigned *)((char *)c + r->count_off)
				 : NULL;
}

/* The entry count of row r in c; 0 for a row that is not a list. */
static unsigned count_value(const gm_config *c, const gm_config_row *r)
{
	return r->count_off != 0
		   ? *(const unsigned *)((const char *)c + r->count_off)
		   : 0;
}

static const gm_config_row *find_row(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* The one setter: every key, from either source, comes through here. */
static int set_value(gm_config *c, const gm_config_row *r,
		     const gm_config_src *v, char *msg, size_t len)
{
	int rv = r->kind->set(r, field(c, r), count_of(c, r), v, msg, len);

	if (rv == GM_ENOMEM)
		fail(msg, len, rv, "config key \"%s\": out of memory", r->name);
	return rv;
}

static void set_default(gm_config *c, const gm_config_row *r)
{
	r->kind->init(r, field(c, r), count_of(c, r));
}

void gm_config_defaults(gm_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS; i++)
		set_default(c, &keys[i]);
}

void gm_config_free(gm_config *c)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const gm_config_row *r = &keys[i];

		if (r->kind->release != NULL)
			r->kind->release(r, field(c, r), count_value(c, r));
	}
	gm_config_defaults(c);
}

/* Deep-copies src into dst, so that a document can be applied to the
 * copy and the copy dropped if any key of it is bad. */
static int copy_config(gm_config *dst, const gm_config *src)
{
	size_t i, j;
	int rv = 0;

	*dst = *src;
	for (i = 0; i < NKEYS && rv == 0; i++) {
		const gm_config_row *r = &keys[i];

		if (r->kind->copy != NULL)
			rv = r->kind->copy(r, field(dst, r),
					   count_value(dst, r));
	}
	if (rv == 0)
		return 0;
	/* What was not copied yet is still src's: let go of it. */
	for (j = i - 1; j < NKEYS; j++)
		if (keys[j].kind->copy != NULL)
			set_default(dst, &keys[j]);
	gm_config_free(dst);
	return rv;
}

static int apply(gm_config *c, const cJSON *doc, char *msg, size_t len)
{
	bool seen[NKEYS] = {false};
	const cJSON *item;
	int rv;

	if (!cJSON_IsObject(doc)) {
		char got[80];

		gm_config_value_show(&(gm_config_src){.json = doc}, 0, got,
				     sizeof(got));
		return fail(msg, len, GM_ECONFIG,
			    "config document: expected a JSON object, got %s",
			    got);
	}
	cJSON_ArrayForEach(item, doc)
	{
		const gm_config_row *r = find_row(item->string);

		if (r == NULL)
			return fail(msg, len, GM_ECONFIG,
				    "unknown config key \"%.64s\"",
				    item->string);
		if (seen[r - keys])
			return fail(msg, len, GM_ECONFIG,
				    "config key \"%s\" appears twice", r->name);
		seen[r - keys] = true;
		rv = set_value(c, r, &(gm_config_src){.json = item}, msg, len);
		if (rv != 0)
			return rv;
	}
	return 0;
}

int gm_config_set(gm_config *c, const char *key, const char *value, char *msg,
		  size_t msglen)
{
	const gm_config_row *r = find_row(key);

	if (r == NULL)
		return fail(msg, msglen, GM_ECONFIG,
			    "unknown config key \"%.64s\"", key);
	return set_value(c, r, &(gm_config_src){.text = value}, msg, msglen);
}

int gm_config_add_listen(gm_config *c, const char *url, int replace, char *msg,
			 size_t msglen)
{
	const gm_config_row *r = find_row("listen");

	return gm_config_list_add_url(r, field(c, r), count_of(c, r), url,
				      replace, msg, msglen);
}

const char *gm_config_log_level_name(int level)
{
	for (const gm_config_choice *ch = log_levels; ch->name != NULL; ch++)
		if (ch->value == level)
			return ch->name;
	return "?";
}

/* ---- reload ---- */

/* One row of gm_config_reload, compared as the JSON its kind renders
 * and taken through the one setter: nothing here knows a kind. */
static int reload_row(gm_config *c, const gm_config *next,
		      const gm_config_row *r, gm_config_change_fn change,
		      void *arg)
{
	cJSON *was =
	    r->kind->get(r, (const char *)c + r->off, count_value(c, r));
	cJSON *now =
	    r->kind->get(r, (const char *)next + r->off, count_value(next, r));
	char *was_text = NULL, *now_text = NULL, msg[256];
	int rv = was != NULL && now != NULL ? GM_OK : GM_ENOMEM;

	if (rv == GM_OK && !cJSON_Compare(was, now, true)) {
		was_text = cJSON_PrintUnformatted(was);
		now_text = cJSON_PrintUnformatted(now);
		if (was_text == NULL || now_text == NULL)
			rv = GM_ENOMEM;
		else if (r->reloadable)
			rv = set_value(c, r, &(gm_config_src){.json = now}, msg,
				       sizeof(msg));
		if (rv == GM_OK)
			change(arg, r->name, r->reloadable, was_text, now_text);
	}
	cJSON_free(was_text);
	cJSON_free(now_text);
	cJSON_Delete(was);
	cJSON_Delete(now);
	return rv;
}

bool gm_config_reloadable(const char *key)
{
	const gm_config_row *r = find_row(key);

	return r != NULL && r->reloadable;
}

int gm_config_reload(gm_config *c, const gm_config *next,
		     gm_config_change_fn change, void *arg)
{
	int rv = GM_OK;

	for (size_t i = 0; i < NKEYS && rv == GM_OK; i++)
		rv = reload_row(c, next, &keys[i], change, arg);
	return rv;
}

/* ---- JSON documents ---- */

/* Line and column (from 1) of the byte at pos, for JSON errors. */
static int json_error(const char *text, const char *pos, char *msg, size_t len)
{
	unsigned line = 1, col = 1;

	for (const char *p = text; p < pos; p++) {
		col = (*p == '\n') ? 1 : col + 1;
		line += (*p == '\n');
	}
	return fail(msg, len, GM_EJSON, "bad JSON at line %u, column %u", line,
		    col);
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int gm_config_load_string(gm_config *c, const char *text, size_t len, char *msg,
			  size_t msglen)
{
	const char *end = text;
	gm_config tmp;
	cJSON *doc;
	int rv;

	if ((doc = cJSON_ParseWithLengthOpts(text, len, &end, 0)) == NULL)
		return json_error(text, end, msg, msglen);
	/* cJSON stops after the first value; anything but space after it
	 * means the text is not the one document it looks like. */
	while (end < text + len && is_space(*end))
		end++;
	if (end < text + len)
		rv = json_error(text, end, msg, msglen);
	else if ((rv = copy_config(&tmp, c)) != 0)
		fail(msg, msglen, rv, "out of memory");
	else if ((rv = apply(&tmp, doc, msg, msglen)) != 0)
		gm_config_free(&tmp);
	else {
		gm_config_free(c);
		*c = tmp;
	}
	cJSON_Delete(doc);
	return rv;
}

char *gm_config_to_json(const gm_config *c)
{
	cJSON *doc = cJSON_CreateObject();
	char *text = NULL;
	size_t i;

	for (i = 0; doc != NULL && i < NKEYS; i++) {
		const gm_config_row *r = &keys[i];
		cJSON *item = r->kind->get(r, (const char *)c + r->off,
					   count_value(c, r));

		if (item == NULL ||
		    !cJSON_AddItemToObject(doc, r->name, item)) {
			cJSON_Delete(item);
			break;
		}
	}
	if (doc != NULL && i == NKEYS)
		text = cJSON_Print(doc);
	cJSON_Delete(doc);
	return text;
}

/* ---- rules that span keys ---- */

/* HOST:PORT with a port of 1..65535, or null. */
static int check_host_port(const char *key, const char *v, char *msg,
			   size_t len)
{
	if (v == NULL || gm_config_value_host_port(v))
		return 0;
	return fail(msg, len, GM_ECONFIG,
		    "config key \"%s\": \"%.200s\" is not HOST:PORT, e.g. "
		    "\"127.0.0.1:9464\"",
		    key, v);
}

int gm_config_check(const gm_config *c, char *msg, size_t msglen)
{
	int rv;

	if ((rv = check_host_port("metrics_listen", c->metrics_listen, msg,
				  msglen)) != 0)
		return rv;
	if ((c->tls_cert == NULL) != (c->tls_key == NULL))
		return fail(msg, msglen, GM_ECONFIG,
			    "config keys \"tls_cert\" and \"tls_key\" go "
			    "together, but \"%s\" is null",
			    c->tls_cert ? "tls_key" : "tls_cert");
	for (unsigned i = 0; i < c->nlisten; i++)
		if (strncmp(c->listen[i], "tls+tcp://", 10) == 0 &&
		    (c->tls_cert == NULL || c->tls_ca == NULL))
			return fail(msg, msglen, GM_ECONFIG,
				    "config key \"listen\": \"%.200s\" needs "
				    "\"tls_cert\", \"tls_key\" and \"tls_ca\"",
				    c->listen[i]);
	for (unsigned i = 0; i < c->nlisten; i++)
		if (!c->allow_plain_tcp &&
		    strncmp(c->listen[i], "tcp://", 6) == 0)
			return fail(msg, msglen, GM_ECONFIG,
				    "config key \"listen\": \"%.200s\" is "
				    "plain TCP, unauthenticated, and "
				    "\"allow_plain_tcp\" is false: use "
				    "tls+tcp:// or ipc://",
				    c->listen[i]);
	return 0;
}

static bool listed(const uint32_t *ids, unsigned n, uint64_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

bool gm_config_allows(const gm_config *c, uint64_t uid, uint64_t gid)
{
	if (c->nallow_uids == 0 && c->nallow_gids == 0)
		return true;
	return listed(c->allow_uids, c->nallow_uids, uid) ||
	       listed(c->allow_gids, c->nallow_gids, gid);
}

bool gm_config_admin_uid(const gm_config *c, uint64_t uid)
{
	return listed(c->admin_uids, c->nadmin_uids, uid);
}

bool gm_config_admin_subject(const gm_config *c, const char *subject)
{
	for (unsigned i = 0; i < c->nadmin_subjects; i++)
		if (strcmp(c->admin_subjects[i], subject) == 0)
			return true;
	return false;
}
