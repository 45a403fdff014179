/*
 * gmc_daemon.c - a dialed daemon: its slots, routing calls to it and
 * building their frames; see gmc_daemon.h.
 */
#include "gmc_daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gmc_shm.h"

uint64_t gmc_daemon_cost(uint64_t bytes, double flops)
{
	return bytes + (uint64_t)(flops / GMC_DAEMON_FLOPS_PER_BYTE);
}

/* ---- making one ---- */

/* The host of a tcp:// or tls+tcp:// URL, without brackets: what the
 * daemon's certificate must name unless told otherwise. */
static void url_host(const char *url, char *out, size_t len)
{
	const char *h = strstr(url, "://"), *end;

	h = h ? h + 3 : url;
	if (*h == '[' && (end = strchr(h, ']')) != NULL)
		h++;
	else if ((end = strrchr(h, ':')) == NULL)
		end = h + strlen(h);
	snprintf(out, len, "%.*s", (int)(end - h), h);
}

static int check_opts(const char *url, int kind, const gemmd_open_opts *o)
{
	bool tls_opts = o->tls_ca_file || o->tls_cert_file || o->tls_key_file ||
			o->tls_server_name;

	if (kind == GM_URL_BAD)
		return gmc_error_set(GM_EINVAL, "%s: not a gemmd URL (%s)", url,
				     gm_url_schemes);
	if (kind != GM_URL_TLS && tls_opts)
		return gmc_error_set(
		    GM_EINVAL, "%s: TLS options need a tls+tcp:// URL", url);
	if (kind == GM_URL_TLS && o->tls_ca_file == NULL)
		return gmc_error_set(
		    GM_EINVAL, "%s: TLS needs a CA file to verify the daemon",
		    url);
	if (o->connections > GMC_DAEMON_CONNS_MAX)
		return gmc_error_set(GM_EINVAL, "%u connections, at most %u",
				     o->connections, GMC_DAEMON_CONNS_MAX);
	return GM_OK;
}

static int make_tls(gmc_daemon *dm, const gemmd_open_opts *o)
{
	gm_tls_files f = {.cert = o->tls_cert_file,
			  .key = o->tls_key_file,
			  .ca = o->tls_ca_file,
			  .server_name = o->tls_server_name};
	char host[256], msg[GMC_ERRLEN];
	int rv;

	url_host(dm->url, host, sizeof(host));
	if ((rv = gm_tls_client_ctx(&f, host, &dm->tls, msg, sizeof(msg))))
		return gmc_error_set(rv, "%s: TLS: %s", dm->url, msg);
	return GM_OK;
}

/* How many slots: those asked for, else one over ipc:// and
 * GEMMD_TCP_CONNECTIONS_DEFAULT over TCP (all but the first on demand),
 * so that a large request is striped over a network by default. */
static unsigned conns_of(int kind, const gemmd_open_opts *o)
{
	if (o->connections)
		return o->connections;
	return kind == GM_URL_IPC ? 1 : GEMMD_TCP_CONNECTIONS_DEFAULT;
}

int gmc_daemon_new(gemmd_client *cl, const char *url, const gemmd_open_opts *o,
		   gmc_daemon **out)
{
	gmc_daemon *dm;
	char msg[GMC_ERRLEN];
	int rv, kind = gm_url_kind(url);
	unsigned n;

	if ((rv = check_opts(url, kind, o)) != GM_OK)
		return rv;
	if ((dm = calloc(1, sizeof(*dm))) == NULL)
		return gmc_error_set(GM_ENOMEM, "out of memory");
	dm->cl = dm->sl.cl = cl;
	dm->kind = kind;
	dm->sl.lazy = o->flags & GEMMD_OPEN_LAZY;
	snprintf(dm->url, sizeof(dm->url), "%s", url);
	if ((kind == GM_URL_TLS && (rv = make_tls(dm, o)) != GM_OK) ||
	    (rv = gmc_shm_new(url, o->region_socket, &dm->shm)) != GM_OK)
		goto fail;
	n = conns_of(kind, o);
	dm->sl.on_demand = o->connections ? n : 1;
	if ((dm->sl.conns = calloc(n, sizeof(*dm->sl.conns))) == NULL) {
		rv = gmc_error_set(GM_ENOMEM, "out of memory");
		goto fail;
	}
	for (; dm->sl.n < n; dm->sl.n++)
		if ((rv = gmc_conn_init(&dm->sl.conns[dm->sl.n], &dm->sl,
					dm->sl.n, url, dm->tls, msg,
					sizeof(msg)))) {
			gmc_error_set(rv, "%s", msg);
			goto fail;
		}
	*out = dm;
	return GM_OK;
fail:
	gmc_daemon_free(dm);
	return rv;
}

