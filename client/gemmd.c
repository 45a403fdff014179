/*
 * gemmd.c - the client library: one REQ socket, one small state machine
 * per request.
 *
 * Each request takes a slot (an nng context and an aio) from the
 * client's free list, or makes one, and walks SEND -> RECV -> done in the
 * aio's callback, as nng's demo/async programs do. A blocking call is
 * the same machine with a waiter: the caller sleeps on a condition
 * variable that the callback signals. Slots are reused and freed only by
 * gemmd_close, so a callback never frees the aio it runs on.
 */
#include "gemmd.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/supplemental/util/platform.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_client.h"
#include "gm_creg.h"
#include "gm_error_nng.h"
#include "gm_proto.h"

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

#define ERRLEN 256

static _Thread_local char last_error[ERRLEN];

/* ---- calls ---- */

/* A blocking caller's rendezvous with the callback that completes it. */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rv;
	char *reply;
	char msg[ERRLEN];
};

/* Who hears of a call's end: a waiter (blocking call) or done(arg). */
struct notify {
	gemmd_done_fn done;
	void *arg;
	struct waiter *w;
};

enum call_state { CALL_SEND, CALL_RECV };

struct call {
	gemmd_client *cl;
	struct call *next_free, *next_all;
	nng_ctx ctx;
	nng_aio *aio;
	enum call_state state;
	uint64_t id;
	int timeout_ms;
	nng_time deadline; /* when timeout_ms != GEMMD_FOREVER */
	gemmd_job *jobs;   /* NULL for a control request */
	uint32_t njobs;
	uint64_t *ids;	/* detached request: where the job ids go */
	bool wait;	/* a wait: a control request a GEMM_REPLY answers */
	bool alloc_out; /* a wait for a job without out: allocate it */
	char *reply;	/* control: the JSON document */
	struct notify nt;
	char msg[ERRLEN];
};

struct gemmd_client {
	nng_socket sock;
	gm_creg *creg;	    /* shared-memory regions (gemmd_region.c) */
	pthread_mutex_t mu; /* guards the fields below */
	struct call *free, *all;
	uint64_t next_id;
	bool closing;
};

static void call_cb(void *arg);

static int call_new(gemmd_client *cl, struct call **out)
{
	struct call *k;
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
static int call_get(gemmd_client *cl, struct call **out)
{
	struct call *k;
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
	k->ids = NULL;
	k->wait = k->alloc_out = false;
	*out = k;
	return GM_OK;
}

static void call_put(struct call *k)
{
	gemmd_client *cl = k->cl;

	pthread_mutex_lock(&cl->mu);
	k->next_free = cl->free;
	cl->free = k;
	pthread_mutex_unlock(&cl->mu);
}

__attribute__((format(printf, 3, 4))) static int
call_error(struct call *k, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* Keeps what fits of msg; a longer detail stays in gemmd_last_error(). */
static void set_job_status(gemmd_job *j, int status, const char *msg)
{
	size_t n = strnlen(msg, sizeof(j->message) - 1);

	j->status = status;
	memcpy(j->message, msg, n);
	j->message[n] = '\0';
}

/* Hands the outcome to the waiter or the done callback, then frees the
 * slot: the waiter may return and close the client the moment it is
 * signalled, and gemmd_close waits for this callback to end. */
static void call_finish(struct call *k, int rv)
{
	struct waiter *w = k->nt.w;
	uint32_t i;

	for (i = 0; rv != 0 && i < k->njobs; i++)
		set_job_status(&k->jobs[i], rv, k->msg);
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
	call_put(k);
}

static nng_duration call_remaining(const struct call *k)
{
	nng_time now = nng_clock();

	if (k->timeout_ms == GEMMD_FOREVER)
		return NNG_DURATION_INFINITE;
	return k->deadline > now ? (nng_duration)(k->deadline - now)
				 : NNG_DURATION_ZERO;
}

static int call_transport(struct call *k, int nrv)
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
		set_job_status(j, GM_ENOMEM, "no memory for the result");
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
	set_job_status(j, (int)r->status, r->message);
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

static int take_gemm(struct call *k, const void *buf, size_t len)
{
	char detail[2 * GM_MSG_TEXT];
	gm_job_iter it;
	gm_reply_job r;
	uint32_t i;
	int rv;

	rv = gm_proto_check_reply(buf, len, k->id, k->njobs, detail,
				  sizeof(detail));
	if (rv != 0)
		return call_error(k, rv, "bad reply: %s", detail);
	gm_proto_reply_begin(buf, len, &it);
	for (i = 0; gm_proto_reply_next(&it, &r) == GM_OK; i++)
		if (!k->alloc_out || adopt_shape(&k->jobs[i], &r) == GM_OK)
			take_job(&k->jobs[i], &r,
				 k->wait ? GM_EINVAL : GM_EINTERNAL);
	return GM_OK;
}

static int take_error(struct call *k, const void *buf, size_t len)
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
static int take_ctrl(struct call *k, const char *body, size_t len)
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
static int take_ids(struct call *k, const char *body, size_t len)
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
		if (i == k->njobs || !cJSON_IsNumber(id) ||
		    id->valuedouble < 1 || id->valuedouble >= 0x1p53)
			break;
		k->ids[i++] = (uint64_t)id->valuedouble;
	}
	if (i != k->njobs || id != NULL)
		rv = call_error(k, GM_EJSON,
				"bad reply: want %" PRIu32 " job ids in "
				"\"jobs\"",
				k->njobs);
	cJSON_Delete(doc);
	return rv;
}

