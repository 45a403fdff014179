/*
 * gm_stream_tls.c - TLS streams (tls+tcp://): gemmd's own TLS on
 * OpenSSL over nng's TCP byte stream. See gm_stream.h, and gm_tls.h for
 * why gemmd runs TLS itself.
 *
 * A TLS stream keeps two buffers of ciphertext: what came from the
 * socket and OpenSSL has not read yet, and what OpenSSL wrote and the
 * socket has not taken yet. OpenSSL reads and writes them through a BIO
 * of our own, so each socket operation moves up to a whole buffer of
 * records (nng's TLS moves one). All TLS state is under the stream's
 * lock; pump() advances everything that can advance (handshake, the
 * receive, the send, the raw socket operations) and says which user
 * operations finished, and kick() runs pump and then their callbacks
 * outside the lock, as a trampoline: a callback that starts the next
 * operation only asks for another round, so a run of small frames
 * already decrypted is delivered in a loop, not by recursion.
 */
#include "gm_stream_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"
#include "gm_stream_impl.h"
#include "gm_tls_impl.h"

/* Ciphertext buffered each way. A TLS record is at most 16 KiB + 256:
 * a buffer takes many, so one socket operation moves many. */
#define TLS_BUF (1u << 20)

/* ---- the TLS BIO: OpenSSL's view of our two buffers ---- */

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

static int bio_read(BIO *b, char *out, int len)
{
	gm_stream *s = BIO_get_data(b);
	size_t n = s->rlen < (size_t)len ? s->rlen : (size_t)len;

	BIO_clear_retry_flags(b);
	if (n == 0) {
		if (s->reof)
			return 0;
		BIO_set_retry_read(b);
		return -1;
	}
	memcpy(out, s->rbuf + s->roff, n);
	s->roff += n;
	s->rlen -= n;
	return (int)n;
}

static int bio_write(BIO *b, const char *in, int len)
{
	gm_stream *s = BIO_get_data(b);
	size_t room = TLS_BUF - s->wlen;
	size_t n = room < (size_t)len ? room : (size_t)len;

	BIO_clear_retry_flags(b);
	if (n == 0) {
		BIO_set_retry_write(b);
		return -1;
	}
	memcpy(s->wbuf + s->wlen, in, n);
	s->wlen += n;
	return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH;
}

static int bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static void bio_setup(void)
{
	bio_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
				  "gemmd stream");
	if (bio_method == NULL)
		return;
	BIO_meth_set_read(bio_method, bio_read);
	BIO_meth_set_write(bio_method, bio_write);
	BIO_meth_set_ctrl(bio_method, bio_ctrl);
	BIO_meth_set_create(bio_method, bio_create);
}

/* ---- the TLS engine room ---- */

/* What a round of pump() finished: callbacks to run after the lock. */
struct done {
	gm_io *io;
	int rv;
	size_t n;
};

static void tls_fail(gm_stream *s, int code, const char *why)
{
	if (s->err == 0)
		s->err = code;
	if (why != NULL && s->err_text[0] == '\0')
		snprintf(s->err_text, sizeof(s->err_text), "%s", why);
}

/* Records why OpenSSL stopped, unless it only wants more I/O; returns
 * the SSL_get_error code. */
static int ssl_status(gm_stream *s, int ret)
{
	int e = SSL_get_error(s->ssl, ret);
	char why[160], line[180];

	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		break;
	case SSL_ERROR_ZERO_RETURN:
		tls_fail(s, GM_ETRANSPORT, "connection closed by the peer");
		break;
	default:
		gm_tls_errstr(s->reof ? "connection closed by the peer"
				      : "protocol error",
			      why, sizeof(why));
		if (SSL_get_verify_result(s->ssl) != X509_V_OK)
			snprintf(why, sizeof(why), "%s",
				 X509_verify_cert_error_string(
				     SSL_get_verify_result(s->ssl)));
		snprintf(line, sizeof(line), "TLS: %s", why);
		tls_fail(s, GM_ETRANSPORT, line);
	}
	ERR_clear_error();
	return e;
}

static void tls_handshake(gm_stream *s, bool *want_read)
{
	int ret = SSL_do_handshake(s->ssl);

	if (ret == 1) {
		s->handshaken = true;
		gm_tls_subject(s->ssl, s->peer.subject,
			       sizeof(s->peer.subject));
	} else if (ssl_status(s, ret) == SSL_ERROR_WANT_READ) {
		*want_read = true;
	}
}

