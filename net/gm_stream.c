/*
 * gm_stream.c - byte streams over nng, plain or with gemmd's own TLS;
 * listeners and dialers. See gm_stream.h.
 *
 * A plain stream hands each operation straight to nng's stream.
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
#include "gm_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"
#include "gm_poller_impl.h"
#include "gm_tls_impl.h"

/* Ciphertext buffered each way. A TLS record is at most 16 KiB + 256:
 * a buffer takes many, so one socket operation moves many. */
#define TLS_BUF (1u << 20)
/* What a plain stream accepted by a listener reads ahead (see below):
 * a frame header and a small request. */
#define AHEAD_BYTES 256

struct gm_stream {
	nng_stream *ns;
	int kind; /* enum gm_url_kind */
	nng_aio *raio, *waio;
	gm_io *rio, *wio; /* user operations in flight */
	gm_peer peer;
	char err_text[256];
	bool closed; /* under mu: gm_stream_close was called */

	pthread_mutex_t mu;
	/* TLS only; all under mu. */
	SSL *ssl;
	uint8_t *rbuf; /* ciphertext received: [roff, roff + rlen) */
	size_t roff, rlen;
	uint8_t *wbuf; /* ciphertext to send: [woff, wlen) */
	size_t woff, wlen;
	bool rraw, wraw; /* a socket operation in flight */
	bool reof;	 /* the socket gave its last byte */
	bool handshaken;
	bool shut; /* the socket was closed after a failure */
	bool dispatching, again;
	size_t wtaken; /* plaintext of wio encrypted so far */
	int err;       /* sticky: why the stream failed */

	/* Plain streams accepted by a listener: what the read ahead
	 * brought, under mu. */
	bool ahead;    /* [ahead_off, ahead_len) or ahead_nrv not yet handed
			  over */
	bool handing;  /* raio completes the hand-over of hand_n bytes (or
			  hand_nrv) to rio */
	int ahead_nrv; /* nng's code: how the read ahead ended */
	int hand_nrv;  /* what the hand-over completes with */
	size_t ahead_off, ahead_len, hand_n;
	uint8_t ahead_buf[AHEAD_BYTES];

	/* Plain streams in a poller (gm_poller.h). */
	gm_poller *poller;
	gm_poll_node pnode;
	nng_aio *paio; /* a poll's try, which has no callback */
	bool rarmed;   /* under mu: raio holds a receive in nng */
	bool pulling;  /* under mu: it is being taken back for the poller */
};

static void set_err_text(gm_stream *s, const char *what, int nng_rv)
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

/* Completes the operation in *slot as nng ended it. */
static void plain_end(gm_stream *s, gm_io **slot, int nrv, size_t n)
{
	gm_io *io = *slot;

	*slot = NULL;
	if (nrv != 0)
		set_err_text(s, "connection", nrv);
	io->done(io, gm_net_err(nrv), nrv ? 0 : n);
}

static void plain_done(gm_stream *s, nng_aio *aio, gm_io **slot)
{
	plain_end(s, slot, nng_aio_result(aio), nng_aio_count(aio));
}

/*
 * The read ahead. nng 1.5.2 adds an accepted connection's descriptor to
 * its epoll set with no events asked for, which still reports a hang-up
 * (EPOLLHUP, and a UNIX-domain socket's peer closing is one), over and
 * over until the first read arms the descriptor one-shot: nng's poller
 * thread spins on it until then. So a plain stream accepted by a
 * listener tries one read at once, on the thread that accepted it, with
 * an aio of the listener's that has no callback: nng completes such an
 * aio on the thread that finishes it. A read that finds nothing is taken
 * back at once, and leaves the descriptor armed one-shot, which stops
 * the spin; one that brought bytes leaves them in ahead_buf for the
 * first receive; one that found the peer gone closes the stream there
 * and then, so its descriptor leaves the set without waiting for another
 * thread. The first receive takes what the read ahead brought through
 * raio, as any receive completes (its callback, never inside
 * gm_stream_recv).
 */
