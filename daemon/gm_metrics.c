/*
 * gm_metrics.c - rendering the stats for Prometheus. The metric names
 * are listed in README.md ("Prometheus"); each family is written whole
 * (HELP, TYPE, then its samples) because the format wants a family's
 * samples together.
 */
#include "gm_metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "gm_build.h"
#include "gm_procstat.h"

static const char *const phase_names[GM_PHASE_COUNT] = {
    "queue", "h2d", "kernel", "d2h", "total"};

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with the three characters the format escapes. */
static void label_value(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* One sample of a family with no labels. */
static void single(FILE *f, const char *name, const char *type,
		   const char *help, double v)
{
	family(f, name, type, help);
	fprintf(f, "%s %.17g\n", name, v);
}

/* A counter family with one sample per reason. */
static void by_reason(FILE *f, const char *name, const char *help,
		      const char *const *names, const uint64_t *v, int n)
{
	family(f, name, "counter", help);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s{reason=\"%s\"} %" PRIu64 "\n", name, names[i],
			v[i]);
}

static void put_info(FILE *f, const gm_stats *s, const gm_stats_live *l)
{
	family(f, "gemmd_build_info", "gauge",
	       "Always 1; the labels say the version, the engine and how "
	       "many devices it serves (gemmd_device_info names them).");
	fprintf(f, "gemmd_build_info{version=\"");
	label_value(f, GEMMD_VERSION);
	fprintf(f, "\",engine=\"");
	label_value(f, l->engine);
	fprintf(f, "\",devices=\"%u\"} 1\n",
		l->eng != NULL ? gm_engine_devices(l->eng) : 0);
	single(f, "gemmd_uptime_seconds", "gauge",
	       "Seconds since gemmd started.",
	       (gm_clock_now_us() - s->start_us) / 1e6);
	single(f, "gemmd_draining", "gauge",
	       "1 while gemmd refuses new jobs (drained, or stopping), else 0.",
	       l->draining ? 1 : 0);
}

/* The names every Prometheus exporter gives its process. */
static void put_process(FILE *f)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} rows[] = {
	    {"process_cpu_seconds_total", "counter",
	     "User and system CPU time spent, in seconds.",
	     offsetof(gm_procstat, cpu_seconds)},
	    {"process_resident_memory_bytes", "gauge",
	     "Resident memory size in bytes.",
	     offsetof(gm_procstat, resident_bytes)},
	    {"process_virtual_memory_bytes", "gauge",
	     "Virtual memory size in bytes.",
	     offsetof(gm_procstat, virtual_bytes)},
	    {"process_open_fds", "gauge", "Number of open file descriptors.",
	     offsetof(gm_procstat, open_fds)},
	    {"process_max_fds", "gauge",
	     "Maximum number of open file descriptors.",
	     offsetof(gm_procstat, max_fds)},
	    {"process_start_time_seconds", "gauge",
	     "Start time of the process since the epoch, in seconds.",
	     offsetof(gm_procstat, start_time_s)},
	};
	gm_procstat p;

	gm_procstat_read(&p);
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		double v = *(const double *)((const char *)&p + rows[i].off);

		/* What could not be read is left out, not reported as 0. */
		if (v >= 0)
			single(f, rows[i].name, rows[i].type, rows[i].help, v);
	}
}