/* Decrypts into the receive's buffers as far as records are at hand. */
static void tls_read(gm_stream *s, struct done *d, bool *want_read)
{
	gm_io *io = s->rio;
	size_t total = 0;

	for (unsigned i = 0; i < io->niov; i++) {
		size_t got = 0, n;
		int ret = 1;

		while (got < io->iov[i].iov_len &&
		       (ret = SSL_read_ex(s->ssl,
					  (uint8_t *)io->iov[i].iov_buf + got,
					  io->iov[i].iov_len - got, &n)) == 1)
			got += n;
		total += got;
		if (ret != 1) {
			int e = ssl_status(s, ret);

			/* Bytes read before an end or an error are
			 * delivered first: the error is sticky and fails
			 * the next receive. */
			if (e == SSL_ERROR_WANT_READ && total == 0)
				*want_read = true;
			break;
		}
	}
	if (total > 0) {
		*d = (struct done){io, 0, total};
		s->rio = NULL;
	}
}

static size_t io_bytes(const gm_io *io)
{
	size_t n = 0;

	for (unsigned i = 0; i < io->niov; i++)
		n += io->iov[i].iov_len;
	return n;
}

/* Encrypts what of the send fits in the send buffer; the send is done
 * once all of it is encrypted and the buffer has gone to the socket. */
static void tls_write(gm_stream *s, struct done *d)
{
	gm_io *io = s->wio;
	size_t total = io_bytes(io), skip = s->wtaken;

	for (unsigned i = 0; i < io->niov && s->wtaken < total; i++) {
		size_t len = io->iov[i].iov_len, n;
		int ret = 1;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		while (skip < len &&
		       (ret = SSL_write_ex(s->ssl,
					   (uint8_t *)io->iov[i].iov_buf + skip,
					   len - skip, &n)) == 1) {
			skip += n;
			s->wtaken += n;
		}
		if (skip < len) {
			ssl_status(s, ret);
			return;
		}
		skip = 0;
	}
	if (s->wtaken == total && s->woff == s->wlen) {
		*d = (struct done){io, 0, total};
		s->wio = NULL;
		s->wtaken = 0;
	}
}

static void tls_raio_cb(void *arg);
static void tls_waio_cb(void *arg);

static void start_raw_send(gm_stream *s)
{
	nng_iov iov = {s->wbuf + s->woff, s->wlen - s->woff};

	s->wraw = true;
	nng_aio_set_iov(s->waio, 1, &iov);
	nng_stream_send(s->ns, s->waio);
}

static void start_raw_recv(gm_stream *s)
{
	nng_iov iov;

	if (s->roff != 0) {
		memmove(s->rbuf, s->rbuf + s->roff, s->rlen);
		s->roff = 0;
	}
	iov = (nng_iov){s->rbuf + s->rlen, TLS_BUF - s->rlen};
	s->rraw = true;
	nng_aio_set_iov(s->raio, 1, &iov);
	nng_stream_recv(s->ns, s->raio);
}

/* Advances the stream as far as it can; finished user operations go to
 * r and w. Returns true when the socket must now be closed: the stream
 * failed and what OpenSSL had to say about it (an alert) is sent. Under
 * mu. */
static bool pump(gm_stream *s, struct done *r, struct done *w)
{
	bool want_read = false;

	if (s->err == 0 && !s->handshaken)
		tls_handshake(s, &want_read);
	if (s->err == 0 && s->handshaken && s->rio != NULL)
		tls_read(s, r, &want_read);
	if (s->err == 0 && s->handshaken && s->wio != NULL)
		tls_write(s, w);
	if (s->err != 0) {
		if (s->rio != NULL && r->io == NULL) {
			*r = (struct done){s->rio, s->err, 0};
			s->rio = NULL;
		}
		if (s->wio != NULL && w->io == NULL) {
			*w = (struct done){s->wio, s->err, 0};
			s->wio = NULL;
		}
		if (s->wraw || s->shut)
			return false;
		if (s->wlen > s->woff && s->err != GM_ECANCELED) {
			start_raw_send(s);
			return false;
		}
		s->shut = true;
		return true;
	}
	if (!s->wraw && s->wlen > s->woff)
		start_raw_send(s);
	if (want_read && !s->rraw && !s->reof && s->rlen < TLS_BUF)
		start_raw_recv(s);
	return false;
}

