/*
 * gmc_idmap.c - request ids to what is in flight; see gmc_idmap.h.
 */
#include "gmc_idmap.h"

#include <stdlib.h>

#include "gm_error.h"

/* Ids come from a counter: a multiplicative hash spreads them. */
static size_t home(const gmc_idmap *m, uint64_t id)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);
}

static int grow(gmc_idmap *m)
{
	size_t cap = m->cap ? 2 * m->cap : 64;
	gmc_idmap_slot *old = m->slots, *s = calloc(cap, sizeof(*s));
	size_t oldcap = m->cap;

	if (s == NULL)
		return GM_ENOMEM;
	m->slots = s;
	m->cap = cap;
	m->n = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].id != 0)
			gmc_idmap_put(m, old[i].id, old[i].value);
	free(old);
	return GM_OK;
}

int gmc_idmap_put(gmc_idmap *m, uint64_t id, void *value)
{
	size_t i;

	/* At most half full: probes stay short. */
	if (2 * (m->n + 1) > m->cap && grow(m) != GM_OK)
		return GM_ENOMEM;
	for (i = home(m, id); m->slots[i].id != 0; i = (i + 1) & (m->cap - 1))
		;
	m->slots[i] = (gmc_idmap_slot){id, value};
	m->n++;
	return GM_OK;
}

static size_t find(const gmc_idmap *m, uint64_t id)
{
	if (m->cap == 0)
		return SIZE_MAX;
	for (size_t i = home(m, id); m->slots[i].id != 0;
	     i = (i + 1) & (m->cap - 1))
		if (m->slots[i].id == id)
			return i;
	return SIZE_MAX;
}

void *gmc_idmap_get(const gmc_idmap *m, uint64_t id)
{
	size_t i = find(m, id);

	return i == SIZE_MAX ? NULL : m->slots[i].value;
}

void gmc_idmap_del(gmc_idmap *m, uint64_t id)
{
	size_t mask = m->cap - 1, i = find(m, id), j;

	if (i == SIZE_MAX)
		return;
	m->slots[i].id = 0;
	m->n--;
	/* Moves back each later entry of the run that the hole now keeps
	 * from its home slot. */
	for (j = (i + 1) & mask; m->slots[j].id != 0; j = (j + 1) & mask) {
		size_t h = home(m, m->slots[j].id);

		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			m->slots[j].id = 0;
			i = j;
		}
	}
}

void gmc_idmap_free(gmc_idmap *m)
{
	free(m->slots);
	*m = (gmc_idmap){0};
}
