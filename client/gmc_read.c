/*
 * gmc_read.c - the frames a daemon writes, read and routed to their
 * requests; see gmc_read.h.
 */
#include "gmc_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmc_reply.h"

enum {
	R_HDR,	  /* a frame header: GM_HDR_SIZE bytes in the buffer */
	R_RECORD, /* a reply record: GM_REPLY_JOB_SIZE bytes */
	R_ERROR,  /* an ERROR body: GM_ERROR_SIZE bytes */
	R_BULK,	  /* need bytes into dst (or dropped), then `then` */
};

enum {
	THEN_NONE, /* bytes of a frame nobody wants */
	THEN_JOB,  /* a job's result: the job is answered */
	THEN_BODY, /* a CTRL_REPLY's body */
};

int gmc_read_init(gmc_reader *rd, gemmd_client *cl, const gmc_conn *conn,
		  int *refused, char *why, size_t whylen)
{
	memset(rd, 0, sizeof(*rd));
	rd->cl = cl;
	rd->conn = conn;
	rd->refused = refused;
	rd->why = why;
	rd->whylen = whylen;
	rd->buf = malloc(GMC_READ_BUF);
	return rd->buf != NULL ? GM_OK : GM_ENOMEM;
}

static void let_go(gmc_reader *rd)
{
	if (rd->part != NULL)
		gmc_part_drop(rd->part);
	rd->part = NULL;
	free(rd->body);
	rd->body = NULL;
}

void gmc_read_free(gmc_reader *rd)
{
	let_go(rd);
	free(rd->buf);
	rd->buf = NULL;
}

void gmc_read_reset(gmc_reader *rd)
{
	let_go(rd);
	rd->off = rd->len = 0;
	rd->state = R_HDR;
	rd->dst = NULL;
	rd->need = rd->got = 0;
	rd->into_dst = 0;
	rd->frames = 0;
	rd->started = false;
}

static void consume(gmc_reader *rd, size_t n)
{
	rd->off += n;
	rd->len -= n;
}

/* The next need bytes go to dst (NULL: dropped), then `then`. */
static void bulk(gmc_reader *rd, void *dst, bool caller, uint64_t need,
		 int then)
{
	rd->state = R_BULK;
	rd->dst = dst;
	rd->dst_caller = caller && dst != NULL;
	rd->need = need;
	rd->got = 0;
	rd->then = then;
}

/* A request frame or garbage from the daemon: the stream is lost. */
static int broken(gmc_reader *rd, const char *what)
{
	snprintf(rd->fail, sizeof(rd->fail), "bad frame from the daemon: %s",
		 what);
	return GM_ETRANSPORT;
}

/* The part in flight on the connection under id; NULL for an id nothing
 * of the connection's was written under (the reply is dropped). */
static gmc_part *lookup(gmc_reader *rd, uint64_t id)
{
	gmc_part *p = gmc_idmap_get(&rd->cl->parts, id);

	if (p == NULL || p->conn != rd->conn || p->state < GMC_PART_WRITING ||
	    p->state == GMC_PART_DONE)
		return NULL;
	return p;
}

static int take_hdr(gmc_reader *rd, gmc_todo *t)
{
	gmc_part *p;
	int rv;

	rv = gm_proto_get_hdr(rd->buf + rd->off, GM_HDR_SIZE, &rd->h, rd->msg,
			      sizeof(rd->msg));
	consume(rd, GM_HDR_SIZE);
	if (rv != GM_OK)
		return broken(rd, rd->msg);
	rd->frames++;
	p = lookup(rd, rd->h.id);
	switch (rd->h.type) {
	case GM_MSG_GEMM_REPLY:
		if (p != NULL && p->call != NULL &&
		    (p->call->kind == GMC_CALL_CTRL ||
		     p->call->kind == GMC_CALL_DETACH)) {
			gmc_call_end(p->call, GM_EMSGTYPE,
				     "a GEMM_REPLY to a control or detached "
				     "request",
				     t);
			p = NULL;
		}
		if (p == NULL ||
		    gm_proto_check_reply_hdr(&rd->h, p->njobs, rd->msg,
					     sizeof(rd->msg))) {
			bulk(rd, NULL, false, rd->h.length, THEN_NONE);
			return GM_OK;
		}
		gmc_part_hold(p);
		rd->part = p;
		rd->index = rd->h.count;
		rd->state = R_RECORD;
		return GM_OK;
	case GM_MSG_CTRL_REPLY:
		if (p != NULL && rd->h.length > GMC_READ_CTRL_MAX) {
			snprintf(rd->msg, sizeof(rd->msg),
				 "control reply of %" PRIu64 " bytes, at most "
				 "%u taken",
				 rd->h.length, GMC_READ_CTRL_MAX);
			gmc_part_over(p, GM_EFIELD, rd->msg, t);
			p = NULL;
		}
		if (p != NULL &&
		    (rd->body = malloc((size_t)rd->h.length + 1)) == NULL) {
			gmc_part_over(p, GM_ENOMEM, "out of memory", t);
			p = NULL;
		}
		if (p != NULL) {
			gmc_part_hold(p);
			rd->part = p;
		}
		bulk(rd, rd->body, false, rd->h.length,
		     p ? THEN_BODY : THEN_NONE);
		return GM_OK;
	case GM_MSG_ERROR:
		if (rd->h.length != GM_ERROR_SIZE)
			return broken(rd, "an ERROR frame not of 104 bytes");
		rd->state = R_ERROR;
		return GM_OK;
	default:
		snprintf(rd->msg, sizeof(rd->msg), "a request frame (type %u)",
			 rd->h.type);
		return broken(rd, rd->msg);
	}
}

