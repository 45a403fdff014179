/*
 * gm_timeline.c - unions and intersections of a busy period's copy
 * and kernel intervals; see gm_timeline.h.
 */
#include "gm_timeline.h"

#include <stdlib.h>

/* Past this many intervals of one kind a period is folded early: the
 * totals then miss overlaps across the cut, a small error for a bounded
 * amount of memory. */
#define TL_MAX 65536

static int by_start(const void *x, const void *y)
{
	const struct gm_tl_iv *p = x;
	const struct gm_tl_iv *q = y;

	return (p->a > q->a) - (p->a < q->a);
}

/* Sorts and merges v[0..n-1] in place into disjoint intervals; returns
 * how many there are and adds their total length to *len. */
static size_t merge(struct gm_tl_iv *v, size_t n, double *len)
{
	size_t m = 0;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), by_start);
	for (size_t i = 1; i < n; i++) {
		if (v[i].a <= v[m].b) {
			if (v[i].b > v[m].b)
				v[m].b = v[i].b;
		} else {
			v[++m] = v[i];
		}
	}
	for (size_t i = 0; i <= m; i++)
		*len += v[i].b - v[i].a;
	return m + 1;
}

/* Length of the intersection of two sorted lists of disjoint intervals. */
static double intersect(const struct gm_tl_iv *p, size_t np,
			const struct gm_tl_iv *q, size_t nq)
{
	double len = 0;
	size_t i = 0, j = 0;

	while (i < np && j < nq) {
		double a = p[i].a > q[j].a ? p[i].a : q[j].a;
		double b = p[i].b < q[j].b ? p[i].b : q[j].b;

		if (b > a)
			len += b - a;
		if (p[i].b < q[j].b)
			i++;
		else
			j++;
	}
	return len;
}

void gm_tl_fold(struct gm_timeline *t)
{
	size_t nc =
	    merge(t->iv[GM_TL_COPY], t->n[GM_TL_COPY], &t->busy_us[GM_TL_COPY]);
	size_t nk = merge(t->iv[GM_TL_KERNEL], t->n[GM_TL_KERNEL],
			  &t->busy_us[GM_TL_KERNEL]);

	t->overlap_us +=
	    intersect(t->iv[GM_TL_COPY], nc, t->iv[GM_TL_KERNEL], nk);
	gm_tl_discard(t);
}

void gm_tl_add(struct gm_timeline *t, int kind, double a, double b)
{
	struct gm_tl_iv *v;
	size_t cap;

	if (!(a >= 0 && b >= a))
		return; /* untimed */
	if (t->n[kind] == TL_MAX)
		gm_tl_fold(t);
	if (t->n[kind] == t->cap[kind]) {
		cap = t->cap[kind] ? 2 * t->cap[kind] : 64;
		v = realloc(t->iv[kind], cap * sizeof(*v));
		if (v == NULL)
			return;
		t->iv[kind] = v;
		t->cap[kind] = cap;
	}
	t->iv[kind][t->n[kind]++] = (struct gm_tl_iv){a, b};
}

void gm_tl_discard(struct gm_timeline *t)
{
	for (int k = 0; k < GM_TL_KINDS; k++)
		t->n[k] = 0;
}

void gm_tl_free(struct gm_timeline *t)
{
	for (int k = 0; k < GM_TL_KINDS; k++) {
		free(t->iv[k]);
		t->iv[k] = NULL;
		t->n[k] = t->cap[k] = 0;
	}
}

void gm_tl_shown_init(struct gm_tl_shown *s, double now)
{
	s->shown = 0;
	s->at = now;
}

double gm_tl_show(struct gm_tl_shown *s, double total, double now)
{
	double most = s->shown + (now > s->at ? now - s->at : 0);
	double v = total < most ? total : most;

	if (v > s->shown)
		s->shown = v;
	s->at = now > s->at ? now : s->at;
	return s->shown;
}