/* A wait is answered by a result or refused; "ok" is neither. */
static int take_refusal(struct call *k, const char *body, size_t len)
{
	int rv = take_ctrl(k, body, len);

	if (rv != GM_OK)
		return rv;
	free(k->reply);
	k->reply = NULL;
	return call_error(k, GM_EMSGTYPE, "wait answered without a result");
}

static int take_reply(struct call *k, const uint8_t *buf, size_t len)
{
	char detail[2 * GM_MSG_TEXT];
	gm_hdr h;
	int rv;

	if ((rv = gm_proto_get_hdr(buf, len, &h, detail, sizeof(detail))) != 0)
		return call_error(k, rv, "bad reply: %s", detail);
	if (h.type == GM_MSG_ERROR)
		return take_error(k, buf, len);
	if (k->jobs != NULL && k->ids == NULL && h.type == GM_MSG_GEMM_REPLY)
		return take_gemm(k, buf, len);
	if (k->ids != NULL && h.type == GM_MSG_CTRL_REPLY)
		return take_ids(k, (const char *)buf + GM_HDR_SIZE, h.count);
	if (k->wait && h.type == GM_MSG_CTRL_REPLY)
		return take_refusal(k, (const char *)buf + GM_HDR_SIZE,
				    h.count);
	if (k->jobs == NULL && h.type == GM_MSG_CTRL_REPLY)
		return take_ctrl(k, (const char *)buf + GM_HDR_SIZE, h.count);
	return call_error(k, GM_EMSGTYPE, "reply of type %u to a %s request",
			  h.type, k->jobs != NULL ? "GEMM" : "control");
}

