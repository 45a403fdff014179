/*
 * gm_call.c - a request in flight, from its send to its reply read into
 * the caller's jobs; see gm_call.h.
 */
#include "gm_call.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <nng/supplemental/util/platform.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error_nng.h"
#include "gm_proto.h"

enum call_state { CALL_SEND, CALL_RECV };

struct gm_call {
	gemmd_client *cl;
	gm_call *next_free, *next_all;
	nng_ctx ctx;
	nng_aio *aio;
	enum call_state state;
	uint64_t id;
	int timeout_ms;
	nng_time deadline; /* when timeout_ms != GEMMD_FOREVER */
	gm_call_want want; /* what the reply is read into */
	char *reply;	   /* control: the JSON document */
	gm_call_notify nt;
	char msg[GM_CLIENT_ERRLEN];
};

static void call_cb(void *arg);

static int call_new(gemmd_client *cl, gm_call **out)
{
	gm_call *k;
	int nrv;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return gm_client_seterr(GM_ENOMEM, "out of memory");
	k->cl = cl;
	if ((nrv = nng_aio_alloc(&k->aio, call_cb, k)) != 0) {
		free(k);
		return gm_client_seterr(gm_error_nng(nrv), "aio: %s",
					nng_strerror(nrv));
	}
	if ((nrv = nng_ctx_open(&k->ctx, cl->sock)) != 0) {
		nng_aio_free(k->aio);
		free(k);
		return gm_client_seterr(gm_error_nng(nrv), "context: %s",
					nng_strerror(nrv));
	}
	pthread_mutex_lock(&cl->mu);
	k->next_all = cl->all;
	cl->all = k;
	pthread_mutex_unlock(&cl->mu);
	*out = k;
	return GM_OK;
}

/* Takes a free slot, or makes one, and gives it a fresh request id. */
int gm_call_get(gemmd_client *cl, gm_call **out)
{
	gm_call *k;
	bool closing;
	int rv;

	pthread_mutex_lock(&cl->mu);
	closing = cl->closing;
	if ((k = cl->free) != NULL)
		cl->free = k->next_free;
	pthread_mutex_unlock(&cl->mu);
	if (closing)
		return gm_client_seterr(GM_ECANCELED, "client is closing");
	if (k == NULL && (rv = call_new(cl, &k)) != 0)
		return rv;
	pthread_mutex_lock(&cl->mu);
	k->id = cl->next_id++;
	pthread_mutex_unlock(&cl->mu);
	k->msg[0] = '\0';
	k->reply = NULL;
	*out = k;
	return GM_OK;
}

void gm_call_put(gm_call *k)
{
	gemmd_client *cl = k->cl;

	pthread_mutex_lock(&cl->mu);
	k->next_free = cl->free;
	cl->free = k;
	pthread_mutex_unlock(&cl->mu);
}

