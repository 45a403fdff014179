/*
 * gm_config_impl.h - private to the configuration files: the row type of
 * the key table and what each file offers the others. gm_config.c holds
 * the table and the one setter, gm_config_parse.c the scalar kinds and
 * the messages naming a key and its bad value, gm_config_list.c the URL
 * and id lists and the rules that read them, gm_config_json.c loading
 * and dumping JSON.
 */
#ifndef GM_CONFIG_IMPL_H
#define GM_CONFIG_IMPL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_config.h"

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

#define NPRIO (GM_BATCH_PRIO_MAX + 1)

/* A value to set, as the user wrote it: an item of a JSON document, or
 * the text of a command-line override (json NULL). */
struct src {
	const cJSON *json;
	const char *text;
};

/* The key table, in the order gm_config_to_json renders it. */
extern const struct row *const gm_config_keys;
extern const size_t gm_config_nkeys;

/* Formats into msg and returns code. */
int gm_config_fail(char *msg, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Where row r is stored in c; its entry count (K_URLS, K_IDS). */
static inline void *gm_config_field(gm_config *c, const struct row *r)
{
	return (char *)c + r->off;
}

static inline const void *gm_config_cfield(const gm_config *c,
					   const struct row *r)
{
	return (const char *)c + r->off;
}

static inline unsigned *gm_config_count_at(gm_config *c, const struct row *r)
{
	return (unsigned *)((char *)c + r->count_off);
}

static inline unsigned gm_config_count_of(const gm_config *c,
					  const struct row *r)
{
	return *(const unsigned *)((const char *)c + r->count_off);
}

/* gm_config.c */

/* Deep-copies src into dst (GM_ENOMEM). */
int gm_config_copy(gm_config *dst, const gm_config *src);

/* Sets every key of the JSON object doc in c; GM_ECONFIG, GM_ENOMEM. */
int gm_config_apply(gm_config *c, const cJSON *doc, char *msg, size_t len);

/* gm_config_parse.c */

/* Writes v as the user wrote it into buf, quoted when quote is set and
 * it is command-line text. */
void gm_config_show(const struct src *v, int quote, char *buf, size_t len);

/* GM_ECONFIG: "expected ..., got ..." and "... is out of range ...". */
int gm_config_type_error(const struct row *r, const struct src *v,
			 const char *expected, char *msg, size_t len);
int gm_config_range_error(const struct row *r, const struct src *v, char *msg,
			  size_t len);

/* Reads an unsigned value: 0, -1 when v is not a number, 1 when it is
 * out of range. */
int gm_config_get_uint(const struct src *v, int sized, uint64_t *out);

/* The setters of each kind of row: 0, GM_ECONFIG or GM_ENOMEM, c
 * unchanged on error. */
int gm_config_set_number(gm_config *c, const struct row *r, const struct src *v,
			 char *msg, size_t len);
int gm_config_set_bool(gm_config *c, const struct row *r, const struct src *v,
		       char *msg, size_t len);
int gm_config_set_enum(gm_config *c, const struct row *r, const struct src *v,
		       char *msg, size_t len);
int gm_config_set_string(gm_config *c, const struct row *r, const struct src *v,
			 char *msg, size_t len);
int gm_config_set_prios(gm_config *c, const struct row *r, const struct src *v,
			char *msg, size_t len);

/* gm_config_list.c */

int gm_config_set_urls(gm_config *c, const struct row *r, const struct src *v,
		       char *msg, size_t len);
int gm_config_set_ids(gm_config *c, const struct row *r, const struct src *v,
		      char *msg, size_t len);

/* Appends url to the row's list, or makes it the whole list. */
int gm_config_add_url(gm_config *c, const struct row *r, const char *url,
		      int replace, char *msg, size_t len);

/* Make the row's list a heap copy of urls[0..n) or ids[0..n). */
int gm_config_store_urls(gm_config *c, const struct row *r,
			 const char *const *urls, unsigned n);
int gm_config_store_ids(gm_config *c, const struct row *r, const uint32_t *ids,
			unsigned n);

/* Frees a URL list of n entries. */
void gm_config_free_urls(char **list, unsigned n);

#endif