static void call_cb(void *arg)
{
	struct call *k = arg;
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

/* Sends msg (now owned by the call) and lets call_cb take it from there. */
static void call_start(struct call *k, nng_msg *msg, int timeout_ms)
{
	k->state = CALL_SEND;
	k->timeout_ms = timeout_ms;
	k->deadline = nng_clock() + (nng_time)(timeout_ms > 0 ? timeout_ms : 0);
	nng_aio_set_msg(k->aio, msg);
	nng_aio_set_timeout(k->aio, call_remaining(k));
	nng_ctx_send(k->ctx, k->aio);
}

static int wait_for(struct waiter *w)
{
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	if (w->rv != 0)
		gm_client_seterr(w->rv, "%s", w->msg);
	return w->rv;
}

static void waiter_init(struct waiter *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
}

/* ---- GEMM requests ---- */

/* Out-of-range ints become 255, which every check refuses. */
static uint8_t u8(int v)
{
	return v < 0 || v > 255 ? 255 : (uint8_t)v;
}

static void to_desc(const gemmd_job *j, gm_job_desc *d)
{
	d->dtype = u8(j->dtype);
	d->trans_a = u8(j->trans_a);
	d->trans_b = u8(j->trans_b);
	d->layout = u8(j->layout);
	d->kernel = u8(j->kernel);
	d->flags = j->c != NULL || j->c_ref.region != NULL ? GM_JOB_HAS_C : 0;
	if (j->a_ref.region || j->b_ref.region || j->c_ref.region ||
	    j->out_ref.region)
		d->flags |= GM_JOB_REGIONS;
	d->m = j->m;
	d->n = j->n;
	d->k = j->k;
	d->alpha = j->alpha;
	d->beta = j->beta;
}

/* Checks every job as the daemon would with its hard limits, so a bad
 * job costs no round trip. On failure job i says why, the others that
 * they were not sent. */
static int check_jobs(gemmd_job *jobs, uint32_t n, gm_job_desc *d,
		      bool need_out)
{
	const gm_limits lim = {GM_MAX_JOBS, GM_MAX_DIM, UINT64_MAX};
	char detail[2 * GM_MSG_TEXT];
	uint32_t i, bad;
	int rv = GM_OK;

	for (bad = 0; bad < n && rv == GM_OK; bad++) {
		to_desc(&jobs[bad], &d[bad]);
		rv =
		    gm_creg_given(&jobs[bad], need_out, detail, sizeof(detail));
		if (rv == GM_OK)
			rv =
			    gm_job_check(&d[bad], &lim, detail, sizeof(detail));
		if (rv == GM_OK)
			rv = gm_creg_check(&jobs[bad], &d[bad], detail,
					   sizeof(detail));
	}
	if (rv == GM_OK)
		return GM_OK;
	bad--;
	for (i = 0; i < n; i++)
		set_job_status(&jobs[i], GM_ECANCELED,
			       "not sent: another job is invalid");
	set_job_status(&jobs[bad], rv, detail);
	return gm_client_seterr(rv, "job %" PRIu32 ": %s", bad, detail);
}

static void fill_gemm(uint8_t *p, const gemmd_job *jobs, const gm_job_desc *d,
		      uint32_t n, const gm_batch *b, uint64_t id)
{
	gm_region_ref ref[GM_OPND_COUNT];
	gm_job_sizes sz;
	uint32_t i;

	gm_proto_put_hdr(p, GM_MSG_GEMM, id, n);
	gm_proto_put_batch(p + GM_HDR_SIZE, b);
	p += GM_HDR_SIZE + GM_BATCH_SIZE;
	for (i = 0; i < n; i++) {
		const void *src[GM_OPND_OUT] = {jobs[i].a, jobs[i].b,
						jobs[i].c};
		int regions = gm_creg_refs(&jobs[i], ref);

		gm_job_sizes_of(&d[i], &sz);
		gm_proto_put_job_refs(p, &d[i], regions ? ref : NULL);
		p += GM_JOB_HDR_SIZE;
		if (regions) {
			gm_proto_put_refs(p, ref);
			p += GM_REGION_DESC_SIZE;
		}
		/* Only what is not in a region travels. */
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
			uint64_t len = gm_operand_bytes(&sz, op);

			if (len == 0 || gm_ref_in_region(ref, op))
				continue;
			memcpy(p, src[op], len);
			p += len;
		}
	}
}

/* Bytes of the request for jobs d[0..n-1]: headers, descriptors and
 * whatever of the operands is inline. */
static int request_size(const gemmd_job *jobs, const gm_job_desc *d, uint32_t n,
			uint64_t *size)
{
	gm_region_ref ref[GM_OPND_COUNT];
	uint64_t payload;

	*size = GM_HDR_SIZE + GM_BATCH_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		gm_creg_refs(&jobs[i], ref);
		if (gm_proto_job_payload(&d[i], ref, &payload) != GM_OK ||
		    __builtin_add_overflow(*size, GM_JOB_HDR_SIZE, size) ||
		    __builtin_add_overflow(*size, payload, size))
			return GM_EOVERFLOW;
	}
	return GM_OK;
}

/* The whole request in one message of exactly its size, each operand
 * copied once. */
static int build_gemm(const gemmd_job *jobs, const gm_job_desc *d, uint32_t n,
		      const gm_batch *b, uint64_t id, nng_msg **out)
{
	uint64_t size;
	int nrv;

	if (request_size(jobs, d, n, &size) != 0 || size > SIZE_MAX)
		return gm_client_seterr(GM_EOVERFLOW, "request size overflows");
	if ((nrv = nng_msg_alloc(out, (size_t)size)) != 0)
		return gm_client_seterr(gm_error_nng(nrv),
					"%" PRIu64 "-byte request: %s", size,
					nng_strerror(nrv));
	fill_gemm(nng_msg_body(*out), jobs, d, n, b, id);
	return GM_OK;
}

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
	uint32_t i;

	for (i = 0; i < n; i++) {
		memset(&jobs[i].t, 0, sizeof(jobs[i].t));
		set_job_status(&jobs[i], GM_OK, "");
	}
}

