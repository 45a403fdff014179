/*
 * gm_stats.c - counting finished jobs and rendering the stats document.
 * The document's keys are listed in README.md ("Stats").
 */
#include "gm_stats.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gm_build.h"

static const char *const phase_names[GM_PHASE_COUNT] = {
    "queue", "h2d", "kernel", "d2h", "total"};

#define GM_CONN_NAME(name, key) key,
const char *const gm_conn_refusal_names[GM_CONN_REFUSAL_COUNT] = {
    GM_CONN_REFUSAL_MAP(GM_CONN_NAME)};
const char *const gm_conn_drop_names[GM_CONN_DROP_COUNT] = {
    GM_CONN_DROP_MAP(GM_CONN_NAME)};
const char *const gm_http_close_names[GM_HTTP_CLOSE_COUNT] = {
    GM_HTTP_CLOSE_MAP(GM_CONN_NAME)};
#undef GM_CONN_NAME

void gm_stats_init(gm_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < GM_PHASE_COUNT; i++)
		gm_hist_init(&s->phase[i]);
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		gm_hist_init(&s->queue_prio[p]);
	s->start_us = gm_clock_now_us();
	gm_rate_init(&s->rate, s->start_us);
}

/* Bytes of a job that succeeded, into the counters and the rates. */
static void count_ok(gm_stats *s, const gm_job_desc *d, double v[])
{
	gm_job_sizes z;
	int dt = d->dtype < GM_DTYPE_SLOTS ? d->dtype : 0;

	gm_job_sizes_of(d, &z);
	v[GM_RATE_FLOPS] = gm_job_flops(d);
	v[GM_RATE_H2D] = (double)(z.a + z.b + z.c);
	v[GM_RATE_D2H] = (double)z.out;
	s->flops_by_dtype[dt] += v[GM_RATE_FLOPS];
	s->h2d_by_dtype[dt] += z.a + z.b + z.c;
	s->d2h_by_dtype[dt] += z.out;
	s->bytes_h2d += z.a + z.b + z.c;
	s->bytes_d2h += z.out;
}

void gm_stats_job(gm_stats *s, const gm_job_desc *d, unsigned prio, int status,
		  const gm_timings *t)
{
	double v[GM_RATE_NVAL] = {[GM_RATE_JOBS] = 1};

	if (d->dtype < GM_DTYPE_SLOTS)
		s->jobs_by_dtype[d->dtype]++;
	if (status >= 0 && status < GM_ERR_COUNT) {
		s->errors[status]++;
		if (d->dtype < GM_DTYPE_SLOTS)
			s->jobs_by[d->dtype][status]++;
	}
	if (status == 0)
		count_ok(s, d, v);
	gm_rate_add(&s->rate, gm_clock_now_us(), v);
	if (status != 0) {
		s->jobs_failed++;
		return;
	}
	s->jobs_ok++;
	s->flops += v[GM_RATE_FLOPS];
	gm_hist_add(&s->phase[GM_PHASE_QUEUE], t->queue_us);
	if (prio <= GM_BATCH_PRIO_MAX)
		gm_hist_add(&s->queue_prio[prio], t->queue_us);
	gm_hist_add(&s->phase[GM_PHASE_H2D], t->h2d_us);
	gm_hist_add(&s->phase[GM_PHASE_KERNEL], t->kernel_us);
	gm_hist_add(&s->phase[GM_PHASE_D2H], t->d2h_us);
	gm_hist_add(&s->phase[GM_PHASE_TOTAL], t->total_us);
}

void gm_stats_uid_job(gm_stats *s, uint64_t uid, int status)
{
	gm_stats_uid *u = &s->other_uids;

	for (unsigned i = 0; i < s->nuids; i++)
		if (s->uids[i].uid == uid) {
			u = &s->uids[i];
			break;
		}
	if (u == &s->other_uids && s->nuids < GM_STATS_UIDS) {
		u = &s->uids[s->nuids++];
		u->uid = uid;
	}
	if (status == 0)
		u->ok++;
	else
		u->failed++;
}

static cJSON *render_hist(const gm_hist *h)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "count", (double)h->count);
	cJSON_AddNumberToObject(o, "mean",
				h->count ? h->sum / (double)h->count : 0.0);
	cJSON_AddNumberToObject(o, "p50", gm_hist_quantile(h, 0.50));
	cJSON_AddNumberToObject(o, "p90", gm_hist_quantile(h, 0.90));
	cJSON_AddNumberToObject(o, "p99", gm_hist_quantile(h, 0.99));
	cJSON_AddNumberToObject(o, "max", h->max);
	return o;
}