static void read_ahead(gm_stream *s, nng_aio *aio)
{
	int nrv = 0;

	while (nrv == 0 && s->ahead_len < AHEAD_BYTES) {
		nng_iov iov = {s->ahead_buf + s->ahead_len,
			       AHEAD_BYTES - s->ahead_len};

		nng_aio_set_iov(aio, 1, &iov);
		nng_stream_recv(s->ns, aio);
		nng_aio_cancel(aio);
		nng_aio_wait(aio);
		if ((nrv = nng_aio_result(aio)) == 0)
			s->ahead_len += nng_aio_count(aio);
	}
	if (nrv == NNG_ECANCELED)
		nrv = 0;
	s->ahead = s->ahead_len > 0 || nrv != 0;
	s->ahead_nrv = nrv;
	if (nrv != 0) {
		set_err_text(s, "connection", nrv);
		s->closed = true;
		nng_stream_close(s->ns);
	}
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

static void recv_arm(gm_stream *s);
static bool pollable(const gm_stream *s, const gm_io *io);

/* raio's receive ended: whether it was taken back for the poller with
 * nothing read, in which case it parks (or goes to nng again when the
 * poller stopped meanwhile) instead of completing. */
static bool taken_back(gm_stream *s)
{
	bool pulled, closed;

	pthread_mutex_lock(&s->mu);
	s->rarmed = false;
	pulled = s->pulling;
	s->pulling = false;
	closed = s->closed;
	pthread_mutex_unlock(&s->mu);
	if (!pulled || nng_aio_result(s->raio) != NNG_ECANCELED)
		return false;
	/* Closed meanwhile: it ends here, as the close would have ended
	 * it; raio may be stopped already (gm_stream_free). */
	if (closed)
		plain_end(s, &s->rio, NNG_ECLOSED, 0);
	else if (!gm_poller_park(s->poller, &s->pnode))
		recv_arm(s);
	return true;
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
	if (s->poller != NULL && taken_back(s))
		return;
	plain_done(s, s->raio, &s->rio);
}

static void plain_waio_cb(void *arg)
{
	gm_stream *s = arg;

	plain_done(s, s->waio, &s->wio);
}

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
		set_err_text(s, "connection", nrv);
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
		set_err_text(s, "connection", nrv);
		tls_fail(s, gm_net_err(nrv), NULL);
	}
	pthread_mutex_unlock(&s->mu);
	kick(s);
}

/* ---- the stream ---- */

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

