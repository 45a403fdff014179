/*
 * gm_stream.c - what every byte stream has, and plain streams (ipc://,
 * tcp://). See gm_stream.h.
 *
 * The calls of gm_stream.h go through the stream's ops (gm_stream_impl.h):
 * plain ones here, TLS ones in gm_stream_tls.c, those of a plain stream
 * in a poller in gm_poller.c. A plain stream hands each operation
 * straight to nng's stream; a plain stream accepted by a listener first
 * gives out what its read ahead brought (gm_poller.c reads it).
 */
#include "gm_stream.h"
#include "gm_stream_impl.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

void gm_stream_set_error(gm_stream *s, const char *what, int nng_rv)
{
	if (s->err_text[0] == '\0')
		snprintf(s->err_text, sizeof(s->err_text), "%s%s%s", what,
			 nng_rv ? ": " : "",
			 nng_rv ? nng_strerror(nng_rv) : "");
}

const char *gm_stream_error(gm_stream *s)
{
	return s->err_text;
}

/* ---- plain streams ---- */

void gm_stream_end(gm_stream *s, gm_io **slot, int nrv, size_t n)
{
	gm_io *io = *slot;

	*slot = NULL;
	if (nrv != 0)
		gm_stream_set_error(s, "connection", nrv);
	io->done(io, gm_net_err(nrv), nrv ? 0 : n);
}

static void plain_done(gm_stream *s, nng_aio *aio, gm_io **slot)
{
	gm_stream_end(s, slot, nng_aio_result(aio), nng_aio_count(aio));
}

bool gm_stream_gone(gm_stream *s)
{
	return s->ahead && s->ahead_nrv != 0; /* never set on TLS */
}

/* Completes rio with what the read ahead holds, as raio's completion.
 * mu held; dropped. */
static void hand_over(gm_stream *s)
{
	gm_io *io = s->rio;
	size_t n = 0;

	for (unsigned i = 0; i < io->niov && s->ahead_off < s->ahead_len; i++) {
		size_t k = s->ahead_len - s->ahead_off;

		if (k > io->iov[i].iov_len)
			k = io->iov[i].iov_len;
		memcpy(io->iov[i].iov_buf, s->ahead_buf + s->ahead_off, k);
		s->ahead_off += k;
		n += k;
	}
	s->hand_n = n;
	s->hand_nrv = n > 0 ? 0 : s->ahead_nrv;
	s->handing = true;
	pthread_mutex_unlock(&s->mu);
	if (nng_aio_begin(s->raio))
		nng_aio_finish(s->raio, 0);
}

bool gm_stream_hand_ahead(gm_stream *s, gm_io *io)
{
	if (!s->ahead)
		return false;
	pthread_mutex_lock(&s->mu);
	if (s->ahead_off < s->ahead_len || s->ahead_nrv != 0) {
		s->rio = io;
		hand_over(s);
		return true;
	}
	/* All handed over: the stream reads as any other from here,
	 * without taking mu on each receive. */
	s->ahead = false;
	pthread_mutex_unlock(&s->mu);
	return false;
}

static void plain_raio_cb(void *arg)
{
	gm_stream *s = arg;
	gm_io *io;
	size_t n;
	int nrv;

	if (s->ahead) {
		pthread_mutex_lock(&s->mu);
		if (s->handing) {
			s->handing = false;
			n = s->hand_n;
			nrv = s->hand_nrv;
			io = s->rio;
			s->rio = NULL;
			pthread_mutex_unlock(&s->mu);
			io->done(io, gm_net_err(nrv), nrv != 0 ? 0 : n);
			return;
		}
		pthread_mutex_unlock(&s->mu);
	}
	if (s->ops->taken_back != NULL && s->ops->taken_back(s))
		return;
	plain_done(s, s->raio, &s->rio);
}

static void plain_waio_cb(void *arg)
{
	gm_stream *s = arg;

	plain_done(s, s->waio, &s->wio);
}

/* Starts a plain stream's operation on aio. nng's streams take an
 * operation started after they were closed and never complete it, so
 * one that may have raced the close is aborted: under mu, either the
 * close comes after and completes it, or this sees closed. */
static void plain_start(gm_stream *s, nng_aio *aio, gm_io *io,
			void (*op)(nng_stream *, nng_aio *))
{
	bool closed;

	pthread_mutex_lock(&s->mu);
	nng_aio_set_iov(aio, io->niov, io->iov);
	s->rarmed = s->rarmed || aio == s->raio;
	op(s->ns, aio);
	closed = s->closed;
	pthread_mutex_unlock(&s->mu);
	if (closed)
		nng_aio_abort(aio, NNG_ECLOSED);
}

void gm_stream_arm_recv(gm_stream *s)
{
	plain_start(s, s->raio, s->rio, nng_stream_recv);
}

static void plain_recv(gm_stream *s, gm_io *io)
{
	if (gm_stream_hand_ahead(s, io))
		return;
	s->rio = io;
	gm_stream_arm_recv(s);
}

void gm_stream_plain_send(gm_stream *s, gm_io *io)
{
	s->wio = io;
	plain_start(s, s->waio, io, nng_stream_send);
}