static cJSON *render_regions(const gm_stats_regions *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "count", (double)r->count);
	cJSON_AddNumberToObject(o, "mapped_bytes", (double)r->mapped_bytes);
	cJSON_AddNumberToObject(o, "registered_bytes",
				(double)r->registered_bytes);
	cJSON_AddNumberToObject(o, "created", (double)r->created);
	cJSON_AddNumberToObject(o, "refused", (double)r->refused);
	cJSON_AddNumberToObject(o, "jobs", (double)r->jobs);
	cJSON_AddNumberToObject(o, "connections", (double)r->connections);
	return o;
}

/* An object with n counts named by names. */
static cJSON *render_counts(const char *const *names, const uint64_t *v, int n)
{
	cJSON *o = cJSON_CreateObject();

	for (int i = 0; i < n; i++)
		cJSON_AddNumberToObject(o, names[i], (double)v[i]);
	return o;
}

static cJSON *render_conns(const gm_stats_conns *c)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "open", (double)c->open);
	cJSON_AddNumberToObject(o, "refused", (double)c->refused);
	cJSON_AddNumberToObject(o, "accepted", (double)c->accepted);
	cJSON_AddItemToObject(o, "refused_by",
			      render_counts(gm_conn_refusal_names,
					    c->refused_by,
					    GM_CONN_REFUSAL_COUNT));
	cJSON_AddNumberToObject(o, "dropped", (double)c->dropped);
	cJSON_AddItemToObject(o, "dropped_by",
			      render_counts(gm_conn_drop_names, c->dropped_by,
					    GM_CONN_DROP_COUNT));
	cJSON_AddNumberToObject(o, "accept_pauses", (double)c->accept_pauses);
	cJSON_AddNumberToObject(o, "paused", (double)c->paused);
	cJSON_AddNumberToObject(o, "unsent_bytes", (double)c->unsent_bytes);
	return o;
}

static cJSON *render_http(const gm_stats_http *h)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "open", (double)h->open);
	cJSON_AddNumberToObject(o, "accepted", (double)h->accepted);
	cJSON_AddNumberToObject(o, "refused", (double)h->refused);
	cJSON_AddItemToObject(o, "closed_by",
			      render_counts(gm_http_close_names, h->closed_by,
					    GM_HTTP_CLOSE_COUNT));
	cJSON_AddNumberToObject(o, "requests", (double)h->requests);
	cJSON_AddNumberToObject(o, "renders", (double)h->renders);
	return o;
}

/* Finished jobs per status: "ok" always, error names once seen. */
static cJSON *render_by_status(const gm_stats *s)
{
	cJSON *o = cJSON_CreateObject();

	for (int c = 0; c < GM_ERR_COUNT; c++) {
		uint64_t n = 0;

		for (int d = 1; d < GM_DTYPE_SLOTS; d++)
			n += s->jobs_by[d][c];
		if (c == 0 || n != 0)
			cJSON_AddNumberToObject(o, c ? gm_errname(c) : "ok",
						(double)n);
	}
	return o;
}

static void add_uid(cJSON *o, const char *name, const gm_stats_uid *u)
{
	cJSON *c = cJSON_AddObjectToObject(o, name);

	cJSON_AddNumberToObject(c, "ok", (double)u->ok);
	cJSON_AddNumberToObject(c, "failed", (double)u->failed);
}

/* Jobs of ipc:// peers: each uid counted apart, then "other". */
static cJSON *render_by_uid(const gm_stats *s)
{
	cJSON *o = cJSON_CreateObject();
	char name[24];

	for (unsigned i = 0; i < s->nuids; i++) {
		snprintf(name, sizeof(name), "%" PRIu64, s->uids[i].uid);
		add_uid(o, name, &s->uids[i]);
	}
	if (s->other_uids.ok + s->other_uids.failed != 0)
		add_uid(o, "other", &s->other_uids);
	return o;
}

static cJSON *render_jobs(const gm_stats *s, const gm_stats_live *l)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *by = cJSON_AddObjectToObject(o, "by_dtype");

	cJSON_AddNumberToObject(o, "ok", (double)s->jobs_ok);
	cJSON_AddNumberToObject(o, "failed", (double)s->jobs_failed);
	cJSON_AddNumberToObject(o, "rejected", (double)s->jobs_rejected);
	cJSON_AddNumberToObject(o, "queued", (double)l->queue_depth);
	cJSON_AddNumberToObject(o, "inflight", (double)l->inflight);
	for (int d = 1; d < GM_DTYPE_SLOTS; d++)
		cJSON_AddNumberToObject(by, gm_dtype_name(d),
					(double)s->jobs_by_dtype[d]);
	cJSON_AddItemToObject(o, "by_status", render_by_status(s));
	cJSON_AddItemToObject(o, "by_uid", render_by_uid(s));
	return o;
}

