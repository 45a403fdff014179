/*
 * gm_ctlhist.h - gemmctl bench's latency histograms: percentiles of any
 * number of samples in constant memory.
 *
 * Values are microseconds. Buckets are log-spaced, a hundred per decade
 * from 0.01 µs to 1e10 µs (about 2.8 hours): bucket i, 1 <= i <= 1200,
 * holds the values in (10^((i-1)/100 - 2), 10^(i/100 - 2)]; bucket 0
 * holds everything up to 0.01 µs and the last everything beyond 1e10
 * µs. A
 * percentile is the geometric middle of the bucket it falls in, kept
 * within the smallest and largest value added: within about 1.2% of a
 * sample's value, which is finer than run-to-run noise, so a run of
 * hours needs no more memory than a run of seconds (the daemon's own
 * histograms are ten times coarser: they are exported whole). Count,
 * sum, min and max are exact. A gm_ctlhist is a plain struct: zero it
 * with gm_ctlhist_init. Not locked.
 */
#ifndef GM_CTLHIST_H
#define GM_CTLHIST_H

#include <stdint.h>

#define GM_CTLHIST_PER_DECADE 100
#define GM_CTLHIST_DECADES    12
#define GM_CTLHIST_LOWEST     (-2) /* log10 of the first bucket's edge */
#define GM_CTLHIST_BUCKETS    (GM_CTLHIST_PER_DECADE * GM_CTLHIST_DECADES + 2)

typedef struct gm_ctlhist {
	uint64_t count;
	double sum, min, max; /* µs; min and max 0 when empty */
	uint64_t b[GM_CTLHIST_BUCKETS];
} gm_ctlhist;

/* Empties h. */
void gm_ctlhist_init(gm_ctlhist *h);

/* Counts one value of us microseconds; negative and NaN count as 0. */
void gm_ctlhist_add(gm_ctlhist *h, double us);

/* The value at fraction q (0..1, clamped) of the sorted values, by
 * nearest rank (q 0.5: the median; 1: the largest), to within a bucket;
 * 0 when h is empty. */
double gm_ctlhist_quantile(const gm_ctlhist *h, double q);

/* The mean; 0 when h is empty. */
double gm_ctlhist_mean(const gm_ctlhist *h);

#endif
