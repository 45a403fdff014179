/*
 * gm_npy_header.c - the .npy header dictionary; see gm_npy_header.h.
 */
#include "gm_npy_header.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gm_proto.h"

#define KEY_DESCR   0x1
#define KEY_FORTRAN 0x2
#define KEY_SHAPE   0x4

/* A cursor over the header text, which is NUL-terminated, and where a
 * failure message goes. */
struct cur {
	const char *start, *p;
	char *msg;
	size_t msglen;
};

/* Every failure here is a bad header: GM_ENPY. */
__attribute__((format(printf, 2, 3))) static int bad(struct cur *c,
						     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msg, c->msglen, fmt, ap);
	va_end(ap);
	return GM_ENPY;
}

static void skip_ws(struct cur *c)
{
	while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')
		c->p++;
}

static int syntax(struct cur *c, const char *expected)
{
	if (*c->p == '\0')
		return bad(c, "header: expected %s, found the end at byte %td",
			   expected, c->p - c->start);
	return bad(c, "header: expected %s at byte %td, found '%c'", expected,
		   c->p - c->start, *c->p);
}

static int expect(struct cur *c, char ch, const char *expected)
{
	skip_ws(c);
	if (*c->p != ch)
		return syntax(c, expected);
	c->p++;
	return GM_OK;
}

/* A quoted string without escapes: all that NumPy writes for keys and
 * simple dtypes. */
static int parse_string(struct cur *c, char *out, size_t outlen)
{
	const char *q;
	char quote;
	size_t n;

	skip_ws(c);
	quote = *c->p;
	if (quote != '\'' && quote != '"')
		return syntax(c, "a quoted string");
	q = strchr(c->p + 1, quote);
	if (q == NULL)
		return bad(c, "header: unterminated string at byte %td",
			   c->p - c->start);
	n = (size_t)(q - c->p - 1);
	if (memchr(c->p + 1, '\\', n) != NULL || n >= outlen)
		return bad(
		    c, "header: string at byte %td is too long or has escapes",
		    c->p - c->start);
	memcpy(out, c->p + 1, n);
	out[n] = '\0';
	c->p = q + 1;
	return GM_OK;
}

static const gm_npy_type npy_types[] = {
    {GM_FP64, "<f8", "float64", 8},
    {GM_FP32, "<f4", "float32", 4},
    {GM_FP16, "<f2", "float16", 2},
};

const gm_npy_type *gm_npy_type_of(int dtype)
{
	for (size_t i = 0; i < sizeof(npy_types) / sizeof(npy_types[0]); i++)
		if (npy_types[i].dtype == dtype)
			return &npy_types[i];
	return NULL;
}

static int parse_descr(struct cur *c, gm_npy_header *h)
{
	char d[32];
	int rv;

	if ((rv = parse_string(c, d, sizeof(d))) != 0)
		return rv;
	for (size_t i = 0; i < sizeof(npy_types) / sizeof(npy_types[0]); i++) {
		if (strcmp(d, npy_types[i].descr) == 0) {
			h->dtype = npy_types[i].dtype;
			return GM_OK;
		}
	}
	return bad(c,
		   "dtype '%s' unsupported%s: only little-endian float64 "
		   "('<f8'), float32 ('<f4') and float16 ('<f2')",
		   d, d[0] == '>' ? ": big-endian" : "");
}

static int parse_bool(struct cur *c, int *out)
{
	skip_ws(c);
	if (strncmp(c->p, "True", 4) == 0) {
		*out = 1;
		c->p += 4;
	} else if (strncmp(c->p, "False", 5) == 0) {
		*out = 0;
		c->p += 5;
	} else {
		return syntax(c, "True or False for 'fortran_order'");
	}
	return GM_OK;
}

/* A non-negative integer below 2^63; Python 2 NumPy wrote "3L". */
static int parse_dim(struct cur *c, uint64_t *out)
{
	uint64_t v = 0;

	skip_ws(c);
	if (*c->p < '0' || *c->p > '9')
		return syntax(c, "a dimension");
	while (*c->p >= '0' && *c->p <= '9') {
		if (v > (INT64_MAX - 9) / 10)
			return bad(c,
				   "header: dimension at byte %td is too large",
				   c->p - c->start);
		v = v * 10 + (uint64_t)(*c->p++ - '0');
	}
	if (*c->p == 'L')
		c->p++;
	*out = v;
	return GM_OK;
}

/* "(r, c)", "(r, c,)", "(n,)", "()". One element needs its comma, as in
 * Python, else it is a parenthesised integer and not a tuple. */
static int parse_shape(struct cur *c, gm_npy_header *h)
{
	bool comma = false;
	int rv;

	if ((rv = expect(c, '(', "'(' starting 'shape'")) != 0)
		return rv;
	h->ndim = 0;
	for (;;) {
		skip_ws(c);
		if (*c->p == ')')
			break;
		if (h->ndim == GM_NPY_MAX_NDIM)
			return bad(c, "shape has over %d dimensions",
				   GM_NPY_MAX_NDIM);
		if ((rv = parse_dim(c, &h->dims[h->ndim++])) != 0)
			return rv;
		skip_ws(c);
		comma = *c->p == ',';
		if (!comma)
			break;
		c->p++;
	}
	if (h->ndim == 1 && !comma)
		return syntax(c, "',' after the only dimension");
	return expect(c, ')', "')' ending 'shape'");
}

static int parse_item(struct cur *c, gm_npy_header *h, unsigned *seen)
{
	char key[32];
	unsigned bit;
	int rv;

	if ((rv = parse_string(c, key, sizeof(key))) != 0)
		return rv;
	if ((rv = expect(c, ':', "':' after a key")) != 0)
		return rv;
	if (strcmp(key, "descr") == 0)
		bit = KEY_DESCR;
	else if (strcmp(key, "fortran_order") == 0)
		bit = KEY_FORTRAN;
	else if (strcmp(key, "shape") == 0)
		bit = KEY_SHAPE;
	else
		return bad(c,
			   "header: unknown key '%s' (only 'descr', "
			   "'fortran_order', 'shape')",
			   key);
	if (*seen & bit)
		return bad(c, "header: key '%s' appears twice", key);
	*seen |= bit;
	if (bit == KEY_DESCR)
		return parse_descr(c, h);
	if (bit == KEY_FORTRAN)
		return parse_bool(c, &h->fortran);
	return parse_shape(c, h);
}

int gm_npy_header_parse(const char *text, gm_npy_header *h, char *msg,
			size_t msglen)
{
	struct cur cur = {text, text, msg, msglen}, *c = &cur;
	unsigned seen = 0;
	int rv;

	if ((rv = expect(c, '{', "'{' starting the header")) != 0)
		return rv;
	for (;;) {
		skip_ws(c);
		if (*c->p == '}')
			break;
		if ((rv = parse_item(c, h, &seen)) != 0)
			return rv;
		skip_ws(c);
		if (*c->p != ',')
			break;
		c->p++;
	}
	if ((rv = expect(c, '}', "',' or '}' in the header")) != 0)
		return rv;
	skip_ws(c);
	if (*c->p != '\0')
		return syntax(c, "only padding after the header dictionary");
	if (seen != (KEY_DESCR | KEY_FORTRAN | KEY_SHAPE))
		return bad(c, "header: no '%s' key",
			   !(seen & KEY_DESCR)	   ? "descr"
			   : !(seen & KEY_FORTRAN) ? "fortran_order"
						   : "shape");
	return GM_OK;
}