void gmc_daemon_start(gmc_daemon *dm, gmc_todo *t)
{
	for (unsigned i = 0; i < dm->sl.on_demand; i++)
		gmc_conn_dial(&dm->sl.conns[i], t);
}

int gmc_daemon_await(gmc_daemon *dm, int timeout_ms)
{
	gemmd_client *cl = dm->cl;
	gmc_conn *c = &dm->sl.conns[0];
	/* A listener that does not accept (its backlog full) leaves a TCP
	 * dial retrying its SYN for minutes. */
	struct timespec at = gmc_timer_in(timeout_ms > 0 ? timeout_ms : 0);
	int rv = GM_OK;

	pthread_mutex_lock(&cl->mu);
	while (c->dials == 0 && rv == GM_OK) {
		if (timeout_ms == GEMMD_FOREVER)
			pthread_cond_wait(&cl->cv, &cl->mu);
		else if (pthread_cond_clockwait(&cl->cv, &cl->mu,
						CLOCK_MONOTONIC,
						&at) == ETIMEDOUT)
			rv = gmc_error_set(GM_ETIMEDOUT,
					   "%s: no connection within %d ms",
					   dm->url, timeout_ms);
	}
	if (rv == GM_OK && c->state != GMC_CONN_UP)
		rv = gmc_error_set(GM_ETRANSPORT, "%s", c->why);
	pthread_mutex_unlock(&cl->mu);
	return rv;
}

void gmc_daemon_stopping(gmc_daemon *dm)
{
	dm->sl.stopping = true;
}

void gmc_daemon_stop(gmc_daemon *dm)
{
	pthread_mutex_lock(&dm->cl->mu);
	gmc_daemon_stopping(dm);
	pthread_mutex_unlock(&dm->cl->mu);
	gmc_daemon_shutdown(dm);
	gmc_daemon_free(dm);
}

void gmc_daemon_shutdown(gmc_daemon *dm)
{
	for (unsigned i = 0; i < dm->sl.n; i++)
		gmc_conn_shutdown(&dm->sl.conns[i]);
	/* A worker waiting on the hand-off socket (making or releasing the
	 * staging region) returns. */
	gmc_shm_hangup(dm->shm);
}

void gmc_daemon_free(gmc_daemon *dm)
{
	if (dm == NULL)
		return;
	for (unsigned i = 0; i < dm->sl.n; i++) {
		gm_dialer_free(dm->sl.conns[i].dialer);
		gmc_read_free(&dm->sl.conns[i].rd);
	}
	free(dm->sl.conns);
	gmc_shm_free(dm->shm);
	gm_tls_ctx_free(dm->tls);
	free(dm);
}

/* ---- routing ---- */

static bool is_up(const gmc_daemon *dm)
{
	for (unsigned i = 0; i < dm->sl.n; i++)
		if (dm->sl.conns[i].state == GMC_CONN_UP)
			return true;
	return false;
}

/* The daemon whose hand-off socket made a region the jobs name. */
static gmc_daemon *owner(gemmd_client *cl, const gemmd_job *jobs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const gemmd_region *r[] = {
		    jobs[i].a_ref.region, jobs[i].b_ref.region,
		    jobs[i].c_ref.region, jobs[i].out_ref.region};

		for (unsigned op = 0; op < 4; op++)
			for (unsigned d = 0; r[op] && d < cl->ndaemons; d++)
				if (cl->daemons[d]->shm == r[op]->g)
					return cl->daemons[d];
	}
	return NULL;
}

gmc_daemon *gmc_daemon_pick(gemmd_client *cl, const gemmd_job *jobs, uint32_t n)
{
	gmc_daemon *best = owner(cl, jobs, n);
	bool any_up = false;

	if (best != NULL)
		return best;
	for (unsigned i = 0; i < cl->ndaemons; i++)
		any_up |= is_up(cl->daemons[i]);
	for (unsigned j = 0; j < cl->ndaemons; j++) {
		gmc_daemon *dm =
		    cl->daemons[(cl->next_daemon + j) % cl->ndaemons];

		if ((!any_up || is_up(dm)) &&
		    (best == NULL || dm->sl.work < best->sl.work))
			best = dm;
	}
	cl->next_daemon = (cl->next_daemon + 1) % cl->ndaemons;
	return best;
}

