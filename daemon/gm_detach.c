/*
 * gm_detach.c - the detached-job table; see gm_detach.h.
 *
 * Entries are found by id in a chained hash table (ids are random, so
 * their low bits spread them evenly) and sit on one of three age lists:
 * kept results in the order their jobs finished, records in the order
 * their results went, and jobs with a parked wait. Finishing times only
 * grow, so the head of a list is always the first to come due, and
 * making room or sweeping never scans the table.
 *
 * The entries gm_detach_room sets aside for a request's jobs are in the
 * table already, with their ids drawn, marked spare: a new id is checked
 * against every id live or set aside with one lookup, and adding a job
 * cannot fail. Lookups for clients skip spares, and an entry that
 * belongs to another principal is, to them, no entry at all.
 */
#include "gm_detach.h"
#include "gm_detach_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_id.h"
#include "gm_log.h"
#include "gm_stats.h"

#define MIN_BUCKETS 256u

/* ---- lists ---- */

static void list_add(list *l, entry *e)
{
	e->next = NULL;
	e->prev = l->tail;
	if (l->tail != NULL)
		l->tail->next = e;
	else
		l->head = e;
	l->tail = e;
	l->n++;
}

static void list_del(list *l, entry *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->next = e->prev = NULL;
	l->n--;
}

/* ---- the table ---- */

int gm_detach_create(gm_sched *s, unsigned keep_s, uint64_t max_bytes,
		     gm_detach_answer_fn fn, void *arg, gm_detach **out)
{
	gm_detach *t = calloc(1, sizeof(*t));

	if (t == NULL ||
	    (t->buckets = calloc(MIN_BUCKETS, sizeof(*t->buckets))) == NULL) {
		free(t);
		return GM_ENOMEM;
	}
	t->nbuckets = MIN_BUCKETS;
	t->sched = s;
	t->keep_us = (double)keep_s * 1e6;
	t->max_bytes = max_bytes;
	t->answer = fn;
	t->arg = arg;
	*out = t;
	return GM_OK;
}

void gm_detach_destroy(gm_detach *t)
{
	if (t == NULL)
		return;
	for (uint64_t i = 0; i < t->nbuckets; i++) {
		entry *e = t->buckets[i], *next;

		for (; e != NULL; e = next) {
			next = e->hnext;
			gm_principal_release(e->owner);
			free(e->result);
			free(e);
		}
	}
	free(t->buckets);
	free(t);
}

static entry **slot(const gm_detach *t, uint64_t id)
{
	return &t->buckets[id & (t->nbuckets - 1)];
}

/* Whether id is in the table, as a job or set aside: not to be drawn. */
static int id_taken(const void *set, uint64_t id)
{
	const entry *e = *slot(set, id);

	while (e != NULL && e->id != id)
		e = e->hnext;
	return e != NULL;
}

entry *gm_detach_find(const gm_detach *t, uint64_t id, const gm_principal *who)
{
	entry *e = *slot(t, id);

	while (e != NULL && (e->id != id || e->spare))
		e = e->hnext;
	/* Another's job is not found (PROTOCOL.md 7.1), so that ids cannot
	 * be probed. */
	if (e != NULL && who != NULL && !gm_principal_same(e->owner, who))
		return NULL;
	return e;
}

/* Doubles the buckets when there are more entries than buckets; stays
 * as it is when that cannot be allocated (chains just grow). */
static void grow(gm_detach *t)
{
	uint64_t n = t->nbuckets * 2;
	entry **b, **old = t->buckets;

	if (t->count < t->nbuckets || (b = calloc(n, sizeof(*b))) == NULL)
		return;
	t->buckets = b;
	t->nbuckets = n;
	for (uint64_t i = 0; i < n / 2; i++) {
		entry *e = old[i], *next;

		for (; e != NULL; e = next) {
			entry **s = slot(t, e->id);

			next = e->hnext;
			e->hnext = *s;
			*s = e;
		}
	}
	free(old);
}