static void put_requests(FILE *f, const gm_stats *s, const gm_stats_live *l)
{
	family(f, "gemmd_requests_total", "counter",
	       "Requests accepted: GEMM batches and control requests.");
	fprintf(f, "gemmd_requests_total{type=\"gemm\"} %" PRIu64 "\n",
		s->requests);
	fprintf(f, "gemmd_requests_total{type=\"ctrl\"} %" PRIu64 "\n",
		s->ctrl_requests);
	single(f, "gemmd_requests_refused_total", "counter",
	       "Requests refused whole: malformed, queue full, shutting down.",
	       (double)s->requests_refused);
	family(f, "gemmd_message_bytes_total", "counter",
	       "Bytes of requests received and replies sent.");
	fprintf(f, "gemmd_message_bytes_total{direction=\"in\"} %" PRIu64 "\n",
		s->bytes_in);
	fprintf(f, "gemmd_message_bytes_total{direction=\"out\"} %" PRIu64 "\n",
		s->bytes_out);
	single(f, "gemmd_contexts", "gauge",
	       "Room for requests in flight: what all connections may have "
	       "in the daemon at once (max_connections x "
	       "conn_max_inflight).",
	       (double)l->contexts);
	single(f, "gemmd_contexts_busy", "gauge",
	       "Requests in flight: in the daemon, read and not yet fully "
	       "answered (of gemmd_contexts).",
	       (double)l->requests_inflight);
	single(f, "gemmd_connections_open", "gauge", "Connections open now.",
	       (double)l->conns.open);
	single(f, "gemmd_connections_accepted_total", "counter",
	       "Connections accepted, refused ones included.",
	       (double)l->conns.accepted);
	by_reason(f, "gemmd_connections_refused_total",
		  "Connections refused as they came, by reason.",
		  gm_conn_refusal_names, l->conns.refused_by,
		  GM_CONN_REFUSAL_COUNT);
	by_reason(f, "gemmd_connections_dropped_total",
		  "Connections the daemon closed, by reason.",
		  gm_conn_drop_names, l->conns.dropped_by, GM_CONN_DROP_COUNT);
	single(f, "gemmd_connections_paused", "gauge",
	       "Connections not read now: back-pressure, or waiting for "
	       "pool room.",
	       (double)l->conns.paused);
	single(f, "gemmd_connections_unsent_bytes", "gauge",
	       "Reply bytes waiting to be written, over every connection.",
	       (double)l->conns.unsent_bytes);
	single(f, "gemmd_accept_pauses_total", "counter",
	       "Times a listener paused accepting (out of descriptors).",
	       (double)l->conns.accept_pauses);
	single(f, "gemmd_pool_waiting", "gauge",
	       "Requests waiting for room in the staging pool.",
	       (double)l->pool_waiting);
}

/* The HTTP endpoints themselves, this scrape's connection included. */
static void put_http(FILE *f, const gm_stats_http *h)
{
	single(f, "gemmd_http_connections_open", "gauge",
	       "HTTP connections open now.", (double)h->open);
	single(f, "gemmd_http_connections_accepted_total", "counter",
	       "HTTP connections accepted, refused ones included.",
	       (double)h->accepted);
	single(f, "gemmd_http_connections_refused_total", "counter",
	       "HTTP connections closed at once: http_max_connections were "
	       "open.",
	       (double)h->refused);
	by_reason(f, "gemmd_http_connections_closed_total",
		  "HTTP connections the daemon closed, by reason.",
		  gm_http_close_names, h->closed_by, GM_HTTP_CLOSE_COUNT);
	single(f, "gemmd_http_requests_total", "counter",
	       "HTTP requests answered.", (double)h->requests);
	single(f, "gemmd_metrics_renders_total", "counter",
	       "Times this text was rendered; scrapes within "
	       "metrics_cache_ms of one reuse it.",
	       (double)h->renders);
}

/* Every dtype's "ok" sample always, so that rates start from zero;
 * error statuses once they happened. */
static void put_jobs(FILE *f, const gm_stats *s)
{
	family(f, "gemmd_jobs_total", "counter",
	       "Jobs finished, by dtype and status (ok or the error name).");
	for (int d = 1; d < GM_DTYPE_SLOTS; d++)
		for (int c = 0; c < GM_ERR_COUNT; c++)
			if (c == 0 || s->jobs_by[d][c] != 0)
				fprintf(f,
					"gemmd_jobs_total{dtype=\"%s\","
					"status=\"%s\"} %" PRIu64 "\n",
					gm_dtype_name(d),
					c ? gm_errname(c) : "ok",
					s->jobs_by[d][c]);
	single(f, "gemmd_jobs_rejected_total", "counter",
	       "Jobs in requests refused because the queue was full.",
	       (double)s->jobs_rejected);
	family(f, "gemmd_errors_total", "counter",
	       "Failed jobs and refused requests, by error code.");
	for (int c = 1; c < GM_ERR_COUNT; c++)
		if (s->errors[c] != 0)
			fprintf(f,
				"gemmd_errors_total{code=\"%s\"} %" PRIu64 "\n",
				gm_errname(c), s->errors[c]);
}

static void put_work(FILE *f, const gm_stats *s)
{
	family(f, "gemmd_flops_total", "counter",
	       "Floating-point operations (2*m*n*k) of jobs that succeeded.");
	for (int d = 1; d < GM_DTYPE_SLOTS; d++)
		fprintf(f, "gemmd_flops_total{dtype=\"%s\"} %.17g\n",
			gm_dtype_name(d), s->flops_by_dtype[d]);
	family(f, "gemmd_bytes_total", "counter",
	       "Bytes of jobs that succeeded: operands to the device (h2d), "
	       "results back (d2h).");
	for (int d = 1; d < GM_DTYPE_SLOTS; d++) {
		fprintf(f,
			"gemmd_bytes_total{direction=\"h2d\",dtype=\"%s\"} "
			"%" PRIu64 "\n",
			gm_dtype_name(d), s->h2d_by_dtype[d]);
		fprintf(f,
			"gemmd_bytes_total{direction=\"d2h\",dtype=\"%s\"} "
			"%" PRIu64 "\n",
			gm_dtype_name(d), s->d2h_by_dtype[d]);
	}
}

