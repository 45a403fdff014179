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

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gm_error.h"
#include "gm_log.h"

enum kind {
	K_UINT,	  /* unsigned; a JSON integer */
	K_SIZE,	  /* uint64_t bytes; a JSON integer or a string like "512M" */
	K_BOOL,	  /* int 0 or 1; JSON true or false */
	K_ENUM,	  /* int; one of the row's choices, by name */
	K_STRING, /* char *, NULL by default; a JSON string or null */
	K_URLS,	  /* char ** and an unsigned count; an array of nng URLs */
	K_IDS,	  /* uint32_t * and an unsigned count; an array of uids/gids */
	K_PRIOS,  /* unsigned[NPRIO]; one integer for every priority, or an
		     array of one per priority, lowest first */
};

struct choice {
	const char *name;
	int value;
};

/* One key: its type, bounds, default and where it is stored. */
struct row {
	const char *name;
	enum kind kind;
	size_t off;	   /* the field in gm_config */
	uint64_t min, max; /* K_UINT, K_SIZE, K_IDS: value; K_URLS: entries */
	uint64_t def;	   /* default; K_URLS: default entries */
	const struct choice *choices; /* K_ENUM: ends with a NULL name */
	char **urls_def;	      /* K_URLS: the default list ... */
	size_t count_off; /* ... K_URLS, K_IDS: the entry count's field */
};

/* The C type each kind is stored as. */
#define K_UINT_T   unsigned
#define K_SIZE_T   uint64_t
#define K_BOOL_T   int
#define K_ENUM_T   int
#define K_STRING_T char *
#define K_URLS_T   char **
#define K_IDS_T	   uint32_t *
#define K_PRIOS_T  unsigned *

#define NPRIO (GM_BATCH_PRIO_MAX + 1)

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

/* "listen" URLs must name one of the transports the server enables. */
static const char *const schemes[] = {"ipc://", "tcp://", "tls+tcp://"};
#define SCHEMES_TEXT "ipc://, tcp:// or tls+tcp://"

/* A value to set, as the user wrote it: an item of a JSON document, or
 * the text of a command-line override (json NULL). */
struct src {
	const cJSON *json;
	const char *text;
};

static int fail(char *msg, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *msg, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return code;
}

static void *field(gm_config *c, const struct row *r)
{
	return (char *)c + r->off;
}

static const void *cfield(const gm_config *c, const struct row *r)
{
	return (const char *)c + r->off;
}

static unsigned *count_at(gm_config *c, const struct row *r)
{
	return (unsigned *)((char *)c + r->count_off);
}

static unsigned count_of(const gm_config *c, const struct row *r)
{
	return *(const unsigned *)((const char *)c + r->count_off);
}

static const struct row *find_row(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/*
 * Writes v as the user wrote it, cut to fit buf, for messages: a JSON
 * item as JSON, command-line text in quotes when `quote` is set (it is
 * a string that failed to parse as something else).
 */
static void show(const struct src *v, int quote, char *buf, size_t len)
{
	char *s = NULL;
	const char *t = v->text;
	size_t n;

	if (v->json != NULL)
		t = s = cJSON_PrintUnformatted(v->json);
	n = (size_t)snprintf(buf, len, quote && !s ? "\"%s\"" : "%s",
			     t ? t : "(out of memory)");
	if (n >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	free(s);
}

static int type_error(const struct row *r, const struct src *v,
		      const char *expected, char *msg, size_t len)
{
	char got[80];

	show(v, 1, got, sizeof(got));
	return fail(msg, len, GM_ECONFIG,
		    "config key \"%s\": expected %s, got %s", r->name, expected,
		    got);
}

/* A size bound reads best in the unit it was chosen in: "1G", "4K". */
static void show_bound(const struct row *r, uint64_t x, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (r->kind == K_SIZE && u < 3 && x != 0 && x % 1024 == 0) {
		x /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)x);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)x, units[u]);
}

static int range_error(const struct row *r, const struct src *v, char *msg,
		       size_t len)
{
	char got[80], lo[24], hi[24];

	show(v, 0, got, sizeof(got));
	show_bound(r, r->min, lo, sizeof(lo));
	show_bound(r, r->max, hi, sizeof(hi));
	return fail(msg, len, GM_ECONFIG,
		    "config key \"%s\": %s is out of range %s..%s", r->name,
		    got, lo, hi);
}