/* Builds the request and starts a call that owns it. */
static int submit_start(gemmd_client *c, gemmd_job *jobs, const gm_job_desc *d,
			uint32_t n, const gemmd_submit_opts *o, int timeout_ms,
			uint64_t *ids, const struct notify *nt)
{
	gm_batch b = {GM_BATCH_PRIO_DEFAULT, 0, ids ? GM_BATCH_DETACH : 0};
	struct call *k;
	nng_msg *msg;
	int rv;

	if (o != NULL) {
		b.priority = (uint8_t)o->priority;
		b.deadline_ms = o->deadline_ms;
	}
	if ((rv = call_get(c, &k)) != 0)
		return rv;
	if ((rv = build_gemm(jobs, d, n, &b, k->id, &msg)) != 0) {
		call_put(k);
		return rv;
	}
	k->jobs = jobs;
	k->njobs = n;
	k->ids = ids;
	k->nt = *nt;
	call_start(k, msg, timeout_ms);
	return GM_OK;
}

/* What the submit calls share; ids: a detached request's. */
static int submit(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		  const gemmd_submit_opts *o, int timeout_ms, uint64_t *ids,
		  const struct notify *nt)
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
		set_job_status(&jobs[i], rv, last_error);
	return rv;
}

/* gemmd_submit, and with ids gemmd_submit_detached. */
static int submit_wait(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		       const gemmd_submit_opts *opts, int timeout_ms,
		       uint64_t *ids)
{
	struct waiter w;
	struct notify nt = {NULL, NULL, &w};
	int rv;

	waiter_init(&w);
	if ((rv = submit(c, jobs, n, opts, timeout_ms, ids, &nt)) != 0) {
		pthread_mutex_destroy(&w.mu);
		pthread_cond_destroy(&w.cv);
		return rv;
	}
	last_error[0] = '\0';
	return wait_for(&w);
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
	struct notify nt = {done, arg, NULL};

	if (done == NULL)
		return gm_client_seterr(GM_EINVAL, "no done callback");
	last_error[0] = '\0';
	return submit(c, jobs, n, opts, timeout_ms, NULL, &nt);
}

/* ---- control requests ---- */

/* Starts a control request; with job, a wait whose result goes there. */
static int ctrl_start(gemmd_client *c, const char *request, int timeout_ms,
		      struct waiter *w, gemmd_job *job)
{
	size_t len = strlen(request);
	struct call *k;
	nng_msg *msg;
	int rv, nrv;

	if (len > UINT32_MAX)
		return gm_client_seterr(GM_ETOOBIG, "request of %zu bytes",
					len);
	if ((rv = call_get(c, &k)) != 0)
		return rv;
	if ((nrv = nng_msg_alloc(&msg, GM_HDR_SIZE + len)) != 0) {
		call_put(k);
		return gm_client_seterr(gm_error_nng(nrv), "%s",
					nng_strerror(nrv));
	}
	gm_proto_put_hdr(nng_msg_body(msg), GM_MSG_CTRL, k->id, (uint32_t)len);
	memcpy((uint8_t *)nng_msg_body(msg) + GM_HDR_SIZE, request, len);
	k->jobs = job;
	k->njobs = job != NULL;
	k->wait = job != NULL;
	k->alloc_out = job != NULL && job->out == NULL;
	k->nt.done = NULL;
	k->nt.w = w;
	call_start(k, msg, timeout_ms);
	return GM_OK;
}

int gemmd_ctrl(gemmd_client *c, const char *request, char **reply,
	       int timeout_ms)
{
	struct waiter w;
	int rv;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || request == NULL)
		return gm_client_seterr(GM_EINVAL, "no client or no request");
	if (timeout_ms <= 0 && timeout_ms != GEMMD_FOREVER)
		return gm_client_seterr(GM_EINVAL, "timeout %d ms, must be > 0",
					timeout_ms);
	waiter_init(&w);
	if ((rv = ctrl_start(c, request, timeout_ms, &w, NULL)) != 0) {
		pthread_mutex_destroy(&w.mu);
		pthread_cond_destroy(&w.cv);
		return rv;
	}
	last_error[0] = '\0';
	if ((rv = wait_for(&w)) != 0)
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
	struct waiter w;
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
	waiter_init(&w);
	if ((rv = ctrl_start(c, req, call_ms, &w, job)) != 0) {
		pthread_mutex_destroy(&w.mu);
		pthread_cond_destroy(&w.cv);
		set_job_status(job, rv, last_error);
		return rv;
	}
	last_error[0] = '\0';
	return wait_for(&w);
}

