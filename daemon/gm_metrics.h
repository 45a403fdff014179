/*
 * gm_metrics.h - the stats in Prometheus's text exposition format.
 *
 * The same gm_stats and gm_stats_live the JSON document is rendered
 * from (gm_stats_render), rendered here for a Prometheus scrape of
 * /metrics: counters, gauges, and the latency histograms as Prometheus
 * histograms in seconds. Metric names and labels are an API like the
 * JSON keys (README.md, "Prometheus"): add, never rename.
 */
#ifndef GM_METRICS_H
#define GM_METRICS_H

#include "gm_stats.h"

/* What a scrape's response says its body is. */
#define GM_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Renders every metric (malloc'd text, caller frees), or NULL when out
 * of memory. Loop thread, like everything that reads s. */
char *gm_metrics_render(const gm_stats *s, const gm_stats_live *live);

#endif
