/*
 * gm_ctl_benchrep.c - gemmctl bench's report: what was run, throughput,
 * a latency table (the requests as this side saw them, then each phase
 * as the daemon timed the jobs in their replies), what the daemon's
 * stats counted over the run, failed jobs by code, and the checks; as
 * text, or as one JSON document. The daemon's stats carry percentiles
 * since it started, not over a run, so the phase percentiles here are
 * those of the timings the replies carry; the stats add what they can
 * give for the run alone, the differences of their counters and the
 * phase means (sum over count).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gm_ctl_benchrep.h"
#include "gm_proto.h"
#include "gm_statview.h"

const char *const gm_ctl_bench_phase[BENCH_PHASES] = {"queue", "h2d", "kernel",
						      "d2h", "total"};

static const double quantiles[] = {0.5, 0.9, 0.99};
static const char *const quantile_names[] = {"p50", "p90", "p99"};
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

int gm_ctl_bench_status(const struct gm_ctl_bench_result *r)
{
	if ((r->stop_rv != 0 &&
	     gm_ctl_daemon_status(r->stop_rv) == EXIT_DAEMON) ||
	    (r->stats_rv != 0 &&
	     gm_ctl_daemon_status(r->stats_rv) == EXIT_DAEMON))
		return EXIT_DAEMON;
	if (r->checked_ok < r->checked)
		return EXIT_VERIFY;
	return r->jobs_failed > 0 || r->stop_rv != 0 || r->stats_rv != 0
		   ? EXIT_JOB
		   : 0;
}

/* ---- the daemon's counters over the run ---- */

/* The number at a dotted path of a stats document, or 0 (a key an
 * older daemon does not send). */
static double stat(const cJSON *o, const char *path)
{
	double v = gm_statview_num(o, path);

	return isnan(v) ? 0 : v;
}

static double delta(const cJSON *before, const cJSON *after, const char *path)
{
	return stat(after, path) - stat(before, path);
}

/* The mean of a phase over the run, from the daemon's count and mean
 * (its sum) before and after, in µs; NAN when it timed no job. */
static double phase_mean(const cJSON *before, const cJSON *after, int ph)
{
	char count[64], mean[64];
	double n, sum;

	snprintf(count, sizeof(count), "latency_us.%s.count",
		 gm_ctl_bench_phase[ph]);
	snprintf(mean, sizeof(mean), "latency_us.%s.mean",
		 gm_ctl_bench_phase[ph]);
	n = delta(before, after, count);
	sum = stat(after, count) * stat(after, mean) -
	      stat(before, count) * stat(before, mean);
	return n > 0 ? sum / n : NAN;
}

/* ---- what was run ---- */

static const char *transport(const struct gm_ctl_bench_opts *o)
{
	return o->regions ? "regions" : "socket";
}

/* "256x256x256,512x512x64" or "mixed 64..512". */
static void shapes_text(const struct gm_ctl_bench_opts *o, char *buf,
			size_t len)
{
	size_t used = 0;

	if (o->mixed_max > 0) {
		snprintf(buf, len, "mixed %u..%u", o->mixed_min, o->mixed_max);
		return;
	}
	buf[0] = '\0';
	for (int i = 0; i < o->nshapes && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%ux%ux%u",
					 i ? "," : "", o->shape[i].m,
					 o->shape[i].n, o->shape[i].k);
}

/* ---- text ---- */

static void put_row(FILE *f, const char *name, const gm_ctlhist *h)
{
	fprintf(f, "%-8s %9llu %9.3f", name, (unsigned long long)h->count,
		gm_ctlhist_mean(h) / 1e3);
	for (size_t i = 0; i < NQ; i++)
		fprintf(f, " %9.3f",
			gm_ctlhist_quantile(h, quantiles[i]) / 1e3);
	fprintf(f, " %9.3f\n", h->max / 1e3);
}

static void put_errors(FILE *f, const struct gm_ctl_bench_result *r)
{
	bool any = false;

	fputs("errors", f);
	for (int c = 1; c < GM_ERR_COUNT; c++) {
		if (r->errors[c] == 0)
			continue;
		fprintf(f, "  %s %llu", gemmd_errname(c),
			(unsigned long long)r->errors[c]);
		any = true;
	}
	fputs(any ? "\n" : "  none\n", f);
	if (r->stop_rv != 0)
		fprintf(f, "stopped: a request failed with %s (%s)\n",
			gemmd_errname(r->stop_rv), gemmd_strerror(r->stop_rv));
}