static void stream_free_parts(gm_stream *s)
{
	nng_aio_free(s->raio);
	nng_aio_free(s->waio);
	nng_aio_free(s->paio);
	if (s->ns != NULL)
		nng_stream_free(s->ns);
	SSL_free(s->ssl);
	free(s->rbuf);
	free(s->wbuf);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Wraps ns (taken, also on failure) as a stream of kind; a TLS one
 * starts its handshake now when start, else at its first operation. */
static int stream_new(nng_stream *ns, int kind, const gm_tls_ctx *tls,
		      bool start, gm_stream **out)
{
	gm_stream *s = calloc(1, sizeof(*s));
	bool is_tls = kind == GM_URL_TLS;
	BIO *b;

	if (s == NULL) {
		nng_stream_free(ns);
		return GM_ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->ns = ns;
	s->kind = kind;
	if (nng_aio_alloc(&s->raio, is_tls ? tls_raio_cb : plain_raio_cb, s) ||
	    nng_aio_alloc(&s->waio, is_tls ? tls_waio_cb : plain_waio_cb, s))
		goto fail;
	read_peer(s);
	if (is_tls) {
		pthread_once(&bio_once, bio_setup);
		if (bio_method == NULL || (b = BIO_new(bio_method)) == NULL)
			goto fail;
		BIO_set_data(b, s);
		s->rbuf = malloc(TLS_BUF);
		s->wbuf = malloc(TLS_BUF);
		if (s->rbuf == NULL || s->wbuf == NULL ||
		    (s->ssl = gm_tls_ssl_new(tls, b)) == NULL)
			goto fail;
	}
	*out = s;
	/* The handshake starts now, not at the first operation: a peer
	 * may write everything before it reads anything. Unless the owner
	 * asked otherwise (gm_listener_defer_handshakes). */
	if (is_tls && start)
		kick(s);
	return GM_OK;
fail:
	stream_free_parts(s);
	return GM_ENOMEM;
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

void gm_stream_recv(gm_stream *s, gm_io *io)
{
	if (s->kind != GM_URL_TLS && s->ahead) {
		pthread_mutex_lock(&s->mu);
		if (s->ahead_off < s->ahead_len || s->ahead_nrv != 0) {
			s->rio = io;
			hand_over(s);
			return;
		}
		/* All handed over: the stream reads as any other from
		 * here, without taking mu on each receive. */
		s->ahead = false;
		pthread_mutex_unlock(&s->mu);
	}
	if (s->kind != GM_URL_TLS) {
		s->rio = io;
		if (!pollable(s, io) || !gm_poller_park(s->poller, &s->pnode))
			recv_arm(s);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->rio = io;
	pthread_mutex_unlock(&s->mu);
	kick(s);
}

void gm_stream_send(gm_stream *s, gm_io *io)
{
	if (s->kind != GM_URL_TLS) {
		s->wio = io;
		plain_start(s, s->waio, io, nng_stream_send);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->wio = io;
	s->wtaken = 0;
	pthread_mutex_unlock(&s->mu);
	kick(s);
}

/* ---- polled receives (gm_poller_impl.h) ---- */

/* Whether s's receive io is one for its poller to take. */
static bool pollable(const gm_stream *s, const gm_io *io)
{
	size_t len = 0;

	if (s->poller == NULL)
		return false;
	for (unsigned i = 0; i < io->niov; i++)
		len += io->iov[i].iov_len;
	return len <= GM_POLLER_MAX_BYTES;
}

static void recv_arm(gm_stream *s)
{
	plain_start(s, s->raio, s->rio, nng_stream_recv);
}

void gm_stream_set_poller(gm_stream *s, gm_poller *p)
{
	if (s->kind == GM_URL_TLS)
		return;
	/* Its callback completes in the thread that ends it: the poll's
	 * own, inside the try. */
	if (s->paio == NULL && nng_aio_alloc(&s->paio, NULL, NULL) != 0)
		return; /* not polled: a cost, not a failure */
	s->poller = p;
	s->pnode.s = s;
	gm_poller_join(p, &s->pnode);
}

/* As the read ahead: started and taken back at once, a receive reads
 * what has come, on this thread, or nothing. */
bool gm_stream_try_recv(gm_stream *s, int *nrv, size_t *n)
{
	nng_aio_set_iov(s->paio, s->rio->niov, s->rio->iov);
	nng_stream_recv(s->ns, s->paio);
	nng_aio_cancel(s->paio);
	nng_aio_wait(s->paio);
	*nrv = nng_aio_result(s->paio);
	*n = nng_aio_count(s->paio);
	return *nrv != NNG_ECANCELED;
}

void gm_stream_polled(gm_stream *s, int nrv, size_t n)
{
	plain_end(s, &s->rio, nrv, n);
}

void gm_stream_unpark(gm_stream *s)
{
	recv_arm(s);
}

/* The cancel under mu, as the start: the receive it cancels is the one
 * marked, not a later one begun after this one ended. nng runs the
 * callback later, on its own thread. */
void gm_stream_take_back(gm_stream *s)
{
	pthread_mutex_lock(&s->mu);
	if (s->rarmed && !s->pulling && !s->closed && pollable(s, s->rio)) {
		s->pulling = true;
		nng_aio_cancel(s->raio);
	}
	pthread_mutex_unlock(&s->mu);
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
	pthread_mutex_lock(&s->mu);
	s->closed = true;
	if (s->kind == GM_URL_TLS)
		tls_fail(s, GM_ECANCELED, NULL);
	pthread_mutex_unlock(&s->mu);
	/* A parked receive goes to nng, which ends it with the close. */
	if (s->poller != NULL && gm_poller_close_node(s->poller, &s->pnode))
		recv_arm(s);
	nng_stream_close(s->ns);
	if (s->kind == GM_URL_TLS)
		kick(s);
}

void gm_stream_free(gm_stream *s)
{
	if (s == NULL)
		return;
	gm_stream_close(s);
	if (s->poller != NULL)
		gm_poller_leave(s->poller, &s->pnode);
	nng_aio_stop(s->raio);
	nng_aio_stop(s->waio);
	stream_free_parts(s);
}

/* ---- listeners ---- */

struct gm_listener {
	nng_stream_listener *l;
	nng_aio *aio;
	nng_aio *ahead; /* the read ahead's, which has no callback */
	int kind;
	const gm_tls_ctx *tls;
	bool defer; /* gm_listener_defer_handshakes */
	gm_accept_fn fn;
	void *arg;
};

static void accept_cb(void *arg)
{
	gm_listener *l = arg;
	int nrv = nng_aio_result(l->aio);
	gm_stream *s = NULL;
	int rv;

	if (nrv != 0) {
		l->fn(l->arg, gm_net_err(nrv), nrv, NULL);
		return;
	}
	rv = stream_new(nng_aio_get_output(l->aio, 0), l->kind, l->tls,
			!l->defer, &s);
	if (rv == GM_OK && l->kind != GM_URL_TLS)
		read_ahead(s, l->ahead);
	l->fn(l->arg, rv, 0, s);
}

int gm_listener_open(const char *url, const gm_tls_ctx *tls, int ipc_mode,
		     gm_listener **out, char *msg, size_t msglen)
{
	gm_listener *l = calloc(1, sizeof(*l));
	char turl[512];
	int nrv;

	if (l == NULL)
		return GM_ENOMEM;
	l->kind = gm_url_kind(url);
	l->tls = tls;
	if (gm_url_transport(url, turl, sizeof(turl)) != 0 ||
	    (l->kind == GM_URL_TLS && tls == NULL)) {
		snprintf(msg, msglen, "%s: not a URL gemmd serves (%s)", url,
			 gm_url_schemes);
		free(l);
		return GM_EINVAL;
	}
	if ((nrv = nng_aio_alloc(&l->aio, accept_cb, l)) != 0 ||
	    (nrv = nng_aio_alloc(&l->ahead, NULL, NULL)) != 0 ||
	    (nrv = nng_stream_listener_alloc(&l->l, turl)) != 0 ||
	    (l->kind == GM_URL_IPC &&
	     (nrv = nng_stream_listener_set_int(l->l, NNG_OPT_IPC_PERMISSIONS,
						ipc_mode)) != 0) ||
	    (nrv = nng_stream_listener_listen(l->l)) != 0) {
		snprintf(msg, msglen, "listening on %s: %s", url,
			 nng_strerror(nrv));
		gm_listener_free(l);
		return gm_net_err(nrv) == GM_EINVAL ? GM_EINVAL : GM_ETRANSPORT;
	}
	*out = l;
	return GM_OK;
}

void gm_listener_defer_handshakes(gm_listener *l)
{
	l->defer = true;
}

void gm_listener_accept(gm_listener *l, gm_accept_fn fn, void *arg)
{
	l->fn = fn;
	l->arg = arg;
	nng_stream_listener_accept(l->l, l->aio);
}

int gm_listener_port(gm_listener *l)
{
	int port = 0;

	if (l->kind == GM_URL_IPC ||
	    nng_stream_listener_get_int(l->l, NNG_OPT_TCP_BOUND_PORT, &port))
		return 0;
	return port;
}

void gm_listener_free(gm_listener *l)
{
	if (l == NULL)
		return;
	if (l->l != NULL)
		nng_stream_listener_close(l->l);
	if (l->aio != NULL)
		nng_aio_stop(l->aio);
	nng_aio_free(l->aio);
	nng_aio_free(l->ahead);
	nng_stream_listener_free(l->l);
	free(l);
}

/* ---- dialers ---- */

struct gm_dialer {
	nng_stream_dialer *d;
	nng_aio *aio;
	int kind;
	const gm_tls_ctx *tls;
	char url[256];
	gm_dial_fn fn;
	void *arg;
};

/* Why a dial failed, for a person: over ipc:// a refused connection or
 * a missing socket file means that no gemmd runs there, which nng's
 * "Connection refused" leaves the reader to guess. */
static void dial_failure(const gm_dialer *d, int nrv, char *msg, size_t len)
{
	if (d->kind == GM_URL_IPC &&
	    (nrv == NNG_ECONNREFUSED || nrv == NNG_ENOENT))
		snprintf(msg, len, "no gemmd listening at %s (is it running?)",
			 d->url + strlen("ipc://"));
	else
		snprintf(msg, len, "%s: %s", d->url, nng_strerror(nrv));
}

static void dial_cb(void *arg)
{
	gm_dialer *d = arg;
	int nrv = nng_aio_result(d->aio);
	gm_stream *s = NULL;
	char msg[320];
	int rv;

	if (nrv != 0) {
		dial_failure(d, nrv, msg, sizeof(msg));
		d->fn(d->arg, gm_net_err(nrv), NULL, msg);
		return;
	}
	rv = stream_new(nng_aio_get_output(d->aio, 0), d->kind, d->tls, true,
			&s);
	snprintf(msg, sizeof(msg), "%s: %s", d->url, rv ? "no memory" : "");
	d->fn(d->arg, rv, s, msg);
}

int gm_dialer_open(const char *url, const gm_tls_ctx *tls, gm_dialer **out,
		   char *msg, size_t msglen)
{
	gm_dialer *d = calloc(1, sizeof(*d));
	char turl[512];
	int nrv;

	if (d == NULL)
		return GM_ENOMEM;
	d->kind = gm_url_kind(url);
	d->tls = tls;
	snprintf(d->url, sizeof(d->url), "%s", url);
	if (gm_url_transport(url, turl, sizeof(turl)) != 0 ||
	    (d->kind == GM_URL_TLS && tls == NULL)) {
		snprintf(msg, msglen, "%s: not a gemmd URL (%s)", url,
			 gm_url_schemes);
		free(d);
		return GM_EINVAL;
	}
	if ((nrv = nng_aio_alloc(&d->aio, dial_cb, d)) != 0 ||
	    (nrv = nng_stream_dialer_alloc(&d->d, turl)) != 0) {
		snprintf(msg, msglen, "%s: %s", url, nng_strerror(nrv));
		gm_dialer_free(d);
		return gm_net_err(nrv) == GM_ENOMEM ? GM_ENOMEM : GM_EINVAL;
	}
	*out = d;
	return GM_OK;
}

void gm_dialer_dial(gm_dialer *d, gm_dial_fn fn, void *arg)
{
	d->fn = fn;
	d->arg = arg;
	nng_stream_dialer_dial(d->d, d->aio);
}

void gm_dialer_free(gm_dialer *d)
{
	if (d == NULL)
		return;
	if (d->d != NULL)
		nng_stream_dialer_close(d->d);
	if (d->aio != NULL)
		nng_aio_stop(d->aio);
	nng_aio_free(d->aio);
	nng_stream_dialer_free(d->d);
	free(d);
}
