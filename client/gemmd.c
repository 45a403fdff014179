/*
 * gemmd.c - the client library's public calls: opening and closing a
 * client, GEMM requests (blocking, asynchronous, detached), control
 * requests and waits, and the last error. Each call checks what the
 * caller gave and runs it as a call (gmc_call.h) that a daemon's
 * connections carry (gmc_daemon.h, gmc_conn.h); regions are gmc_shm.h's.
 */
#include "gemmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmc_call.h"
#include "gmc_client.h"
#include "gmc_daemon.h"
#include "gmc_encode.h"
#include "gm_proto.h"
#include "gmc_stage.h"
#include "gmc_workers.h"

_Static_assert((int)GEMMD_FP64 == GM_FP64 && (int)GEMMD_FP32 == GM_FP32 &&
		   (int)GEMMD_TF32 == GM_TF32 && (int)GEMMD_FP16 == GM_FP16 &&
		   (int)GEMMD_BF16 == GM_BF16,
	       "public dtypes are the wire dtypes");
_Static_assert((int)GEMMD_ROW_MAJOR == GM_ROW_MAJOR &&
		   (int)GEMMD_COL_MAJOR == GM_COL_MAJOR &&
		   (int)GEMMD_KERNEL_CUBLAS == GM_KERNEL_CUBLAS &&
		   (int)GEMMD_KERNEL_TILED == GM_KERNEL_TILED,
	       "public layouts and kernels are the wire values");
_Static_assert(GEMMD_MSG_TEXT == GM_MSG_TEXT + 1 &&
		   GEMMD_MAX_DIM == GM_MAX_DIM &&
		   GEMMD_MAX_JOBS == GM_MAX_JOBS &&
		   GEMMD_PRIORITY_MAX == GM_BATCH_PRIO_MAX &&
		   GEMMD_PRIORITY_DEFAULT == GM_BATCH_PRIO_DEFAULT,
	       "public limits are the wire limits");

/* ---- GEMM requests ---- */

static int check_args(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		      const gemmd_submit_opts *o, int timeout_ms)
{
	if (c == NULL || jobs == NULL || n == 0)
		return gmc_client_seterr(GM_EINVAL, "no client or no jobs");
	if (n > GM_MAX_JOBS)
		return gmc_client_seterr(GM_ETOOMANY,
					 "%" PRIu32 " jobs, at most %u", n,
					 GM_MAX_JOBS);
	if (o != NULL && (o->priority < 0 || o->priority > GM_BATCH_PRIO_MAX))
		return gmc_client_seterr(GM_EINVAL,
					 "priority %d, must be 0..%d",
					 o->priority, GM_BATCH_PRIO_MAX);
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_client_seterr(
		    GM_EINVAL, "timeout %d ms, must be > 0", timeout_ms);
	return GM_OK;
}

static void reset_jobs(gemmd_job *jobs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		memset(&jobs[i].t, 0, sizeof(jobs[i].t));
		gmc_call_job_status(&jobs[i], GM_OK, "");
	}
}

/* Checks every job, so that a bad one costs no round trip, and fills
 * d[]. On failure job i says why, the others that they were not sent. */
static int check_jobs(gemmd_job *jobs, uint32_t n, gm_job_desc *d,
		      bool need_out)
{
	char detail[2 * GM_MSG_TEXT];
	uint32_t i, bad;
	int rv = GM_OK;

	for (bad = 0; bad < n && rv == GM_OK; bad++)
		rv = gmc_encode_job(&jobs[bad], need_out, &d[bad], detail,
				    sizeof(detail));
	if (rv == GM_OK)
		return GM_OK;
	bad--;
	for (i = 0; i < n; i++)
		gmc_call_job_status(&jobs[i], GM_ECANCELED,
				    "not sent: another job is invalid");
	gmc_call_job_status(&jobs[bad], rv, detail);
	return gmc_client_seterr(rv, "job %" PRIu32 ": %s", bad, detail);
}

/* Routes k to a daemon, builds its frames and queues them: for a GEMM
 * or detached call from its jobs' descriptions d and batch b, for a
 * control call or a wait from json. On GM_OK the call is under way and
 * may already have ended (k is no longer the caller's); on failure k
 * was never started. */
