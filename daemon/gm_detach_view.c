/*
 * gm_detach_view.c - what clients and the stats read of the detached-job
 * table: a job's state and status document, a principal's jobs listed,
 * the table's counts, and when its sweep is next due; see gm_detach.h.
 */
#include "gm_detach.h"
#include "gm_detach_impl.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

static cJSON *render_timings(const gm_timings *t)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "queue_us", t->queue_us);
	cJSON_AddNumberToObject(o, "h2d_us", t->h2d_us);
	cJSON_AddNumberToObject(o, "kernel_us", t->kernel_us);
	cJSON_AddNumberToObject(o, "d2h_us", t->d2h_us);
	cJSON_AddNumberToObject(o, "total_us", t->total_us);
	cJSON_AddNumberToObject(o, "start_seq", (double)t->start_seq);
	return o;
}

int gm_detach_status(gm_detach *t, const gm_principal *who, uint64_t id,
		     char **json)
{
	const entry *e = gm_detach_find(t, id, who);
	char num[24];
	cJSON *o;

	*json = NULL;
	if (e == NULL)
		return GM_ENOTFOUND;
	o = cJSON_CreateObject();
	/* As digits: cJSON would write a large double as 1.9e+15. */
	snprintf(num, sizeof(num), "%" PRIu64, e->id);
	cJSON_AddTrueToObject(o, "ok");
	cJSON_AddRawToObject(o, "job", num);
	cJSON_AddStringToObject(o, "state",
				gm_jobstate_name(gm_detach_state_of(e)));
	cJSON_AddNumberToObject(o, "status", e->status);
	cJSON_AddStringToObject(o, "error", gm_errname(e->status));
	cJSON_AddStringToObject(o, "message", e->msg);
	cJSON_AddBoolToObject(o, "result", e->result != NULL);
	cJSON_AddNumberToObject(o, "priority", e->priority);
	cJSON_AddStringToObject(o, "dtype", gm_dtype_name(e->d.dtype));
	cJSON_AddStringToObject(o, "layout",
				e->d.layout == GM_COL_MAJOR ? "col" : "row");
	cJSON_AddNumberToObject(o, "m", e->d.m);
	cJSON_AddNumberToObject(o, "n", e->d.n);
	cJSON_AddNumberToObject(o, "k", e->d.k);
	cJSON_AddItemToObject(o, "timings", render_timings(&e->t));
	*json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return GM_OK;
}

/* One job of a listing. */
static cJSON *list_item(const entry *e)
{
	cJSON *o = cJSON_CreateObject();
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, e->id);
	cJSON_AddRawToObject(o, "job", num);
	cJSON_AddTrueToObject(o, "detached");
	cJSON_AddStringToObject(o, "state",
				gm_jobstate_name(gm_detach_state_of(e)));
	cJSON_AddStringToObject(o, "owner", gm_principal_name(e->owner));
	cJSON_AddStringToObject(o, "dtype", gm_dtype_name(e->d.dtype));
	cJSON_AddNumberToObject(o, "m", e->d.m);
	cJSON_AddNumberToObject(o, "n", e->d.n);
	cJSON_AddNumberToObject(o, "k", e->d.k);
	cJSON_AddNumberToObject(o, "priority", e->priority);
	cJSON_AddNumberToObject(o, "status", e->status);
	cJSON_AddStringToObject(o, "error", gm_errname(e->status));
	cJSON_AddBoolToObject(o, "result", e->result != NULL);
	return o;
}

uint64_t gm_detach_list(const gm_detach *t, const gm_principal *who,
			cJSON *into, uint64_t *room)
{
	uint64_t left_out = 0;

	for (uint64_t b = 0; b < t->nbuckets; b++)
		for (const entry *e = t->buckets[b]; e != NULL; e = e->hnext) {
			if (e->spare ||
			    (who != NULL && !gm_principal_same(e->owner, who)))
				continue;
			if (*room == 0) {
				left_out++;
				continue;
			}
			cJSON_AddItemToArray(into, list_item(e));
			(*room)--;
		}
	return left_out;
}

static double earliest(double a, double b)
{
	return a == 0.0 || (b != 0.0 && b < a) ? b : a;
}

double gm_detach_next_due(const gm_detach *t)
{
	double due = 0.0;

	if (t->kept.head != NULL)
		due = t->kept.head->since_us + t->keep_us;
	if (t->records.head != NULL)
		due = earliest(due, t->records.head->since_us + t->keep_us);
	for (const entry *e = t->waits.head; e != NULL; e = e->next)
		due = earliest(due, e->wait_until_us);
	return due;
}

void gm_detach_counts(const gm_detach *t, gm_stats_detach *out)
{
	out->jobs = t->jobs;
	out->pending = t->pending;
	out->results = t->kept.n;
	out->records = t->records.n;
	out->waits = t->waits.n;
	out->dropped = t->dropped;
	out->bytes = t->bytes;
	out->limit = t->max_bytes;
}