/*
 * Reads decimal text, with a K, M, G or T suffix (powers of 1024) when
 * `sized`. Returns 0, -1 when s is not such a number, or 1 when it is
 * one no uint64_t holds (negative or too large): out of range.
 */
static int parse_uint(const char *s, int sized, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	int neg = (*s == '-');
	unsigned shift = 0;
	unsigned long long x;
	char *end;

	s += neg;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (sized && *end != '\0' && (u = strchr(units, *end)) != NULL) {
		shift = 10 * (unsigned)(u - units + 1);
		end++;
	}
	if (*end != '\0')
		return -1;
	if (errno == ERANGE || (neg && x != 0) || x > (UINT64_MAX >> shift))
		return 1;
	*out = (uint64_t)x << shift;
	return 0;
}

/* As parse_uint, for a JSON number or (sizes only) a JSON string. */
static int get_uint(const struct src *v, int sized, uint64_t *out)
{
	double d;

	if (v->json == NULL)
		return parse_uint(v->text, sized, out);
	if (sized && cJSON_IsString(v->json))
		return parse_uint(v->json->valuestring, sized, out);
	if (!cJSON_IsNumber(v->json))
		return -1;
	d = v->json->valuedouble;
	if (d != floor(d))
		return -1;
	if (d < 0 || d >= 18446744073709551616.0) /* 2^64 */
		return 1;
	*out = (uint64_t)d;
	return 0;
}

static int set_number(gm_config *c, const struct row *r, const struct src *v,
		      char *msg, size_t len)
{
	int sized = (r->kind == K_SIZE);
	uint64_t x = 0;
	int rv = get_uint(v, sized, &x);

	if (rv < 0)
		return type_error(r, v,
				  sized ? "a size (an integer or \"512M\")"
					: "an integer",
				  msg, len);
	if (rv > 0 || x < r->min || x > r->max)
		return range_error(r, v, msg, len);
	if (sized)
		*(uint64_t *)field(c, r) = x;
	else
		*(unsigned *)field(c, r) = (unsigned)x;
	return 0;
}

static int set_bool(gm_config *c, const struct row *r, const struct src *v,
		    char *msg, size_t len)
{
	int b;

	if (v->json != NULL && cJSON_IsBool(v->json))
		b = cJSON_IsTrue(v->json);
	else if (v->json == NULL && strcmp(v->text, "true") == 0)
		b = 1;
	else if (v->json == NULL && strcmp(v->text, "false") == 0)
		b = 0;
	else
		return type_error(r, v, "true or false", msg, len);
	*(int *)field(c, r) = b;
	return 0;
}

static int set_enum(gm_config *c, const struct row *r, const struct src *v,
		    char *msg, size_t len)
{
	const char *name = v->json ? cJSON_GetStringValue(v->json) : v->text;
	char expected[128] = "one of ";
	const struct choice *ch;

	for (ch = r->choices; name != NULL && ch->name != NULL; ch++) {
		if (strcmp(ch->name, name) == 0) {
			*(int *)field(c, r) = ch->value;
			return 0;
		}
	}
	for (ch = r->choices; ch->name != NULL; ch++) {
		if (ch != r->choices)
			strncat(expected, ", ",
				sizeof(expected) - strlen(expected) - 1);
		strncat(expected, ch->name,
			sizeof(expected) - strlen(expected) - 1);
	}
	return type_error(r, v, expected, msg, len);
}

/* A JSON null or the empty command-line text clears a path. */
static int set_string(gm_config *c, const struct row *r, const struct src *v,
		      char *msg, size_t len)
{
	const char *s = v->text;
	char *dup = NULL;

	if (v->json != NULL) {
		s = cJSON_GetStringValue(v->json);
		if (s == NULL ? !cJSON_IsNull(v->json) : *s == '\0')
			return type_error(r, v, "a file path or null", msg,
					  len);
	}
	if (s != NULL && *s != '\0' && (dup = strdup(s)) == NULL)
		return GM_ENOMEM;
	free(*(char **)field(c, r));
	*(char **)field(c, r) = dup;
	return 0;
}

static void free_urls(char **list, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Makes the row's list a heap copy of urls[0..n), freeing the old list
 * after the copy so that urls may point into it. */
static int store_urls(gm_config *c, const struct row *r,
		      const char *const *urls, unsigned n)
{
	char **list = calloc(n, sizeof(*list));
	char ***at = field(c, r);

	if (list == NULL)
		return GM_ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if ((list[i] = strdup(urls[i])) == NULL) {
			free_urls(list, i);
			return GM_ENOMEM;
		}
	}
	if (*at != r->urls_def)
		free_urls(*at, *count_at(c, r));
	*at = list;
	*count_at(c, r) = n;
	return 0;
}