/* Removes e from the table for good. */
static void forget(gm_detach *t, entry *e)
{
	entry **s = slot(t, e->id);

	while (*s != e)
		s = &(*s)->hnext;
	*s = e->hnext;
	t->count--;
	t->bytes -= e->bytes;
	gm_principal_release(e->owner);
	free(e);
}

uint64_t gm_detach_cost(uint64_t reply_bytes)
{
	return reply_bytes + sizeof(entry);
}

/* Takes e's kept result out of the table; e becomes a record. */
static uint8_t *take_result(gm_detach *t, entry *e)
{
	uint8_t *m = e->result;

	list_del(&t->kept, e);
	e->result = NULL;
	t->bytes -= e->bytes - sizeof(entry);
	e->bytes = sizeof(entry);
	e->since_us = gm_clock_now_us();
	list_add(&t->records, e);
	return m;
}

/* Drops e's kept result; e becomes a record in state. */
static void drop_result(gm_detach *t, entry *e, int state)
{
	free(take_result(t, e));
	e->state = state;
}

/* e is canceled, and its outcome says so whatever it was: a canceled
 * job always reads ECANCELED (PROTOCOL.md 7.1), its timings kept. */
static void mark_canceled(entry *e, const char *when)
{
	e->state = GM_JOBSTATE_CANCELED;
	e->status = GM_ECANCELED;
	snprintf(e->msg, sizeof(e->msg), "canceled %s", when);
}

/* One more entry set aside, its id drawn: GM_ENOMEM, GM_EIO. */
static int set_aside(gm_detach *t)
{
	entry *e = calloc(1, sizeof(*e)), **s;
	int rv;

	if (e == NULL)
		return GM_ENOMEM;
	if ((rv = gm_id_fresh(GM_DETACH_ID_MAX, id_taken, t, &e->id)) != 0) {
		free(e);
		return rv;
	}
	e->spare = 1;
	s = slot(t, e->id);
	e->hnext = *s;
	*s = e;
	t->count++;
	e->next = t->spare;
	t->spare = e;
	t->nspare++;
	grow(t);
	return GM_OK;
}

int gm_detach_room(gm_detach *t, uint32_t njobs, uint64_t bytes)
{
	entry *e;
	int rv;

	while (t->nspare < njobs)
		if ((rv = set_aside(t)) != GM_OK)
			return rv;
	/* Only the room of unfinished jobs cannot be given back. */
	if (t->live_bytes + bytes > t->max_bytes)
		return GM_EBUSY;
	while (t->bytes + bytes > t->max_bytes) {
		if ((e = t->records.head) != NULL) {
			list_del(&t->records, e);
			forget(t, e);
		} else if ((e = t->kept.head) != NULL) {
			GM_LOG(GM_LOG_INFO,
			       "detached job %" PRIu64 ": result of %" PRIu64
			       " bytes dropped unclaimed to make room "
			       "(detach_max_bytes %" PRIu64 ")",
			       e->id, e->bytes, t->max_bytes);
			t->dropped++;
			drop_result(t, e, GM_JOBSTATE_EXPIRED);
		} else {
			return GM_EBUSY;
		}
	}
	return GM_OK;
}

uint64_t gm_detach_add(gm_detach *t, gm_sched_request *r, uint64_t reply_bytes,
		       gm_principal *owner)
{
	entry *e = t->spare;

	/* Already in the table under its id: only no longer spare. */
	t->spare = e->next;
	t->nspare--;
	e->next = NULL;
	e->spare = 0;
	e->owner = gm_principal_hold(owner);
	e->state = GM_JOBSTATE_QUEUED;
	e->job = &r->jobs[0];
	e->d = r->jobs[0].job.d;
	e->priority = r->batch.priority;
	e->bytes = gm_detach_cost(reply_bytes);
	t->bytes += e->bytes;
	t->live_bytes += e->bytes;
	t->jobs++;
	t->pending++;
	return e->id;
}