/* Job rd->index of rd->part is answered: by rd->rec, or unusable
 * (rd->job_rv). */
static void take_job(gmc_reader *rd, gmc_todo *t)
{
	gmc_part *p = rd->part;
	gmc_call *k = p->call;
	uint32_t i = p->first + rd->index;

	if (k != NULL && !p->answered[rd->index]) {
		if (rd->job_rv != GM_OK) {
			gmc_call_job_status(&k->jobs[i], rd->job_rv, rd->msg);
		} else if (p->chunk != NULL) {
			rd->cl->staging->replied(p, rd->index, &rd->rec, t);
			goto out; /* answered once its result is copied */
		} else {
			gmc_reply_take(&k->jobs[i], &rd->rec);
		}
		k->settled[i] = 1;
	}
	gmc_part_answered(p, rd->index, t);
out:
	gmc_part_drop(p);
	rd->part = NULL;
}

static void take_record(gmc_reader *rd, gmc_todo *t)
{
	gmc_part *p = rd->part;
	gmc_call *k = p->call;
	uint64_t rest = rd->h.length - GM_REPLY_JOB_SIZE, want;
	gemmd_job *j;
	int rv;

	rv = gm_proto_get_reply_job(&rd->h, rd->buf + rd->off, &rd->rec,
				    rd->msg, sizeof(rd->msg));
	consume(rd, GM_REPLY_JOB_SIZE);
	rd->job_rv = GM_OK;
	if (rv != GM_OK) {
		char detail[sizeof(rd->msg)];

		memcpy(detail, rd->msg, sizeof(detail));
		snprintf(rd->msg, sizeof(rd->msg), "bad reply: %.160s", detail);
		rd->job_rv = rv;
	}
	if (k == NULL || p->answered[rd->index] || rv != GM_OK) {
		bulk(rd, NULL, false, rest, THEN_JOB);
		return;
	}
	j = &k->jobs[p->first + rd->index];
	/* A result that goes to a region comes back without bytes. */
	want = p->chunk != NULL || j->out_ref.region != NULL
		   ? 0
		   : (uint64_t)j->m * j->n * gm_dtype_size(j->dtype);
	rd->job_rv =
	    gmc_reply_check(j, &rd->rec, want, k->alloc_out,
			    k->kind == GMC_CALL_WAIT ? GM_EINVAL : GM_EINTERNAL,
			    rd->msg, sizeof(rd->msg));
	if (rd->job_rv != GM_OK || rest == 0)
		bulk(rd, NULL, false, rest, THEN_JOB);
	else
		bulk(rd, j->out, true, rest, THEN_JOB);
}

static int take_error(gmc_reader *rd, gmc_todo *t)
{
	char text[GM_MSG_TEXT + 1];
	uint32_t status;
	gmc_part *p;

	if (gm_proto_get_error(&rd->h, rd->buf + rd->off, &status, text)) {
		consume(rd, GM_ERROR_SIZE);
		return broken(rd, "an ERROR frame with a bad body");
	}
	consume(rd, GM_ERROR_SIZE);
	rd->state = R_HDR;
	if (rd->h.id == 0) {
		/* The daemon is about to close the connection; when it says
		 * so first, it read nothing: a refusal (PROTOCOL.md 2.1). */
		if (rd->frames == 1)
			*rd->refused = (int)status;
		snprintf(rd->why, rd->whylen,
			 "the daemon closed the connection: %s: %s",
			 gm_errname((int)status), text);
		return GM_OK;
	}
	if ((p = lookup(rd, rd->h.id)) != NULL)
		gmc_part_over(p, (int)status, text, t);
	return GM_OK;
}

