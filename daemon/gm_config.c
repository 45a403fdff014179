/*
 * gm_config.c - the configuration table, and the one setter that applies
 * any row of it to a value from a JSON document or from the command line.
 *
 * Adding a key means adding a row to keys[] (plus its field in gm_config,
 * its line in config/gemmd.json and its entry in config/README.md);
 * nothing else in this file knows a key's name. Defaults are static, so
 * a field owns heap memory only once it has been set: a string or an id
 * list when it is not NULL, a URL list when it is not the row's default
 * array.
 */
#include "gm_config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_config_impl.h"
#include "gm_error.h"
#include "gm_log.h"

/* The C type each kind is stored as. */
#define K_UINT_T   unsigned
#define K_SIZE_T   uint64_t
#define K_BOOL_T   int
#define K_ENUM_T   int
#define K_STRING_T char *
#define K_URLS_T   char **
#define K_IDS_T	   uint32_t *
#define K_PRIOS_T  unsigned *

/* The offset of field f, which must have type t: a row cannot store
 * through a pointer of the wrong type, it does not compile. */
#define AT(f, t) _Generic(((gm_config *)0)->f, t : offsetof(gm_config, f))

#define ROW(key, k, f, lo, hi, d)                                             \
	{                                                                     \
		.name = (key), .kind = (k), .off = AT(f, k##_T), .min = (lo), \
		.max = (hi), .def = (d)                                       \
	}
#define ROW_ENUM(key, f, list, d)                                      \
	{                                                              \
		.name = (key), .kind = K_ENUM, .off = AT(f, K_ENUM_T), \
		.choices = (list), .def = (d)                          \
	}

/* An empty id list (the default) lets every peer in. */
#define ROW_IDS(key, f, n)                                                     \
	{                                                                      \
		.name = (key), .kind = K_IDS, .off = AT(f, K_IDS_T), .min = 0, \
		.max = ID_MAX, .count_off = AT(n, unsigned)                    \
	}

/* (uid_t)-1 and (gid_t)-1 mean "no id" to the kernel, so no peer has it. */
#define ID_MAX (UINT32_MAX - 1)

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define TIB (UINT64_C(1) << 40)

/* The same names gm_log_parse_level() takes (test_config checks it). */
static const struct choice log_levels[] = {
    {"error", GM_LOG_ERROR},
    {"warn", GM_LOG_WARN},
    {"info", GM_LOG_INFO},
    {"debug", GM_LOG_DEBUG},
    {NULL, 0},
};
static const struct choice engine_kinds[] = {
    {"auto", GM_ENGINE_AUTO},
    {"cpu", GM_ENGINE_CPU},
    {"cuda", GM_ENGINE_CUDA},
    {NULL, 0},
};
static const struct choice issue_orders[] = {
    {"breadth", GM_ISSUE_BREADTH},
    {"depth", GM_ISSUE_DEPTH},
    {NULL, 0},
};
static const struct choice kernels[] = {
    {"cublas", GM_KERNEL_CUBLAS},
    {"tiled", GM_KERNEL_TILED},
    {NULL, 0},
};

static char default_url[] = "ipc:///run/gemmd/gemmd.sock";
static char *default_listen[] = {default_url};

static const struct row keys[] = {
    {.name = "listen",
     .kind = K_URLS,
     .off = AT(listen, K_URLS_T),
     .min = 1,
     .max = GM_CONFIG_MAX_LISTEN,
     .def = 1,
     .urls_def = default_listen,
     .count_off = AT(nlisten, unsigned)},
    ROW("contexts", K_UINT, contexts, 1, 4096, 64),
    ROW("queue_depth", K_UINT, queue_depth, 1, 1048576, 4096),
    ROW("queue_depth_per_priority", K_PRIOS, queue_depth_prio, 0, 1048576, 0),
    ROW("detach_keep_s", K_UINT, detach_keep_s, 1, 604800, 300),
    ROW("detach_max_bytes", K_SIZE, detach_max_bytes, 0, TIB, GIB),
    ROW("max_message_bytes", K_SIZE, max_message_bytes, 4 * KIB, 16 * GIB, GIB),
    ROW("max_jobs_per_request", K_UINT, max_jobs, 1, GM_MAX_JOBS, 4096),
    ROW("max_dim", K_UINT, max_dim, 1, GM_MAX_DIM, 65536),
    ROW_ENUM("log_level", log_level, log_levels, GM_LOG_INFO),
    ROW("tls_cert", K_STRING, tls_cert, 0, 0, 0),
    ROW("tls_key", K_STRING, tls_key, 0, 0, 0),
    ROW("tls_ca", K_STRING, tls_ca, 0, 0, 0),
    ROW_IDS("allow_uids", allow_uids, nallow_uids),
    ROW_IDS("allow_gids", allow_gids, nallow_gids),
    ROW("metrics_listen", K_STRING, metrics_listen, 0, 0, 0),
    ROW_ENUM("engine", engine.kind, engine_kinds, GM_ENGINE_AUTO),
    ROW("pool_bytes", K_SIZE, engine.pool_bytes, MIB, TIB, GIB),
    ROW("device_pool_bytes", K_SIZE, engine.device_pool_bytes, 0, TIB, 0),
    ROW("streams", K_UINT, engine.streams, 1, GM_MAX_STREAMS, 8),
    ROW_ENUM("issue_order", engine.issue_order, issue_orders, GM_ISSUE_BREADTH),
    ROW_ENUM("kernel", engine.kernel, kernels, GM_KERNEL_CUBLAS),
    ROW("mapped_output", K_BOOL, engine.mapped_output, 0, 1, 0),
    ROW("cpu_threads", K_UINT, engine.cpu_threads, 0, 1024, 0),
    ROW("regions", K_BOOL, regions, 0, 1, 1),
    ROW("region_socket", K_STRING, region_socket, 0, 0, 0),
    ROW("region_max_count", K_UINT, region_max_count, 1, 65536, 64),
    ROW("region_max_bytes", K_SIZE, region_max_bytes, MIB, 64 * TIB, 16 * GIB),
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

const struct row *const gm_config_keys = keys;
const size_t gm_config_nkeys = NKEYS;

int gm_config_fail(char *msg, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return code;
}

static const struct row *find_row(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* The one setter: every key, from either source, comes through here. */
static int set_value(gm_config *c, const struct row *r, const struct src *v,
		     char *msg, size_t len)
{
	int rv = GM_EINTERNAL;

	switch (r->kind) {
	case K_UINT:
	case K_SIZE:
		rv = gm_config_set_number(c, r, v, msg, len);
		break;
	case K_BOOL:
		rv = gm_config_set_bool(c, r, v, msg, len);
		break;
	case K_ENUM:
		rv = gm_config_set_enum(c, r, v, msg, len);
		break;
	case K_STRING:
		rv = gm_config_set_string(c, r, v, msg, len);
		break;
	case K_URLS:
		rv = gm_config_set_urls(c, r, v, msg, len);
		break;
	case K_IDS:
		rv = gm_config_set_ids(c, r, v, msg, len);
		break;
	case K_PRIOS:
		rv = gm_config_set_prios(c, r, v, msg, len);
		break;
	}
	if (rv == GM_ENOMEM)
		gm_config_fail(msg, len, rv, "config key \"%s\": out of memory",
			       r->name);
	return rv;
}

static void set_default(gm_config *c, const struct row *r)
{
	void *p = gm_config_field(c, r);

	switch (r->kind) {
	case K_UINT:
		*(unsigned *)p = (unsigned)r->def;
		break;
	case K_SIZE:
		*(uint64_t *)p = r->def;
		break;
	case K_BOOL:
	case K_ENUM:
		*(int *)p = (int)r->def;
		break;
	case K_STRING:
		*(char **)p = NULL;
		break;
	case K_URLS:
		*(char ***)p = r->urls_def;
		*gm_config_count_at(c, r) = (unsigned)r->def;
		break;
	case K_IDS:
		*(uint32_t **)p = NULL;
		*gm_config_count_at(c, r) = 0;
		break;
	case K_PRIOS:
		for (unsigned i = 0; i < NPRIO; i++)
			((unsigned *)p)[i] = (unsigned)r->def;
		break;
	}
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
		const struct row *r = &keys[i];
		void *p = gm_config_field(c, r);

		if (r->kind == K_STRING)
			free(*(char **)p);
		else if (r->kind == K_IDS)
			free(*(uint32_t **)p);
		else if (r->kind == K_URLS && *(char ***)p != r->urls_def)
			gm_config_free_urls(*(char ***)p,
					    *gm_config_count_at(c, r));
	}
	gm_config_defaults(c);
}

/* Gives dst its own copy of what src owns for row r. */
static int copy_owned(gm_config *dst, const gm_config *src, const struct row *r)
{
	char **at = gm_config_field(dst, r);
	const char *s;
	char **list;

	if (r->kind == K_STRING) {
		s = *(char *const *)gm_config_cfield(src, r);
		if (s != NULL && (*at = strdup(s)) == NULL)
			return GM_ENOMEM;
	} else if (r->kind == K_URLS) {
		list = *(char **const *)gm_config_cfield(src, r);
		if (list != r->urls_def)
			return gm_config_store_urls(dst, r,
						    (const char *const *)list,
						    gm_config_count_of(src, r));
	} else if (r->kind == K_IDS) {
		return gm_config_store_ids(
		    dst, r, *(uint32_t *const *)gm_config_cfield(src, r),
		    gm_config_count_of(src, r));
	}
	return 0;
}

/* Deep-copies src into dst, so that a document can be applied to the
 * copy and the copy dropped if any key of it is bad. */
int gm_config_copy(gm_config *dst, const gm_config *src)
{
	int rv = 0;

	*dst = *src;
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].kind == K_STRING || keys[i].kind == K_URLS ||
		    keys[i].kind == K_IDS)
			set_default(dst, &keys[i]);
	for (size_t i = 0; i < NKEYS && rv == 0; i++)
		rv = copy_owned(dst, src, &keys[i]);
	if (rv != 0)
		gm_config_free(dst);
	return rv;
}