/* The frame's header, rewritten for the wait that takes it: the wait's
 * id, job index 0. */
static void readdress(uint8_t *frame, uint64_t len, uint64_t req_id)
{
	gm_proto_put_hdr(frame, GM_MSG_GEMM_REPLY, req_id, 0,
			 len - GM_HDR_SIZE);
}

/* Answers e's parked wait, if any, with result (len bytes) or code and
 * text. */
static void answer(gm_detach *t, entry *e, uint8_t *result, uint64_t len,
		   int code, const char *text)
{
	void *w = e->waiter;

	if (w == NULL) {
		free(result);
		return;
	}
	list_del(&t->waits, e);
	e->waiter = NULL;
	if (result != NULL)
		readdress(result, len, e->wait_req);
	t->answer(w, e->wait_req, result, len, code, text, t->arg);
}

/* The outcome a reply frame carries; ENOMEM when there is none. */
static void read_reply(entry *e, const uint8_t *reply, uint64_t len)
{
	char text[GM_MSG_TEXT + 1];
	gm_reply_job r;
	gm_hdr h;

	if (reply == NULL) {
		e->status = GM_ENOMEM;
		snprintf(e->msg, sizeof(e->msg),
			 "no memory to keep the result");
		return;
	}
	if (gm_proto_get_hdr(reply, len, &h, text, sizeof(text)) != GM_OK ||
	    gm_proto_get_reply_job(&h, reply + GM_HDR_SIZE, &r, text,
				   sizeof(text)) != GM_OK) {
		e->status = GM_EINTERNAL;
		snprintf(e->msg, sizeof(e->msg), "%s", text);
		return;
	}
	e->status = (int)r.status;
	e->t = r.t;
	memcpy(e->msg, r.message, sizeof(e->msg));
}

void gm_detach_done(gm_detach *t, uint64_t id, uint8_t *reply, uint64_t len)
{
	entry *e = gm_detach_find(t, id, NULL);

	if (e == NULL) {
		free(reply);
		return;
	}
	read_reply(e, reply, len);
	e->job = NULL;
	e->since_us = gm_clock_now_us();
	t->pending--;
	t->bytes -= e->bytes;
	t->live_bytes -= e->bytes;
	e->state = e->status == GM_OK ? GM_JOBSTATE_DONE : GM_JOBSTATE_FAILED;
	if (e->status == GM_ECANCELED)
		mark_canceled(e, "before it started");
	else if (e->cancel)
		mark_canceled(e, "while it ran: its result was dropped");
	if (e->state == GM_JOBSTATE_CANCELED || e->waiter != NULL) {
		/* Nothing to keep: a record from now on, once off the
		 * waits list, whose links it shares. */
		if (e->state == GM_JOBSTATE_CANCELED) {
			free(reply);
			answer(t, e, NULL, 0, GM_ECANCELED,
			       "the job was canceled");
		} else if (reply == NULL) {
			answer(t, e, NULL, 0, e->status, e->msg);
		} else {
			e->taken = 1;
			answer(t, e, reply, len, 0, NULL);
		}
		e->bytes = sizeof(entry);
		t->bytes += e->bytes;
		list_add(&t->records, e);
		return;
	}
	if (reply == NULL) { /* no memory kept it: a record */
		e->bytes = sizeof(entry);
		t->bytes += e->bytes;
		list_add(&t->records, e);
		return;
	}
	e->result = reply;
	e->result_len = len;
	e->bytes = gm_detach_cost(len);
	t->bytes += e->bytes;
	list_add(&t->kept, e);
}

