/*
 * gmc_call.c - calls and their parts, from start to the caller being
 * told; see gmc_call.h.
 */
#include "gmc_call.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmc_conn.h"
#include "gmc_daemon.h"
#include "gmc_stage.h"

static void deadline_cb(void *arg);
static void grace_cb(void *arg);

int gmc_call_new(gemmd_client *cl, int kind, int timeout_ms,
		 const gmc_call_notify *nt, gmc_call **out)
{
	gmc_call *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return gmc_client_seterr(GM_ENOMEM, "out of memory");
	k->cl = cl;
	k->kind = kind;
	k->timeout_ms = timeout_ms;
	k->nt = *nt;
	k->start = gmc_timer_now();
	gmc_tev_init(&k->deadline, deadline_cb, k);
	gmc_tev_init(&k->grace, grace_cb, k);
	*out = k;
	return GM_OK;
}

void gmc_call_free(gmc_call *k)
{
	free(k->settled);
	free(k->reply);
	free(k);
}

static uint64_t ms_ns(int ms)
{
	return (uint64_t)ms * 1000000u;
}

void gmc_call_start(gmc_call *k)
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

/* ---- parts ---- */

uint64_t gmc_call_next_id(gemmd_client *cl)
{
	return __atomic_add_fetch(&cl->next_id, 1, __ATOMIC_RELAXED);
}

gmc_part *gmc_part_new(gmc_call *k, uint64_t id, uint32_t first, uint32_t njobs,
		       gmc_todo *t)
{
	gmc_part *p = calloc(1, sizeof(*p));

	if (p == NULL || (p->answered = calloc(njobs ? njobs : 1, 1)) == NULL) {
		free(p);
		gmc_call_end(k, GM_ENOMEM, "out of memory", t);
		return NULL;
	}
	p->cl = k->cl;
	p->call = k;
	p->id = id;
	p->first = first;
	p->njobs = p->left = njobs;
	p->refs = 2; /* its life, and its call's list until told */
	p->next_of_call = k->parts;
	k->parts = p;
	k->open++;
	return p;
}

int gmc_part_ready(gmc_part *p, gmc_todo *t)
{
	if (gmc_idmap_put(&p->call->cl->parts, p->id, p) == GM_OK)
		return GM_OK;
	gmc_call_end(p->call, GM_ENOMEM, "out of memory", t);
	return GM_ENOMEM;
}

void gmc_part_hold(gmc_part *p)
{
	p->refs++;
}

void gmc_part_drop(gmc_part *p)
{
	if (--p->refs > 0)
		return;
	gmc_frame_free(&p->f);
	free(p->answered);
	free(p);
}

/* Takes p out of everything that finds it and ends its life; tells its
 * call when the call has nothing more to wait for. */
static void part_finish(gmc_part *p, gmc_todo *t)
{
	gmc_call *k = p->call;

	if (p->state == GMC_PART_DONE)
		return;
	if (p->state == GMC_PART_QUEUED)
		gmc_conn_unqueue(p);
	gmc_conn_unlink(p);
	p->state = GMC_PART_DONE;
	gmc_idmap_del(&p->cl->parts, p->id);
	if (p->chunk != NULL)
		gmc_stage_part_over(p, t);
	if (k != NULL)
		gmc_call_open_done(k, t);
	gmc_part_drop(p);
}

void gmc_call_open_done(gmc_call *k, gmc_todo *t)
{
	if (!k->ended && --k->open == 0)
		gmc_call_end(k, k->accepted ? GM_OK : k->refusal,
			     k->accepted ? "" : k->refusal_msg, t);
}

void gmc_part_answered(gmc_part *p, uint32_t index, gmc_todo *t)
{
	gmc_call *k = p->call;

	if (p->answered[index])
		return;
	p->answered[index] = 1;
	if (p->left == p->njobs && k != NULL)
		k->accepted++;
	if (--p->left == 0)
		part_finish(p, t);
}

