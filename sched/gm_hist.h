/*
 * gm_hist.h - latency histograms in constant memory.
 *
 * Values are microseconds. Buckets are log-spaced, ten per decade from
 * 1 µs to 1e8 µs (100 s): bucket i holds values in
 * (gm_hist_upper(i - 1), gm_hist_upper(i)] with gm_hist_upper(i) =
 * 10^(i/10); bucket 0 holds everything up to 1 µs and the last bucket
 * everything above 1e8 µs. Quantiles are therefore exact to within one
 * bucket, a factor of 10^0.1 (about 26%), and never above the largest
 * value added. A gm_hist is a plain struct with no pointers: zero it
 * with gm_hist_init, copy it by assignment. Not locked; the daemon
 * writes its histograms on the loop thread only.
 */
#ifndef GM_HIST_H
#define GM_HIST_H

#include <stdint.h>

#define GM_HIST_PER_DECADE 10
#define GM_HIST_DECADES	   8 /* 1 µs .. 1e8 µs */
/* <= 1 µs, one per tenth of a decade up to 1e8 µs, then +Inf */
#define GM_HIST_BUCKETS (GM_HIST_DECADES * GM_HIST_PER_DECADE + 2)

typedef struct gm_hist {
	uint64_t count; /* values added */
	double sum;	/* their sum, µs */
	double max;	/* the largest, µs; 0 when empty */
	uint64_t b[GM_HIST_BUCKETS];
} gm_hist;

/* Empties h. */
void gm_hist_init(gm_hist *h);

/* Counts one value of us microseconds; negative and NaN count as 0.
 * Constant time: no loop over the buckets. */
void gm_hist_add(gm_hist *h, double us);

/*
 * The value below which a fraction q (0..1, clamped) of the values lie,
 * interpolated geometrically inside its bucket (linearly in bucket 0,
 * which reaches down to 0) and capped at h->max. 0 when h is empty.
 */
double gm_hist_quantile(const gm_hist *h, double q);

/* Upper bound of bucket i in µs, INFINITY for the last: the "le" label
 * of a Prometheus histogram. */
double gm_hist_upper(unsigned i);

/* Adds every value counted in from to into (e.g. per-device into total). */
void gm_hist_merge(gm_hist *into, const gm_hist *from);

#endif