static void kick(gm_stream *s)
{
	pthread_mutex_lock(&s->mu);
	if (s->dispatching) {
		s->again = true;
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->dispatching = true;
	do {
		struct done r = {0}, w = {0};
		bool shut;

		s->again = false;
		shut = pump(s, &r, &w);
		pthread_mutex_unlock(&s->mu);
		if (shut)
			nng_stream_close(s->ns);
		if (r.io != NULL)
			r.io->done(r.io, r.rv, r.n);
		if (w.io != NULL)
			w.io->done(w.io, w.rv, w.n);
		pthread_mutex_lock(&s->mu);
	} while (s->again);
	s->dispatching = false;
	pthread_mutex_unlock(&s->mu);
}

static void tls_raio_cb(void *arg)
{
	gm_stream *s = arg;
	int nrv = nng_aio_result(s->raio);

	pthread_mutex_lock(&s->mu);
	s->rraw = false;
	if (nrv == 0) {
		s->rlen += nng_aio_count(s->raio);
	} else {
		/* OpenSSL still reads what came before the end. */
		s->reof = true;
		gm_stream_set_error(s, "connection", nrv);
		if (nrv == NNG_ECLOSED)
			tls_fail(s, GM_ECANCELED, NULL);
	}
	pthread_mutex_unlock(&s->mu);
	kick(s);
}

static void tls_waio_cb(void *arg)
{
	gm_stream *s = arg;
	int nrv = nng_aio_result(s->waio);

	pthread_mutex_lock(&s->mu);
	s->wraw = false;
	if (nrv == 0) {
		s->woff += nng_aio_count(s->waio);
		if (s->woff == s->wlen)
			s->woff = s->wlen = 0;
	} else {
		/* What was not written never will be. */
		s->woff = s->wlen = 0;
		gm_stream_set_error(s, "connection", nrv);
		tls_fail(s, gm_net_err(nrv), NULL);
	}
	pthread_mutex_unlock(&s->mu);
	kick(s);
}

/* ---- the stream ---- */

/* ---- the stream's ops ---- */

static void tls_recv(gm_stream *s, gm_io *io)
{
	pthread_mutex_lock(&s->mu);
	s->rio = io;
	pthread_mutex_unlock(&s->mu);
	kick(s);
}

static void tls_send(gm_stream *s, gm_io *io)
{
	pthread_mutex_lock(&s->mu);
	s->wio = io;
	s->wtaken = 0;
	pthread_mutex_unlock(&s->mu);
	kick(s);
}

static void tls_close(gm_stream *s)
{
	pthread_mutex_lock(&s->mu);
	s->closed = true;
	tls_fail(s, GM_ECANCELED, NULL);
	pthread_mutex_unlock(&s->mu);
	nng_stream_close(s->ns);
	kick(s);
}

static const struct gm_stream_ops tls_ops = {
    .recv = tls_recv,
    .send = tls_send,
    .close = tls_close,
};

int gm_stream_tls_new(nng_stream *ns, const gm_tls_ctx *tls, bool start,
		      gm_stream **out)
{
	gm_stream *s;
	BIO *b;
	int rv;

	rv = gm_stream_alloc(ns, GM_URL_TLS, &tls_ops, tls_raio_cb, tls_waio_cb,
			     &s);
	if (rv != GM_OK)
		return rv;
	pthread_once(&bio_once, bio_setup);
	if (bio_method == NULL || (b = BIO_new(bio_method)) == NULL)
		goto fail;
	BIO_set_data(b, s);
	s->rbuf = malloc(TLS_BUF);
	s->wbuf = malloc(TLS_BUF);
	if (s->rbuf == NULL || s->wbuf == NULL ||
	    (s->ssl = gm_tls_ssl_new(tls, b)) == NULL)
		goto fail;
	*out = s;
	/* The handshake starts now, not at the first operation: a peer
	 * may write everything before it reads anything. Unless the owner
	 * asked otherwise (gm_listener_defer_handshakes). */
	if (start)
		kick(s);
	return GM_OK;
fail:
	gm_stream_free_parts(s);
	return GM_ENOMEM;
}