static void put_queue(FILE *f, const gm_stats_live *l)
{
	family(f, "gemmd_queue_depth", "gauge", "Jobs waiting, by priority.");
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		fprintf(f, "gemmd_queue_depth{priority=\"%d\"} %" PRIu64 "\n",
			p, l->queued_prio[p]);
	single(f, "gemmd_queue_limit", "gauge", "Most jobs the queue holds.",
	       (double)l->queue_limit);
	single(f, "gemmd_jobs_inflight", "gauge", "Jobs on the engine now.",
	       (double)l->inflight);
	single(f, "gemmd_pool_used_bytes", "gauge",
	       "Host pool bytes holding jobs now.", (double)l->pool_used);
	single(f, "gemmd_pool_size_bytes", "gauge", "Host pool bytes.",
	       (double)l->pool_size);
	single(f, "gemmd_pool_slabs", "gauge", "Host pool slabs handed out.",
	       (double)l->pool_slabs);
}

static void put_pageable(FILE *f, const gm_pageable *p)
{
	single(f, "gemmd_pageable_bytes", "gauge",
	       "Pageable memory held by requests larger than the pool.",
	       (double)p->bytes);
	single(f, "gemmd_pageable_limit_bytes", "gauge",
	       "Most pageable memory such requests may hold at once.",
	       (double)p->limit);
	single(f, "gemmd_pageable_requests_total", "counter",
	       "Requests received into pageable memory.", (double)p->requests);
	family(f, "gemmd_pageable_refused_total", "counter",
	       "Requests larger than the pool refused: busy (the cap held "
	       "others), too_big (over the cap).");
	fprintf(f,
		"gemmd_pageable_refused_total{reason=\"busy\"} %" PRIu64 "\n",
		p->busy);
	fprintf(
	    f, "gemmd_pageable_refused_total{reason=\"too_big\"} %" PRIu64 "\n",
	    p->too_big);
}

/* One histogram of family name, its samples labelled label="value".
 * le bounds in seconds with 6 digits: one bucket is 26% wider than the
 * last, so they stay distinct, and the text is the same every scrape. */
static void put_hist(FILE *f, const char *name, const char *label,
		     const char *value, const gm_hist *h)
{
	uint64_t cum = 0;

	for (unsigned i = 0; i + 1 < GM_HIST_BUCKETS; i++) {
		cum += h->b[i];
		fprintf(f, "%s_bucket{%s=\"%s\",le=\"%.6g\"} %" PRIu64 "\n",
			name, label, value, gm_hist_upper(i) / 1e6, cum);
	}
	fprintf(f, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name,
		label, value, h->count);
	fprintf(f, "%s_sum{%s=\"%s\"} %.17g\n", name, label, value,
		h->sum / 1e6);
	fprintf(f, "%s_count{%s=\"%s\"} %" PRIu64 "\n", name, label, value,
		h->count);
}

static void put_latency(FILE *f, const gm_stats *s)
{
	char prio[8];

	family(f, "gemmd_job_phase_seconds", "histogram",
	       "Time of jobs that succeeded in each phase: queue wait (to "
	       "the first device operation or BLAS call), copies to and "
	       "from the device, kernel, and receive to reply.");
	for (int i = 0; i < GM_PHASE_COUNT; i++)
		put_hist(f, "gemmd_job_phase_seconds", "phase", phase_names[i],
			 &s->phase[i]);
	family(f, "gemmd_queue_wait_seconds", "histogram",
	       "Queue wait of jobs that succeeded (the queue phase), by the "
	       "priority of their request.");
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++) {
		snprintf(prio, sizeof(prio), "%d", p);
		put_hist(f, "gemmd_queue_wait_seconds", "priority", prio,
			 &s->queue_prio[p]);
	}
}

_Static_assert(GM_STATS_UIDS == 32, "put_uids' help says 32");

/* Jobs of ipc:// peers by uid: the first GM_STATS_UIDS uids seen, then
 * the rest as uid="other", so the series are bounded and stay put. */