/* Part p of k was refused whole: its jobs say so. */
static void refuse(gmc_call *k, gmc_part *p, int code, const char *msg)
{
	if (k->refusal == GM_OK) {
		k->refusal = code;
		snprintf(k->refusal_msg, sizeof(k->refusal_msg), "%s", msg);
	}
	for (uint32_t i = 0; i < p->njobs; i++) {
		if (p->answered[i])
			continue;
		gmc_call_job_status(&k->jobs[p->first + i], code, msg);
		k->settled[p->first + i] = 1;
	}
}

void gmc_part_over(gmc_part *p, int code, const char *msg, gmc_todo *t)
{
	gmc_call *k = p->call;

	p->refused = code != GM_OK && code != GM_ETRANSPORT;
	if (k != NULL && code == GM_ETRANSPORT)
		gmc_call_end(k, code, msg, t); /* p is over with it */
	else if (k != NULL && code == GM_OK)
		k->accepted++;
	else if (k != NULL)
		refuse(k, p, code, msg);
	part_finish(p, t);
}

/* ---- the end of a call ---- */

/* A half-written frame is finished with zeros in place of the caller's
 * bytes: the write in flight, if any, still holds its own pointers. */
static void zero_rest(gmc_part *p)
{
	for (unsigned i = p->seg; i < p->f.nsegs; i++)
		if (p->f.segs[i].user)
			p->f.segs[i].p = NULL;
}

static void detach_part(gmc_part *p, gmc_todo *t)
{
	/* Half written, perhaps already refused: still to finish. */
	if (p->queued && p->state != GMC_PART_QUEUED)
		zero_rest(p);
	p->call = NULL;
	if (p->state == GMC_PART_NEW || p->state == GMC_PART_QUEUED)
		part_finish(p, t);
}

static void queue_tell(gmc_call *k, gmc_todo *t)
{
	if (k->tell_queued)
		return;
	k->tell_queued = true;
	k->next_tell = NULL;
	if (t->tell == NULL)
		t->tell = k;
	else
		t->tell_last->next_tell = k;
	t->tell_last = k;
}

void gmc_call_end(gmc_call *k, int rv, const char *msg, gmc_todo *t)
{
	gemmd_client *cl = k->cl;

	if (k->ended)
		return;
	k->ended = true;
	k->rv = rv;
	snprintf(k->msg, sizeof(k->msg), "%s", msg);
	if (k->prev_call != NULL)
		k->prev_call->next_call = k->next_call;
	else
		cl->calls = k->next_call;
	if (k->next_call != NULL)
		k->next_call->prev_call = k->prev_call;
	gmc_timer_disarm(cl->timer, &k->deadline);
	for (uint32_t i = 0; rv != GM_OK && i < k->njobs; i++)
		if (k->settled == NULL || !k->settled[i])
			gmc_call_job_status(&k->jobs[i], rv, msg);
	for (gmc_part *p = k->parts; p != NULL; p = p->next_of_call)
		detach_part(p, t);
	if (k->stage != NULL)
		gmc_stage_call_end(k, t);
	if (k->pins == 0)
		queue_tell(k, t);
	else
		gmc_timer_arm(cl->timer, &k->grace,
			      gmc_timer_now() + ms_ns(GMC_CALL_GRACE_MS));
}

void gmc_call_pin(gmc_call *k)
{
	k->pins++;
}

