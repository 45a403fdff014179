/*
 * gm_config_list.c - the list kinds of configuration value: "listen"
 * URLs, strings (certificate subjects) and uid and gid lists, read from
 * a JSON array or from command-line text, stored as heap arrays with a
 * count, defaulted, rendered, freed and copied. A list that is the
 * row's static default is never freed.
 */
#include "gm_config_list.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_config_value.h"
#include "gm_error.h"

/* "listen" URLs must name one of the transports the server enables. */
static const char *const schemes[] = {"ipc://", "tcp://", "tls+tcp://"};
#define SCHEMES_TEXT "ipc://, tcp:// or tls+tcp://"

/* ---- URL lists ---- */

static void free_urls(char **list, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Makes the list at `at` a heap copy of urls[0..n) (NULL when n is 0),
 * freeing the old list (when it is not the default) after the copy, so
 * that urls may point into it. */
static int store_urls(const gm_config_row *r, void *at, unsigned *count,
		      const char *const *urls, unsigned n)
{
	char **list = n != 0 ? calloc(n, sizeof(*list)) : NULL;
	char ***old = at;

	if (n != 0 && list == NULL)
		return GM_ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if ((list[i] = strdup(urls[i])) == NULL) {
			free_urls(list, i);
			return GM_ENOMEM;
		}
	}
	if (*old != r->strs_def)
		free_urls(*old, *count);
	*old = list;
	*count = n;
	return 0;
}

/* Checks that url names a transport and an address, and is not one of
 * the n already in list. */
static int check_url(const gm_config_row *r, const char *url,
		     const char *const *list, unsigned n, char *msg, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
			break;
	if (i == sizeof(schemes) / sizeof(schemes[0]))
		return gm_config_value_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": \"%.200s\" must start "
		    "with " SCHEMES_TEXT,
		    r->name, url);
	if (url[strlen(schemes[i])] == '\0')
		return gm_config_value_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": \"%s\" has no address", r->name,
		    schemes[i]);
	/* A port no client could reach (99999, -1, 0: one the kernel
	 * picks, none) is refused here, where the message can name the
	 * key, not when binding fails or, for 0, never. */
	if (strcmp(schemes[i], "ipc://") != 0 &&
	    !gm_config_value_host_port(url + strlen(schemes[i])))
		return gm_config_value_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": \"%.200s\" is not %sHOST:PORT with "
		    "a port of 1..65535",
		    r->name, url, schemes[i]);
	for (i = 0; i < n; i++)
		if (strcmp(list[i], url) == 0)
			return gm_config_value_fail(
			    msg, len, GM_ECONFIG,
			    "config key \"%s\": \"%.200s\" is listed "
			    "twice",
			    r->name, url);
	return 0;
}

int gm_config_list_add_url(const gm_config_row *r, void *at, unsigned *count,
			   const char *url, int replace, char *msg, size_t len)
{
	const char *urls[GM_CONFIG_LIST_MAX];
	char **old = *(char ***)at;
	unsigned n = replace ? 0 : *count;
	int rv;

	if (n >= r->max)
		return gm_config_value_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": cannot add \"%.200s\", the "
		    "list already has %u URLs",
		    r->name, url, n);
	for (unsigned i = 0; i < n; i++)
		urls[i] = old[i];
	if ((rv = check_url(r, url, urls, n, msg, len)) != 0)
		return rv;
	urls[n] = url;
	return store_urls(r, at, count, urls, n + 1);
}

/* A document gives the whole list; command-line text gives one URL that
 * replaces it. */
static int set_urls(const gm_config_row *r, void *at, unsigned *count,
		    const gm_config_src *v, char *msg, size_t len)
{
	const char *urls[GM_CONFIG_LIST_MAX];
	const cJSON *item;
	unsigned n = 0;
	int size, rv;

	if (v->json == NULL)
		return gm_config_list_add_url(r, at, count, v->text, 1, msg,
					      len);
	if (!cJSON_IsArray(v->json))
		return gm_config_value_type_error(
		    r, v, "an array of URL strings", msg, len);
	size = cJSON_GetArraySize(v->json);
	if (size < (int)r->min || size > (int)r->max)
		return gm_config_value_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": %d URLs is out of range "
		    "%llu..%llu",
		    r->name, size, (unsigned long long)r->min,
		    (unsigned long long)r->max);
	cJSON_ArrayForEach(item, v->json)
	{
		if (!cJSON_IsString(item))
			return gm_config_value_type_error(
			    r, v, "an array of URL strings", msg, len);
		if ((rv = check_url(r, item->valuestring, urls, n, msg, len)) !=
		    0)
			return rv;
		urls[n++] = item->valuestring;
	}
	return store_urls(r, at, count, urls, n);
}