static int start_call(gemmd_client *c, gmc_call *k, const gm_job_desc *d,
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
		return gmc_client_seterr(GM_ECANCELED, "the client is closing");
	/* Frames are built outside the lock: small operands are copied. */
	if (!staged && (rv = gmc_daemon_plan(dm, k, d, b, json, &pl)) != 0)
		return rv;
	pthread_mutex_lock(&c->mu);
	if (c->closing) {
		pthread_mutex_unlock(&c->mu);
		if (!staged)
			gmc_plan_free(&pl);
		return gmc_client_seterr(GM_ECANCELED, "the client is closing");
	}
	gmc_call_start(k);
	if (staged)
		gmc_stage_submit(dm, k, d, b, &t);
	else
		gmc_daemon_queue(dm, k, &pl, &t);
	pthread_mutex_unlock(&c->mu);
	gmc_todo_run(&t);
	return GM_OK;
}

/* A call of kind for jobs[0..n-1] (none for a control call). */
static int new_call(gemmd_client *c, int kind, gemmd_job *jobs, uint32_t n,
		    int timeout_ms, const gmc_call_notify *nt, gmc_call **out)
{
	int rv;

	if ((rv = gmc_call_new(c, kind, timeout_ms, nt, out)) != GM_OK)
		return rv;
	(*out)->jobs = jobs;
	(*out)->njobs = n;
	if (n > 0 && ((*out)->settled = calloc(n, 1)) == NULL) {
		gmc_call_free(*out);
		return gmc_client_seterr(GM_ENOMEM, "out of memory");
	}
	return GM_OK;
}

/* The deadline a request carries: the caller's, or its call's timeout
 * when that is sooner, so that the daemon never starts a job whose caller
 * has given up on it. A detached request's jobs outlive the call that
 * sends them: only the caller's. */
static uint32_t deadline_of(uint32_t deadline_ms, int timeout_ms, bool detached)
{
	if (detached || timeout_ms == GEMMD_FOREVER)
		return deadline_ms;
	if (deadline_ms == 0 || (uint32_t)timeout_ms < deadline_ms)
		return (uint32_t)timeout_ms;
	return deadline_ms;
}

/* What the submit calls share; ids: a detached request's. */
static int submit(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		  const gemmd_submit_opts *o, int timeout_ms, uint64_t *ids,
		  const gmc_call_notify *nt)
{
	gm_batch b = {GM_BATCH_PRIO_DEFAULT, 0, ids ? GM_BATCH_DETACH : 0};
	gm_job_desc *d = NULL;
	gmc_call *k = NULL;
	uint32_t i;
	int rv;

	if ((rv = check_args(c, jobs, n, o, timeout_ms)) != 0)
		goto fail;
	reset_jobs(jobs, n);
	if ((d = calloc(n, sizeof(*d))) == NULL) {
		rv = gmc_client_seterr(GM_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rv = check_jobs(jobs, n, d, ids == NULL)) != 0) {
		free(d);
		return rv; /* the jobs say which one */
	}
	if (o != NULL) {
		b.priority = (uint8_t)o->priority;
		b.deadline_ms = o->deadline_ms;
	}
	b.deadline_ms = deadline_of(b.deadline_ms, timeout_ms, ids != NULL);
	if ((rv = new_call(c, ids ? GMC_CALL_DETACH : GMC_CALL_GEMM, jobs, n,
			   timeout_ms, nt, &k)) == GM_OK) {
		k->ids = ids;
		if ((rv = start_call(c, k, d, &b, NULL)) != GM_OK)
			gmc_call_free(k);
	}
	free(d);
	if (rv == GM_OK)
		return GM_OK;
fail:
	for (i = 0; jobs != NULL && i < n; i++)
		gmc_call_job_status(&jobs[i], rv, gmc_client_lasterr());
	return rv;
}

/* gemmd_submit, and with ids gemmd_submit_detached. */
static int submit_wait(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		       const gemmd_submit_opts *opts, int timeout_ms,
		       uint64_t *ids)
{
	gmc_call_waiter w;
	gmc_call_notify nt = {NULL, NULL, &w};
	int rv;

	if ((rv = gmc_call_waiter_init(&w, c)) != 0)
		return rv;
	if ((rv = submit(c, jobs, n, opts, timeout_ms, ids, &nt)) != 0) {
		gmc_call_waiter_drop(&w);
		return rv;
	}
	gmc_client_clearerr();
	return gmc_call_wait(&w);
}

int gemmd_submit(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		 const gemmd_submit_opts *opts, int timeout_ms)
{
	return submit_wait(c, jobs, n, opts, timeout_ms, NULL);
}