void gm_stream_mark_closed(gm_stream *s)
{
	pthread_mutex_lock(&s->mu);
	s->closed = true;
	pthread_mutex_unlock(&s->mu);
}

static void plain_close(gm_stream *s)
{
	gm_stream_mark_closed(s);
	nng_stream_close(s->ns);
}

static const struct gm_stream_ops plain_ops = {
    .recv = plain_recv,
    .send = gm_stream_plain_send,
    .close = plain_close,
};

/* ---- every stream ---- */

static void format_addr(const nng_sockaddr *sa, char *out, size_t len)
{
	const uint8_t *a;

	switch (sa->s_family) {
	case NNG_AF_INET:
		a = (const uint8_t *)&sa->s_in.sa_addr;
		snprintf(out, len, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
		break;
	case NNG_AF_INET6:
		a = sa->s_in6.sa_addr;
		snprintf(out, len, "%x:%x:%x:%x:%x:%x:%x:%x", a[0] << 8 | a[1],
			 a[2] << 8 | a[3], a[4] << 8 | a[5], a[6] << 8 | a[7],
			 a[8] << 8 | a[9], a[10] << 8 | a[11],
			 a[12] << 8 | a[13], a[14] << 8 | a[15]);
		break;
	default:
		snprintf(out, len, "?");
	}
}

static void read_peer(gm_stream *s)
{
	nng_sockaddr sa;

	s->peer.kind = s->kind;
	if (s->kind == GM_URL_IPC) {
		s->peer.has_cred =
		    nng_stream_get_uint64(s->ns, NNG_OPT_IPC_PEER_UID,
					  &s->peer.uid) == 0 &&
		    nng_stream_get_uint64(s->ns, NNG_OPT_IPC_PEER_GID,
					  &s->peer.gid) == 0;
		return;
	}
	if (nng_stream_get_addr(s->ns, NNG_OPT_REMADDR, &sa) != 0)
		return;
	format_addr(&sa, s->peer.addr, sizeof(s->peer.addr));
}

void gm_stream_free_parts(gm_stream *s)
{
	nng_aio_free(s->raio);
	nng_aio_free(s->waio);
	nng_aio_free(s->paio);
	nng_aio_free(s->taio);
	if (s->ns != NULL)
		nng_stream_free(s->ns);
	SSL_free(s->ssl);
	free(s->rbuf);
	free(s->wbuf);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int gm_stream_alloc(nng_stream *ns, int kind, const struct gm_stream_ops *ops,
		    void (*rcb)(void *), void (*wcb)(void *), gm_stream **out)
{
	gm_stream *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		nng_stream_free(ns);
		return GM_ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->ops = ops;
	s->ns = ns;
	s->kind = kind;
	if (nng_aio_alloc(&s->raio, rcb, s) ||
	    nng_aio_alloc(&s->waio, wcb, s)) {
		gm_stream_free_parts(s);
		return GM_ENOMEM;
	}
	read_peer(s);
	*out = s;
	return GM_OK;
}

int gm_stream_plain_new(nng_stream *ns, int kind, gm_stream **out)
{
	return gm_stream_alloc(ns, kind, &plain_ops, plain_raio_cb,
			       plain_waio_cb, out);
}

void gm_stream_recv(gm_stream *s, gm_io *io)
{
	s->ops->recv(s, io);
}

void gm_stream_send(gm_stream *s, gm_io *io)
{
	s->ops->send(s, io);
}

int gm_stream_try_send(gm_stream *s, gm_io *io, size_t *n)
{
	bool closed;
	int nrv;

	*n = 0;
	if (s->kind == GM_URL_TLS)
		return GM_OK;
	if (s->taio == NULL && nng_aio_alloc(&s->taio, NULL, NULL) != 0)
		return GM_OK; /* the plain send needs no more */
	/* Under mu as plain_start: a close after the start ends it. */
	pthread_mutex_lock(&s->mu);
	if (!(closed = s->closed)) {
		nng_aio_set_iov(s->taio, io->niov, io->iov);
		nng_stream_send(s->ns, s->taio);
	}
	pthread_mutex_unlock(&s->mu);
	if (closed)
		return GM_ECANCELED;
	nng_aio_cancel(s->taio);
	nng_aio_wait(s->taio);
	if ((nrv = nng_aio_result(s->taio)) == NNG_ECANCELED)
		return GM_OK; /* nothing written: it waited for room */
	if (nrv != 0) {
		gm_stream_set_error(s, "connection", nrv);
		return gm_net_err(nrv);
	}
	*n = nng_aio_count(s->taio);
	return GM_OK;
}

void gm_stream_peer(gm_stream *s, gm_peer *p)
{
	if (s->kind == GM_URL_TLS)
		pthread_mutex_lock(&s->mu);
	*p = s->peer;
	if (s->kind == GM_URL_TLS)
		pthread_mutex_unlock(&s->mu);
}

void gm_stream_close(gm_stream *s)
{
	s->ops->close(s);
}

void gm_stream_free(gm_stream *s)
{
	if (s == NULL)
		return;
	gm_stream_close(s);
	if (s->ops->leave != NULL)
		s->ops->leave(s);
	nng_aio_stop(s->raio);
	nng_aio_stop(s->waio);
	gm_stream_free_parts(s);
}