__attribute__((format(printf, 3, 4))) static int
call_error(gm_call *k, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* Keeps what fits of msg; a longer detail stays in gemmd_last_error(). */
void gm_call_job_status(gemmd_job *j, int status, const char *msg)
{
	size_t n = strnlen(msg, sizeof(j->message) - 1);

	j->status = status;
	memcpy(j->message, msg, n);
	j->message[n] = '\0';
}

/* Hands the outcome to the waiter or the done callback, then frees the
 * slot: the waiter may return and close the client the moment it is
 * signalled, and gemmd_close waits for this callback to end. */
static void call_finish(gm_call *k, int rv)
{
	gm_call_waiter *w = k->nt.w;
	uint32_t i;

	for (i = 0; rv != 0 && i < k->want.njobs; i++)
		gm_call_job_status(&k->want.jobs[i], rv, k->msg);
	if (w != NULL) {
		pthread_mutex_lock(&w->mu);
		w->rv = rv;
		w->reply = k->reply;
		memcpy(w->msg, k->msg, sizeof(w->msg));
		w->done = true;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
	} else {
		k->nt.done(k->nt.arg, rv);
	}
	gm_call_put(k);
}

static nng_duration call_remaining(const gm_call *k)
{
	nng_time now = nng_clock();

	if (k->timeout_ms == GEMMD_FOREVER)
		return NNG_DURATION_INFINITE;
	return k->deadline > now ? (nng_duration)(k->deadline - now)
				 : NNG_DURATION_ZERO;
}

static int call_transport(gm_call *k, int nrv)
{
	if (nrv == NNG_ETIMEDOUT && k->state == CALL_SEND)
		return call_error(k, GM_ETIMEDOUT,
				  "no connection to the daemon within %d ms",
				  k->timeout_ms);
	if (nrv == NNG_ETIMEDOUT)
		return call_error(k, GM_ETIMEDOUT, "no reply within %d ms",
				  k->timeout_ms);
	if (nrv == NNG_ECONNRESET || nrv == NNG_ECONNSHUT)
		return call_error(k, GM_ETRANSPORT,
				  "connection lost before the reply; the "
				  "request was not resent");
	return call_error(k, gm_error_nng(nrv), "%s: %s",
			  k->state == CALL_SEND ? "send" : "receive",
			  nng_strerror(nrv));
}

/* ---- replies ---- */

/* A reply echoes the job's dtype, layout, m and n (PROTOCOL.md 5.1);
 * anything else is a daemon bug that must not reach the caller's out. */
static bool result_matches(const gemmd_job *j, const gm_reply_job *r)
{
	/* A result written to a region comes back without bytes. */
	uint64_t want = j->out_ref.region != NULL
			    ? 0
			    : (uint64_t)j->m * j->n * gm_dtype_size(j->dtype);

	return r->dtype == j->dtype && r->m == j->m && r->n == j->n &&
	       r->layout == j->layout && r->result_bytes == want;
}

/* A wait for a job given without out: the shape is the result's, and
 * out is made to hold it. */
static int adopt_shape(gemmd_job *j, const gm_reply_job *r)
{
	j->dtype = r->dtype;
	j->layout = r->layout;
	j->m = r->m;
	j->n = r->n;
	if (r->status == GM_OK &&
	    (j->out = malloc(r->result_bytes ? r->result_bytes : 1)) == NULL) {
		gm_call_job_status(j, GM_ENOMEM, "no memory for the result");
		return GM_ENOMEM;
	}
	return GM_OK;
}

/* mismatch: the status of a result whose shape is not the job's. */
static void take_job(gemmd_job *j, const gm_reply_job *r, int mismatch)
{
	j->t.queue_us = r->t.queue_us;
	j->t.h2d_us = r->t.h2d_us;
	j->t.kernel_us = r->t.kernel_us;
	j->t.d2h_us = r->t.d2h_us;
	j->t.total_us = r->t.total_us;
	gm_call_job_status(j, (int)r->status, r->message);
	if (r->status != GM_OK)
		return;
	if (!result_matches(j, r)) {
		snprintf(j->message, sizeof(j->message),
			 "reply is %" PRIu32 "x%" PRIu32 " %s layout %u, job "
			 "was %" PRIu32 "x%" PRIu32 " %s layout %d",
			 r->m, r->n, gm_dtype_name(r->dtype), r->layout, j->m,
			 j->n, gm_dtype_name(j->dtype), j->layout);
		j->status = mismatch;
		return;
	}
	if (r->result_bytes != 0)
		memcpy(j->out, r->result, r->result_bytes);
}

static int take_gemm(gm_call *k, const void *buf, size_t len)
{
	char detail[2 * GM_MSG_TEXT];
	gm_job_iter it;
	gm_reply_job r;
	uint32_t i;
	int rv;

	rv = gm_proto_check_reply(buf, len, k->id, k->want.njobs, detail,
				  sizeof(detail));
	if (rv != 0)
		return call_error(k, rv, "bad reply: %s", detail);
	gm_proto_reply_begin(buf, len, &it);
	for (i = 0; gm_proto_reply_next(&it, &r) == GM_OK; i++)
		if (!k->want.alloc_out ||
		    adopt_shape(&k->want.jobs[i], &r) == GM_OK)
			take_job(&k->want.jobs[i], &r,
				 k->want.wait ? GM_EINVAL : GM_EINTERNAL);
	return GM_OK;
}

static int take_error(gm_call *k, const void *buf, size_t len)
{
	char text[GM_MSG_TEXT + 1];
	uint32_t status;
	int rv;

	if ((rv = gm_proto_get_error(buf, len, &status, text)) != 0)
		return call_error(k, rv, "bad ERROR reply: %s",
				  gm_strerror(rv));
	if (status == GM_OK)
		return call_error(k, GM_EINTERNAL,
				  "daemon refused the request with status 0");
	return call_error(k, (int)status, "%s",
			  text[0] ? text : gm_strerror((int)status));
}

/* {"ok":true,...} is kept whole for the caller; {"ok":false,...} becomes
 * its code and message. */
static int take_ctrl(gm_call *k, const char *body, size_t len)
{
	cJSON *doc = cJSON_ParseWithLength(body, len);
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(doc, "ok");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(doc, "code");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(doc, "message");
	int rv = GM_OK;

	if (!cJSON_IsObject(doc) || !cJSON_IsBool(ok))
		rv = call_error(k, GM_EJSON,
				"reply is not a JSON object with \"ok\"");
	else if (cJSON_IsTrue(ok) && (k->reply = strndup(body, len)) == NULL)
		rv = call_error(k, GM_ENOMEM, "out of memory");
	else if (cJSON_IsFalse(ok))
		rv = call_error(
		    k,
		    cJSON_IsNumber(code) && code->valueint > 0 ? code->valueint
							       : GM_EINTERNAL,
		    "%s", cJSON_IsString(text) ? text->valuestring : "refused");
	cJSON_Delete(doc);
	return rv;
}

/* {"ok":true,"jobs":[ID,...]}: the answer to a detached request. */
static int take_ids(gm_call *k, const char *body, size_t len)
{
	const cJSON *list, *id = NULL;
	cJSON *doc;
	uint32_t i = 0;
	int rv;

	if ((rv = take_ctrl(k, body, len)) != GM_OK)
		return rv;
	doc = cJSON_Parse(k->reply);
	free(k->reply);
	k->reply = NULL;
	list = cJSON_GetObjectItemCaseSensitive(doc, "jobs");
	cJSON_ArrayForEach(id, list)
	{
		if (i == k->want.njobs || !cJSON_IsNumber(id) ||
		    id->valuedouble < 1 || id->valuedouble >= 0x1p53)
			break;
		k->want.ids[i++] = (uint64_t)id->valuedouble;
	}
	if (i != k->want.njobs || id != NULL)
		rv = call_error(k, GM_EJSON,
				"bad reply: want %" PRIu32 " job ids in "
				"\"jobs\"",
				k->want.njobs);
	cJSON_Delete(doc);
	return rv;
}

/* A wait is answered by a result or refused; "ok" is neither. */
static int take_refusal(gm_call *k, const char *body, size_t len)
{
	int rv = take_ctrl(k, body, len);

	if (rv != GM_OK)
		return rv;
	free(k->reply);
	k->reply = NULL;
	return call_error(k, GM_EMSGTYPE, "wait answered without a result");
}

static int take_reply(gm_call *k, const uint8_t *buf, size_t len)
{
	char detail[2 * GM_MSG_TEXT];
	gm_hdr h;
	int rv;

	if ((rv = gm_proto_get_hdr(buf, len, &h, detail, sizeof(detail))) != 0)
		return call_error(k, rv, "bad reply: %s", detail);
	if (h.type == GM_MSG_ERROR)
		return take_error(k, buf, len);
	if (k->want.jobs != NULL && k->want.ids == NULL &&
	    h.type == GM_MSG_GEMM_REPLY)
		return take_gemm(k, buf, len);
	if (k->want.ids != NULL && h.type == GM_MSG_CTRL_REPLY)
		return take_ids(k, (const char *)buf + GM_HDR_SIZE, h.count);
	if (k->want.wait && h.type == GM_MSG_CTRL_REPLY)
		return take_refusal(k, (const char *)buf + GM_HDR_SIZE,
				    h.count);
	if (k->want.jobs == NULL && h.type == GM_MSG_CTRL_REPLY)
		return take_ctrl(k, (const char *)buf + GM_HDR_SIZE, h.count);
	return call_error(k, GM_EMSGTYPE, "reply of type %u to a %s request",
			  h.type, k->want.jobs != NULL ? "GEMM" : "control");
}

static void call_cb(void *arg)
{
	gm_call *k = arg;
	int nrv = nng_aio_result(k->aio);
	nng_msg *msg = nng_aio_get_msg(k->aio);
	int rv;

	nng_aio_set_msg(k->aio, NULL);
	if (nrv != 0) {
		/* A failed send hands the request back to us. */
		if (msg != NULL)
			nng_msg_free(msg);
		call_finish(k, call_transport(k, nrv));
		return;
	}
	if (k->state == CALL_SEND) {
		k->state = CALL_RECV;
		nng_aio_set_timeout(k->aio, call_remaining(k));
		nng_ctx_recv(k->ctx, k->aio);
		return;
	}
	rv = take_reply(k, nng_msg_body(msg), nng_msg_len(msg));
	nng_msg_free(msg);
	call_finish(k, rv);
}

uint64_t gm_call_id(const gm_call *k)
{
	return k->id;
}

/* Sends msg and lets call_cb take it from there. */
void gm_call_start(gm_call *k, nng_msg *msg, int timeout_ms,
		   const gm_call_want *want, const gm_call_notify *nt)
{
	k->want = *want;
	k->nt = *nt;
	k->state = CALL_SEND;
	k->timeout_ms = timeout_ms;
	k->deadline = nng_clock() + (nng_time)(timeout_ms > 0 ? timeout_ms : 0);
	nng_aio_set_msg(k->aio, msg);
	nng_aio_set_timeout(k->aio, call_remaining(k));
	nng_ctx_send(k->ctx, k->aio);
}

int gm_call_waiter_init(gm_call_waiter *w)
{
	memset(w, 0, sizeof(*w));
	if (pthread_mutex_init(&w->mu, NULL) != 0)
		return gm_client_seterr(GM_ENOMEM, "out of memory");
	if (pthread_cond_init(&w->cv, NULL) != 0) {
		pthread_mutex_destroy(&w->mu);
		return gm_client_seterr(GM_ENOMEM, "out of memory");
	}
	return GM_OK;
}

void gm_call_waiter_drop(gm_call_waiter *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

int gm_call_wait(gm_call_waiter *w)
{
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	gm_call_waiter_drop(w);
	if (w->rv != 0)
		gm_client_seterr(w->rv, "%s", w->msg);
	return w->rv;
}

void gm_call_close_all(gemmd_client *cl)
{
	gm_call *k, *next, *all;

	pthread_mutex_lock(&cl->mu);
	cl->closing = true; /* no call is added to cl->all from now on */
	all = cl->all;
	pthread_mutex_unlock(&cl->mu);
	/* Stopping cancels what is in flight and waits for the callbacks,
	 * which report GM_ECANCELED; the stopped aios are then unused. */
	for (k = all; k != NULL; k = k->next_all)
		nng_aio_stop(k->aio);
	/* Closing a context frees the request it still holds for a pipe
	 * (one that never connected, say), whatever becomes of the socket's
	 * own close. */
	for (k = all; k != NULL; k = next) {
		next = k->next_all;
		nng_ctx_close(k->ctx);
		nng_aio_free(k->aio);
		free(k);
	}
}