static void put_uids(FILE *f, const gm_stats *s)
{
	const char *const fmt = "gemmd_uid_jobs_total{uid=\"%s\",status="
				"\"%s\"} %" PRIu64 "\n";
	char uid[24];

	family(f, "gemmd_uid_jobs_total", "counter",
	       "Jobs finished for ipc:// clients, by the client's uid (the "
	       "first 32 uids seen; later ones as \"other\") and status "
	       "(ok or failed).");
	for (unsigned i = 0; i <= s->nuids; i++) {
		const gm_stats_uid *u =
		    i < s->nuids ? &s->uids[i] : &s->other_uids;

		snprintf(uid, sizeof(uid), "%" PRIu64, u->uid);
		fprintf(f, fmt, i < s->nuids ? uid : "other", "ok", u->ok);
		fprintf(f, fmt, i < s->nuids ? uid : "other", "failed",
			u->failed);
	}
}

/* Per-device families, one sample per device (and stream). */
struct dev_metric {
	const char *name, *type, *help;
	double (*get)(const gm_device_stats *ds);
};

static double dev_jobs(const gm_device_stats *ds)
{
	return (double)ds->jobs;
}
static double dev_mem_used(const gm_device_stats *ds)
{
	return (double)ds->mem_used;
}
static double dev_mem_total(const gm_device_stats *ds)
{
	return (double)ds->mem_total;
}
static double dev_busy(const gm_device_stats *ds)
{
	return ds->busy_us / 1e6;
}
static double dev_kernel(const gm_device_stats *ds)
{
	return ds->kernel_us / 1e6;
}
static double dev_copy(const gm_device_stats *ds)
{
	return ds->copy_us / 1e6;
}
static double dev_overlap(const gm_device_stats *ds)
{
	return ds->overlap_us / 1e6;
}

static const struct dev_metric dev_metrics[] = {
    {"gemmd_device_jobs_total", "counter", "Jobs the device ran.", dev_jobs},
    {"gemmd_device_memory_used_bytes", "gauge",
     "Device pool bytes holding jobs now.", dev_mem_used},
    {"gemmd_device_memory_total_bytes", "gauge", "Device pool bytes.",
     dev_mem_total},
    {"gemmd_device_busy_seconds_total", "counter",
     "Time with at least one job on the device.", dev_busy},
    {"gemmd_device_kernel_seconds_total", "counter",
     "Time with at least one kernel running.", dev_kernel},
    {"gemmd_device_copy_seconds_total", "counter",
     "Time with at least one copy to or from the device running.", dev_copy},
    {"gemmd_device_overlap_seconds_total", "counter",
     "Time with a copy and a kernel running at once.", dev_overlap},
};

static void put_devices(FILE *f, gm_engine *e)
{
	unsigned n = e ? gm_engine_devices(e) : 0;
	gm_device_stats *ds = n ? calloc(n, sizeof(*ds)) : NULL;
	size_t k;

	if (ds == NULL)
		return;
	family(f, "gemmd_device_info", "gauge",
	       "Always 1; the labels name each device.");
	for (unsigned i = 0; i < n; i++) {
		gm_engine_device_stats(e, i, &ds[i]);
		fprintf(f, "gemmd_device_info{device=\"%u\",name=\"", i);
		label_value(f, ds[i].name);
		fprintf(f, "\"} 1\n");
	}
	for (k = 0; k < sizeof(dev_metrics) / sizeof(dev_metrics[0]); k++) {
		const struct dev_metric *m = &dev_metrics[k];

		family(f, m->name, m->type, m->help);
		for (unsigned i = 0; i < n; i++)
			fprintf(f, "%s{device=\"%u\"} %.17g\n", m->name, i,
				m->get(&ds[i]));
	}
	family(f, "gemmd_device_stream_busy_seconds_total", "counter",
	       "Time each stream of a device had a job on it.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < ds[i].nstreams && j < GM_MAX_STREAMS;
		     j++)
			fprintf(f,
				"gemmd_device_stream_busy_seconds_total"
				"{device=\"%u\",stream=\"%u\"} %.17g\n",
				i, j, ds[i].stream_busy_us[j] / 1e6);
	free(ds);
}

char *gm_metrics_render(const gm_stats *s, const gm_stats_live *l)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int bad;

	if (f == NULL)
		return NULL;
	single(f, "gemmd_up", "gauge",
	       "1 while gemmd's engine serves jobs; 0 after a GPU fault, "
	       "while gemmd answers what it holds and exits.",
	       l->eng != NULL && gm_engine_faulted(l->eng) ? 0 : 1);
	put_info(f, s, l);
	put_process(f);
	put_requests(f, s, l);
	put_jobs(f, s);
	put_work(f, s);
	put_queue(f, l);
	put_pageable(f, &s->pageable);
	put_latency(f, s);
	put_uids(f, s);
	put_devices(f, l->eng);
	put_http(f, &s->http);
	/* The text is complete only once the stream is closed. */
	bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		free(text);
		return NULL;
	}
	return text;
}