/* Checks that url names a transport and an address, and is not one of
 * the n already in list. */
static int check_url(const struct row *r, const char *url,
		     const char *const *list, unsigned n, char *msg, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
			break;
	if (i == sizeof(schemes) / sizeof(schemes[0]))
		return fail(msg, len, GM_ECONFIG,
			    "config key \"%s\": \"%.200s\" must start "
			    "with " SCHEMES_TEXT,
			    r->name, url);
	if (url[strlen(schemes[i])] == '\0')
		return fail(msg, len, GM_ECONFIG,
			    "config key \"%s\": \"%s\" has no address", r->name,
			    schemes[i]);
	for (i = 0; i < n; i++)
		if (strcmp(list[i], url) == 0)
			return fail(msg, len, GM_ECONFIG,
				    "config key \"%s\": \"%.200s\" is listed "
				    "twice",
				    r->name, url);
	return 0;
}

/* Appends url to the row's list, or makes it the whole list. */
static int add_url(gm_config *c, const struct row *r, const char *url,
		   int replace, char *msg, size_t len)
{
	const char *urls[GM_CONFIG_MAX_LISTEN];
	char **old = *(char ***)field(c, r);
	unsigned n = replace ? 0 : *count_at(c, r);
	int rv;

	if (n >= r->max)
		return fail(msg, len, GM_ECONFIG,
			    "config key \"%s\": cannot add \"%.200s\", the "
			    "list already has %u URLs",
			    r->name, url, n);
	for (unsigned i = 0; i < n; i++)
		urls[i] = old[i];
	if ((rv = check_url(r, url, urls, n, msg, len)) != 0)
		return rv;
	urls[n] = url;
	return store_urls(c, r, urls, n + 1);
}

/* A document gives the whole list; command-line text gives one URL that
 * replaces it. Rows of this kind have max <= GM_CONFIG_MAX_LISTEN. */
static int set_urls(gm_config *c, const struct row *r, const struct src *v,
		    char *msg, size_t len)
{
	const char *urls[GM_CONFIG_MAX_LISTEN];
	const cJSON *item;
	unsigned n = 0;
	int size, rv;

	if (v->json == NULL)
		return add_url(c, r, v->text, 1, msg, len);
	if (!cJSON_IsArray(v->json))
		return type_error(r, v, "an array of URL strings", msg, len);
	size = cJSON_GetArraySize(v->json);
	if (size < (int)r->min || size > (int)r->max)
		return fail(msg, len, GM_ECONFIG,
			    "config key \"%s\": %d URLs is out of range "
			    "%llu..%llu",
			    r->name, size, (unsigned long long)r->min,
			    (unsigned long long)r->max);
	cJSON_ArrayForEach(item, v->json)
	{
		if (!cJSON_IsString(item))
			return type_error(r, v, "an array of URL strings", msg,
					  len);
		if ((rv = check_url(r, item->valuestring, urls, n, msg, len)) !=
		    0)
			return rv;
		urls[n++] = item->valuestring;
	}
	return store_urls(c, r, urls, n);
}

/* Makes the row's id list a heap copy of ids[0..n); none when n is 0. */
static int store_ids(gm_config *c, const struct row *r, const uint32_t *ids,
		     unsigned n)
{
	uint32_t *list = NULL;
	uint32_t **at = field(c, r);

	if (n != 0 && (list = malloc(n * sizeof(*list))) == NULL)
		return GM_ENOMEM;
	if (n != 0)
		memcpy(list, ids, n * sizeof(*list));
	free(*at);
	*at = list;
	*count_at(c, r) = n;
	return 0;
}

/* Checks one id (item, a JSON number or command-line text) and appends
 * it to ids[0..*n). */