/* ---- opening and closing ---- */

static bool has_tls_opts(const gemmd_open_opts *o)
{
	return o->tls_ca_file || o->tls_cert_file || o->tls_key_file ||
	       o->tls_server_name;
}

/* A whole small text file, malloc'd; NULL with errno set on failure. */
static char *slurp(const char *path)
{
	char *text = NULL;
	size_t cap = 0;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	if (getdelim(&text, &cap, '\0', f) < 0) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

/* nng takes a key from its own file only together with the certificate,
 * and a separate one only as PEM text. */
static int tls_cert(nng_tls_config *cfg, const gemmd_open_opts *o)
{
	char *cert, *key;
	int nrv;

	if (o->tls_key_file == NULL)
		nrv = nng_tls_config_cert_key_file(cfg, o->tls_cert_file, NULL);
	else if ((cert = slurp(o->tls_cert_file)) == NULL)
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_cert_file,
					strerror(errno));
	else if ((key = slurp(o->tls_key_file)) == NULL) {
		free(cert);
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_key_file,
					strerror(errno));
	} else {
		nrv = nng_tls_config_own_cert(cfg, cert, key, NULL);
		free(cert);
		free(key);
	}
	if (nrv != 0)
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_cert_file,
					nng_strerror(nrv));
	return GM_OK;
}

static int tls_setup(nng_tls_config *cfg, const char *url,
		     const gemmd_open_opts *o)
{
	const char *name = o->tls_server_name;
	nng_url *u = NULL;
	int nrv, rv;

	if (o->tls_ca_file == NULL)
		return gm_client_seterr(
		    GM_EINVAL, "%s: TLS needs a CA file to verify the daemon",
		    url);
	nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED);
	if ((nrv = nng_tls_config_ca_file(cfg, o->tls_ca_file)) != 0)
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_ca_file,
					nng_strerror(nrv));
	if (o->tls_cert_file != NULL && (rv = tls_cert(cfg, o)) != 0)
		return rv;
	if (name == NULL && nng_url_parse(&u, url) == 0)
		name = u->u_hostname;
	nrv = nng_tls_config_server_name(cfg, name != NULL ? name : "");
	nng_url_free(u);
	if (nrv != 0)
		return gm_client_seterr(gm_error_nng(nrv),
					"%s: server name: %s", url,
					nng_strerror(nrv));
	return GM_OK;
}

static int tls_dialer(nng_dialer d, const char *url, const gemmd_open_opts *o)
{
	nng_tls_config *cfg;
	int rv, nrv;

	if ((nrv = nng_tls_config_alloc(&cfg, NNG_TLS_MODE_CLIENT)) != 0)
		return gm_client_seterr(gm_error_nng(nrv), "%s: TLS: %s", url,
					nng_strerror(nrv));
	if ((rv = tls_setup(cfg, url, o)) == 0 &&
	    (nrv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg)) != 0)
		rv = gm_client_seterr(gm_error_nng(nrv), "%s: TLS: %s", url,
				      nng_strerror(nrv));
	nng_tls_config_free(cfg); /* the dialer keeps its own hold */
	return rv;
}

static int dial(gemmd_client *cl, const char *url, const gemmd_open_opts *o)
{
	bool tls = strncmp(url, "tls+", 4) == 0;
	nng_dialer d;
	int rv, nrv;

	if (!tls && has_tls_opts(o))
		return gm_client_seterr(
		    GM_EINVAL, "%s: TLS options need a tls+tcp:// URL", url);
	if ((nrv = nng_dialer_create(&d, cl->sock, url)) != 0)
		return gm_client_seterr(gm_error_nng(nrv), "%s: %s", url,
					nng_strerror(nrv));
	if (tls && (rv = tls_dialer(d, url, o)) != 0)
		return rv;
	nrv = nng_dialer_start(
	    d, (o->flags & GEMMD_OPEN_LAZY) ? NNG_FLAG_NONBLOCK : 0);
	if (nrv != 0) {
		rv = gm_error_nng(nrv);
		return gm_client_seterr(rv == GM_EINVAL ? rv : GM_ETRANSPORT,
					"%s: %s", url, nng_strerror(nrv));
	}
	return GM_OK;
}

