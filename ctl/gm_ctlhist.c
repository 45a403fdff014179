/*
 * gm_ctlhist.c - log-spaced histograms for gemmctl bench; see
 * gm_ctlhist.h.
 */
#include "gm_ctlhist.h"

#include <math.h>
#include <string.h>

#define LAST  (GM_CTLHIST_BUCKETS - 1)
#define EDGE0 1e-2 /* 10^GM_CTLHIST_LOWEST */

void gm_ctlhist_init(gm_ctlhist *h)
{
	memset(h, 0, sizeof(*h));
}

/* A value on an edge may land in the bucket next to it through log10's
 * rounding: a difference far below the bucket's width. */
static unsigned bucket_of(double us)
{
	double l;

	if (!(us > EDGE0))
		return 0;
	l = ceil(GM_CTLHIST_PER_DECADE * (log10(us) - GM_CTLHIST_LOWEST));
	return l >= LAST ? LAST : l < 1 ? 1 : (unsigned)l;
}

void gm_ctlhist_add(gm_ctlhist *h, double us)
{
	if (!(us > 0))
		us = 0;
	h->min = h->count == 0 || us < h->min ? us : h->min;
	h->max = us > h->max ? us : h->max;
	h->count++;
	h->sum += us;
	h->b[bucket_of(us)]++;
}

/* The middle of bucket i on a log scale; bucket 0 and the last have
 * one finite edge, and the clamp to min and max does the rest. */
static double middle(unsigned i)
{
	if (i == 0)
		return EDGE0;
	if (i == LAST)
		return pow(10, GM_CTLHIST_DECADES + GM_CTLHIST_LOWEST);
	return pow(10, (i - 0.5) / GM_CTLHIST_PER_DECADE + GM_CTLHIST_LOWEST);
}

double gm_ctlhist_quantile(const gm_ctlhist *h, double q)
{
	uint64_t rank, seen = 0;
	double v;
	unsigned i;

	if (h->count == 0)
		return 0;
	q = q < 0 ? 0 : q > 1 ? 1 : q;
	rank = (uint64_t)ceil(q * (double)h->count);
	rank = rank < 1 ? 1 : rank;
	if (rank == h->count)
		return h->max;
	for (i = 0; i < LAST && seen + h->b[i] < rank; i++)
		seen += h->b[i];
	v = middle(i);
	return v < h->min ? h->min : v > h->max ? h->max : v;
}

double gm_ctlhist_mean(const gm_ctlhist *h)
{
	return h->count ? h->sum / (double)h->count : 0;
}
