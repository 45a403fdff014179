/*
 * gemmd.c - the client library's public calls: opening and closing a
 * client, GEMM requests (blocking, asynchronous, detached), control
 * requests and waits, and the last error. Each call checks what the
 * caller gave, encodes the request (gm_encode.h) and runs it as a call
 * (gm_call.h); dialling is gm_dial.h's, regions gm_shm.h's.
 */
#include "gemmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_call.h"
#include "gm_client.h"
#include "gm_dial.h"
#include "gm_encode.h"
#include "gm_proto.h"
#include "gm_shm.h"

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
		return gm_client_seterr(GM_EINVAL, "no client or no jobs");
	if (n > GM_MAX_JOBS)
		return gm_client_seterr(GM_ETOOMANY,
					"%" PRIu32 " jobs, at most %u", n,
					GM_MAX_JOBS);
	if (o != NULL && (o->priority < 0 || o->priority > GM_BATCH_PRIO_MAX))
		return gm_client_seterr(GM_EINVAL, "priority %d, must be 0..%d",
					o->priority, GM_BATCH_PRIO_MAX);
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gm_client_seterr(GM_EINVAL, "timeout %d ms, must be > 0",
					timeout_ms);
	return GM_OK;
}

static void reset_jobs(gemmd_job *jobs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		memset(&jobs[i].t, 0, sizeof(jobs[i].t));
		gm_call_job_status(&jobs[i], GM_OK, "");
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
		rv = gm_encode_job(&jobs[bad], need_out, &d[bad], detail,
				   sizeof(detail));
	if (rv == GM_OK)
		return GM_OK;
	bad--;
	for (i = 0; i < n; i++)
		gm_call_job_status(&jobs[i], GM_ECANCELED,
				   "not sent: another job is invalid");
	gm_call_job_status(&jobs[bad], rv, detail);
	return gm_client_seterr(rv, "job %" PRIu32 ": %s", bad, detail);
}

/* Builds the request and starts a call that owns it. */
static int submit_start(gemmd_client *c, gemmd_job *jobs, const gm_job_desc *d,
			uint32_t n, const gemmd_submit_opts *o, int timeout_ms,
			uint64_t *ids, const gm_call_notify *nt)
{
	gm_batch b = {GM_BATCH_PRIO_DEFAULT, 0, ids ? GM_BATCH_DETACH : 0};
	gm_call_want want = {.jobs = jobs, .njobs = n, .ids = ids};
	gm_call *k;
	nng_msg *msg;
	int rv;

	if (o != NULL) {
		b.priority = (uint8_t)o->priority;
		b.deadline_ms = o->deadline_ms;
	}
	if ((rv = gm_call_get(c, &k)) != 0)
		return rv;
	if ((rv = gm_encode_gemm(jobs, d, n, &b, gm_call_id(k), &msg)) != 0) {
		gm_call_put(k);
		return rv;
	}
	gm_call_start(k, msg, timeout_ms, &want, nt);
	return GM_OK;
}

/* What the submit calls share; ids: a detached request's. */
static int submit(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		  const gemmd_submit_opts *o, int timeout_ms, uint64_t *ids,
		  const gm_call_notify *nt)
{
	gm_job_desc *d = NULL;
	uint32_t i;
	int rv;

	if ((rv = check_args(c, jobs, n, o, timeout_ms)) != 0)
		goto fail;
	reset_jobs(jobs, n);
	if ((d = calloc(n, sizeof(*d))) == NULL) {
		rv = gm_client_seterr(GM_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rv = check_jobs(jobs, n, d, ids == NULL)) != 0) {
		free(d);
		return rv; /* the jobs say which one */
	}
	rv = submit_start(c, jobs, d, n, o, timeout_ms, ids, nt);
	free(d);
	if (rv == GM_OK)
		return GM_OK;
fail:
	for (i = 0; jobs != NULL && i < n; i++)
		gm_call_job_status(&jobs[i], rv, gm_client_lasterr());
	return rv;
}

/* gemmd_submit, and with ids gemmd_submit_detached. */
static int submit_wait(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		       const gemmd_submit_opts *opts, int timeout_ms,
		       uint64_t *ids)
{
	gm_call_waiter w;
	gm_call_notify nt = {NULL, NULL, &w};
	int rv;

	if ((rv = gm_call_waiter_init(&w)) != 0)
		return rv;
	if ((rv = submit(c, jobs, n, opts, timeout_ms, ids, &nt)) != 0) {
		gm_call_waiter_drop(&w);
		return rv;
	}
	gm_client_clearerr();
	return gm_call_wait(&w);
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
	gm_call_notify nt = {done, arg, NULL};

	if (done == NULL)
		return gm_client_seterr(GM_EINVAL, "no done callback");
	gm_client_clearerr();
	return submit(c, jobs, n, opts, timeout_ms, NULL, &nt);
}

/* ---- control requests ---- */

/* Starts a control request told to w; with job, a wait whose result
 * goes there. */
