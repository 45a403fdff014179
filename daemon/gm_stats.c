/*
 * gm_stats.c - counting finished jobs and rendering the stats document.
 * The document's keys are listed in README.md ("Stats").
 */
#include "gm_stats.h"

#include <cjson/cJSON.h>
#include <string.h>
#include <time.h>

#include "gm_build.h"

static const char *const phase_names[GM_PHASE_COUNT] = {
    "queue", "h2d", "kernel", "d2h", "total"};

double gm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void gm_stats_init(gm_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < GM_PHASE_COUNT; i++)
		gm_hist_init(&s->phase[i]);
	s->start_us = gm_now_us();
}

void gm_stats_job(gm_stats *s, const gm_job_desc *d, int status,
		  const gm_timings *t)
{
	if (d->dtype < GM_DTYPE_SLOTS)
		s->jobs_by_dtype[d->dtype]++;
	if (status >= 0 && status < GM_ERR_COUNT)
		s->errors[status]++;
	if (status != 0) {
		s->jobs_failed++;
		return;
	}
	s->jobs_ok++;
	s->flops += gm_job_flops(d);
	gm_hist_add(&s->phase[GM_PHASE_QUEUE], t->queue_us);
	gm_hist_add(&s->phase[GM_PHASE_H2D], t->h2d_us);
	gm_hist_add(&s->phase[GM_PHASE_KERNEL], t->kernel_us);
	gm_hist_add(&s->phase[GM_PHASE_D2H], t->d2h_us);
	gm_hist_add(&s->phase[GM_PHASE_TOTAL], t->total_us);
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
	return o;
}

static cJSON *render_devices(gm_engine *e)
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

char *gm_stats_render(const gm_stats *s, const gm_stats_live *l)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *lat, *err, *req;
	double up = (gm_now_us() - s->start_us) / 1e6;
	char *text;

	cJSON_AddStringToObject(o, "version", GEMMD_VERSION);
	cJSON_AddStringToObject(o, "engine", l->engine);
	cJSON_AddNumberToObject(o, "uptime_s", up);
	cJSON_AddBoolToObject(o, "draining", l->draining);
	req = cJSON_AddObjectToObject(o, "requests");
	cJSON_AddNumberToObject(req, "total", (double)s->requests);
	cJSON_AddNumberToObject(req, "refused", (double)s->requests_refused);
	cJSON_AddNumberToObject(req, "ctrl", (double)s->ctrl_requests);
	cJSON_AddItemToObject(o, "jobs", render_jobs(s, l));
	add_pair(o, "bytes", "in", (double)s->bytes_in, "out",
		 (double)s->bytes_out);
	cJSON_AddNumberToObject(o, "flops", s->flops);
	cJSON_AddNumberToObject(o, "gflops_per_s",
				up > 0 ? s->flops / up / 1e9 : 0.0);
	add_pair(o, "queue", "depth", (double)l->queue_depth, "limit",
		 (double)l->queue_limit);
	add_pair(o, "pool", "used", (double)l->pool_used, "size",
		 (double)l->pool_size);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "pool"), "slabs",
				(double)l->pool_slabs);
	err = cJSON_AddObjectToObject(o, "errors");
	for (int i = 1; i < GM_ERR_COUNT; i++)
		if (s->errors[i] != 0)
			cJSON_AddNumberToObject(err, gm_errname(i),
						(double)s->errors[i]);
	lat = cJSON_AddObjectToObject(o, "latency_us");
	for (int i = 0; i < GM_PHASE_COUNT; i++)
		cJSON_AddItemToObject(lat, phase_names[i],
				      render_hist(&s->phase[i]));
	cJSON_AddItemToObject(o, "devices", render_devices(l->eng));
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}
