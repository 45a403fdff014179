/*
 * gm_config_value.c - configuration values as the user wrote them: read
 * as numbers (sizes with a K, M, G or T suffix), and shown in the
 * messages that name a key and the value it was given.
 */
#include "gm_config_value.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

int gm_config_value_fail(char *msg, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return code;
}

void gm_config_value_show(const gm_config_src *v, int quote, char *buf,
			  size_t len)
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

int gm_config_value_type_error(const gm_config_row *r, const gm_config_src *v,
			       const char *expected, char *msg, size_t len)
{
	char got[80];

	gm_config_value_show(v, 1, got, sizeof(got));
	return gm_config_value_fail(msg, len, GM_ECONFIG,
				    "config key \"%s\": expected %s, got %s",
				    r->name, expected, got);
}

static void show_bound(const gm_config_row *r, uint64_t x, char *buf,
		       size_t len)
{
	if (r->kind->show != NULL)
		r->kind->show(x, buf, len);
	else
		snprintf(buf, len, "%llu", (unsigned long long)x);
}

int gm_config_value_range_error(const gm_config_row *r, const gm_config_src *v,
				char *msg, size_t len)
{
	char got[80], lo[24], hi[24];

	gm_config_value_show(v, 0, got, sizeof(got));
	show_bound(r, r->min, lo, sizeof(lo));
	show_bound(r, r->max, hi, sizeof(hi));
	return gm_config_value_fail(
	    msg, len, GM_ECONFIG,
	    "config key \"%s\": %s is out of range %s..%s", r->name, got, lo,
	    hi);
}

/* Decimal text, with a K, M, G or T suffix when sized; as
 * gm_config_value_uint. */
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

int gm_config_value_uint(const gm_config_src *v, int sized, uint64_t *out)
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

cJSON *gm_config_value_numbers(const uint32_t *v, unsigned n)
{
	cJSON *a = cJSON_CreateArray();

	for (unsigned i = 0; a != NULL && i < n; i++) {
		cJSON *x = cJSON_CreateNumber(v[i]);

		if (x == NULL || !cJSON_AddItemToArray(a, x)) {
			cJSON_Delete(x);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

bool gm_config_value_host_port(const char *s)
{
	const char *colon = strrchr(s, ':');
	unsigned long port;
	char *end;

	if (colon == NULL || colon == s || strchr(s, '/') != NULL ||
	    colon[1] < '0' || colon[1] > '9')
		return false;
	port = strtoul(colon + 1, &end, 10);
	return *end == '\0' && port >= 1 && port <= 65535;
}
