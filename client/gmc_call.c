/*
 * gmc_call.c - calls and their parts: made, queued, answered, ended;
 * see gmc_call.h.
 */
#include "gmc_call.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gmc_call_new(gemmd_client *cl, int kind, int timeout_ms,
		 const gmc_call_notify *nt, gmc_call **out)
{
	gmc_call *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return gmc_error_set(GM_ENOMEM, "out of memory");
	k->cl = cl;
	k->kind = kind;
	k->timeout_ms = timeout_ms;
	k->nt = *nt;
	k->start = gmc_timer_now();
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

/* ---- a connection's parts ---- */

void gmc_part_enqueue(gmc_partq *q, gmc_part *p)
{
	p->q = q;
	p->state = GMC_PART_QUEUED;
	p->queued = true;
	gmc_part_hold(p); /* the queue's: a half-written frame outlives its
			     call */
	p->prev = q->tail;
	p->next = NULL;
	if (q->tail != NULL)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
	q->work += p->work;
	*q->total += p->work;
}

void gmc_part_dequeue(gmc_part *p)
{
	gmc_partq *q = p->q;

	if (!p->queued)
		return;
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		q->head = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	else
		q->tail = p->prev;
	p->prev = p->next = NULL;
	p->queued = false;
	gmc_part_drop(p); /* p may be gone now */
}

void gmc_part_mark_written(gmc_part *p)
{
	gmc_partq *q = p->q;

	if (p->state != GMC_PART_QUEUED)
		return;
	p->state = GMC_PART_WRITING;
	p->written = true;
	p->next_w = q->written;
	if (q->written != NULL)
		q->written->prev_w = p;
	q->written = p;
}

void gmc_part_unlink(gmc_part *p)
{
	gmc_partq *q = p->q;

	if (q == NULL)
		return;
	if (p->state == GMC_PART_WRITING || p->state == GMC_PART_SENT) {
		if (p->prev_w != NULL)
			p->prev_w->next_w = p->next_w;
		else
			q->written = p->next_w;
		if (p->next_w != NULL)
			p->next_w->prev_w = p->prev_w;
		p->prev_w = p->next_w = NULL;
	}
	q->work -= p->work;
	*q->total -= p->work;
	p->work = 0;
}

/* Takes p out of everything that finds it and ends its life; tells its
 * call when the call has nothing more to wait for. */
static void part_finish(gmc_part *p, gmc_todo *t)
{
	gmc_call *k = p->call;

	if (p->state == GMC_PART_DONE)
		return;
	if (p->state == GMC_PART_QUEUED)
		gmc_part_dequeue(p);
	gmc_part_unlink(p);
	p->state = GMC_PART_DONE;
	gmc_idmap_del(&p->cl->parts, p->id);
	if (p->chunk != NULL)
		p->cl->staging->part_over(p, t);
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
		cl->staging->call_end(k, t);
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

/* Keeps what fits of msg; a longer detail stays in gemmd_last_error(). */
void gmc_call_job_status(gemmd_job *j, int status, const char *msg)
{
	size_t n = strnlen(msg, sizeof(j->message) - 1);

	j->status = status;
	memcpy(j->message, msg, n);
	j->message[n] = '\0';
}
