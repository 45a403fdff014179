/*
 * gm_config_parse.c - the scalar kinds of configuration value (numbers,
 * sizes with a K, M, G or T suffix, booleans, enums, paths, per-priority
 * numbers), read from a JSON item or from command-line text; and the
 * messages that name a key and the value it was given.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_config_impl.h"
#include "gm_error.h"

/*
 * Writes v as the user wrote it, cut to fit buf, for messages: a JSON
 * item as JSON, command-line text in quotes when `quote` is set (it is
 * a string that failed to parse as something else).
 */
void gm_config_show(const struct src *v, int quote, char *buf, size_t len)
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

int gm_config_type_error(const struct row *r, const struct src *v,
			 const char *expected, char *msg, size_t len)
{
	char got[80];

	gm_config_show(v, 1, got, sizeof(got));
	return gm_config_fail(msg, len, GM_ECONFIG,
			      "config key \"%s\": expected %s, got %s", r->name,
			      expected, got);
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

int gm_config_range_error(const struct row *r, const struct src *v, char *msg,
			  size_t len)
{
	char got[80], lo[24], hi[24];

	gm_config_show(v, 0, got, sizeof(got));
	show_bound(r, r->min, lo, sizeof(lo));
	show_bound(r, r->max, hi, sizeof(hi));
	return gm_config_fail(msg, len, GM_ECONFIG,
			      "config key \"%s\": %s is out of range %s..%s",
			      r->name, got, lo, hi);
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
int gm_config_get_uint(const struct src *v, int sized, uint64_t *out)
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

int gm_config_set_number(gm_config *c, const struct row *r, const struct src *v,
			 char *msg, size_t len)
{
	int sized = (r->kind == K_SIZE);
	uint64_t x = 0;
	int rv = gm_config_get_uint(v, sized, &x);

	if (rv < 0)
		return gm_config_type_error(
		    r, v,
		    sized ? "a size (an integer or \"512M\")" : "an integer",
		    msg, len);
	if (rv > 0 || x < r->min || x > r->max)
		return gm_config_range_error(r, v, msg, len);
	if (sized)
		*(uint64_t *)gm_config_field(c, r) = x;
	else
		*(unsigned *)gm_config_field(c, r) = (unsigned)x;
	return 0;
}

int gm_config_set_bool(gm_config *c, const struct row *r, const struct src *v,
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
		return gm_config_type_error(r, v, "true or false", msg, len);
	*(int *)gm_config_field(c, r) = b;
	return 0;
}

int gm_config_set_enum(gm_config *c, const struct row *r, const struct src *v,
		       char *msg, size_t len)
{
	const char *name = v->json ? cJSON_GetStringValue(v->json) : v->text;
	char expected[128] = "one of ";
	const struct choice *ch;

	for (ch = r->choices; name != NULL && ch->name != NULL; ch++) {
		if (strcmp(ch->name, name) == 0) {
			*(int *)gm_config_field(c, r) = ch->value;
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
	return gm_config_type_error(r, v, expected, msg, len);
}

/* A JSON null or the empty command-line text clears a path. */
int gm_config_set_string(gm_config *c, const struct row *r, const struct src *v,
			 char *msg, size_t len)
{
	const char *s = v->text;
	char *dup = NULL;

	if (v->json != NULL) {
		s = cJSON_GetStringValue(v->json);
		if (s == NULL ? !cJSON_IsNull(v->json) : *s == '\0')
			return gm_config_type_error(r, v, "a file path or null",
						    msg, len);
	}
	if (s != NULL && *s != '\0' && (dup = strdup(s)) == NULL)
		return GM_ENOMEM;
	free(*(char **)gm_config_field(c, r));
	*(char **)gm_config_field(c, r) = dup;
	return 0;
}

/* One value per priority: a JSON integer or an array of NPRIO of them;
 * command-line text gives one number, or NPRIO separated by commas. */
int gm_config_set_prios(gm_config *c, const struct row *r, const struct src *v,
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
		if ((rv = gm_config_get_uint(v, 0, &x)) < 0)
			return gm_config_type_error(r, v, want, msg, len);
		if (rv > 0 || x < r->min || x > r->max)
			return gm_config_range_error(r, v, msg, len);
		vals[n++] = (unsigned)x;
	}
	cJSON_ArrayForEach(item, v->json)
	{
		struct src one = {.json = item};

		if (n == NPRIO || (rv = gm_config_get_uint(&one, 0, &x)) < 0)
			return gm_config_type_error(r, v, want, msg, len);
		if (rv > 0 || x < r->min || x > r->max)
			return gm_config_range_error(r, &one, msg, len);
		vals[n++] = (unsigned)x;
	}
	for (; v->json == NULL && p != NULL; n++) {
		const char *comma = strchr(p, ',');
		struct src one = {.text = tok};

		snprintf(tok, sizeof(tok), "%.*s",
			 (int)(comma ? (size_t)(comma - p) : strlen(p)), p);
		if (n == NPRIO || (rv = gm_config_get_uint(&one, 0, &x)) < 0)
			return gm_config_type_error(r, v, want, msg, len);
		if (rv > 0 || x < r->min || x > r->max)
			return gm_config_range_error(r, &one, msg, len);
		vals[n] = (unsigned)x;
		p = comma ? comma + 1 : NULL;
	}
	if (n != 1 && n != NPRIO)
		return gm_config_type_error(r, v, want, msg, len);
	for (unsigned i = 0; i < NPRIO; i++)
		((unsigned *)gm_config_field(c, r))[i] = vals[n == 1 ? 0 : i];
	return 0;
}