int gemmd_submit_async(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		       const gemmd_submit_opts *opts, int timeout_ms,
		       gemmd_done_fn done, void *arg)
{
	gmc_call_notify nt = {done, arg, NULL};

	if (done == NULL)
		return gmc_client_seterr(GM_EINVAL, "no done callback");
	gmc_client_clearerr();
	return submit(c, jobs, n, opts, timeout_ms, NULL, &nt);
}

/* ---- control requests ---- */

/* Starts a control request told to w; with job, a wait whose result
 * goes there. */
static int ctrl_start(gemmd_client *c, const char *request, int timeout_ms,
		      gmc_call_waiter *w, gemmd_job *job)
{
	gmc_call_notify nt = {NULL, NULL, w};
	gmc_call *k;
	int rv;

	if ((rv = new_call(c, job ? GMC_CALL_WAIT : GMC_CALL_CTRL, job,
			   job != NULL, timeout_ms, &nt, &k)) != GM_OK)
		return rv;
	k->alloc_out = job != NULL && job->out == NULL;
	if ((rv = start_call(c, k, NULL, NULL, request)) != GM_OK)
		gmc_call_free(k);
	return rv;
}

int gemmd_ctrl(gemmd_client *c, const char *request, char **reply,
	       int timeout_ms)
{
	gmc_call_waiter w;
	int rv;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || request == NULL)
		return gmc_client_seterr(GM_EINVAL, "no client or no request");
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_client_seterr(
		    GM_EINVAL, "timeout %d ms, must be > 0", timeout_ms);
	if ((rv = gmc_call_waiter_init(&w, c)) != 0)
		return rv;
	if ((rv = ctrl_start(c, request, timeout_ms, &w, NULL)) != 0) {
		gmc_call_waiter_drop(&w);
		return rv;
	}
	gmc_client_clearerr();
	if ((rv = gmc_call_wait(&w)) != 0)
		return rv;
	if (reply != NULL)
		*reply = w.reply;
	else
		free(w.reply);
	return GM_OK;
}

/* ---- detached jobs ---- */

/* A wait's answer is the daemon's to give: the call allows it this much
 * longer than the wait it asks for. */
#define WAIT_SLACK_MS 1000

int gemmd_submit_detached(gemmd_client *c, gemmd_job *jobs, uint32_t n,
			  const gemmd_submit_opts *opts, uint64_t *ids,
			  int timeout_ms)
{
	if (ids == NULL)
		return gmc_client_seterr(GM_EINVAL, "no place for the job ids");
	return submit_wait(c, jobs, n, opts, timeout_ms, ids);
}

