/*
 * gm_ctrlreq_json.c - the first pass of reading a CTRL body: the whole
 * body validated as JSON (RFC 8259, with the stricter rules of
 * gm_ctrlreq.h: valid UTF-8, no NUL in strings, no member twice and at
 * most GM_CTRLREQ_MEMBERS_MAX in any object, however deep, nesting at
 * most GM_CTRLREQ_JSON_DEPTH_MAX), noting the top object's members for the
 * second pass (gm_ctrlreq.c). Integers are accumulated in 64 bits as
 * their digits are read.
 */
#include "gm_ctrlreq_json.h"

#include <string.h>
#include <sys/random.h>

#include "gm_error.h"
#include "gm_proto_impl.h"

/* A member name of an object still open: a hash of its decoded text,
 * so that names are compared in full only when their hashes match, and
 * where its opening quote is in the body. */
struct seen {
	uint32_t hash;
	size_t at;
};

/* Objects open at once, at most GM_CTRLREQ_JSON_DEPTH_MAX, each with at most
 * GM_CTRLREQ_MEMBERS_MAX names. */
#define SEEN_MAX (GM_CTRLREQ_JSON_DEPTH_MAX * GM_CTRLREQ_MEMBERS_MAX)
/* The names in seen[] are found through an open-addressed table of
 * their indexes, twice as large so that probes stay short: a name is
 * checked against the few its hash leads to, not against every name of
 * its object (256 of them, in objects that fill a body, would take the
 * parse from linear to 256 comparisons a name). */
#define SLOTS 8192

struct reader {
	const uint8_t *start, *p, *end;
	char *msg;
	size_t msglen;
	int depth;
	uint32_t seed;	   /* of the hash: see hash_seed */
	uint32_t hash;	   /* of the last string read, decoded */
	struct seen *seen; /* names of the open objects, innermost last */
	unsigned nseen;
	uint16_t *slot; /* SLOTS: 0, or an index into seen + 1 */
};

/* Drawn once per process, so that no body can be written whose names
 * all lead to one slot. Any value works: a race between two first
 * callers only picks one of theirs. */
static uint32_t hash_seed(void)
{
	static uint32_t seed;
	uint32_t v = __atomic_load_n(&seed, __ATOMIC_RELAXED);

	if (v == 0) {
		if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
			v = (uint32_t)(uintptr_t)&seed;
		v |= 1;
		__atomic_store_n(&seed, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* The slot a hash starts from: its high bits, mixed. */
static unsigned home(uint32_t hash)
{
	return (hash * 2654435769u) >> 19; /* 13 bits: SLOTS */
}

static int bad(struct reader *r, const char *what)
{
	if (r->p >= r->end)
		return gm_proto_fail(GM_EJSON, r->msg, r->msglen,
				     "JSON: %s, found the end at byte %td",
				     what, r->p - r->start);
	return gm_proto_fail(GM_EJSON, r->msg, r->msglen,
			     "JSON: %s at byte %td", what, r->p - r->start);
}

/* ---- UTF-8, checked over the whole body first ---- */

/* Length of the valid UTF-8 sequence at p, or 0: no overlong forms, no
 * surrogates, nothing past U+10FFFF. Its code point goes to *cp. */
static size_t utf8_cp(const uint8_t *p, const uint8_t *end, uint32_t *cp)
{
	uint32_t c = p[0], min;
	size_t n, i;

	if ((*cp = c) < 0x80)
		return 1;
	if ((c & 0xE0) == 0xC0)
		n = 2, c &= 0x1F, min = 0x80;
	else if ((c & 0xF0) == 0xE0)
		n = 3, c &= 0x0F, min = 0x800;
	else if ((c & 0xF8) == 0xF0)
		n = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return n;
}

static size_t utf8_len(const uint8_t *p, const uint8_t *end)
{
	uint32_t cp;

	return utf8_cp(p, end, &cp);
}

static int check_utf8(struct reader *r)
{
	const uint8_t *p = r->start;

	while (p < r->end) {
		size_t n = utf8_len(p, r->end);

		if (n == 0)
			return gm_proto_fail(
			    GM_EJSON, r->msg, r->msglen,
			    "body is not valid UTF-8 (byte %td)", p - r->start);
		p += n;
	}
	return GM_OK;
}

/* ---- the first pass: JSON ---- */

static void skip_ws(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' ||
				 *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int hex4(struct reader *r, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++, r->p++) {
		uint8_t c = r->p < r->end ? *r->p : 0;

		if (c >= '0' && c <= '9')
			*v = *v << 4 | (uint32_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			*v = *v << 4 | (uint32_t)((c | 0x20) - 'a' + 10);
		else
			return bad(r, "expected 4 hex digits after \\u");
	}
	return GM_OK;
}

/* Appends byte b of a string's decoded text to out (room bytes, NUL
 * kept) and to r->hash; *len counts what the text would take, so that a
 * long string is known. */
static void put_byte(struct reader *r, char *out, size_t room, size_t *len,
		     uint8_t b)
{
	r->hash = (r->hash ^ b) * 16777619u; /* FNV-1a */
	if (out != NULL && *len < room)
		out[*len] = (char)b;
	(*len)++;
}

/* Appends code point c, UTF-8 encoded, as put_byte does. */
static void put_cp(struct reader *r, char *out, size_t room, size_t *len,
		   uint32_t c)
{
	uint8_t b[4];
	size_t n;

	if (c < 0x80)
		b[0] = (uint8_t)c, n = 1;
	else if (c < 0x800)
		b[0] = (uint8_t)(0xC0 | c >> 6),
		b[1] = (uint8_t)(0x80 | (c & 0x3F)), n = 2;
	else if (c < 0x10000)
		b[0] = (uint8_t)(0xE0 | c >> 12),
		b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F)),
		b[2] = (uint8_t)(0x80 | (c & 0x3F)), n = 3;
	else
		b[0] = (uint8_t)(0xF0 | c >> 18),
		b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3F)),
		b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3F)),
		b[3] = (uint8_t)(0x80 | (c & 0x3F)), n = 4;
	for (size_t i = 0; i < n; i++)
		put_byte(r, out, room, len, b[i]);
}

