/*
 * gm_timeline.h - where a device's time went: the union of the
 * intervals in which some copy ran, in which some kernel ran, and in
 * which both did, for the copy/compute overlap the stats report.
 *
 * Intervals come from each job's events, timed against the start of the
 * device's busy period, so they are device time. They are collected
 * while a busy period lasts and folded into the totals when it ends (or
 * when too many have piled up), since a union needs them all at once.
 * Plain C, so it is built and tested without CUDA. Not locked: the
 * device's mutex guards a timeline.
 */
#ifndef GM_TIMELINE_H
#define GM_TIMELINE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gm_tl_kind { GM_TL_COPY, GM_TL_KERNEL, GM_TL_KINDS };

struct gm_tl_iv {
	double a, b; /* µs after the busy period's start, a <= b */
};

struct gm_timeline {
	struct gm_tl_iv *iv[GM_TL_KINDS];
	size_t n[GM_TL_KINDS], cap[GM_TL_KINDS];
	double busy_us[GM_TL_KINDS]; /* folded unions, per kind */
	double overlap_us;	     /* folded intersection of the two */
};

/* Records [a, b] of kind; an interval that cannot be stored (no memory)
 * is dropped, which only makes the totals smaller. */
void gm_tl_add(struct gm_timeline *t, int kind, double a, double b);

/* Folds the collected intervals into the totals and forgets them. */
void gm_tl_fold(struct gm_timeline *t);

/* Forgets the collected intervals without counting them (a busy period
 * that could not be timed on the device). */
void gm_tl_discard(struct gm_timeline *t);

/* Frees the interval arrays. */
void gm_tl_free(struct gm_timeline *t);

/*
 * A busy-time counter as a reader sees it. Device-timed totals become
 * known only when work ends (a job's span when it is released, the
 * unions when a busy period is folded), so a total read twice can jump
 * by more than the time between the reads. What is shown never goes
 * back and never grows faster than the wall clock: a jump is let out
 * over the time that follows. Read under the lock that guards it.
 */
struct gm_tl_shown {
	double shown; /* µs, last shown */
	double at;    /* host clock when it was, or when counting began */
};

/* Starts counting at now (µs, host clock): nothing shown yet. */
void gm_tl_shown_init(struct gm_tl_shown *s, double now);

/* What to show at now for a total that stands at total: total, held
 * between what was shown last and that plus the time since. */
double gm_tl_show(struct gm_tl_shown *s, double total, double now);

#ifdef __cplusplus
}
#endif
#endif