static void put_text(FILE *f, const struct gm_ctl_bench_opts *o,
		     const struct gm_ctl_bench_result *r, const cJSON *before,
		     const cJSON *after)
{
	const cJSON *engine =
	    cJSON_GetObjectItemCaseSensitive(before, "engine");
	double s = r->elapsed_s > 0 ? r->elapsed_s : NAN;
	char shapes[256];

	shapes_text(o, shapes, sizeof(shapes));
	fprintf(f, "bench %s  engine %s\n", gm_ctl_conn_url(&o->conn),
		cJSON_IsString(engine) ? engine->valuestring : "-");
	fprintf(f, "%s %s  batch %u  concurrency %u  %s  priority %d\n",
		gm_dtype_name(o->dtype), shapes, o->batch, o->concurrency,
		transport(o), o->sub.priority);
	fprintf(f,
		"ran %.3f s  requests %llu (%llu failed)  jobs %llu "
		"(%llu failed)\n",
		r->elapsed_s, (unsigned long long)r->requests_sent,
		(unsigned long long)r->requests_failed,
		(unsigned long long)r->jobs_sent,
		(unsigned long long)r->jobs_failed);
	fprintf(f, "throughput  %.1f jobs/s  %.2f GFLOP/s  %.3f GB/s\n",
		r->jobs_ok / s, r->flops / s / 1e9, r->bytes / s / 1e9);
	fprintf(f, "\n%-8s %9s %9s %9s %9s %9s %9s\n", "ms", "count", "mean",
		quantile_names[0], quantile_names[1], quantile_names[2], "max");
	put_row(f, "request", &r->latency);
	for (int p = 0; p < BENCH_PHASES; p++)
		put_row(f, gm_ctl_bench_phase[p], &r->phase[p]);
	fputs("(request: sent to answered, here; phases: as the daemon timed "
	      "each job)\n\n",
	      f);
	if (after == NULL)
		fprintf(f, "daemon: no stats after the run (%s)\n",
			gemmd_errname(r->stats_rv));
	else
		fprintf(f,
			"daemon counted %.0f requests, %.0f jobs ok, %.0f "
			"failed, %.0f rejected\n",
			delta(before, after, "requests.total"),
			delta(before, after, "jobs.ok"),
			delta(before, after, "jobs.failed"),
			delta(before, after, "jobs.rejected"));
	put_errors(f, r);
	if (o->verify > 0)
		fprintf(f,
			"verify  %u of %u ok (worst rel_err %.1e, tol %.1e)\n",
			r->checked_ok, r->checked, r->worst_rel, r->worst_tol);
}

/* ---- JSON ---- */

static void add_hist(cJSON *o, const char *name, const gm_ctlhist *h,
		     double scale)
{
	cJSON *t = cJSON_AddObjectToObject(o, name);

	cJSON_AddNumberToObject(t, "count", (double)h->count);
	cJSON_AddNumberToObject(t, "mean", gm_ctlhist_mean(h) * scale);
	for (size_t i = 0; i < NQ; i++)
		cJSON_AddNumberToObject(t, quantile_names[i],
					gm_ctlhist_quantile(h, quantiles[i]) *
					    scale);
	cJSON_AddNumberToObject(t, "max", h->max * scale);
}

static void add_config(cJSON *doc, const struct gm_ctl_bench_opts *o)
{
	cJSON *c = cJSON_AddObjectToObject(doc, "config");
	cJSON *shapes;
	char buf[64];

	if (o->mixed_max > 0) {
		snprintf(buf, sizeof(buf), "%u:%u", o->mixed_min, o->mixed_max);
		cJSON_AddStringToObject(c, "mixed", buf);
	} else {
		shapes = cJSON_AddArrayToObject(c, "shapes");
		for (int i = 0; i < o->nshapes; i++) {
			snprintf(buf, sizeof(buf), "%ux%ux%u", o->shape[i].m,
				 o->shape[i].n, o->shape[i].k);
			cJSON_AddItemToArray(shapes, cJSON_CreateString(buf));
		}
	}
	cJSON_AddStringToObject(c, "dtype", gm_dtype_name(o->dtype));
	cJSON_AddNumberToObject(c, "batch", o->batch);
	cJSON_AddNumberToObject(c, "concurrency", o->concurrency);
	cJSON_AddStringToObject(c, "transport", transport(o));
	cJSON_AddNumberToObject(c, "priority", o->sub.priority);
	if (o->duration_s > 0)
		cJSON_AddNumberToObject(c, "duration_s", o->duration_s);
	if (o->count > 0)
		cJSON_AddNumberToObject(c, "count", (double)o->count);
	cJSON_AddNumberToObject(c, "verify", o->verify);
	cJSON_AddNumberToObject(c, "seed", (double)o->seed);
}

static void add_counts(cJSON *doc, const char *name, uint64_t sent, uint64_t ok,
		       uint64_t failed)
{
	cJSON *c = cJSON_AddObjectToObject(doc, name);

	cJSON_AddNumberToObject(c, "sent", (double)sent);
	cJSON_AddNumberToObject(c, "ok", (double)ok);
	cJSON_AddNumberToObject(c, "failed", (double)failed);
}

