/*
 * gm_config_kind.h - private to config/: the scalar kinds of
 * configuration value, each with its own behaviour (gm_config_row.h).
 * The field a row of each kind is stored in has the C type named here;
 * gm_config.c checks it at compile time.
 */
#ifndef GM_CONFIG_KIND_H
#define GM_CONFIG_KIND_H

#include "gm_config_row.h"

/* unsigned; a JSON integer or decimal text. */
extern const gm_config_kind gm_config_kind_uint;

/* uint64_t bytes; a JSON integer, or a string or text like "512M". */
extern const gm_config_kind gm_config_kind_size;

/* int 0 or 1; JSON true or false, text "true" or "false". */
extern const gm_config_kind gm_config_kind_bool;

/* int; one of the row's choices, by name. */
extern const gm_config_kind gm_config_kind_enum;

/* char *, NULL by default; a JSON string or null, text ("" for null). */
extern const gm_config_kind gm_config_kind_string;

/* unsigned[GM_CONFIG_NPRIO], one per priority: one JSON integer for
 * every priority or an array of one each, lowest first; text gives one
 * number, or one per priority separated by commas. */
extern const gm_config_kind gm_config_kind_prios;

#endif
