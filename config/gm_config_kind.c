/*
 * gm_config_kind.c - the scalar kinds of configuration value (numbers,
 * sizes, booleans, enums, paths, per-priority numbers): how each is read
 * from a JSON item or from command-line text, stored, defaulted and
 * rendered.
 */
#include "gm_config_kind.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_config_value.h"
#include "gm_error.h"

/* ---- numbers and sizes ---- */

static int set_number(const gm_config_row *r, void *at, int sized,
		      const gm_config_src *v, char *msg, size_t len)
{
	uint64_t x = 0;
	int rv = gm_config_value_uint(v, sized, &x);

	if (rv < 0)
		return gm_config_value_type_error(
		    r, v,
		    sized ? "a size (an integer or \"512M\")" : "an integer",
		    msg, len);
	if (rv > 0 || x < r->min || x > r->max)
		return gm_config_value_range_error(r, v, msg, len);
	if (sized)
		*(uint64_t *)at = x;
	else
		*(unsigned *)at = (unsigned)x;
	return 0;
}

static int set_uint(const gm_config_row *r, void *at, unsigned *count,
		    const gm_config_src *v, char *msg, size_t len)
{
	return set_number(r, at, 0, v, msg, len);
}

static void init_uint(const gm_config_row *r, void *at, unsigned *count)
{
	*(unsigned *)at = (unsigned)r->def;
}

static cJSON *get_uint(const gm_config_row *r, const void *at, unsigned count)
{
	return cJSON_CreateNumber(*(const unsigned *)at);
}

const gm_config_kind gm_config_kind_uint = {
    .set = set_uint, .init = init_uint, .get = get_uint};

static int set_size(const gm_config_row *r, void *at, unsigned *count,
		    const gm_config_src *v, char *msg, size_t len)
{
	return set_number(r, at, 1, v, msg, len);
}

static void init_size(const gm_config_row *r, void *at, unsigned *count)
{
	*(uint64_t *)at = r->def;
}

static cJSON *get_size(const gm_config_row *r, const void *at, unsigned count)
{
	return cJSON_CreateNumber((double)*(const uint64_t *)at);
}

/* A size bound reads best in the unit it was chosen in: "1G", "4K". */
static void show_size(uint64_t x, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && x != 0 && x % 1024 == 0) {
		x /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)x);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)x, units[u]);
}

const gm_config_kind gm_config_kind_size = {
    .set = set_size, .init = init_size, .get = get_size, .show = show_size};

/* ---- booleans and enums, both stored as int ---- */

static void init_int(const gm_config_row *r, void *at, unsigned *count)
{
	*(int *)at = (int)r->def;
}

static int set_bool(const gm_config_row *r, void *at, unsigned *count,
		    const gm_config_src *v, char *msg, size_t len)
{
	int b;

	if (v->json != NULL && cJSON_IsBool(v->json))
		b = cJSON_IsTrue(v->json);
	else if (v->json == NULL && strcmp(v->text, "true") == 0)
		b = 1;
	else if (v->json == NULL && strcmp(v->text, "false") == 0)
		b = 0;
	else
		return gm_config_value_type_error(r, v, "true or false", msg,
						  len);
	*(int *)at = b;
	return 0;
}

static cJSON *get_bool(const gm_config_row *r, const void *at, unsigned count)
{
	return cJSON_CreateBool(*(const int *)at);
}

const gm_config_kind gm_config_kind_bool = {
    .set = set_bool, .init = init_int, .get = get_bool};