static void take_body(gmc_reader *rd, gmc_todo *t)
{
	gmc_part *p = rd->part;
	gmc_call *k = p->call;
	size_t len = (size_t)rd->h.length;
	char *doc = NULL;
	int rv = GM_OK;

	rd->body[len] = '\0';
	if (k == NULL)
		goto out;
	switch (k->kind) {
	case GMC_CALL_CTRL:
		rv = gmc_reply_ctrl((char *)rd->body, len, &k->reply, rd->msg,
				    sizeof(rd->msg));
		break;
	case GMC_CALL_DETACH:
		rv = gmc_reply_ids((char *)rd->body, len, k->ids, k->njobs,
				   rd->msg, sizeof(rd->msg));
		break;
	case GMC_CALL_WAIT:
		/* A wait is answered by a result or refused; "ok" is
		 * neither. */
		rv = gmc_reply_ctrl((char *)rd->body, len, &doc, rd->msg,
				    sizeof(rd->msg));
		if (rv == GM_OK) {
			free(doc);
			rv = GM_EMSGTYPE;
			snprintf(rd->msg, sizeof(rd->msg),
				 "wait answered without a result");
		}
		break;
	default:
		rv = GM_EMSGTYPE;
		snprintf(rd->msg, sizeof(rd->msg),
			 "a CTRL_REPLY to a GEMM request");
	}
	gmc_call_end(k, rv, rv ? rd->msg : "", t);
out:
	free(rd->body);
	rd->body = NULL;
	gmc_part_over(p, GM_OK, "", t);
	gmc_part_drop(p);
	rd->part = NULL;
}

/* Bytes in the buffer that the bulk piece takes. */
static void bulk_from_buf(gmc_reader *rd)
{
	uint64_t n = rd->need - rd->got;

	if (n > rd->len)
		n = rd->len;
	if (rd->dst != NULL)
		memcpy(rd->dst + rd->got, rd->buf + rd->off, (size_t)n);
	rd->got += n;
	consume(rd, (size_t)n);
}

static void bulk_done(gmc_reader *rd, gmc_todo *t)
{
	int then = rd->then;

	rd->state = R_HDR;
	rd->dst = NULL;
	if (then == THEN_JOB)
		take_job(rd, t);
	else if (then == THEN_BODY)
		take_body(rd, t);
}

/* A caller's buffer is written only while its call lasts: once the part
 * is a zombie the rest of its result is dropped. */
static void check_dst(gmc_reader *rd)
{
	if (rd->state == R_BULK && rd->dst_caller &&
	    (rd->part == NULL || rd->part->call == NULL)) {
		rd->dst = NULL;
		rd->dst_caller = false;
	}
}

int gmc_read_got(gmc_reader *rd, size_t n, gmc_todo *t)
{
	size_t d = n < rd->into_dst ? n : rd->into_dst;
	int rv = GM_OK;

	rd->got += d;
	rd->len += n - d;
	rd->into_dst = 0;
	while (rv == GM_OK) {
		if (!rd->started && rd->len >= 4) {
			rd->started = true;
			if (gm_proto_is_sp(rd->buf + rd->off, rd->len)) {
				*rd->refused = GM_EVERSION;
				snprintf(rd->fail, sizeof(rd->fail),
					 "the daemon speaks protocol v1 (nng "
					 "REQ/REP); this library speaks v2");
				return GM_EVERSION;
			}
		}
		check_dst(rd);
		if (rd->state == R_HDR && rd->len >= GM_HDR_SIZE)
			rv = take_hdr(rd, t);
		else if (rd->state == R_RECORD && rd->len >= GM_REPLY_JOB_SIZE)
			take_record(rd, t);
		else if (rd->state == R_ERROR && rd->len >= GM_ERROR_SIZE)
			rv = take_error(rd, t);
		else if (rd->state == R_BULK && rd->got < rd->need &&
			 rd->len > 0)
			bulk_from_buf(rd);
		else if (rd->state == R_BULK && rd->got == rd->need)
			bulk_done(rd, t);
		else
			break;
	}
	return rv;
}

void gmc_read_plan(gmc_reader *rd, gm_io *io, gmc_call **pin)
{
	*pin = NULL;
	check_dst(rd);
	if (rd->len == 0)
		rd->off = 0;
	if (rd->state == R_BULK && rd->dst != NULL && rd->len == 0) {
		/* Straight into the destination, and what follows into the
		 * buffer. */
		rd->into_dst = (size_t)(rd->need - rd->got);
		io->iov[0] = (nng_iov){rd->dst + rd->got, rd->into_dst};
		io->iov[1] = (nng_iov){rd->buf, GMC_READ_BUF};
		io->niov = 2;
		if (rd->dst_caller) {
			*pin = rd->part->call;
			gmc_call_pin(*pin);
		}
		return;
	}
	if (rd->off > 0) {
		memmove(rd->buf, rd->buf + rd->off, rd->len);
		rd->off = 0;
	}
	io->iov[0] = (nng_iov){rd->buf + rd->len, GMC_READ_BUF - rd->len};
	io->niov = 1;
}
