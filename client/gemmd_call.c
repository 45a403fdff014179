/*
 * gemmd_call.c - the public calls that run as calls (gmc_start.h): GEMM
 * requests (blocking, asynchronous, detached), control requests and
 * waits. Each checks what the caller gave before a call is made.
 */
#include "gemmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_proto.h"
#include "gmc_call.h"
#include "gmc_encode.h"
#include "gmc_error.h"
#include "gmc_start.h"
#include "gmc_tell.h"

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
		return gmc_error_set(GM_EINVAL, "no client or no jobs");
	if (n > GM_MAX_JOBS)
		return gmc_error_set(GM_ETOOMANY,
				     "%" PRIu32 " jobs, at most %u", n,
				     GM_MAX_JOBS);
	if (o != NULL && (o->priority < 0 || o->priority > GM_BATCH_PRIO_MAX))
		return gmc_error_set(GM_EINVAL, "priority %d, must be 0..%d",
				     o->priority, GM_BATCH_PRIO_MAX);
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_error_set(GM_EINVAL, "timeout %d ms, must be > 0",
				     timeout_ms);
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
	return gmc_error_set(rv, "job %" PRIu32 ": %s", bad, detail);
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
		rv = gmc_error_set(GM_ENOMEM, "out of memory");
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
	if ((rv = gmc_start_new(c, ids ? GMC_CALL_DETACH : GMC_CALL_GEMM, jobs,
				n, timeout_ms, nt, &k)) == GM_OK) {
		k->ids = ids;
		if ((rv = gmc_start_call(c, k, d, &b, NULL)) != GM_OK)
			gmc_call_free(k);
	}
	free(d);
	if (rv == GM_OK)
		return GM_OK;
fail:
	for (i = 0; jobs != NULL && i < n; i++)
		gmc_call_job_status(&jobs[i], rv, gmc_error_last());
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

	if ((rv = gmc_tell_waiter_init(&w, c)) != 0)
		return rv;
	if ((rv = submit(c, jobs, n, opts, timeout_ms, ids, &nt)) != 0) {
		gmc_tell_waiter_drop(&w);
		return rv;
	}
	gmc_error_clear();
	return gmc_tell_wait(&w);
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
		return gmc_error_set(GM_EINVAL, "no done callback");
	gmc_error_clear();
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

	if ((rv = gmc_start_new(c, job ? GMC_CALL_WAIT : GMC_CALL_CTRL, job,
				job != NULL, timeout_ms, &nt, &k)) != GM_OK)
		return rv;
	k->alloc_out = job != NULL && job->out == NULL;
	if ((rv = gmc_start_call(c, k, NULL, NULL, request)) != GM_OK)
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
		return gmc_error_set(GM_EINVAL, "no client or no request");
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_error_set(GM_EINVAL, "timeout %d ms, must be > 0",
				     timeout_ms);
	if ((rv = gmc_tell_waiter_init(&w, c)) != 0)
		return rv;
	if ((rv = ctrl_start(c, request, timeout_ms, &w, NULL)) != 0) {
		gmc_tell_waiter_drop(&w);
		return rv;
	}
	gmc_error_clear();
	if ((rv = gmc_tell_wait(&w)) != 0)
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
		return gmc_error_set(GM_EINVAL, "no place for the job ids");
	return submit_wait(c, jobs, n, opts, timeout_ms, ids);
}

int gemmd_wait(gemmd_client *c, uint64_t id, gemmd_job *job, int timeout_ms)
{
	int call_ms = GEMMD_FOREVER;
	gmc_call_waiter w;
	char req[96];
	int rv;

	if (c == NULL || job == NULL)
		return gmc_error_set(GM_EINVAL, "no client or no job");
	if (timeout_ms < 0 && timeout_ms != GEMMD_FOREVER)
		return gmc_error_set(GM_EINVAL, "timeout %d ms, must be >= 0",
				     timeout_ms);
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
	if ((rv = gmc_tell_waiter_init(&w, c)) != 0) {
		gmc_call_job_status(job, rv, gmc_error_last());
		return rv;
	}
	if ((rv = ctrl_start(c, req, call_ms, &w, job)) != 0) {
		gmc_tell_waiter_drop(&w);
		gmc_call_job_status(job, rv, gmc_error_last());
		return rv;
	}
	gmc_error_clear();
	return gmc_tell_wait(&w);
}
