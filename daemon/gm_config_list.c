/*
 * gm_config_list.c - the list kinds of configuration value: "listen"
 * URLs and the uid and gid allow-lists, read from a JSON array or from
 * command-line text; and the rules that read them once the
 * configuration is built (gm_config_check, gm_config_allows).
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_config_impl.h"
#include "gm_error.h"

/* "listen" URLs must name one of the transports the server enables. */
static const char *const schemes[] = {"ipc://", "tcp://", "tls+tcp://"};
#define SCHEMES_TEXT "ipc://, tcp:// or tls+tcp://"

void gm_config_free_urls(char **list, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Makes the row's list a heap copy of urls[0..n), freeing the old list
 * after the copy so that urls may point into it. */
int gm_config_store_urls(gm_config *c, const struct row *r,
			 const char *const *urls, unsigned n)
{
	char **list = calloc(n, sizeof(*list));
	char ***at = gm_config_field(c, r);

	if (list == NULL)
		return GM_ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if ((list[i] = strdup(urls[i])) == NULL) {
			gm_config_free_urls(list, i);
			return GM_ENOMEM;
		}
	}
	if (*at != r->urls_def)
		gm_config_free_urls(*at, *gm_config_count_at(c, r));
	*at = list;
	*gm_config_count_at(c, r) = n;
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
		return gm_config_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": \"%.200s\" must start "
		    "with " SCHEMES_TEXT,
		    r->name, url);
	if (url[strlen(schemes[i])] == '\0')
		return gm_config_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": \"%s\" has no address", r->name,
		    schemes[i]);
	for (i = 0; i < n; i++)
		if (strcmp(list[i], url) == 0)
			return gm_config_fail(
			    msg, len, GM_ECONFIG,
			    "config key \"%s\": \"%.200s\" is listed "
			    "twice",
			    r->name, url);
	return 0;
}

/* Appends url to the row's list, or makes it the whole list. */
int gm_config_add_url(gm_config *c, const struct row *r, const char *url,
		      int replace, char *msg, size_t len)
{
	const char *urls[GM_CONFIG_MAX_LISTEN];
	char **old = *(char ***)gm_config_field(c, r);
	unsigned n = replace ? 0 : *gm_config_count_at(c, r);
	int rv;

	if (n >= r->max)
		return gm_config_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": cannot add \"%.200s\", the "
		    "list already has %u URLs",
		    r->name, url, n);
	for (unsigned i = 0; i < n; i++)
		urls[i] = old[i];
	if ((rv = check_url(r, url, urls, n, msg, len)) != 0)
		return rv;
	urls[n] = url;
	return gm_config_store_urls(c, r, urls, n + 1);
}

/* A document gives the whole list; command-line text gives one URL that
 * replaces it. Rows of this kind have max <= GM_CONFIG_MAX_LISTEN. */
int gm_config_set_urls(gm_config *c, const struct row *r, const struct src *v,
		       char *msg, size_t len)
{
	const char *urls[GM_CONFIG_MAX_LISTEN];
	const cJSON *item;
	unsigned n = 0;
	int size, rv;

	if (v->json == NULL)
		return gm_config_add_url(c, r, v->text, 1, msg, len);
	if (!cJSON_IsArray(v->json))
		return gm_config_type_error(r, v, "an array of URL strings",
					    msg, len);
	size = cJSON_GetArraySize(v->json);
	if (size < (int)r->min || size > (int)r->max)
		return gm_config_fail(
		    msg, len, GM_ECONFIG,
		    "config key \"%s\": %d URLs is out of range "
		    "%llu..%llu",
		    r->name, size, (unsigned long long)r->min,
		    (unsigned long long)r->max);
	cJSON_ArrayForEach(item, v->json)
	{
		if (!cJSON_IsString(item))
			return gm_config_type_error(
			    r, v, "an array of URL strings", msg, len);
		if ((rv = check_url(r, item->valuestring, urls, n, msg, len)) !=
		    0)
			return rv;
		urls[n++] = item->valuestring;
	}
	return gm_config_store_urls(c, r, urls, n);
}

/* Makes the row's id list a heap copy of ids[0..n); none when n is 0. */
int gm_config_store_ids(gm_config *c, const struct row *r, const uint32_t *ids,
			unsigned n)
{
	uint32_t *list = NULL;
	uint32_t **at = gm_config_field(c, r);

	if (n != 0 && (list = malloc(n * sizeof(*list))) == NULL)
		return GM_ENOMEM;
	if (n != 0)
		memcpy(list, ids, n * sizeof(*list));
	free(*at);
	*at = list;
	*gm_config_count_at(c, r) = n;
	return 0;
}

/* Checks one id (item, a JSON number or command-line text) and appends
 * it to ids[0..*n). */
static int push_id(const struct row *r, const struct src *item, uint32_t *ids,
		   unsigned *n, char *msg, size_t len)
{
	uint64_t x = 0;
	int rv = gm_config_get_uint(item, 0, &x);
	char got[80];

	if (rv < 0)
		return gm_config_type_error(r, item, "a numeric id", msg, len);
	if (rv > 0 || x > r->max)
		return gm_config_range_error(r, item, msg, len);
	for (unsigned i = 0; i < *n; i++) {
		if (ids[i] != x)
			continue;
		gm_config_show(item, 0, got, sizeof(got));
		return gm_config_fail(msg, len, GM_ECONFIG,
				      "config key \"%s\": %s is listed twice",
				      r->name, got);
	}
	if (*n == GM_CONFIG_MAX_IDS)
		return gm_config_fail(msg, len, GM_ECONFIG,
				      "config key \"%s\": more than %u ids",
				      r->name, GM_CONFIG_MAX_IDS);
	ids[(*n)++] = (uint32_t)x;
	return 0;
}

/* A document gives a JSON array of ids; command-line text gives them in
 * decimal separated by commas, "" for none. */
int gm_config_set_ids(gm_config *c, const struct row *r, const struct src *v,
		      char *msg, size_t len)
{
	uint32_t ids[GM_CONFIG_MAX_IDS];
	const char *p = v->text, *comma;
	const cJSON *item;
	char tok[32];
	unsigned n = 0;
	int rv;

	if (v->json != NULL && !cJSON_IsArray(v->json))
		return gm_config_type_error(r, v, "an array of numeric ids",
					    msg, len);
	if (v->json != NULL) {
		cJSON_ArrayForEach(item, v->json)
		{
			rv = push_id(r, &(struct src){.json = item}, ids, &n,
				     msg, len);
			if (rv != 0)
				return rv;
		}
		return gm_config_store_ids(c, r, ids, n);
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
			return gm_config_type_error(r,
						    &(struct src){.text = ""},
						    "a numeric id", msg, len);
	}
	return gm_config_store_ids(c, r, ids, n);
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
	return gm_config_fail(
	    msg, len, GM_ECONFIG,
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
		return gm_config_fail(
		    msg, msglen, GM_ECONFIG,
		    "config keys \"tls_cert\" and \"tls_key\" go "
		    "together, but \"%s\" is null",
		    c->tls_cert ? "tls_key" : "tls_cert");
	for (unsigned i = 0; i < c->nlisten; i++)
		if (strncmp(c->listen[i], "tls+tcp://", 10) == 0 &&
		    (c->tls_cert == NULL || c->tls_ca == NULL))
			return gm_config_fail(
			    msg, msglen, GM_ECONFIG,
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
