/*
 * gm_big_drive.c - the job through a gemmd started here, as a local
 * client runs it (gemmd.h): from a shared-memory region the client makes
 * and the daemon pins (no byte crosses the socket), or from ordinary
 * memory through the socket (GEMMD_OPEN_NO_SHM: the library does not
 * stage it through a region), a request larger than the daemon's pool
 * that it receives into pageable memory; and the bound of that socket,
 * one raw ipc:// stream carrying the same bytes. The time is the client's, from
 * the submit to the reply.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_bench.h"
#include "gm_big.h"
#include "gm_rawrate.h"

#define MIB	  (1024ull * 1024)
#define STREAMS	  8	 /* gemmd's default */
#define SUBMIT_MS 900000 /* a 32768^3 job through a slow path */
#define REPS_MAX  9
#define MSG_EXTRA (64 * MIB)

/* The case as gm_drive_start takes it: one job in one request. Its
 * size is small, so that the pools gm_drive_start sizes for it stay in
 * range: the settings passed after them set the real ones. */
static gm_case drive_case(const bg_case *c)
{
	gm_case g;

	memset(&g, 0, sizeof(g));
	g.name = g.label = c->name;
	g.dtype = c->dtype;
	g.n = 1024;
	g.jobs = g.requests = 1;
	g.kernel = GEMMD_KERNEL_CUBLAS;
	return g;
}

static gemmd_job job_of(const bg_case *c)
{
	gemmd_job j;

	memset(&j, 0, sizeof(j));
	j.dtype = c->dtype;
	j.layout = GEMMD_ROW_MAJOR;
	j.kernel = GEMMD_KERNEL_CUBLAS;
	j.m = j.n = j.k = c->n;
	j.alpha = 1;
	return j;
}

/* One submit of j: its time, or < 0 with r's status and message. */
static double submit(gemmd_client *cl, gemmd_job *j, bg_drive_result *r)
{
	double t0 = bg_now_ms(), t;
	int rv = gemmd_submit(cl, j, 1, NULL, SUBMIT_MS);

	t = bg_now_ms() - t0;
	r->status = rv != GM_OK ? rv : j->status;
	if (r->status == GM_OK)
		return t;
	snprintf(r->msg, sizeof(r->msg), "%s: %s", gemmd_strerror(r->status),
		 rv != GM_OK ? gemmd_last_error() : j->message);
	return -1;
}

/* A warm-up (unless reps is 1) and reps timed submits of j, out
 * poisoned before the last. */
static void runs(gemmd_client *cl, const bg_case *c, gemmd_job *j, bg_mats *m,
		 int reps, bg_drive_result *r)
{
	double v[REPS_MAX];

	for (int i = reps > 1 ? -1 : 0; i < reps; i++) {
		if (i == reps - 1)
			bg_poison(c, m->out);
		if ((v[i < 0 ? 0 : i] = submit(cl, j, r)) < 0)
			return;
	}
	r->ms = bg_median(v, reps);
	r->t = j->t;
	r->err = bg_check(c, m->a, m->b, m->out);
}

int bg_drive_region(const char *gemmd, const bg_case *c, int reps,
		    bg_drive_result *r, char *err, size_t errlen)
{
	char dev[64];
	char *sets[] = {"pool_bytes=1G", dev, "max_message_bytes=1G",
			"region_max_bytes=64G"};
	gm_case g = drive_case(c);
	uint64_t mat = bg_mat_bytes(c);
	gm_daemon_proc p;
	gemmd_region *rg;
	gemmd_job j = job_of(c);
	bg_mats m;
	double t0;
	int rv;

	memset(r, 0, sizeof(*r));
	if (reps < 1 || reps > REPS_MAX) {
		snprintf(err, errlen, "reps %d not in 1..%d", reps, REPS_MAX);
		return -1;
	}
	snprintf(dev, sizeof(dev), "device_pool_bytes=%lluM",
		 (unsigned long long)(c->device_pool / MIB));
	if (gm_drive_start(gemmd, &g, STREAMS, sets, 4, &p, err, errlen) != 0)
		return -1;
	t0 = bg_now_ms();
	if ((rv = gemmd_region_create(p.cl, 3 * mat, &rg)) != GM_OK) {
		snprintf(err, errlen, "region: %s", gemmd_last_error());
		gm_drive_stop(&p);
		return -1;
	}
	r->create_ms = bg_now_ms() - t0;
	m.base = gemmd_region_ptr(rg);
	m.mat = mat;
	m.a = m.base;
	m.b = m.base + mat;
	m.out = m.base + 2 * mat;
	bg_mats_fill(c, &m, 11);
	j.a_ref = (gemmd_region_ref){rg, 0};
	j.b_ref = (gemmd_region_ref){rg, mat};
	j.out_ref = (gemmd_region_ref){rg, 2 * mat};
	runs(p.cl, c, &j, &m, reps, r);
	gemmd_region_release(rg);
	if ((rv = gm_drive_stop(&p)) != 0) {
		snprintf(err, errlen, "gemmd exited %d", rv);
		return -1;
	}
	return 0;
}

