/*
 * gmc_start.c - a call set going: routed to a daemon, its frames built
 * and queued (or staged), its clock started; its deadline, and the grace
 * its I/O is given after it ended. See gmc_start.h.
 */
#include "gmc_start.h"

#include <stdio.h>
#include <stdlib.h>

#include "gmc_conn.h"
#include "gmc_daemon.h"
#include "gmc_stage.h"

static uint64_t ms_ns(int ms)
{
	return (uint64_t)ms * 1000000u;
}

/* Starts k's clock: adds it to its client's calls and arms its
 * deadline. */
static void clock_start(gmc_call *k)
{
	gemmd_client *cl = k->cl;

	k->next_call = cl->calls;
	if (cl->calls != NULL)
		cl->calls->prev_call = k;
	cl->calls = k;
	/* Without a deadline event the call would have no timeout; the
	 * heap only fails to grow when memory is gone, and then so is
	 * everything else. */
	if (k->timeout_ms != GEMMD_FOREVER)
		gmc_timer_arm(cl->timer, &k->deadline,
			      k->start + ms_ns(k->timeout_ms));
}

/* Whether any part of k was written, in part or whole. */
static bool any_written(const gmc_call *k)
{
	for (const gmc_part *p = k->parts; p != NULL; p = p->next_of_call)
		if (p->state >= GMC_PART_WRITING)
			return true;
	return false;
}

static void deadline_cb(void *arg)
{
	gmc_call *k = arg;
	gemmd_client *cl = k->cl;
	gmc_todo t = GMC_TODO_INIT(cl);
	char msg[GMC_ERRLEN];

	pthread_mutex_lock(&cl->mu);
	if (!k->ended && !any_written(k) && k->stage == NULL)
		gmc_daemon_no_connection(k->dm, k->timeout_ms, msg,
					 sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "no reply within %d ms",
			 k->timeout_ms);
	gmc_call_end(k, GM_ETIMEDOUT, msg, &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

/* I/O on the caller's memory did not finish in time after its call
 * ended: the connections it runs on are closed, which ends it. */
static void grace_cb(void *arg)
{
	gmc_call *k = arg;
	gemmd_client *cl = k->cl;
	gmc_todo t = GMC_TODO_INIT(cl);

	pthread_mutex_lock(&cl->mu);
	for (gmc_part *p = k->parts; k->pins > 0 && p != NULL;
	     p = p->next_of_call)
		if (p->conn != NULL && p->state != GMC_PART_QUEUED)
			gmc_conn_fail(p->conn, GM_ETRANSPORT,
				      "closed: a call that timed out was still "
				      "being read or written",
				      &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
}

int gmc_start_new(gemmd_client *c, int kind, gemmd_job *jobs, uint32_t n,
		  int timeout_ms, const gmc_call_notify *nt, gmc_call **out)
{
	int rv;

	if ((rv = gmc_call_new(c, kind, timeout_ms, nt, out)) != GM_OK)
		return rv;
	gmc_tev_init(&(*out)->deadline, deadline_cb, *out);
	gmc_tev_init(&(*out)->grace, grace_cb, *out);
	(*out)->jobs = jobs;
	(*out)->njobs = n;
	if (n > 0 && ((*out)->settled = calloc(n, 1)) == NULL) {
		gmc_call_free(*out);
		return gmc_error_set(GM_ENOMEM, "out of memory");
	}
	return GM_OK;
}

int gmc_start_call(gemmd_client *c, gmc_call *k, const gm_job_desc *d,
		   const gm_batch *b, const char *json)
{
	gmc_todo t = GMC_TODO_INIT(c);
	gmc_daemon *dm = NULL;
	bool staged = false;
	gmc_plan pl;
	int rv;

	pthread_mutex_lock(&c->mu);
	if (!c->closing) {
		dm = gmc_daemon_pick(c, k->jobs, json ? 0 : k->njobs);
		staged = json == NULL && gmc_stage_wants(dm, k, d);
	}
	pthread_mutex_unlock(&c->mu);
	if (dm == NULL)
		return gmc_error_set(GM_ECANCELED, "the client is closing");
	/* Frames are built outside the lock: small operands are copied. */
	if (!staged && (rv = gmc_daemon_plan(dm, k, d, b, json, &pl)) != 0)
		return rv;
	pthread_mutex_lock(&c->mu);
	if (c->closing) {
		pthread_mutex_unlock(&c->mu);
		if (!staged)
			gmc_plan_free(&pl);
		return gmc_error_set(GM_ECANCELED, "the client is closing");
	}
	clock_start(k);
	if (staged)
		gmc_stage_submit(dm, k, d, b, &t);
	else
		gmc_daemon_queue(dm, k, &pl, &t);
	pthread_mutex_unlock(&c->mu);
	gmc_todo_run(&t);
	return GM_OK;
}