/* Large replies are the point, so no receive limit; no resend, so a
 * request runs at most once (see gemmd.h). */
static int open_socket(gemmd_client *cl)
{
	int nrv;

	if ((nrv = nng_req0_open(&cl->sock)) != 0 ||
	    (nrv = nng_socket_set_size(cl->sock, NNG_OPT_RECVMAXSZ, 0)) != 0 ||
	    (nrv = nng_socket_set_ms(cl->sock, NNG_OPT_REQ_RESENDTIME,
				     NNG_DURATION_INFINITE)) != 0)
		return gm_client_seterr(gm_error_nng(nrv), "socket: %s",
					nng_strerror(nrv));
	return GM_OK;
}

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
	pthread_mutex_init(&cl->mu, NULL);
	cl->next_id = 1;
	if ((rv = gm_creg_new(url, opts != NULL ? opts->region_socket : NULL,
			      &cl->creg)) != 0) {
		pthread_mutex_destroy(&cl->mu);
		free(cl);
		return gm_client_seterr(rv, "out of memory");
	}
	if ((rv = open_socket(cl)) == 0 &&
	    (rv = dial(cl, url, opts != NULL ? opts : &none)) == 0) {
		last_error[0] = '\0';
		*out = cl;
		return GM_OK;
	}
	nng_close(cl->sock);
	gm_creg_free(cl->creg);
	pthread_mutex_destroy(&cl->mu);
	free(cl);
	return rv;
}

int gemmd_dial(gemmd_client *c, const char *url, const gemmd_open_opts *opts)
{
	static const gemmd_open_opts none;
	int rv;

	if (c == NULL || url == NULL)
		return gm_client_seterr(GM_EINVAL, "no client or no URL");
	if ((rv = dial(c, url, opts != NULL ? opts : &none)) == 0)
		last_error[0] = '\0';
	return rv;
}

static void *close_main(void *arg)
{
	nng_socket *sock = arg;

	nng_close(*sock);
	free(sock);
	return NULL;
}

/*
 * nng 1.5.2 can block forever in nng_close when a connection is closed
 * while a large message is half written: a REQ socket closed 2 ms after
 * sending 64 MiB hangs, over ipc:// and tcp:// alike, with or without
 * contexts. A client closing with a big request still on the wire (a
 * timeout, or gemmd_close with calls in flight) would hang with it, so
 * the socket is closed on a thread of its own; if that has not returned
 * within CLOSE_WAIT_S, the thread, and the socket, are left behind.
 */
#define CLOSE_WAIT_S 1

static void close_socket(nng_socket sock)
{
	nng_socket *arg = malloc(sizeof(*arg));
	struct timespec deadline;
	pthread_t t;

	if (arg == NULL) {
		nng_close(sock);
		return;
	}
	*arg = sock;
	if (pthread_create(&t, NULL, close_main, arg) != 0) {
		free(arg);
		nng_close(sock);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += CLOSE_WAIT_S;
	if (pthread_timedjoin_np(t, NULL, &deadline) != 0)
		pthread_detach(t);
}

void gemmd_close(gemmd_client *cl)
{
	struct call *k, *next, *all;

	if (cl == NULL)
		return;
	pthread_mutex_lock(&cl->mu);
	cl->closing = true; /* no slot is added to cl->all from now on */
	all = cl->all;
	pthread_mutex_unlock(&cl->mu);
	/* Stopping cancels what is in flight and waits for the callbacks,
	 * which report GM_ECANCELED; the stopped aios are then unused. */
	for (k = all; k != NULL; k = k->next_all)
		nng_aio_stop(k->aio);
	/* Closing a context frees the request it still holds for a pipe
	 * (one that never connected, say), whatever becomes of the socket's
	 * own close below. */
	for (k = all; k != NULL; k = next) {
		next = k->next_all;
		nng_ctx_close(k->ctx);
		nng_aio_free(k->aio);
		free(k);
	}
	close_socket(cl->sock);
	gm_creg_free(cl->creg);
	pthread_mutex_destroy(&cl->mu);
	free(cl);
}

gm_creg *gm_client_creg(gemmd_client *c)
{
	return c->creg;
}

int gm_client_seterr(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return code;
}

const char *gemmd_strerror(int code)
{
	return gm_strerror(code);
}

const char *gemmd_last_error(void)
{
	return last_error;
}
