/*
 * gm_statview.h - gemmctl's table of the daemon's stats document.
 *
 * A few header lines (version, engine, uptime, requests, jobs, queue,
 * pool, work), a rates table (1 s, 10 s, 60 s), a latency table (one row per
 * phase: count, p50, p90, p99, max), one line per device, the jobs per
 * dtype and the error counts on one line each. The keys it reads are
 * README.md's "Stats"; a key the daemon does not send (an older gemmd)
 * shows as "-", never as an error.
 */
#ifndef GM_STATVIEW_H
#define GM_STATVIEW_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* gm_statview_print's flags: device names whole and each stream's busy
 * share, in lines as long as they need; without it every line fits 80
 * columns, a long device name is abbreviated and the streams are
 * summed up as their number and the least and most busy one. */
#define GM_STATVIEW_WIDE 0x1u

/*
 * Writes the table of stats (the object inside {"ok":true,"stats":...})
 * to out. With prev, the document of an earlier refresh, the device
 * busy and overlap figures are over the time between the two; without,
 * they are since the daemon started.
 */
void gm_statview_print(FILE *out, const cJSON *stats, const cJSON *prev,
		       unsigned flags);

/* The number at a dotted path of a stats document ("jobs.ok",
 * "latency_us.total.mean"), or NAN when there is none. */
double gm_statview_num(const cJSON *stats, const char *path);

#endif