static int escape(struct reader *r, uint32_t *c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	uint32_t lo;
	int rv;

	if (r->p >= r->end)
		return bad(r, "string not closed");
	if (*r->p != 'u') {
		if (*r->p == '\0' || (e = strchr(from, *r->p)) == NULL)
			return bad(r, "unknown escape in a string");
		*c = (uint8_t)to[e - from];
		r->p++;
		return GM_OK;
	}
	r->p++;
	if ((rv = hex4(r, c)) != 0)
		return rv;
	if (*c >= 0xDC00 && *c <= 0xDFFF)
		return bad(r, "a low surrogate escape without its high half");
	if (*c >= 0xD800 && *c <= 0xDBFF) {
		if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
			return bad(r, "a high surrogate escape without its "
				      "low half");
		r->p += 2;
		if ((rv = hex4(r, &lo)) != 0)
			return rv;
		if (lo < 0xDC00 || lo > 0xDFFF)
			return bad(r, "a high surrogate escape without its "
				      "low half");
		*c = 0x10000 + ((*c - 0xD800) << 10) + (lo - 0xDC00);
	}
	if (*c == 0)
		return bad(r, "\\u0000 (NUL) in a string");
	return GM_OK;
}

/* Cuts a UTF-8 sequence that truncation left incomplete at the end of
 * s, so that a message quoting s stays valid UTF-8. */