/* Why a finished entry has no result to give. */
static int gone(const entry *e, char *text, size_t len)
{
	if (e->state == GM_JOBSTATE_CANCELED) {
		snprintf(text, len, "job %" PRIu64 " was canceled", e->id);
		return GM_ECANCELED;
	}
	if (e->taken)
		snprintf(text, len,
			 "job %" PRIu64 ": its result was taken by an "
			 "earlier wait",
			 e->id);
	else
		snprintf(text, len,
			 "job %" PRIu64 ": its result expired unclaimed",
			 e->id);
	return GM_ENOTFOUND;
}

int gm_detach_wait(gm_detach *t, const gm_principal *who, uint64_t id,
		   int64_t timeout_ms, void *w, uint64_t req_id, char *text,
		   size_t len)
{
	entry *e = gm_detach_find(t, id, who);
	uint64_t mlen;
	uint8_t *m;

	if (e == NULL) {
		snprintf(text, len, "no detached job %" PRIu64, id);
		return GM_ENOTFOUND;
	}
	if (e->result != NULL) {
		mlen = e->result_len;
		m = take_result(t, e);
		e->taken = 1;
		readdress(m, mlen, req_id);
		t->answer(w, req_id, m, mlen, 0, NULL, t->arg);
		return GM_OK;
	}
	if (e->job == NULL)
		return gone(e, text, len);
	if (e->waiter != NULL) {
		snprintf(text, len,
			 "job %" PRIu64 ": another wait is already parked "
			 "on it",
			 id);
		return GM_EBUSY;
	}
	if (timeout_ms == 0) {
		snprintf(text, len, "job %" PRIu64 " has not finished", id);
		return GM_ETIMEDOUT;
	}
	e->waiter = w;
	e->wait_req = req_id;
	e->wait_until_us =
	    timeout_ms < 0 ? 0.0 : gm_clock_now_us() + (double)timeout_ms * 1e3;
	list_add(&t->waits, e);
	return GM_OK;
}

int gm_detach_cancel(gm_detach *t, const gm_principal *who, uint64_t id,
		     int *state)
{
	entry *e = gm_detach_find(t, id, who);

	if (e == NULL)
		return GM_ENOTFOUND;
	if (e->job != NULL) {
		e->cancel = 1;
		/* A queued job fails at once and comes back through
		 * gm_detach_done before this call returns. One the engine
		 * would not give back runs: it started as the engine
		 * refused. */
		if (gm_sched_cancel(t->sched, e->job) != GM_OK) {
			GM_LOG(GM_LOG_DEBUG,
			       "detached job %" PRIu64 ": canceled while "
			       "running; its result will be dropped",
			       id);
			*state = GM_JOBSTATE_RUNNING;
			return GM_OK;
		}
	} else if (e->result != NULL) {
		drop_result(t, e, GM_JOBSTATE_CANCELED);
		mark_canceled(e, "after it finished: its result was dropped");
	}
	*state = gm_detach_state_of(e);
	return GM_OK;
}

void gm_detach_sweep(gm_detach *t)
{
	double now = gm_clock_now_us();
	char text[96];
	entry *e, *next;

	while ((e = t->kept.head) != NULL && e->since_us + t->keep_us <= now) {
		GM_LOG(GM_LOG_INFO,
		       "detached job %" PRIu64 ": result of %" PRIu64
		       " bytes dropped, unclaimed for detach_keep_s=%.0f s",
		       e->id, e->bytes, t->keep_us / 1e6);
		t->dropped++;
		drop_result(t, e, GM_JOBSTATE_EXPIRED);
	}
	while ((e = t->records.head) != NULL &&
	       e->since_us + t->keep_us <= now) {
		list_del(&t->records, e);
		forget(t, e);
	}
	for (e = t->waits.head; e != NULL; e = next) {
		next = e->next;
		if (e->wait_until_us == 0.0 || e->wait_until_us > now)
			continue;
		snprintf(text, sizeof(text),
			 "job %" PRIu64 " did not finish within the wait",
			 e->id);
		answer(t, e, NULL, 0, GM_ETIMEDOUT, text);
	}
}
