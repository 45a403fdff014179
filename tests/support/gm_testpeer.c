/*
 * gm_testpeer.c - the scripted peer's streams and frames; see
 * gm_testpeer.h. The hand-off socket and the arithmetic are in
 * gm_testpeer_work.c.
 */
#include "gm_testpeer.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_error.h"
#include "gm_stream.h"
#include "gm_testpeer_impl.h"
#include "gm_teststream.h"

#define CONNS_MAX 64

struct gm_testconn {
	gm_testpeer *peer;
	gm_stream *s;
	gm_io rio;
	gm_teststream_wait rw;
	bool rpending;
	uint8_t *buf; /* received, not yet taken */
	size_t cap, len;
};

static void sem_wait_ms(sem_t *s, int ms, int *timed_out)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (sem_timedwait(s, &ts) != 0)
		if (errno == ETIMEDOUT) {
			*timed_out = 1;
			return;
		}
	*timed_out = 0;
}

/* ---- accepting ---- */

static void on_accept(void *arg, int rv, int nng_rv, gm_stream *s)
{
	gm_testpeer *p = arg;

	if (rv != GM_OK)
		return; /* the listener is being freed */
	pthread_mutex_lock(&p->mu);
	if (p->nconns < CONNS_MAX) {
		p->conns[p->nconns++] = s;
		s = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	if (s != NULL)
		gm_stream_free(s);
	sem_post(&p->accepted);
	gm_listener_accept(p->l, on_accept, p);
}

int gm_testpeer_open(const char *url, const gm_tls_ctx *tls, gm_testpeer **out)
{
	gm_testpeer *p = calloc(1, sizeof(*p));
	char msg[256];
	const char *colon;
	int rv;

	if (p == NULL)
		return GM_ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	sem_init(&p->accepted, 0, 0);
	p->handoff_fd = -1;
	if ((p->conns = calloc(CONNS_MAX, sizeof(*p->conns))) == NULL ||
	    (p->tconns = calloc(CONNS_MAX, sizeof(*p->tconns))) == NULL) {
		gm_testpeer_free(p);
		return GM_ENOMEM;
	}
	if ((rv = gm_listener_open(url, tls, 0600, &p->l, msg, sizeof(msg)))) {
		fprintf(stderr, "testpeer: %s\n", msg);
		gm_testpeer_free(p);
		return rv;
	}
	colon = strrchr(url, ':');
	if (gm_listener_port(p->l) != 0 && colon != NULL)
		snprintf(p->url, sizeof(p->url), "%.*s:%d", (int)(colon - url),
			 url, gm_listener_port(p->l));
	else
		snprintf(p->url, sizeof(p->url), "%s", url);
	gm_listener_accept(p->l, on_accept, p);
	*out = p;
	return GM_OK;
}

const char *gm_testpeer_url(const gm_testpeer *p)
{
	return p->url;
}

unsigned gm_testpeer_accepted(gm_testpeer *p)
{
	unsigned n;

	pthread_mutex_lock(&p->mu);
	n = p->nconns;
	pthread_mutex_unlock(&p->mu);
	return n;
}

gm_testconn *gm_testpeer_accept(gm_testpeer *p, int ms)
{
	gm_testconn *c;
	int timed_out;

	sem_wait_ms(&p->accepted, ms, &timed_out);
	if (timed_out || (c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	pthread_mutex_lock(&p->mu);
	c->s = p->conns[p->ntconns];
	p->tconns[p->ntconns++] = c;
	pthread_mutex_unlock(&p->mu);
	c->peer = p;
	sem_init(&c->rw.sem, 0, 0);
	c->rio = (gm_io){.done = gm_teststream_on_io, .arg = &c->rw};
	return c;
}

static void conn_free(gm_testconn *c)
{
	gm_stream_free(c->s);
	free(c->buf);
	free(c);
}

void gm_testpeer_free(gm_testpeer *p)
{
	if (p == NULL)
		return;
	gm_listener_free(p->l);
	gm_testpeer_handoff_stop(p);
	for (unsigned i = 0; p->tconns && i < p->ntconns; i++)
		conn_free(p->tconns[i]);
	for (unsigned i = p->ntconns; p->conns && i < p->nconns; i++)
		gm_stream_free(p->conns[i]);
	free(p->conns);
	free(p->tconns);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ---- reading and writing ---- */

/* Until at least n bytes are buffered. */
static int fill(gm_testconn *c, size_t n, int ms)
{
	int timed_out;

	while (c->len < n) {
		if (!c->rpending) {
			size_t want = c->len + (n > 65536 ? n : 65536);

			if (c->cap < want) {
				uint8_t *b = realloc(c->buf, want);

				if (b == NULL)
					return GM_ENOMEM;
				c->buf = b;
				c->cap = want;
			}
			c->rio.iov[0] =
			    (nng_iov){c->buf + c->len, c->cap - c->len};
			c->rio.niov = 1;
			c->rpending = true;
			gm_stream_recv(c->s, &c->rio);
		}
		sem_wait_ms(&c->rw.sem, ms, &timed_out);
		if (timed_out)
			return GM_ETIMEDOUT;
		c->rpending = false;
		if (c->rw.rv != GM_OK)
			return GM_ETRANSPORT;
		c->len += c->rw.n;
	}
	return GM_OK;
}

static void take(gm_testconn *c, void *out, size_t n)
{
	if (out != NULL)
		memcpy(out, c->buf, n);
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

int gm_testconn_read_bytes(gm_testconn *c, void *out, size_t n, int ms)
{
	int rv = fill(c, n, ms);

	if (rv == GM_OK)
		take(c, out, n);
	return rv;
}

int gm_testconn_read(gm_testconn *c, gm_testframe *f, int ms)
{
	int rv;

	memset(f, 0, sizeof(*f));
	if ((rv = fill(c, GM_HDR_SIZE, ms)) != GM_OK)
		return rv;
	if ((rv = gm_proto_get_hdr(c->buf, GM_HDR_SIZE, &f->h, NULL, 0)) != 0)
		return rv;
	f->len = GM_HDR_SIZE + (size_t)f->h.length;
	if ((rv = fill(c, f->len, ms)) != GM_OK)
		return rv;
	if ((f->buf = malloc(f->len)) == NULL)
		return GM_ENOMEM;
	take(c, f->buf, f->len);
	return GM_OK;
}

void gm_testframe_free(gm_testframe *f)
{
	free(f->buf);
	f->buf = NULL;
}

int gm_testconn_write(gm_testconn *c, const void *p, size_t n)
{
	return gm_teststream_move_all(c->s, 1, (uint8_t *)p, n) == GM_OK
		   ? GM_OK
		   : GM_ETRANSPORT;
}

void gm_testconn_close(gm_testconn *c)
{
	gm_stream_close(c->s);
}

/* ---- replies ---- */

int gm_testconn_job_reply(gm_testconn *c, uint64_t id, uint32_t index,
			  const gm_reply_job *r, const void *result)
{
	uint8_t head[GM_HDR_SIZE + GM_REPLY_JOB_SIZE];
	int rv;

	gm_proto_put_hdr(head, GM_MSG_GEMM_REPLY, id, index,
			 GM_REPLY_JOB_SIZE + r->result_bytes);
	gm_proto_put_reply_job(head + GM_HDR_SIZE, r);
	if ((rv = gm_testconn_write(c, head, sizeof(head))) != GM_OK)
		return rv;
	return r->result_bytes ? gm_testconn_write(c, result, r->result_bytes)
			       : GM_OK;
}

int gm_testconn_error(gm_testconn *c, uint64_t id, uint32_t status,
		      const char *msg)
{
	uint8_t f[GM_HDR_SIZE + GM_ERROR_SIZE];

	gm_proto_put_error(f, id, status, msg);
	return gm_testconn_write(c, f, sizeof(f));
}

int gm_testconn_ctrl_reply(gm_testconn *c, uint64_t id, const char *json)
{
	uint8_t h[GM_HDR_SIZE];
	int rv;

	gm_proto_put_hdr(h, GM_MSG_CTRL_REPLY, id, 0, strlen(json));
	if ((rv = gm_testconn_write(c, h, sizeof(h))) != GM_OK)
		return rv;
	return gm_testconn_write(c, json, strlen(json));
}

int gm_testconn_reply(gm_testconn *c, const gm_testframe *f, uint32_t index)
{
	gm_reply_job r;
	void *result = NULL;
	int rv;

	if ((rv = gm_testpeer_compute(c->peer, f, index, &r, &result)) != 0)
		return rv;
	rv = gm_testconn_job_reply(c, f->h.id, index, &r, result);
	free(result);
	return rv;
}

int gm_testconn_reply_all(gm_testconn *c, const gm_testframe *f)
{
	int rv = GM_OK;

	for (uint32_t i = 0; i < f->h.count && rv == GM_OK; i++)
		rv = gm_testconn_reply(c, f, i);
	return rv;
}
