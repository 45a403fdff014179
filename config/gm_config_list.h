/*
 * gm_config_list.h - private to config/: the list kinds of configuration
 * value (gm_config_row.h). A list's field is a heap array and its count
 * a separate unsigned field of the row.
 */
#ifndef GM_CONFIG_LIST_H
#define GM_CONFIG_LIST_H

#include <stddef.h>

#include "gm_config_row.h"

/* char ** of nng URLs: a JSON array of strings from a document; one URL
 * from the command line, which replaces the whole list. The default is
 * the row's static list. At most GM_CONFIG_MAX_LISTEN entries. */
extern const gm_config_kind gm_config_list_urls;

/* char ** of strings (certificate subjects), NULL when empty: a JSON
 * array of strings, each 1 to the row's max bytes and listed once, at
 * most max_count of them; from the command line one string that
 * replaces the list, or "" for none. */
extern const gm_config_kind gm_config_list_strs;

/* uint32_t * of uids or gids, NULL when empty (unless that is the row's
 * default): a JSON array of numbers, or decimal ids separated by commas
 * ("" for none). */
extern const gm_config_kind gm_config_list_ids;

/* Appends url to the URL list of row r, or with replace set makes it the
 * whole list. GM_ECONFIG for a bad or repeated URL or a full list, or
 * GM_ENOMEM; the list is unchanged on error. */
int gm_config_list_add_url(const gm_config_row *r, void *at, unsigned *count,
			   const char *url, int replace, char *msg, size_t len);

#endif