/* What the daemon says of requests it received into pageable memory;
 * -1 where the stats cannot be read. */
static void read_pageable(gemmd_client *cl, bg_drive_result *r)
{
	const cJSON *p, *stats;
	char *text = NULL;
	cJSON *doc;

	r->pageable_requests = r->pageable_peak = -1;
	if (gemmd_stats(cl, &text, 10000) != GM_OK)
		return;
	doc = cJSON_Parse(text);
	free(text);
	stats = cJSON_GetObjectItemCaseSensitive(doc, "stats");
	p = cJSON_GetObjectItemCaseSensitive(stats, "pageable");
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p, "requests")))
		r->pageable_requests =
		    cJSON_GetObjectItemCaseSensitive(p, "requests")
			->valuedouble;
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p, "peak_bytes")))
		r->pageable_peak =
		    cJSON_GetObjectItemCaseSensitive(p, "peak_bytes")
			->valuedouble;
	cJSON_Delete(doc);
}

int bg_drive_socket(const char *gemmd, const bg_case *c, uint64_t pool_bytes,
		    bg_mats *m, int reps, bg_drive_result *r, char *err,
		    size_t errlen)
{
	char pool[64], msg[64], dev[64], pageable[64];
	char *sets[] = {pool, msg, dev, pageable};
	const gemmd_open_opts no_shm = {.flags = GEMMD_OPEN_NO_SHM};
	uint64_t mat = bg_mat_bytes(c);
	gm_case g = drive_case(c);
	gm_daemon_proc p;
	gemmd_job j = job_of(c);
	int rv;

	memset(r, 0, sizeof(*r));
	if (reps < 1 || reps > REPS_MAX) {
		snprintf(err, errlen, "reps %d not in 1..%d", reps, REPS_MAX);
		return -1;
	}
	/* The request: A and B in its frame, its slab A, B and the result
	 * (and a reply head), all larger than the pool. */
	snprintf(pool, sizeof(pool), "pool_bytes=%lluM",
		 (unsigned long long)(pool_bytes / MIB));
	snprintf(msg, sizeof(msg), "max_message_bytes=%lluM",
		 (unsigned long long)((2 * mat + MSG_EXTRA) / MIB));
	snprintf(dev, sizeof(dev), "device_pool_bytes=%lluM",
		 (unsigned long long)(c->device_pool / MIB));
	snprintf(pageable, sizeof(pageable), "pageable_max_bytes=%lluM",
		 (unsigned long long)((3 * mat + MSG_EXTRA) / MIB));
	if (gm_drive_start(gemmd, &g, STREAMS, sets, 4, &p, err, errlen) != 0)
		return -1;
	/* Over ipc:// the library would stage plain pointers through a
	 * region of its own: this case is the bytes on the socket. */
	gemmd_close(p.cl);
	if (gemmd_open(p.url, &no_shm, &p.cl) != GM_OK) {
		snprintf(err, errlen, "%s", gemmd_last_error());
		p.cl = NULL;
		gm_drive_stop(&p);
		return -1;
	}
	j.a = m->a;
	j.b = m->b;
	j.out = m->out;
	runs(p.cl, c, &j, m, reps, r);
	read_pageable(p.cl, r);
	if ((rv = gm_drive_stop(&p)) != 0) {
		snprintf(err, errlen, "gemmd exited %d", rv);
		return -1;
	}
	return 0;
}

int bg_stream(uint64_t in_bytes, uint64_t out_bytes, int reps, double *ms,
	      char *err, size_t errlen)
{
	char url[96];

	snprintf(url, sizeof(url), "ipc:///tmp/gemmd-ooc-stream-%d.sock",
		 (int)getpid());
	return gm_rawrate(url, NULL, in_bytes, out_bytes, reps, ms, err,
			  errlen);
}