static int push_id(const struct row *r, const struct src *item, uint32_t *ids,
		   unsigned *n, char *msg, size_t len)
{
	uint64_t x = 0;
	int rv = get_uint(item, 0, &x);
	char got[80];

	if (rv < 0)
		return type_error(r, item, "a numeric id", msg, len);
	if (rv > 0 || x > r->max)
		return range_error(r, item, msg, len);
	for (unsigned i = 0; i < *n; i++) {
		if (ids[i] != x)
			continue;
		show(item, 0, got, sizeof(got));
		return fail(msg, len, GM_ECONFIG,
			    "config key \"%s\": %s is listed twice", r->name,
			    got);
	}
	if (*n == GM_CONFIG_MAX_IDS)
		return fail(msg, len, GM_ECONFIG,
			    "config key \"%s\": more than %u ids", r->name,
			    GM_CONFIG_MAX_IDS);
	ids[(*n)++] = (uint32_t)x;
	return 0;
}

/* A document gives a JSON array of ids; command-line text gives them in
 * decimal separated by commas, "" for none. */
static int set_ids(gm_config *c, const struct row *r, const struct src *v,
		   char *msg, size_t len)
{
	uint32_t ids[GM_CONFIG_MAX_IDS];
	const char *p = v->text, *comma;
	const cJSON *item;
	char tok[32];
	unsigned n = 0;
	int rv;

	if (v->json != NULL && !cJSON_IsArray(v->json))
		return type_error(r, v, "an array of numeric ids", msg, len);
	if (v->json != NULL) {
		cJSON_ArrayForEach(item, v->json)
		{
			rv = push_id(r, &(struct src){.json = item}, ids, &n,
				     msg, len);
			if (rv != 0)
				return rv;
		}
		return store_ids(c, r, ids, n);
	}
	while (*p != '\0') {
		comma = strchr(p, ',');
		snprintf(tok, sizeof(tok), "%.*s",
			 (int)(comma ? (size_t)(comma - p) : strlen(p)), p);
		rv = push_id(r, &(struct src){.text = tok}, ids, &n, msg, len);
		if (rv != 0)
			return rv;
		if (comma == NULL)
			break;
		p = comma + 1;
		if (*p == '\0')
			return type_error(r, &(struct src){.text = ""},
					  "a numeric id", msg, len);
	}
	return store_ids(c, r, ids, n);
}

/* One value per priority: a JSON integer or an array of NPRIO of them;
 * command-line text gives one number, or NPRIO separated by commas. */
static int set_prios(gm_config *c, const struct row *r, const struct src *v,
		     char *msg, size_t len)
{
	static const char want[] = "an integer or an array of 4 integers";
	unsigned vals[NPRIO], n = 0;
	const char *p = v->text;
	const cJSON *item;
	char tok[32];
	uint64_t x;
	int rv;

	if (v->json != NULL && !cJSON_IsArray(v->json)) {
		if ((rv = get_uint(v, 0, &x)) < 0)
			return type_error(r, v, want, msg, len);
		if (rv > 0 || x < r->min || x > r->max)
			return range_error(r, v, msg, len);
		vals[n++] = (unsigned)x;
	}
	cJSON_ArrayForEach(item, v->json)
	{
		struct src one = {.json = item};

		if (n == NPRIO || (rv = get_uint(&one, 0, &x)) < 0)
			return type_error(r, v, want, msg, len);
		if (rv > 0 || x < r->min || x > r->max)
			return range_error(r, &one, msg, len);
		vals[n++] = (unsigned)x;
	}
	for (; v->json == NULL && p != NULL; n++) {
		const char *comma = strchr(p, ',');
		struct src one = {.text = tok};

		snprintf(tok, sizeof(tok), "%.*s",
			 (int)(comma ? (size_t)(comma - p) : strlen(p)), p);
		if (n == NPRIO || (rv = get_uint(&one, 0, &x)) < 0)
			return type_error(r, v, want, msg, len);
		if (rv > 0 || x < r->min || x > r->max)
			return range_error(r, &one, msg, len);
		vals[n] = (unsigned)x;
		p = comma ? comma + 1 : NULL;
	}
	if (n != 1 && n != NPRIO)
		return type_error(r, v, want, msg, len);
	for (unsigned i = 0; i < NPRIO; i++)
		((unsigned *)field(c, r))[i] = vals[n == 1 ? 0 : i];
	return 0;
}