int gemmd_wait(gemmd_client *c, uint64_t id, gemmd_job *job, int timeout_ms)
{
	int call_ms = GEMMD_FOREVER;
	gmc_call_waiter w;
	char req[96];
	int rv;

	if (c == NULL || job == NULL)
		return gmc_client_seterr(GM_EINVAL, "no client or no job");
	if (timeout_ms < 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_client_seterr(
		    GM_EINVAL, "timeout %d ms, must be >= 0", timeout_ms);
	if (timeout_ms == GEMMD_FOREVER) {
		snprintf(req, sizeof(req),
			 "{\"op\":\"wait\",\"job\":%" PRIu64 "}", id);
	} else {
		snprintf(req, sizeof(req),
			 "{\"op\":\"wait\",\"job\":%" PRIu64
			 ",\"timeout_ms\":%d}",
			 id, timeout_ms);
		call_ms = timeout_ms > INT32_MAX - WAIT_SLACK_MS
			      ? INT32_MAX
			      : timeout_ms + WAIT_SLACK_MS;
	}
	reset_jobs(job, 1);
	if ((rv = gmc_call_waiter_init(&w, c)) != 0) {
		gmc_call_job_status(job, rv, gmc_client_lasterr());
		return rv;
	}
	if ((rv = ctrl_start(c, req, call_ms, &w, job)) != 0) {
		gmc_call_waiter_drop(&w);
		gmc_call_job_status(job, rv, gmc_client_lasterr());
		return rv;
	}
	gmc_client_clearerr();
	return gmc_call_wait(&w);
}

/* ---- opening and closing ---- */

/* Adds a daemon at url to cl and dials it; without GEMMD_OPEN_LAZY
 * waits up to timeout_ms for the first connection, and on failure
 * forgets it. */
static int add_daemon(gemmd_client *cl, const char *url,
		      const gemmd_open_opts *o, int timeout_ms)
{
	gmc_todo t = GMC_TODO_INIT(cl);
	gmc_daemon *dm, **all;
	int rv;

	if ((rv = gmc_daemon_new(cl, url, o, &dm)) != GM_OK)
		return rv;
	pthread_mutex_lock(&cl->mu);
	gmc_daemon_start(dm, &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
	if (!(o->flags & GEMMD_OPEN_LAZY) &&
	    (rv = gmc_daemon_await(dm, timeout_ms)) != GM_OK) {
		gmc_daemon_stop(dm);
		return rv;
	}
	pthread_mutex_lock(&cl->mu);
	all = realloc(cl->daemons, (cl->ndaemons + 1) * sizeof(*all));
	if (all != NULL) {
		cl->daemons = all;
		all[cl->ndaemons++] = dm;
	}
	pthread_mutex_unlock(&cl->mu);
	if (all == NULL) {
		gmc_daemon_stop(dm);
		return gmc_client_seterr(GM_ENOMEM, "out of memory");
	}
	return GM_OK;
}

static void client_free(gemmd_client *cl)
{
	gmc_workers_free(cl->workers);
	gmc_timer_free(cl->timer);
	for (unsigned i = 0; i < cl->ndaemons; i++)
		gmc_daemon_free(cl->daemons[i]);
	free(cl->daemons);
	gmc_idmap_free(&cl->parts);
	gm_poller_free(cl->poller);
	pthread_cond_destroy(&cl->cv);
	pthread_mutex_destroy(&cl->mu);
	free(cl);
}

int gemmd_open_timeout(const char *url, const gemmd_open_opts *opts,
		       gemmd_client **out, int timeout_ms)
{
	static const gemmd_open_opts none;
	gemmd_client *cl;
	int rv;

	if (out == NULL)
		return gmc_client_seterr(GM_EINVAL, "no place for the client");
	*out = NULL;
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_client_seterr(
		    GM_EINVAL, "timeout %d ms, must be > 0", timeout_ms);
	if (url == NULL && ((url = getenv("GEMMD_URL")) == NULL || !*url))
		url = GEMMD_DEFAULT_URL;
	if ((cl = calloc(1, sizeof(*cl))) == NULL)
		return gmc_client_seterr(GM_ENOMEM, "out of memory");
	pthread_mutex_init(&cl->mu, NULL);
	pthread_cond_init(&cl->cv, NULL);
	if (gmc_timer_new(&cl->timer) != GM_OK ||
	    gm_poller_new(GM_POLLER_TAKE_BACK, &cl->poller) != GM_OK) {
		client_free(cl);
		return gmc_client_seterr(GM_ENOMEM, "out of memory");
	}
	if ((rv = add_daemon(cl, url, opts ? opts : &none, timeout_ms)) !=
	    GM_OK) {
		client_free(cl);
		return rv;
	}
	gmc_client_clearerr();
	*out = cl;
	return GM_OK;
}

int gemmd_open(const char *url, const gemmd_open_opts *opts, gemmd_client **out)
{
	return gemmd_open_timeout(url, opts, out, GEMMD_OPEN_TIMEOUT_MS);
}

int gemmd_dial(gemmd_client *c, const char *url, const gemmd_open_opts *opts)
{
	static const gemmd_open_opts none;
	int rv;

	if (c == NULL || url == NULL)
		return gmc_client_seterr(GM_EINVAL, "no client or no URL");
	if ((rv = add_daemon(c, url, opts ? opts : &none,
			     GEMMD_OPEN_TIMEOUT_MS)) == GM_OK)
		gmc_client_clearerr();
	return rv;
}

void gemmd_close(gemmd_client *cl)
{
	gmc_todo t;

	if (cl == NULL)
		return;
	t = GMC_TODO_INIT(cl);
	pthread_mutex_lock(&cl->mu);
	cl->closing = true;
	for (unsigned i = 0; i < cl->ndaemons; i++)
		gmc_daemon_stopping(cl->daemons[i]);
	while (cl->calls != NULL)
		gmc_call_end(cl->calls, GM_ECANCELED, "the client closed", &t);
	pthread_mutex_unlock(&cl->mu);
	gmc_todo_run(&t);
	for (unsigned i = 0; i < cl->ndaemons; i++)
		gmc_daemon_shutdown(cl->daemons[i]);
	/* The tells that polling callers handed to the timer thread run
	 * before it stops. */
	pthread_mutex_lock(&cl->mu);
	while (cl->deferred > 0)
		pthread_cond_wait(&cl->cv, &cl->mu);
	pthread_mutex_unlock(&cl->mu);
	client_free(cl);
}

const char *gemmd_strerror(int code)
{
	return gm_strerror(code);
}

const char *gemmd_last_error(void)
{
	return gmc_client_lasterr();
}