static int set_enum(const gm_config_row *r, void *at, unsigned *count,
		    const gm_config_src *v, char *msg, size_t len)
{
	const char *name = v->json ? cJSON_GetStringValue(v->json) : v->text;
	char expected[128] = "one of ";
	const gm_config_choice *ch;

	for (ch = r->choices; name != NULL && ch->name != NULL; ch++) {
		if (strcmp(ch->name, name) == 0) {
			*(int *)at = ch->value;
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
	return gm_config_value_type_error(r, v, expected, msg, len);
}

/* A value set outside this module shows as its number. */
static cJSON *get_enum(const gm_config_row *r, const void *at, unsigned count)
{
	int value = *(const int *)at;

	for (const gm_config_choice *ch = r->choices; ch->name != NULL; ch++)
		if (ch->value == value)
			return cJSON_CreateString(ch->name);
	return cJSON_CreateNumber(value);
}

const gm_config_kind gm_config_kind_enum = {
    .set = set_enum, .init = init_int, .get = get_enum};

/* ---- paths ---- */

/* A JSON null or the empty command-line text clears a path. */
static int set_string(const gm_config_row *r, void *at, unsigned *count,
		      const gm_config_src *v, char *msg, size_t len)
{
	const char *s = v->text;
	char *dup = NULL;

	if (v->json != NULL) {
		s = cJSON_GetStringValue(v->json);
		if (s == NULL ? !cJSON_IsNull(v->json) : *s == '\0')
			return gm_config_value_type_error(
			    r, v, "a file path or null", msg, len);
	}
	if (s != NULL && *s != '\0' && (dup = strdup(s)) == NULL)
		return GM_ENOMEM;
	free(*(char **)at);
	*(char **)at = dup;
	return 0;
}

static void init_string(const gm_config_row *r, void *at, unsigned *count)
{
	*(char **)at = NULL;
}

static cJSON *get_string(const gm_config_row *r, const void *at, unsigned count)
{
	const char *s = *(char *const *)at;

	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static void release_string(const gm_config_row *r, void *at, unsigned count)
{
	free(*(char **)at);
}

static int copy_string(const gm_config_row *r, void *at, unsigned count)
{
	const char *s = *(char **)at;

	*(char **)at = NULL;
	if (s != NULL && (*(char **)at = strdup(s)) == NULL)
		return GM_ENOMEM;
	return 0;
}

const gm_config_kind gm_config_kind_string = {.set = set_string,
					      .init = init_string,
					      .get = get_string,
					      .release = release_string,
					      .copy = copy_string};

/* ---- one number per priority ---- */

/* Reads one number of a per-priority value into vals[*n]. */
static int push_prio(const gm_config_row *r, const gm_config_src *whole,
		     const gm_config_src *one, unsigned *vals, unsigned *n,
		     char *msg, size_t len)
{
	static const char want[] = "an integer or an array of 4 integers";
	uint64_t x;
	int rv;

	if (*n == GM_CONFIG_NPRIO ||
	    (rv = gm_config_value_uint(one, 0, &x)) < 0)
		return gm_config_value_type_error(r, whole, want, msg, len);
	if (rv > 0 || x < r->min || x > r->max)
		return gm_config_value_range_error(r, one, msg, len);
	vals[(*n)++] = (unsigned)x;
	return 0;
}

/* A JSON integer or an array of GM_CONFIG_NPRIO of them; command-line
 * text gives one number, or GM_CONFIG_NPRIO separated by commas. */
static int set_prios(const gm_config_row *r, void *at, unsigned *count,
		     const gm_config_src *v, char *msg, size_t len)
{
	unsigned vals[GM_CONFIG_NPRIO], n = 0;
	const char *p = v->text;
	const cJSON *item;
	char tok[32];
	int rv;

	if (v->json != NULL && !cJSON_IsArray(v->json) &&
	    (rv = push_prio(r, v, v, vals, &n, msg, len)) != 0)
		return rv;
	cJSON_ArrayForEach(item, v->json)
	{
		gm_config_src one = {.json = item};

		if ((rv = push_prio(r, v, &one, vals, &n, msg, len)) != 0)
			return rv;
	}
	while (v->json == NULL && p != NULL) {
		const char *comma = strchr(p, ',');
		gm_config_src one = {.text = tok};

		snprintf(tok, sizeof(tok), "%.*s",
			 (int)(comma ? (size_t)(comma - p) : strlen(p)), p);
		if ((rv = push_prio(r, v, &one, vals, &n, msg, len)) != 0)
			return rv;
		p = comma ? comma + 1 : NULL;
	}
	if (n != 1 && n != GM_CONFIG_NPRIO)
		return gm_config_value_type_error(
		    r, v, "an integer or an array of 4 integers", msg, len);
	for (unsigned i = 0; i < GM_CONFIG_NPRIO; i++)
		((unsigned *)at)[i] = vals[n == 1 ? 0 : i];
	return 0;
}

static void init_prios(const gm_config_row *r, void *at, unsigned *count)
{
	for (unsigned i = 0; i < GM_CONFIG_NPRIO; i++)
		((unsigned *)at)[i] = (unsigned)r->def;
}

static cJSON *get_prios(const gm_config_row *r, const void *at, unsigned count)
{
	return gm_config_value_numbers(at, GM_CONFIG_NPRIO);
}

const gm_config_kind gm_config_kind_prios = {
    .set = set_prios, .init = init_prios, .get = get_prios};