/* The one setter: every key, from either source, comes through here. */
static int set_value(gm_config *c, const struct row *r, const struct src *v,
		     char *msg, size_t len)
{
	int rv = GM_EINTERNAL;

	switch (r->kind) {
	case K_UINT:
	case K_SIZE:
		rv = set_number(c, r, v, msg, len);
		break;
	case K_BOOL:
		rv = set_bool(c, r, v, msg, len);
		break;
	case K_ENUM:
		rv = set_enum(c, r, v, msg, len);
		break;
	case K_STRING:
		rv = set_string(c, r, v, msg, len);
		break;
	case K_URLS:
		rv = set_urls(c, r, v, msg, len);
		break;
	case K_IDS:
		rv = set_ids(c, r, v, msg, len);
		break;
	case K_PRIOS:
		rv = set_prios(c, r, v, msg, len);
		break;
	}
	if (rv == GM_ENOMEM)
		fail(msg, len, rv, "config key \"%s\": out of memory", r->name);
	return rv;
}

static void set_default(gm_config *c, const struct row *r)
{
	void *p = field(c, r);

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
		*count_at(c, r) = (unsigned)r->def;
		break;
	case K_IDS:
		*(uint32_t **)p = NULL;
		*count_at(c, r) = 0;
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
		void *p = field(c, r);

		if (r->kind == K_STRING)
			free(*(char **)p);
		else if (r->kind == K_IDS)
			free(*(uint32_t **)p);
		else if (r->kind == K_URLS && *(char ***)p != r->urls_def)
			free_urls(*(char ***)p, *count_at(c, r));
	}
	gm_config_defaults(c);
}

/* Gives dst its own copy of what src owns for row r. */
static int copy_owned(gm_config *dst, const gm_config *src, const struct row *r)
{
	char **at = field(dst, r);
	const char *s;
	char **list;

	if (r->kind == K_STRING) {
		s = *(char *const *)cfield(src, r);
		if (s != NULL && (*at = strdup(s)) == NULL)
			return GM_ENOMEM;
	} else if (r->kind == K_URLS) {
		list = *(char **const *)cfield(src, r);
		if (list != r->urls_def)
			return store_urls(dst, r, (const char *const *)list,
					  count_of(src, r));
	} else if (r->kind == K_IDS) {
		return store_ids(dst, r, *(uint32_t *const *)cfield(src, r),
				 count_of(src, r));
	}
	return 0;
}

/* Deep-copies src into dst, so that a document can be applied to the
 * copy and the copy dropped if any key of it is bad. */
static int copy_config(gm_config *dst, const gm_config *src)
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

static int apply_object(gm_config *c, const cJSON *doc, char *msg, size_t len)
{
	bool seen[NKEYS] = {false};
	const cJSON *item;
	int rv;

	if (!cJSON_IsObject(doc)) {
		char got[80];

		show(&(struct src){.json = doc}, 0, got, sizeof(got));
		return fail(msg, len, GM_ECONFIG,
			    "config document: expected a JSON object, got %s",
			    got);
	}
	cJSON_ArrayForEach(item, doc)
	{
		const struct row *r = find_row(item->string);

		if (r == NULL)
			return fail(msg, len, GM_ECONFIG,
				    "unknown config key \"%.64s\"",
				    item->string);
		if (seen[r - keys])
			return fail(msg, len, GM_ECONFIG,
				    "config key \"%s\" appears twice", r->name);
		seen[r - keys] = true;
		if ((rv = set_value(c, r, &(struct src){.json = item}, msg,
				    len)) != 0)
			return rv;
	}
	return 0;
}

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
	else if ((rv = apply_object(&tmp, doc, msg, msglen)) != 0)
		gm_config_free(&tmp);
	else {
		gm_config_free(c);
		*c = tmp;
	}
	cJSON_Delete(doc);
	return rv;
}

/* Reads size bytes of fd into buf; returns 0 or an errno value. A file
 * that shrank meanwhile is read as far as it goes. */