static cJSON *render_dtypes(const gm_stats *s)
{
	cJSON *o = cJSON_CreateObject();

	for (int d = 1; d < GM_DTYPE_SLOTS; d++) {
		cJSON *t = cJSON_AddObjectToObject(o, gm_dtype_name(d));
		uint64_t all = 0;

		for (int c = 0; c < GM_ERR_COUNT; c++)
			all += s->jobs_by[d][c];
		cJSON_AddNumberToObject(t, "jobs", (double)all);
		cJSON_AddNumberToObject(t, "ok", (double)s->jobs_by[d][0]);
		cJSON_AddNumberToObject(t, "failed",
					(double)(all - s->jobs_by[d][0]));
		cJSON_AddNumberToObject(t, "flops", s->flops_by_dtype[d]);
		cJSON_AddNumberToObject(t, "bytes_h2d",
					(double)s->h2d_by_dtype[d]);
		cJSON_AddNumberToObject(t, "bytes_d2h",
					(double)s->d2h_by_dtype[d]);
	}
	return o;
}

static cJSON *render_rates(const gm_stats *s, double now_us)
{
	static const unsigned windows[] = {1, 10, 60};
	cJSON *o = cJSON_CreateObject();

	for (size_t i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
		double r[GM_RATE_NVAL];
		char key[16];
		cJSON *t;

		gm_rate_get(&s->rate, now_us, windows[i], r);
		snprintf(key, sizeof(key), "%us", windows[i]);
		t = cJSON_AddObjectToObject(o, key);
		cJSON_AddNumberToObject(t, "jobs_per_s", r[GM_RATE_JOBS]);
		cJSON_AddNumberToObject(t, "gflops_per_s",
					r[GM_RATE_FLOPS] / 1e9);
		cJSON_AddNumberToObject(t, "h2d_gb_per_s",
					r[GM_RATE_H2D] / 1e9);
		cJSON_AddNumberToObject(t, "d2h_gb_per_s",
					r[GM_RATE_D2H] / 1e9);
	}
	return o;
}

/* The copy/compute overlap and each stream's share of the uptime. */
static void render_overlap(cJSON *o, const gm_device_stats *ds, double up)
{
	unsigned n =
	    ds->nstreams < GM_MAX_STREAMS ? ds->nstreams : GM_MAX_STREAMS;
	cJSON *secs = cJSON_AddArrayToObject(o, "stream_busy_s");
	cJSON *frac = cJSON_AddArrayToObject(o, "stream_busy");

	cJSON_AddNumberToObject(o, "kernel_s", ds->kernel_us / 1e6);
	cJSON_AddNumberToObject(o, "copy_s", ds->copy_us / 1e6);
	cJSON_AddNumberToObject(o, "overlap_s", ds->overlap_us / 1e6);
	cJSON_AddNumberToObject(
	    o, "overlap_ratio",
	    ds->kernel_us > 0 ? ds->overlap_us / ds->kernel_us : 0.0);
	for (unsigned i = 0; i < n; i++) {
		double b = ds->stream_busy_us[i] / 1e6;

		cJSON_AddItemToArray(secs, cJSON_CreateNumber(b));
		cJSON_AddItemToArray(frac,
				     cJSON_CreateNumber(up > 0 ? b / up : 0));
	}
}

static cJSON *render_devices(gm_engine *e, double up)
{
	cJSON *a = cJSON_CreateArray();
	unsigned n = e ? gm_engine_devices(e) : 0;

	for (unsigned i = 0; i < n; i++) {
		gm_device_stats ds;
		cJSON *o = cJSON_CreateObject();

		gm_engine_device_stats(e, i, &ds);
		cJSON_AddNumberToObject(o, "index", i);
		cJSON_AddStringToObject(o, "name", ds.name);
		cJSON_AddNumberToObject(o, "jobs", (double)ds.jobs);
		cJSON_AddNumberToObject(o, "mem_used", (double)ds.mem_used);
		cJSON_AddNumberToObject(o, "mem_total", (double)ds.mem_total);
		cJSON_AddNumberToObject(o, "busy_s", ds.busy_us / 1e6);
		cJSON_AddNumberToObject(o, "busy_periods",
					(double)ds.busy_periods);
		render_overlap(o, &ds, up);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static void add_pair(cJSON *o, const char *name, const char *k1, double v1,
		     const char *k2, double v2)
{
	cJSON *p = cJSON_AddObjectToObject(o, name);

	cJSON_AddNumberToObject(p, k1, v1);
	cJSON_AddNumberToObject(p, k2, v2);
}

static cJSON *render_detached(const gm_stats_detach *t)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "jobs", (double)t->jobs);
	cJSON_AddNumberToObject(o, "pending", (double)t->pending);
	cJSON_AddNumberToObject(o, "results", (double)t->results);
	cJSON_AddNumberToObject(o, "records", (double)t->records);
	cJSON_AddNumberToObject(o, "waits", (double)t->waits);
	cJSON_AddNumberToObject(o, "dropped", (double)t->dropped);
	cJSON_AddNumberToObject(o, "bytes", (double)t->bytes);
	cJSON_AddNumberToObject(o, "limit", (double)t->limit);
	return o;
}

