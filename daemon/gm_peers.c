/*
 * gm_peers.c - connection counts by peer; see gm_peers.h. Chained
 * buckets, doubled when entries outnumber them.
 */
#include "gm_peers.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

#define MIN_BUCKETS 64u

typedef struct entry {
	char key[GM_PEER_KEY];
	uint64_t count;
	struct entry *next;
} entry;

struct gm_peers {
	entry **b;
	uint64_t nb, n;
};

int gm_peers_create(gm_peers **out)
{
	gm_peers *t = calloc(1, sizeof(*t));

	if (t == NULL || (t->b = calloc(MIN_BUCKETS, sizeof(*t->b))) == NULL) {
		free(t);
		return GM_ENOMEM;
	}
	t->nb = MIN_BUCKETS;
	*out = t;
	return GM_OK;
}

void gm_peers_destroy(gm_peers *t)
{
	if (t == NULL)
		return;
	for (uint64_t i = 0; i < t->nb; i++)
		while (t->b[i] != NULL) {
			entry *e = t->b[i];

			t->b[i] = e->next;
			free(e);
		}
	free(t->b);
	free(t);
}

/* The key of an IPv4 address a (network order). */
static void key_v4(const uint8_t a[4], char key[GM_PEER_KEY])
{
	if (a[0] == 127)
		snprintf(key, GM_PEER_KEY, "addr loopback");
	else
		snprintf(key, GM_PEER_KEY, "addr %u.%u.%u.%u", a[0], a[1], a[2],
			 a[3]);
}

/* The key of the address text addr, as gm_stream writes it. */
static void key_addr(const char *addr, char key[GM_PEER_KEY])
{
	static const uint8_t loop6[16] = {[15] = 1};
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	uint8_t a[16];

	if (inet_pton(AF_INET, addr, a) == 1) {
		key_v4(a, key);
	} else if (inet_pton(AF_INET6, addr, a) != 1) {
		snprintf(key, GM_PEER_KEY, "addr %s", addr);
	} else if (memcmp(a, loop6, 16) == 0) {
		snprintf(key, GM_PEER_KEY, "addr loopback");
	} else if (memcmp(a, mapped, 12) == 0) {
		key_v4(a + 12, key);
	} else {
		snprintf(key, GM_PEER_KEY, "net6 %x:%x:%x:%x::/64",
			 a[0] << 8 | a[1], a[2] << 8 | a[3], a[4] << 8 | a[5],
			 a[6] << 8 | a[7]);
	}
}

void gm_peers_key(const gm_peer *p, char key[GM_PEER_KEY])
{
	if (p->kind == GM_URL_IPC && p->has_cred)
		snprintf(key, GM_PEER_KEY, "uid %" PRIu64, p->uid);
	else if (p->kind != GM_URL_IPC && p->addr[0] != '\0')
		key_addr(p->addr, key);
	else
		key[0] = '\0';
}

/* FNV-1a. */
static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s != '\0')
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static entry **slot(const gm_peers *t, const char *key)
{
	entry **e = &t->b[hash(key) & (t->nb - 1)];

	while (*e != NULL && strcmp((*e)->key, key) != 0)
		e = &(*e)->next;
	return e;
}

uint64_t gm_peers_count(const gm_peers *t, const char *key)
{
	entry *e = *slot(t, key);

	return e != NULL ? e->count : 0;
}

/* Doubles the buckets; stays as it is when that cannot be had. */
static void grow(gm_peers *t)
{
	uint64_t nb = t->nb * 2;
	entry **b = calloc(nb, sizeof(*b));

	if (b == NULL)
		return;
	for (uint64_t i = 0; i < t->nb; i++)
		while (t->b[i] != NULL) {
			entry *e = t->b[i];

			t->b[i] = e->next;
			e->next = b[hash(e->key) & (nb - 1)];
			b[hash(e->key) & (nb - 1)] = e;
		}
	free(t->b);
	t->b = b;
	t->nb = nb;
}

int gm_peers_add(gm_peers *t, const char *key)
{
	entry **s = slot(t, key);

	if (*s == NULL) {
		if ((*s = calloc(1, sizeof(**s))) == NULL)
			return GM_ENOMEM;
		snprintf((*s)->key, sizeof((*s)->key), "%s", key);
		t->n++;
	}
	(*s)->count++;
	if (t->n > t->nb)
		grow(t);
	return GM_OK;
}

void gm_peers_del(gm_peers *t, const char *key)
{
	entry **s = slot(t, key), *e = *s;

	if (e == NULL || --e->count != 0)
		return;
	*s = e->next;
	free(e);
	t->n--;
}
