/*
 * gm_share.c - the principals' shares, in a hash table by name; see
 * gm_share.h.
 */
#include "gm_share.h"

#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

/* Principals are a few per host, at most one per connection: chains
 * stay short at max_connections' default. */
#define NBUCKETS 256

struct gm_shares {
	gm_share *bucket[NBUCKETS];
	uint64_t n;
};

/* FNV-1a: names are short and chosen by clients only through their
 * uid or certificate, so a plain hash will do. */
static unsigned bucket_of(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % NBUCKETS;
}

int gm_shares_create(gm_shares **out)
{
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return GM_ENOMEM;
	return GM_OK;
}

void gm_shares_destroy(gm_shares *t)
{
	gm_share *s, *next;

	if (t == NULL)
		return;
	/* Held by connections a daemon exits with unfreed: they are left
	 * for the process's exit, their shares are not. */
	for (unsigned i = 0; i < NBUCKETS; i++)
		for (s = t->bucket[i]; s != NULL; s = next) {
			next = s->next;
			free(s);
		}
	free(t);
}

gm_share *gm_shares_hold(gm_shares *t, const char *name)
{
	gm_share **b = &t->bucket[bucket_of(name)], *s;
	size_t len = strlen(name);

	for (s = *b; s != NULL; s = s->next)
		if (strcmp(s->name, name) == 0) {
			s->refs++;
			return s;
		}
	if ((s = calloc(1, sizeof(*s) + len + 1)) == NULL)
		return NULL;
	memcpy(s->name, name, len + 1);
	s->refs = 1;
	s->next = *b;
	*b = s;
	t->n++;
	return s;
}

gm_share *gm_share_hold(gm_share *s)
{
	s->refs++;
	return s;
}

void gm_shares_release(gm_shares *t, gm_share *s)
{
	gm_share **p;

	if (s == NULL || --s->refs > 0)
		return;
	for (p = &t->bucket[bucket_of(s->name)]; *p != s; p = &(*p)->next)
		;
	*p = s->next;
	t->n--;
	free(s);
}

uint64_t gm_shares_count(const gm_shares *t)
{
	return t->n;
}

uint64_t gm_share_cap(uint64_t total, unsigned percent)
{
	uint64_t cap = total / 100 * percent + total % 100 * percent / 100;

	return cap > 0 ? cap : 1;
}
