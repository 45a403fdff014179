/*
 * gm_config_value.h - private to config/: values as the user wrote them,
 * read as numbers and shown in messages that name a key and its bad
 * value. Every kind of row (gm_config_row.h) reports through these, so
 * that all errors read alike. Pure functions; any thread.
 */
#ifndef GM_CONFIG_VALUE_H
#define GM_CONFIG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_config_row.h"

/* Formats into msg and returns code. */
int gm_config_value_fail(char *msg, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes v as the user wrote it into buf, cut to fit: a JSON item as
 * JSON, command-line text in quotes when quote is set (it is a string
 * that failed to parse as something else). */
void gm_config_value_show(const gm_config_src *v, int quote, char *buf,
			  size_t len);

/* GM_ECONFIG: "config key K: expected E, got V". */
int gm_config_value_type_error(const gm_config_row *r, const gm_config_src *v,
			       const char *expected, char *msg, size_t len);

/* GM_ECONFIG: "config key K: V is out of range MIN..MAX", the bounds
 * written as the row's kind writes them. */
int gm_config_value_range_error(const gm_config_row *r, const gm_config_src *v,
				char *msg, size_t len);

/* Reads v as an unsigned number: a JSON number, or decimal text; with
 * sized, also a JSON string or text with a K, M, G or T suffix (powers of
 * 1024). Returns 0, -1 when v is not such a number, or 1 when it is one
 * no uint64_t holds (negative or too large): out of range. */
int gm_config_value_uint(const gm_config_src *v, int sized, uint64_t *out);

/* Whether s is HOST:PORT: a host that is not empty (the resolver judges
 * it when the daemon binds), a colon and a port of 1..65535 in decimal
 * digits, nothing after it, no '/' anywhere. */
bool gm_config_value_host_port(const char *s);

/* n numbers as a JSON array, or NULL when out of memory. */
cJSON *gm_config_value_numbers(const uint32_t *v, unsigned n);

#endif