static void init_urls(const gm_config_row *r, void *at, unsigned *count)
{
	*(char ***)at = r->strs_def;
	*count = (unsigned)r->def;
}

static cJSON *get_urls(const gm_config_row *r, const void *at, unsigned count)
{
	/* cJSON takes a NULL list, an empty one's, for no memory. */
	if (count == 0)
		return cJSON_CreateArray();
	return cJSON_CreateStringArray(*(const char *const *const *)at,
				       (int)count);
}

static void release_urls(const gm_config_row *r, void *at, unsigned count)
{
	if (*(char ***)at != r->strs_def)
		free_urls(*(char ***)at, count);
}

static int copy_urls(const gm_config_row *r, void *at, unsigned count)
{
	char **list = *(char ***)at;

	if (list == r->strs_def)
		return 0;
	*(char ***)at = r->strs_def; /* the list it points to is not ours */
	return store_urls(r, at, &count, (const char *const *)list, count);
}

const gm_config_kind gm_config_list_urls = {.set = set_urls,
					    .init = init_urls,
					    .get = get_urls,
					    .release = release_urls,
					    .copy = copy_urls};

/* ---- string lists ---- */

/* Checks one string of a list: not empty, at most r->max bytes, not one
 * of the n already in list. */
static int check_str(const gm_config_row *r, const char *v,
		     const char *const *list, unsigned n, char *msg, size_t len)
{
	if (v[0] == '\0' || strlen(v) > r->max)
		return gm_config_value_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": \"%.200s\" must be 1 to %llu bytes",
		    r->name, v, (unsigned long long)r->max);
	for (unsigned i = 0; i < n; i++)
		if (strcmp(list[i], v) == 0)
			return gm_config_value_fail(
			    msg, len, GM_ECONFIG,
			    "config key \"%s\": \"%.200s\" is listed twice",
			    r->name, v);
	return 0;
}

/* A document gives a JSON array of strings; command-line text gives one
 * string that replaces the list, "" for none (the strings may hold
 * commas, as certificate subjects do). */
static int set_strs(const gm_config_row *r, void *at, unsigned *count,
		    const gm_config_src *v, char *msg, size_t len)
{
	const char *strs[GM_CONFIG_LIST_MAX];
	const cJSON *item;
	unsigned n = 0;
	int rv;

	if (v->json == NULL) {
		if (v->text[0] != '\0' &&
		    (rv = check_str(r, v->text, NULL, 0, msg, len)) != 0)
			return rv;
		strs[0] = v->text;
		return store_urls(r, at, count, strs, v->text[0] != '\0');
	}
	if (!cJSON_IsArray(v->json))
		return gm_config_value_type_error(r, v, "an array of strings",
						  msg, len);
	cJSON_ArrayForEach(item, v->json)
	{
		if (!cJSON_IsString(item))
			return gm_config_value_type_error(
			    r, v, "an array of strings", msg, len);
		if (n == r->max_count)
			return gm_config_value_fail(
			    msg, len, GM_ECONFIG,
			    "config key \"%s\": more than %u strings", r->name,
			    r->max_count);
		if ((rv = check_str(r, item->valuestring, strs, n, msg, len)) !=
		    0)
			return rv;
		strs[n++] = item->valuestring;
	}
	return store_urls(r, at, count, strs, n);
}

const gm_config_kind gm_config_list_strs = {.set = set_strs,
					    .init = init_urls,
					    .get = get_urls,
					    .release = release_urls,
					    .copy = copy_urls};

/* ---- id lists ---- */

/* Makes the id list at `at` a heap copy of ids[0..n); none when n is
 * 0. The old list is freed unless it is the row's default. */
