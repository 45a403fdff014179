/*
 * gm_hist.c - log-spaced latency histograms: bucket arithmetic and
 * quantile estimates.
 */
#include "gm_hist.h"

#include <math.h>
#include <string.h>

#define FINITE (GM_HIST_BUCKETS - 1) /* buckets with a finite bound */

/*
 * 10^(i/10) for i = 0..80, each the double nearest the exact value.
 * They are literals rather than pow() results so that bucket edges are
 * the same on every libm and a value equal to an edge always lands in
 * the bucket that edge closes.
 */
static const double bounds[] = {
    /* 1e0 */ 1,	1.2589254117941673, 1.5848931924611134,
    1.9952623149688795, 2.51188643150958,   3.1622776601683795,
    3.9810717055349727, 5.011872336272723,  6.3095734448019325,
    7.943282347242815,
    /* 1e1 */ 10,	12.589254117941673, 15.848931924611135,
    19.952623149688797, 25.118864315095802, 31.622776601683793,
    39.81071705534973,	50.11872336272723,  63.09573444801932,
    79.43282347242815,
    /* 1e2 */ 100,	125.89254117941672, 158.48931924611134,
    199.52623149688796, 251.188643150958,   316.22776601683796,
    398.10717055349727, 501.1872336272723,  630.9573444801932,
    794.3282347242815,
    /* 1e3 */ 1000,	1258.9254117941673, 1584.8931924611136,
    1995.2623149688795, 2511.8864315095802, 3162.2776601683795,
    3981.0717055349724, 5011.872336272723,  6309.573444801932,
    7943.282347242815,
    /* 1e4 */ 10000,	12589.254117941671, 15848.931924611135,
    19952.623149688796, 25118.8643150958,   31622.776601683792,
    39810.71705534973,	50118.72336272723,  63095.73444801933,
    79432.82347242815,
    /* 1e5 */ 100000,	125892.54117941672, 158489.31924611135,
    199526.23149688795, 251188.643150958,   316227.7660168379,
    398107.1705534973,	501187.2336272723,  630957.3444801932,
    794328.2347242815,
    /* 1e6 */ 1000000,	1258925.4117941672, 1584893.1924611134,
    1995262.3149688796, 2511886.43150958,   3162277.6601683795,
    3981071.7055349727, 5011872.336272723,  6309573.444801932,
    7943282.347242815,
    /* 1e7 */ 10000000, 12589254.117941672, 15848931.924611134,
    19952623.149688795, 25118864.3150958,   31622776.60168379,
    39810717.05534972,	50118723.362727225, 63095734.448019326,
    79432823.47242814,
    /* 1e8 */ 100000000};

_Static_assert(sizeof(bounds) / sizeof(bounds[0]) == FINITE,
	       "one bound per finite bucket");

void gm_hist_init(gm_hist *h)
{
	memset(h, 0, sizeof(*h));
}

/* log10 alone is a rounding error away from the right bucket when us
 * sits on an edge, so the literal bounds have the last word. */
static unsigned bucket_of(double us)
{
	double l;
	unsigned i;

	if (!(us > 1.0))
		return 0;
	if (us > bounds[FINITE - 1])
		return GM_HIST_BUCKETS - 1;
	l = ceil(GM_HIST_PER_DECADE * log10(us));
	i = l < 1 ? 1 : l > FINITE - 1 ? FINITE - 1 : (unsigned)l;
	if (us <= bounds[i - 1])
		i--;
	else if (us > bounds[i])
		i++;
	return i;
}

void gm_hist_add(gm_hist *h, double us)
{
	if (!(us > 0))
		us = 0;
	h->count++;
	h->sum += us;
	if (us > h->max)
		h->max = us;
	h->b[bucket_of(us)]++;
}

double gm_hist_upper(unsigned i)
{
	return i < FINITE ? bounds[i] : INFINITY;
}

double gm_hist_quantile(const gm_hist *h, double q)
{
	double rank, frac, lo, hi, v;
	uint64_t below = 0;
	unsigned i;

	if (h->count == 0)
		return 0;
	q = q > 1 ? 1 : q > 0 ? q : 0;
	rank = q * (double)h->count;
	/* The first bucket that reaches the rank; q = 0 finds the first
	 * one that holds anything. */
	for (i = 0; i < GM_HIST_BUCKETS - 1; i++) {
		if (h->b[i] != 0 && (double)(below + h->b[i]) >= rank)
			break;
		below += h->b[i];
	}
	frac = (rank - (double)below) / (double)h->b[i];
	lo = i == 0 ? 0 : bounds[i - 1];
	hi = fmin(gm_hist_upper(i), h->max);
	v = i == 0 ? lo + (hi - lo) * frac : lo * pow(hi / lo, frac);
	/* pow() can land an ulp past hi at the top of a bucket. */
	return fmin(v, hi);
}

void gm_hist_merge(gm_hist *into, const gm_hist *from)
{
	into->count += from->count;
	into->sum += from->sum;
	if (from->max > into->max)
		into->max = from->max;
	for (unsigned i = 0; i < GM_HIST_BUCKETS; i++)
		into->b[i] += from->b[i];
}