static void trim_utf8(char *s)
{
	size_t n = strlen(s), i = n;

	while (i > 0 && ((uint8_t)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i > 0 && (uint8_t)s[i - 1] >= 0xC0 &&
	    utf8_len((const uint8_t *)s + i - 1, (const uint8_t *)s + n) == 0)
		s[i - 1] = '\0';
}

/* A string at r->p; its decoded text into out (room bytes, truncated,
 * NUL-terminated), its decoded length into *len and its hash into
 * r->hash. */
static int string(struct reader *r, char *out, size_t room, size_t *len)
{
	*len = 0;
	r->hash = 2166136261u ^ r->seed;
	r->p++; /* the opening quote */
	for (;;) {
		uint32_t c;
		int rv;

		if (r->p >= r->end)
			return bad(r, "string not closed");
		c = *r->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return bad(r, c == 0 ? "NUL byte in a string"
					     : "control character in a string");
		r->p++;
		if (c == '\\') {
			if ((rv = escape(r, &c)) != 0)
				return rv;
			put_cp(r, out, room, len, c);
		} else {
			/* Raw bytes are valid UTF-8: copied as they are. */
			put_byte(r, out, room, len, (uint8_t)c);
		}
	}
	r->p++;
	if (out != NULL)
		out[*len < room ? *len : room - 1] = '\0';
	return GM_OK;
}

static int number(struct reader *r, gm_ctrlreq_member *m)
{
	bool neg = false, is_int = true, over = false;
	uint64_t u = 0;

	if (*r->p == '-')
		neg = true, r->p++;
	if (r->p >= r->end || *r->p < '0' || *r->p > '9')
		return bad(r, "expected a digit");
	if (*r->p == '0' && r->end - r->p > 1 && r->p[1] >= '0' &&
	    r->p[1] <= '9')
		return bad(r, "a number with a leading zero");
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
		over = over || __builtin_mul_overflow(u, 10, &u) ||
		       __builtin_add_overflow(u, (uint64_t)(*r->p - '0'), &u);
		r->p++;
	}
	if (r->p < r->end && *r->p == '.') {
		is_int = false;
		r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return bad(r, "expected a digit after '.'");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p | 0x20) == 'e') {
		is_int = false;
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return bad(r, "expected a digit in an exponent");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (m != NULL) {
		m->type = is_int ? GM_CTRLREQ_V_INT : GM_CTRLREQ_V_OTHER;
		m->u = u;
		m->overflow = over || (neg && u != 0);
	}
	return GM_OK;
}

static int literal(struct reader *r, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
		return bad(r, "expected a value");
	r->p += n;
	return GM_OK;
}

static int value(struct reader *r, gm_ctrlreq_member *m);

/* The next code point of a string that the first pass has read whole,
 * with t->p inside it; UINT32_MAX at its closing quote. */
static uint32_t next_cp(struct reader *t)
{
	uint32_t c = *t->p;

	if (c == '"')
		return UINT32_MAX;
	if (c == '\\') {
		t->p++;
		(void)escape(t, &c); /* valid: read once already */
		return c;
	}
	t->p += utf8_cp(t->p, t->end, &c);
	return c;
}

/* Whether the strings whose opening quotes are at byte offsets a and b
 * decode to the same text ("a" and "\u0061" do). */
static bool same_name(const struct reader *r, size_t a, size_t b)
{
	struct reader x = {.start = r->start,
			   .p = r->start + a + 1,
			   .end = r->end},
		      y = {.start = r->start,
			   .p = r->start + b + 1,
			   .end = r->end};
	uint32_t c;

	while ((c = next_cp(&x)) == next_cp(&y))
		if (c == UINT32_MAX)
			return true;
	return false;
}

/* Notes the name just read, m's, whose quote is at byte at, among the
 * names of its object (those from first on); EJSON when it is one of
 * them already. */
static int note_name(struct reader *r, unsigned first, size_t at,
		     const gm_ctrlreq_member *m)
{
	unsigned s = home(r->hash), i;

	/* Names before first are of the objects around this one. */
	for (; (i = r->slot[s]) != 0; s = (s + 1) % SLOTS)
		if (i - 1 >= first && r->seen[i - 1].hash == r->hash &&
		    same_name(r, r->seen[i - 1].at, at))
			return gm_proto_fail(
			    GM_EJSON, r->msg, r->msglen,
			    "JSON: member \"%s%s\" twice (byte %zu)", m->name,
			    m->long_name ? "..." : "", at);
	r->slot[s] = (uint16_t)(r->nseen + 1);
	r->seen[r->nseen++] = (struct seen){r->hash, at};
	return GM_OK;
}

/* Forgets the names of the object that closes, those from first on.
 * Taken out of the table in the reverse order they went in, they leave
 * it as it was before them: every probe that passed over one of their
 * slots was a later name's, gone already. */
static void forget_names(struct reader *r, unsigned first)
{
	while (r->nseen > first) {
		unsigned i = --r->nseen, s = home(r->seen[i].hash);

		while (r->slot[s] != i + 1)
			s = (s + 1) % SLOTS;
		r->slot[s] = 0;
	}
}

/* Members of an object; the top one (depth 1) notes them in top[]. Its
 * names are noted in r->seen while it is open, and forgotten when it
 * closes: siblings may share names, an object and one inside it too. */