static int store_ids(const gm_config_row *r, void *at, unsigned *count,
		     const uint32_t *ids, unsigned n)
{
	uint32_t *list = NULL;
	uint32_t **old = at;

	if (n != 0 && (list = malloc(n * sizeof(*list))) == NULL)
		return GM_ENOMEM;
	if (n != 0)
		memcpy(list, ids, n * sizeof(*list));
	if (*old != r->ids_def)
		free(*old);
	*old = list;
	*count = n;
	return 0;
}

/* Checks one id (item, a JSON number or command-line text) and appends
 * it to ids[0..*n). */
static int push_id(const gm_config_row *r, const gm_config_src *item,
		   uint32_t *ids, unsigned *n, char *msg, size_t len)
{
	uint64_t x = 0;
	int rv = gm_config_value_uint(item, 0, &x);
	char got[80];

	if (rv < 0)
		return gm_config_value_type_error(r, item, "a numeric id", msg,
						  len);
	if (rv > 0 || x > r->max)
		return gm_config_value_range_error(r, item, msg, len);
	for (unsigned i = 0; i < *n; i++) {
		if (ids[i] != x)
			continue;
		gm_config_value_show(item, 0, got, sizeof(got));
		return gm_config_value_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": %s is listed twice", r->name, got);
	}
	if (*n == r->max_count)
		return gm_config_value_fail(msg, len, GM_ECONFIG,
					    "config key \"%s\": more than %u "
					    "ids",
					    r->name, r->max_count);
	ids[(*n)++] = (uint32_t)x;
	return 0;
}

/* A document gives a JSON array of ids; command-line text gives them in
 * decimal separated by commas, "" for none. */
static int set_ids(const gm_config_row *r, void *at, unsigned *count,
		   const gm_config_src *v, char *msg, size_t len)
{
	uint32_t ids[GM_CONFIG_LIST_MAX];
	const char *p = v->text, *comma;
	const cJSON *item;
	char tok[32];
	unsigned n = 0;
	int rv;

	if (v->json != NULL && !cJSON_IsArray(v->json))
		return gm_config_value_type_error(
		    r, v, "an array of numeric ids", msg, len);
	if (v->json != NULL) {
		cJSON_ArrayForEach(item, v->json)
		{
			rv = push_id(r, &(gm_config_src){.json = item}, ids, &n,
				     msg, len);
			if (rv != 0)
				return rv;
		}
		return store_ids(r, at, count, ids, n);
	}
	while (*p != '\0') {
		comma = strchr(p, ',');
		snprintf(tok, sizeof(tok), "%.*s",
			 (int)(comma ? (size_t)(comma - p) : strlen(p)), p);
		rv = push_id(r, &(gm_config_src){.text = tok}, ids, &n, msg,
			     len);
		if (rv != 0)
			return rv;
		if (comma == NULL)
			break;
		p = comma + 1;
		if (*p == '\0')
			return gm_config_value_type_error(
			    r, &(gm_config_src){.text = ""}, "a numeric id",
			    msg, len);
	}
	return store_ids(r, at, count, ids, n);
}

static void init_ids(const gm_config_row *r, void *at, unsigned *count)
{
	*(uint32_t **)at = r->ids_def;
	*count = (unsigned)r->def;
}

static cJSON *get_ids(const gm_config_row *r, const void *at, unsigned count)
{
	return gm_config_value_numbers(*(const uint32_t *const *)at, count);
}

static void release_ids(const gm_config_row *r, void *at, unsigned count)
{
	if (*(uint32_t **)at != r->ids_def)
		free(*(uint32_t **)at);
}

static int copy_ids(const gm_config_row *r, void *at, unsigned count)
{
	const uint32_t *ids = *(uint32_t **)at;

	if (ids == r->ids_def)
		return 0;
	*(uint32_t **)at = r->ids_def; /* the list it points to is not ours */
	return store_ids(r, at, &count, ids, count);
}

const gm_config_kind gm_config_list_ids = {.set = set_ids,
					   .init = init_ids,
					   .get = get_ids,
					   .release = release_ids,
					   .copy = copy_ids};