static void add_daemon(cJSON *doc, const cJSON *before, const cJSON *after)
{
	static const char *const keys[] = {"requests.total", "jobs.ok",
					   "jobs.failed", "jobs.rejected",
					   "flops"};
	static const char *const names[] = {
	    "requests", "jobs_ok", "jobs_failed", "jobs_rejected", "flops"};
	cJSON *d, *m;

	if (after == NULL) {
		cJSON_AddNullToObject(doc, "daemon");
		return;
	}
	d = cJSON_AddObjectToObject(doc, "daemon");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cJSON_AddNumberToObject(d, names[i],
					delta(before, after, keys[i]));
	m = cJSON_AddObjectToObject(d, "phase_mean_us");
	for (int p = 0; p < BENCH_PHASES; p++) {
		double v = phase_mean(before, after, p);

		if (isnan(v))
			cJSON_AddNullToObject(m, gm_ctl_bench_phase[p]);
		else
			cJSON_AddNumberToObject(m, gm_ctl_bench_phase[p], v);
	}
}

static cJSON *to_json(const struct gm_ctl_bench_opts *o,
		      const struct gm_ctl_bench_result *r, const cJSON *before,
		      const cJSON *after)
{
	const cJSON *engine =
	    cJSON_GetObjectItemCaseSensitive(before, "engine");
	cJSON *doc = cJSON_CreateObject(), *t, *e;
	double s = r->elapsed_s > 0 ? r->elapsed_s : 0;

	cJSON_AddBoolToObject(doc, "ok", gm_ctl_bench_status(r) == 0);
	cJSON_AddStringToObject(doc, "url", gm_ctl_conn_url(&o->conn));
	if (cJSON_IsString(engine))
		cJSON_AddStringToObject(doc, "engine", engine->valuestring);
	add_config(doc, o);
	cJSON_AddNumberToObject(doc, "elapsed_s", r->elapsed_s);
	add_counts(doc, "requests", r->requests_sent, r->requests_ok,
		   r->requests_failed);
	add_counts(doc, "jobs", r->jobs_sent, r->jobs_ok, r->jobs_failed);
	t = cJSON_AddObjectToObject(doc, "throughput");
	cJSON_AddNumberToObject(t, "jobs_per_s", s ? r->jobs_ok / s : 0);
	cJSON_AddNumberToObject(t, "gflops_per_s", s ? r->flops / s / 1e9 : 0);
	cJSON_AddNumberToObject(t, "gb_per_s", s ? r->bytes / s / 1e9 : 0);
	add_hist(doc, "latency_ms", &r->latency, 1e-3);
	t = cJSON_AddObjectToObject(doc, "phases_us");
	for (int p = 0; p < BENCH_PHASES; p++)
		add_hist(t, gm_ctl_bench_phase[p], &r->phase[p], 1);
	add_daemon(doc, before, after);
	e = cJSON_AddObjectToObject(doc, "errors");
	for (int c = 1; c < GM_ERR_COUNT; c++)
		if (r->errors[c] != 0)
			cJSON_AddNumberToObject(e, gemmd_errname(c),
						(double)r->errors[c]);
	if (r->stop_rv != 0)
		cJSON_AddStringToObject(doc, "stopped_by",
					gemmd_errname(r->stop_rv));
	if (r->stats_rv != 0)
		cJSON_AddStringToObject(doc, "stats_error",
					gemmd_errname(r->stats_rv));
	if (o->verify > 0) {
		t = cJSON_AddObjectToObject(doc, "verify");
		cJSON_AddNumberToObject(t, "checked", r->checked);
		cJSON_AddNumberToObject(t, "ok", r->checked_ok);
		cJSON_AddNumberToObject(t, "worst_rel_err", r->worst_rel);
		cJSON_AddNumberToObject(t, "worst_tol", r->worst_tol);
	}
	return doc;
}

void gm_ctl_bench_report(const struct gm_ctl_bench_opts *o,
			 const struct gm_ctl_bench_result *r,
			 const cJSON *before, const cJSON *after)
{
	if (gm_ctl_json) {
		gm_ctl_put_json(to_json(o, r, before, after));
		return;
	}
	put_text(gm_ctl_out, o, r, before, after);
	fflush(gm_ctl_out);
}

void gm_ctl_bench_progress(const struct gm_ctl_bench_result *r,
			   double elapsed_s)
{
	fprintf(gm_ctl_out,
		"\r%6.1f s  %llu jobs  %.1f jobs/s  %.2f GFLOP/s  %llu "
		"failed\033[K",
		elapsed_s, (unsigned long long)r->jobs_ok,
		elapsed_s > 0 ? r->jobs_ok / elapsed_s : 0,
		elapsed_s > 0 ? r->flops / elapsed_s / 1e9 : 0,
		(unsigned long long)r->jobs_failed);
	fflush(gm_ctl_out);
}