static int object(struct reader *r, gm_ctrlreq_member *top, unsigned *ntop)
{
	unsigned first = r->nseen, count = 0;
	int rv;

	r->p++;
	for (;;) {
		gm_ctrlreq_member scratch, *m = &scratch;
		size_t len, at;

		skip_ws(r);
		if (r->p < r->end && *r->p == '}' && count == 0)
			break;
		if (r->p >= r->end || *r->p != '"')
			return bad(r, "expected a member name");
		if (count++ == GM_CTRLREQ_MEMBERS_MAX)
			return bad(r, "more than 256 members in an object");
		if (top != NULL)
			m = &top[(*ntop)++];
		memset(m, 0, sizeof(*m));
		at = (size_t)(r->p - r->start);
		if ((rv = string(r, m->name, sizeof(m->name), &len)) != 0)
			return rv;
		m->long_name = len > GM_CTRLREQ_NAME_MAX;
		if (m->long_name)
			trim_utf8(m->name);
		if ((rv = note_name(r, first, at, m)) != 0)
			return rv;
		skip_ws(r);
		if (r->p >= r->end || *r->p != ':')
			return bad(r, "expected ':'");
		r->p++;
		if ((rv = value(r, top != NULL ? m : NULL)) != 0)
			return rv;
		skip_ws(r);
		if (r->p < r->end && *r->p == '}')
			break;
		if (r->p >= r->end || *r->p != ',')
			return bad(r, "expected ',' or '}'");
		r->p++;
	}
	r->p++;
	forget_names(r, first);
	return GM_OK;
}

static int array(struct reader *r)
{
	bool first = true;
	int rv;

	r->p++;
	for (;;) {
		skip_ws(r);
		if (r->p < r->end && *r->p == ']' && first) {
			r->p++;
			return GM_OK;
		}
		if ((rv = value(r, NULL)) != 0)
			return rv;
		skip_ws(r);
		if (r->p < r->end && *r->p == ']') {
			r->p++;
			return GM_OK;
		}
		if (r->p >= r->end || *r->p != ',')
			return bad(r, "expected ',' or ']'");
		r->p++;
		first = false;
	}
}

/* A value; m (a member of the top object, or NULL) notes its type. */
static int value(struct reader *r, gm_ctrlreq_member *m)
{
	size_t len;
	int rv;

	skip_ws(r);
	if (r->p >= r->end)
		return bad(r, "expected a value");
	if (m != NULL)
		m->type = GM_CTRLREQ_V_OTHER;
	switch (*r->p) {
	case '{':
	case '[':
		if (++r->depth > GM_CTRLREQ_JSON_DEPTH_MAX)
			return bad(r, "nested more than 16 deep");
		rv = *r->p == '{' ? object(r, NULL, NULL) : array(r);
		r->depth--;
		return rv;
	case '"':
		if (m == NULL)
			return string(r, NULL, 0, &len);
		rv = string(r, m->s, sizeof(m->s), &len);
		m->type = GM_CTRLREQ_V_STRING;
		m->long_s = len > GM_CTRLREQ_NAME_MAX;
		return rv;
	case 't':
		return literal(r, "true");
	case 'f':
		return literal(r, "false");
	case 'n':
		return literal(r, "null");
	default:
		if (*r->p != '-' && (*r->p < '0' || *r->p > '9'))
			return bad(r, "expected a value");
		return number(r, m);
	}
}

int gm_ctrlreq_read_json(const uint8_t *body, size_t len,
			 gm_ctrlreq_member *top, unsigned *n, char *msg,
			 size_t msglen)
{
	struct seen seen[SEEN_MAX];
	uint16_t slot[SLOTS];
	struct reader r = {body,	body, body + len, msg, msglen, 1,
			   hash_seed(), 0,    seen,	  0,   slot};
	int rv;

	memset(slot, 0, sizeof(slot));
	*n = 0;
	if ((rv = check_utf8(&r)) != 0)
		return rv;
	skip_ws(&r);
	if (r.p >= r.end || *r.p != '{')
		return bad(&r, "the body must be one object");
	if ((rv = object(&r, top, n)) != 0)
		return rv;
	skip_ws(&r);
	if (r.p != r.end)
		return bad(&r, "bytes after the object");
	return GM_OK;
}