static int read_all(int fd, char *buf, size_t size, size_t *got)
{
	ssize_t n;

	*got = 0;
	while (*got < size) {
		n = read(fd, buf + *got, size - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* Reads the whole file at path into a NUL-terminated heap buffer, after
 * checking its size. Messages leave the path to the caller. */
static int read_file(const char *path, char **out, size_t *outlen, char *msg,
		     size_t len)
{
	struct stat st;
	char *buf;
	int fd, e;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return fail(msg, len, GM_EIO, "%s", strerror(errno));
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		return fail(msg, len, GM_EIO, "%s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail(msg, len, GM_EIO, "%s",
			    S_ISDIR(st.st_mode) ? strerror(EISDIR)
						: "not a regular file");
	}
	if (st.st_size > GM_CONFIG_MAX_FILE) {
		close(fd);
		return fail(msg, len, GM_ECONFIG,
			    "%lld bytes is more than the %u a config file may "
			    "have",
			    (long long)st.st_size, GM_CONFIG_MAX_FILE);
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return fail(msg, len, GM_ENOMEM, "out of memory");
	}
	e = read_all(fd, buf, (size_t)st.st_size, outlen);
	close(fd);
	if (e != 0) {
		free(buf);
		return fail(msg, len, GM_EIO, "%s", strerror(e));
	}
	buf[*outlen] = '\0';
	*out = buf;
	return 0;
}

int gm_config_load_file(gm_config *c, const char *path, char *msg,
			size_t msglen)
{
	char why[512] = "";
	char *text = NULL;
	size_t len = 0;
	int rv;

	if ((rv = read_file(path, &text, &len, why, sizeof(why))) == 0)
		rv = gm_config_load_string(c, text, len, why, sizeof(why));
	free(text);
	if (rv != 0)
		fail(msg, msglen, rv, "%s: %s", path, why);
	return rv;
}

int gm_config_set(gm_config *c, const char *key, const char *value, char *msg,
		  size_t msglen)
{
	const struct row *r = find_row(key);

	if (r == NULL)
		return fail(msg, msglen, GM_ECONFIG,
			    "unknown config key \"%.64s\"", key);
	return set_value(c, r, &(struct src){.text = value}, msg, msglen);
}

int gm_config_add_listen(gm_config *c, const char *url, int replace, char *msg,
			 size_t msglen)
{
	return add_url(c, find_row("listen"), url, replace, msg, msglen);
}

/* HOST:PORT with a port of 1..65535; HOST is for the resolver to judge
 * when the daemon binds. */
static int check_host_port(const char *key, const char *v, char *msg,
			   size_t len)
{
	const char *colon = v ? strrchr(v, ':') : NULL;
	unsigned long port = 0;
	char *end = NULL;

	if (v == NULL)
		return 0;
	if (colon != NULL && colon != v && strchr(v, '/') == NULL &&
	    colon[1] >= '0' && colon[1] <= '9')
		port = strtoul(colon + 1, &end, 10);
	if (port >= 1 && port <= 65535 && *end == '\0')
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

static const char *choice_name(const struct row *r, int value)
{
	for (const struct choice *ch = r->choices; ch->name != NULL; ch++)
		if (ch->value == value)
			return ch->name;
	return NULL;
}

static cJSON *render_ids(const uint32_t *ids, unsigned n)
{
	cJSON *a = cJSON_CreateArray();

	for (unsigned i = 0; a != NULL && i < n; i++) {
		cJSON *x = cJSON_CreateNumber(ids[i]);

		if (x == NULL || !cJSON_AddItemToArray(a, x)) {
			cJSON_Delete(x);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* One key's value as a JSON item, or NULL when out of memory. */
static cJSON *render(const gm_config *c, const struct row *r)
{
	const void *p = cfield(c, r);
	const char *s;

	switch (r->kind) {
	case K_UINT:
		return cJSON_CreateNumber(*(const unsigned *)p);
	case K_SIZE:
		return cJSON_CreateNumber((double)*(const uint64_t *)p);
	case K_BOOL:
		return cJSON_CreateBool(*(const int *)p);
	case K_ENUM:
		/* A value set outside this module shows as its number. */
		s = choice_name(r, *(const int *)p);
		return s ? cJSON_CreateString(s)
			 : cJSON_CreateNumber(*(const int *)p);
	case K_STRING:
		s = *(char *const *)p;
		return s ? cJSON_CreateString(s) : cJSON_CreateNull();
	case K_URLS:
		return cJSON_CreateStringArray(*(const char *const *const *)p,
					       (int)count_of(c, r));
	case K_IDS:
		return render_ids(*(const uint32_t *const *)p, count_of(c, r));
	case K_PRIOS:
		return render_ids(p, NPRIO);
	}
	return NULL;
}

char *gm_config_to_json(const gm_config *c)
{
	cJSON *doc = cJSON_CreateObject();
	char *text = NULL;
	size_t i;

	for (i = 0; doc != NULL && i < NKEYS; i++) {
		cJSON *item = render(c, &keys[i]);

		if (item == NULL ||
		    !cJSON_AddItemToObject(doc, keys[i].name, item)) {
			cJSON_Delete(item);
			break;
		}
	}
	if (doc != NULL && i == NKEYS)
		text = cJSON_Print(doc);
	cJSON_Delete(doc);
	return text;
}