void gmc_daemon_no_connection(const gmc_daemon *dm, int ms, char *msg,
			      size_t len)
{
	const char *why = "";

	if (dm == NULL) {
		snprintf(msg, len, "no reply within %d ms", ms);
		return;
	}
	if (is_up(dm)) {
		snprintf(msg, len,
			 "not sent within %d ms: the daemon is not reading "
			 "(%s)",
			 ms, dm->url);
		return;
	}
	for (unsigned i = 0; i < dm->sl.n && !*why; i++)
		why = dm->sl.conns[i].why;
	snprintf(msg, len, "no connection to the daemon within %d ms%s%s%s", ms,
		 *why ? " (" : "", why, *why ? ")" : "");
}

/* ---- frames ---- */

/* Bytes each job of k sends and gets back, and its FLOPs. */
static uint64_t job_bytes(const gm_job_desc *d)
{
	gm_job_sizes z;

	gm_job_sizes_of(d, &z);
	return z.a + z.b + z.c + z.out;
}

/* Splits jobs [0, n) into parts of about equal bytes: how many. */
static unsigned stripe(gmc_plan *pl, const gm_job_desc *d, uint32_t n,
		       unsigned nparts)
{
	uint64_t total = 0, acc = 0;
	uint32_t i = 0;

	for (uint32_t j = 0; j < n; j++)
		total += job_bytes(&d[j]);
	for (unsigned p = 0; p < nparts; p++) {
		uint64_t goal = total / nparts * (p + 1);

		pl->part[p].first = i;
		/* At least one job, and one left for each later part. */
		do
			acc += job_bytes(&d[i++]);
		while (i < n - (nparts - p - 1) && acc < goal);
		if (p == nparts - 1)
			i = n;
		pl->part[p].njobs = i - pl->part[p].first;
	}
	return nparts;
}

static uint64_t part_work(const gmc_call *k, const gm_job_desc *d,
			  const struct gmc_plan_part *pp)
{
	double flops = 0;
	uint64_t out = 0;

	for (uint32_t j = pp->first; d && j < pp->first + pp->njobs; j++) {
		gm_job_sizes z;

		gm_job_sizes_of(&d[j], &z);
		out += k->kind == GMC_CALL_GEMM ? z.out : 0;
		flops += gm_job_flops(&d[j]);
	}
	return gmc_daemon_cost(pp->f.bytes + out, flops);
}

int gmc_daemon_plan(gmc_daemon *dm, gmc_call *k, const gm_job_desc *d,
		    const gm_batch *b, const char *json, gmc_plan *pl)
{
	uint64_t bytes = 0;
	int rv = GM_OK;

	memset(pl, 0, sizeof(*pl));
	pl->nparts = 1;
	pl->part[0].njobs = json ? (k->kind == GMC_CALL_WAIT) : k->njobs;
	for (uint32_t j = 0; json == NULL && j < k->njobs; j++)
		bytes += job_bytes(&d[j]);
	if (k->kind == GMC_CALL_GEMM && dm->sl.n > 1 && k->njobs > 1 &&
	    bytes >= GMC_DAEMON_STRIPE_BYTES)
		pl->nparts = stripe(pl, d, k->njobs,
				    dm->sl.n < k->njobs ? dm->sl.n : k->njobs);
	for (unsigned p = 0; p < pl->nparts && rv == GM_OK; p++) {
		struct gmc_plan_part *pp = &pl->part[p];

		pp->id = gmc_call_next_id(k->cl);
		rv = json ? gmc_encode_ctrl(json, pp->id, &pp->f)
			  : gmc_encode_gemm(k->jobs + pp->first, d + pp->first,
					    pp->njobs, b, pp->id, NULL, &pp->f);
		pp->work = part_work(k, json ? NULL : d, pp);
	}
	if (rv != GM_OK)
		gmc_plan_free(pl);
	return rv;
}

void gmc_daemon_queue(gmc_daemon *dm, gmc_call *k, gmc_plan *pl, gmc_todo *t)
{
	unsigned order[GMC_DAEMON_CONNS_MAX];

	k->dm = dm;
	gmc_conn_order(&dm->sl, order);
	for (unsigned i = 0; i < pl->nparts && !k->ended; i++) {
		struct gmc_plan_part *pp = &pl->part[i];
		gmc_part *p = gmc_part_new(k, pp->id, pp->first, pp->njobs, t);

		if (p == NULL)
			break;
		p->f = pp->f;
		pp->f = (gmc_frame){0};
		p->work = pp->work;
		if (gmc_part_ready(p, t) == GM_OK)
			gmc_conn_queue(&dm->sl.conns[order[i]], p, t);
	}
	gmc_plan_free(pl);
}

void gmc_plan_free(gmc_plan *pl)
{
	for (unsigned i = 0; i < pl->nparts; i++)
		gmc_frame_free(&pl->part[i].f);
	pl->nparts = 0;
}