int gm_config_apply(gm_config *c, const cJSON *doc, char *msg, size_t len)
{
	bool seen[NKEYS] = {false};
	const cJSON *item;
	int rv;

	if (!cJSON_IsObject(doc)) {
		char got[80];

		gm_config_show(&(struct src){.json = doc}, 0, got, sizeof(got));
		return gm_config_fail(
		    msg, len, GM_ECONFIG,
		    "config document: expected a JSON object, got %s", got);
	}
	cJSON_ArrayForEach(item, doc)
	{
		const struct row *r = find_row(item->string);

		if (r == NULL)
			return gm_config_fail(msg, len, GM_ECONFIG,
					      "unknown config key \"%.64s\"",
					      item->string);
		if (seen[r - keys])
			return gm_config_fail(msg, len, GM_ECONFIG,
					      "config key \"%s\" appears twice",
					      r->name);
		seen[r - keys] = true;
		if ((rv = set_value(c, r, &(struct src){.json = item}, msg,
				    len)) != 0)
			return rv;
	}
	return 0;
}

int gm_config_set(gm_config *c, const char *key, const char *value, char *msg,
		  size_t msglen)
{
	const struct row *r = find_row(key);

	if (r == NULL)
		return gm_config_fail(msg, msglen, GM_ECONFIG,
				      "unknown config key \"%.64s\"", key);
	return set_value(c, r, &(struct src){.text = value}, msg, msglen);
}

int gm_config_add_listen(gm_config *c, const char *url, int replace, char *msg,
			 size_t msglen)
{
	return gm_config_add_url(c, find_row("listen"), url, replace, msg,
				 msglen);
}