static cJSON *render_pageable(const gm_pageable *p)
{
	static const char *const names[] = {"bytes",  "limit",	  "peak_bytes",
					    "held",   "requests", "busy",
					    "too_big"};
	const uint64_t v[] = {p->bytes,	   p->limit, p->peak_bytes, p->held,
			      p->requests, p->busy,  p->too_big};

	return render_counts(names, v, (int)(sizeof(v) / sizeof(v[0])));
}

char *gm_stats_render(const gm_stats *s, const gm_stats_live *l)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *lat, *err, *req, *by_prio;
	double now = gm_clock_now_us(), up = (now - s->start_us) / 1e6;
	double prio[GM_BATCH_PRIO_MAX + 1];
	char *text;

	cJSON_AddStringToObject(o, "version", GEMMD_VERSION);
	cJSON_AddStringToObject(o, "engine", l->engine);
	cJSON_AddNumberToObject(o, "uptime_s", up);
	cJSON_AddBoolToObject(o, "draining", l->draining);
	cJSON_AddBoolToObject(o, "stopping", l->stopping);
	req = cJSON_AddObjectToObject(o, "requests");
	cJSON_AddNumberToObject(req, "total", (double)s->requests);
	cJSON_AddNumberToObject(req, "refused", (double)s->requests_refused);
	cJSON_AddNumberToObject(req, "ctrl", (double)s->ctrl_requests);
	cJSON_AddNumberToObject(req, "inflight", (double)l->requests_inflight);
	cJSON_AddItemToObject(o, "jobs", render_jobs(s, l));
	add_pair(o, "bytes", "in", (double)s->bytes_in, "out",
		 (double)s->bytes_out);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "bytes"), "h2d",
				(double)s->bytes_h2d);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "bytes"), "d2h",
				(double)s->bytes_d2h);
	cJSON_AddNumberToObject(o, "flops", s->flops);
	cJSON_AddNumberToObject(o, "gflops_per_s",
				up > 0 ? s->flops / up / 1e9 : 0.0);
	add_pair(o, "queue", "depth", (double)l->queue_depth, "limit",
		 (double)l->queue_limit);
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		prio[p] = (double)l->queued_prio[p];
	cJSON_AddItemToObject(
	    cJSON_GetObjectItem(o, "queue"), "by_priority",
	    cJSON_CreateDoubleArray(prio, GM_BATCH_PRIO_MAX + 1));
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		prio[p] = (double)l->limit_prio[p];
	cJSON_AddItemToObject(
	    cJSON_GetObjectItem(o, "queue"), "limit_by_priority",
	    cJSON_CreateDoubleArray(prio, GM_BATCH_PRIO_MAX + 1));
	cJSON_AddItemToObject(o, "detached", render_detached(&l->detached));
	add_pair(o, "pool", "used", (double)l->pool_used, "size",
		 (double)l->pool_size);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "pool"), "slabs",
				(double)l->pool_slabs);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "pool"), "waiting",
				(double)l->pool_waiting);
	cJSON_AddItemToObject(o, "pageable", render_pageable(&s->pageable));
	add_pair(o, "contexts", "total", (double)l->contexts, "busy",
		 (double)l->requests_inflight);
	cJSON_AddItemToObject(o, "connections", render_conns(&l->conns));
	cJSON_AddItemToObject(o, "regions", render_regions(&l->regions));
	cJSON_AddItemToObject(o, "http", render_http(&s->http));
	err = cJSON_AddObjectToObject(o, "errors");
	for (int i = 1; i < GM_ERR_COUNT; i++)
		if (s->errors[i] != 0)
			cJSON_AddNumberToObject(err, gm_errname(i),
						(double)s->errors[i]);
	lat = cJSON_AddObjectToObject(o, "latency_us");
	for (int i = 0; i < GM_PHASE_COUNT; i++)
		cJSON_AddItemToObject(lat, phase_names[i],
				      render_hist(&s->phase[i]));
	by_prio = cJSON_AddArrayToObject(lat, "queue_by_priority");
	for (int p = 0; p <= GM_BATCH_PRIO_MAX; p++)
		cJSON_AddItemToArray(by_prio, render_hist(&s->queue_prio[p]));
	cJSON_AddItemToObject(o, "devices", render_devices(l->eng, up));
	cJSON_AddItemToObject(o, "dtypes", render_dtypes(s));
	cJSON_AddItemToObject(o, "rates", render_rates(s, now));
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}