void gmc_call_unpin(gmc_call *k, gmc_todo *t)
{
	if (--k->pins == 0 && k->ended)
		queue_tell(k, t);
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
	char msg[GMC_CLIENT_ERRLEN];

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

/* Whether this thread polls in gmc_call_wait. */
static __thread bool polling;

/* Timer thread: a tell a polling caller handed over (gmc_call_tell).
 * gemmd_close waits for the count to fall to zero. */
static void tell_later(void *arg)
{
	gmc_call *k = arg;
	gemmd_client *cl = k->cl;

	gmc_call_tell(k);
	pthread_mutex_lock(&cl->mu);
	if (--cl->deferred == 0)
		pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
}

/* Hands k's tell to the timer thread: false when its heap cannot grow. */
static bool defer_tell(gmc_call *k)
{
	gemmd_client *cl = k->cl;

	pthread_mutex_lock(&cl->mu);
	cl->deferred++;
	pthread_mutex_unlock(&cl->mu);
	gmc_tev_init(&k->grace, tell_later, k);
	if (gmc_timer_arm(cl->timer, &k->grace, 0) == GM_OK)
		return true;
	pthread_mutex_lock(&cl->mu);
	cl->deferred--;
	pthread_mutex_unlock(&cl->mu);
	return false;
}

void gmc_call_tell(gmc_call *k)
{
	gemmd_client *cl = k->cl;
	gmc_call_waiter *w = k->nt.w;
	gmc_part *p, *next;

	gmc_timer_cancel(cl->timer, &k->deadline);
	gmc_timer_cancel(cl->timer, &k->grace);
	/* Another's callback, on a caller's thread: to the timer thread
	 * (told here only when its heap cannot grow). */
	if (w == NULL && polling && defer_tell(k))
		return;
	pthread_mutex_lock(&cl->mu);
	for (p = k->parts; p != NULL; p = next) {
		next = p->next_of_call;
		gmc_part_drop(p);
	}
	pthread_mutex_unlock(&cl->mu);
	/* A wait that allocated out for a result that did not come. */
	if (k->alloc_out && k->jobs[0].status != GM_OK) {
		free(k->jobs[0].out);
		k->jobs[0].out = NULL;
	}
	if (w != NULL) {
		pthread_mutex_lock(&w->mu);
		w->rv = k->rv;
		w->reply = k->reply;
		k->reply = NULL;
		memcpy(w->msg, k->msg, sizeof(w->msg));
		__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		gmc_call_free(k);
	} else {
		gemmd_done_fn done = k->nt.done;
		void *arg = k->nt.arg;
		int rv = k->rv;

		gmc_call_free(k);
		done(arg, rv);
	}
}

/* Keeps what fits of msg; a longer detail stays in gemmd_last_error(). */
void gmc_call_job_status(gemmd_job *j, int status, const char *msg)
{
	size_t n = strnlen(msg, sizeof(j->message) - 1);

	j->status = status;
	memcpy(j->message, msg, n);
	j->message[n] = '\0';
}

/* ---- waiters ---- */

int gmc_call_waiter_init(gmc_call_waiter *w, gemmd_client *cl)
{
	memset(w, 0, sizeof(*w));
	w->poller = cl != NULL ? cl->poller : NULL; /* NULL: refused later */
	if (pthread_mutex_init(&w->mu, NULL) != 0)
		return gmc_client_seterr(GM_ENOMEM, "out of memory");
	if (pthread_cond_init(&w->cv, NULL) != 0) {
		pthread_mutex_destroy(&w->mu);
		return gmc_client_seterr(GM_ENOMEM, "out of memory");
	}
	return GM_OK;
}

void gmc_call_waiter_drop(gmc_call_waiter *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

/* One turn of a polling loop: tells the core so (pause), leaving more
 * of it to a hyperthread beside the poller. A yield instead made the
 * daemon's own time worse on the same host (bench/RESULTS.md). */
static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

int gmc_call_wait(gmc_call_waiter *w)
{
	uint64_t until = gmc_timer_now() + GMC_CALL_SPIN_US * 1000u;

	gm_poller_start(w->poller);
	polling = true;
	/* Seen done, the lock is still taken: the teller may hold it, and
	 * w is not to be dropped before it lets go. */
	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) &&
	       gmc_timer_now() < until)
		if (gm_poller_poll(w->poller) == 0)
			relax();
	polling = false;
	gm_poller_stop(w->poller);
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	gmc_call_waiter_drop(w);
	if (w->rv != 0)
		gmc_client_seterr(w->rv, "%s", w->msg);
	return w->rv;
}