static int ctrl_start(gemmd_client *c, const char *request, int timeout_ms,
		      gm_call_waiter *w, gemmd_job *job)
{
	gm_call_want want = {.jobs = job,
			     .njobs = job != NULL,
			     .wait = job != NULL,
			     .alloc_out = job != NULL && job->out == NULL};
	gm_call_notify nt = {NULL, NULL, w};
	gm_call *k;
	nng_msg *msg;
	int rv;

	if ((rv = gm_call_get(c, &k)) != 0)
		return rv;
	if ((rv = gm_encode_ctrl(request, gm_call_id(k), &msg)) != 0) {
		gm_call_put(k);
		return rv;
	}
	gm_call_start(k, msg, timeout_ms, &want, &nt);
	return GM_OK;
}

int gemmd_ctrl(gemmd_client *c, const char *request, char **reply,
	       int timeout_ms)
{
	gm_call_waiter w;
	int rv;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || request == NULL)
		return gm_client_seterr(GM_EINVAL, "no client or no request");
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gm_client_seterr(GM_EINVAL, "timeout %d ms, must be > 0",
					timeout_ms);
	if ((rv = gm_call_waiter_init(&w)) != 0)
		return rv;
	if ((rv = ctrl_start(c, request, timeout_ms, &w, NULL)) != 0) {
		gm_call_waiter_drop(&w);
		return rv;
	}
	gm_client_clearerr();
	if ((rv = gm_call_wait(&w)) != 0)
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
		return gm_client_seterr(GM_EINVAL, "no place for the job ids");
	return submit_wait(c, jobs, n, opts, timeout_ms, ids);
}

int gemmd_wait(gemmd_client *c, uint64_t id, gemmd_job *job, int timeout_ms)
{
	int call_ms = GEMMD_FOREVER;
	gm_call_waiter w;
	char req[96];
	int rv;

	if (c == NULL || job == NULL)
		return gm_client_seterr(GM_EINVAL, "no client or no job");
	if (timeout_ms < 0 && timeout_ms != GEMMD_FOREVER)
		return gm_client_seterr(
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
	if ((rv = gm_call_waiter_init(&w)) != 0) {
		gm_call_job_status(job, rv, gm_client_lasterr());
		return rv;
	}
	if ((rv = ctrl_start(c, req, call_ms, &w, job)) != 0) {
		gm_call_waiter_drop(&w);
		gm_call_job_status(job, rv, gm_client_lasterr());
		return rv;
	}
	gm_client_clearerr();
	return gm_call_wait(&w);
}

/* ---- opening and closing ---- */

int gemmd_open(const char *url, const gemmd_open_opts *opts, gemmd_client **out)
{
	static const gemmd_open_opts none;
	gemmd_client *cl;
	int rv;

	if (out == NULL)
		return gm_client_seterr(GM_EINVAL, "no place for the client");
	*out = NULL;
	if (url == NULL && ((url = getenv("GEMMD_URL")) == NULL || !*url))
		url = GEMMD_DEFAULT_URL;
	if ((cl = calloc(1, sizeof(*cl))) == NULL)
		return gm_client_seterr(GM_ENOMEM, "out of memory");
	if (pthread_mutex_init(&cl->mu, NULL) != 0) {
		rv = gm_client_seterr(GM_ENOMEM, "out of memory");
		goto fail_mutex;
	}
	cl->next_id = 1;
	if ((rv = gm_shm_new(url, opts != NULL ? opts->region_socket : NULL,
			     &cl->shm)) != 0) {
		gm_client_seterr(rv, "out of memory");
		goto fail_shm;
	}
	if ((rv = gm_dial_socket(&cl->sock)) != 0)
		goto fail_socket;
	if ((rv = gm_dial_url(cl->sock, url, opts != NULL ? opts : &none)) != 0)
		goto fail_dial;
	gm_client_clearerr();
	*out = cl;
	return GM_OK;
fail_dial:
	nng_close(cl->sock);
fail_socket:
	gm_shm_free(cl->shm);
fail_shm:
	pthread_mutex_destroy(&cl->mu);
fail_mutex:
	free(cl);
	return rv;
}

int gemmd_dial(gemmd_client *c, const char *url, const gemmd_open_opts *opts)
{
	static const gemmd_open_opts none;
	int rv;

	if (c == NULL || url == NULL)
		return gm_client_seterr(GM_EINVAL, "no client or no URL");
	if ((rv = gm_dial_url(c->sock, url, opts != NULL ? opts : &none)) == 0)
		gm_client_clearerr();
	return rv;
}

void gemmd_close(gemmd_client *cl)
{
	if (cl == NULL)
		return;
	gm_call_close_all(cl);
	gm_dial_close(cl->sock);
	gm_shm_free(cl->shm);
	pthread_mutex_destroy(&cl->mu);
	free(cl);
}

const char *gemmd_strerror(int code)
{
	return gm_strerror(code);
}

const char *gemmd_last_error(void)
{
	return gm_client_lasterr();
}
