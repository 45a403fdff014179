/*
 * gm_rawrate.c - the raw rate of one connection, and memcpy; see
 * gm_rawrate.h.
 *
 * Both ends run in this process on gm_stream, as gemmd and its client
 * do, each moving its bytes in operations of up to CHUNK, so that what
 * is measured is the transport (and, for TLS, the record layer), not a
 * protocol.
 */
#include "gm_rawrate.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_error.h"
#include "gm_stream.h"
#include "gm_tls.h"

#define CHUNK (8u << 20)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fill_random(uint8_t *p, uint64_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (uint64_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

/* One side's transfer: moves n bytes through buf (reused modulo cap). */
struct xfer {
	gm_io io;
	gm_stream *s;
	uint8_t *buf;
	uint64_t cap, n, done;
	int send, rv;
	sem_t sem;
};

static void xfer_next(struct xfer *x)
{
	uint64_t off = x->done % x->cap, len = x->n - x->done;

	if (len > CHUNK)
		len = CHUNK;
	if (len > x->cap - off)
		len = x->cap - off;
	x->io.iov[0] = (nng_iov){x->buf + off, (size_t)len};
	x->io.niov = 1;
	if (x->send)
		gm_stream_send(x->s, &x->io);
	else
		gm_stream_recv(x->s, &x->io);
}

static void xfer_done(gm_io *io, int rv, size_t n)
{
	struct xfer *x = io->arg;

	x->done += n;
	if (rv != 0 || x->done == x->n) {
		x->rv = rv;
		sem_post(&x->sem);
		return;
	}
	xfer_next(x);
}

static void xfer_start(struct xfer *x, uint64_t n, int send)
{
	x->n = n;
	x->done = 0;
	x->send = send;
	x->rv = 0;
	if (n == 0) {
		sem_post(&x->sem);
		return;
	}
	xfer_next(x);
}

/* Rendezvous with an accept or a dial. */
struct conn_wait {
	sem_t sem;
	int rv;
	gm_stream *s;
};

static void on_accept(void *arg, int rv, int nng_rv, gm_stream *s)
{
	struct conn_wait *w = arg;

	(void)nng_rv;
	w->rv = rv;
	w->s = s;
	sem_post(&w->sem);
}

static void on_dial(void *arg, int rv, gm_stream *s, const char *msg)
{
	(void)msg;
	on_accept(arg, rv, 0, s);
}

/* The server reads in, then writes out; the client does the opposite;
 * the time is the client's. */
static int one_rep(struct xfer *srv, struct xfer *cli, uint64_t in_bytes,
		   uint64_t out_bytes, double *ms)
{
	double t0 = now_ms();

	xfer_start(srv, in_bytes, 0);
	xfer_start(cli, in_bytes, 1);
	sem_wait(&cli->sem);
	sem_wait(&srv->sem);
	if (srv->rv == 0 && cli->rv == 0) {
		xfer_start(cli, out_bytes, 0);
		xfer_start(srv, out_bytes, 1);
		sem_wait(&srv->sem);
		sem_wait(&cli->sem);
	}
	*ms = now_ms() - t0;
	return srv->rv != 0 ? srv->rv : cli->rv;
}

static int make_ctx(const char *url, const gm_rawrate_tls *t, gm_tls_ctx **sctx,
		    gm_tls_ctx **cctx, char *msg, size_t msglen)
{
	gm_tls_files sf = {0}, cf = {0};
	int rv;

	if (gm_url_kind(url) != GM_URL_TLS)
		return 0;
	if (t == NULL) {
		snprintf(msg, msglen, "%s needs certificates", url);
		return -1;
	}
	sf = (gm_tls_files){
	    .cert = t->server_cert, .key = t->server_key, .ca = t->ca};
	cf = (gm_tls_files){.cert = t->client_cert,
			    .key = t->client_key,
			    .ca = t->ca,
			    .server_name = "localhost"};
	if ((rv = gm_tls_server_ctx(&sf, sctx, msg, msglen)) != 0 ||
	    (rv = gm_tls_client_ctx(&cf, NULL, cctx, msg, msglen)) != 0)
		return -1;
	return 0;
}

/* url with port 0 replaced by the port the listener was given. */
static const char *dial_url(const char *url, int port, char *out, size_t len)
{
	const char *colon = strrchr(url, ':');

	if (port == 0 || colon == NULL || strcmp(colon, ":0") != 0)
		return url;
	snprintf(out, len, "%.*s:%d", (int)(colon - url), url, port);
	return out;
}

int gm_rawrate(const char *url, const gm_rawrate_tls *tls, uint64_t in_bytes,
	       uint64_t out_bytes, int reps, double *ms, char *msg,
	       size_t msglen)
{
	gm_tls_ctx *sctx = NULL, *cctx = NULL;
	gm_listener *l = NULL;
	gm_dialer *d = NULL;
	struct conn_wait a = {0}, c = {0};
	struct xfer srv = {0}, cli = {0};
	uint64_t cap = in_bytes > out_bytes ? in_bytes : out_bytes;
	double *t = calloc((size_t)reps + 1, sizeof(*t));
	char durl[320];
	int rv = -1;

	if (cap > (256u << 20))
		cap = 256u << 20; /* reused: the rate, not the memory */
	sem_init(&a.sem, 0, 0);
	sem_init(&c.sem, 0, 0);
	sem_init(&srv.sem, 0, 0);
	sem_init(&cli.sem, 0, 0);
	srv.buf = malloc(cap);
	cli.buf = malloc(cap);
	if (t == NULL || srv.buf == NULL || cli.buf == NULL) {
		snprintf(msg, msglen, "no memory");
		goto out;
	}
	fill_random(srv.buf, cap, 1);
	fill_random(cli.buf, cap, 2);
	if (make_ctx(url, tls, &sctx, &cctx, msg, msglen) != 0 ||
	    gm_listener_open(url, sctx, 0600, &l, msg, msglen) != 0 ||
	    gm_dialer_open(
		dial_url(url, gm_listener_port(l), durl, sizeof(durl)), cctx,
		&d, msg, msglen) != 0)
		goto out;
	gm_listener_accept(l, on_accept, &a);
	gm_dialer_dial(d, on_dial, &c);
	sem_wait(&a.sem);
	sem_wait(&c.sem);
	if (a.rv != 0 || c.rv != 0) {
		snprintf(msg, msglen, "%s: connecting: %s", url,
			 gm_strerror(a.rv ? a.rv : c.rv));
		goto out;
	}
	srv.s = a.s;
	cli.s = c.s;
	srv.cap = cli.cap = cap;
	srv.io.done = cli.io.done = xfer_done;
	srv.io.arg = &srv;
	cli.io.arg = &cli;
	for (int i = 0; i <= reps; i++) {
		if ((rv = one_rep(&srv, &cli, in_bytes, out_bytes, &t[i])) !=
		    0) {
			snprintf(msg, msglen, "%s: %s", url,
				 gm_stream_error(srv.rv ? a.s : c.s));
			rv = -1;
			goto out;
		}
	}
	*ms = median(t + 1, reps); /* the first was the warm-up */
	rv = 0;
out:
	gm_stream_free(a.s);
	gm_stream_free(c.s);
	gm_dialer_free(d);
	gm_listener_free(l);
	gm_tls_ctx_free(sctx);
	gm_tls_ctx_free(cctx);
	free(srv.buf);
	free(cli.buf);
	free(t);
	return rv;
}

/* The echo server's one connection: reads in, writes out, again. */
struct echo {
	gm_io io;
	gm_stream *s;
	uint8_t *buf;
	uint64_t in, out, done;
	int sending;
	sem_t sem; /* the connection ended */
};

static void echo_next(struct echo *e)
{
	uint64_t n = e->sending ? e->out : e->in;

	e->io.iov[0] = (nng_iov){e->buf + e->done, (size_t)(n - e->done)};
	e->io.niov = 1;
	if (e->sending)
		gm_stream_send(e->s, &e->io);
	else
		gm_stream_recv(e->s, &e->io);
}

/* On nng's thread, as an echo server answers: the reply is written from
 * the callback that completed the request. */
static void echo_done(gm_io *io, int rv, size_t n)
{
	struct echo *e = io->arg;

	if (rv != 0) {
		sem_post(&e->sem);
		return;
	}
	e->done += n;
	if (e->done == (e->sending ? e->out : e->in)) {
		e->done = 0;
		e->sending = !e->sending;
	}
	echo_next(e);
}

int gm_rawecho_serve(const char *url, uint64_t in_bytes, uint64_t out_bytes,
		     char *msg, size_t msglen)
{
	gm_listener *l = NULL;
	struct conn_wait a = {0};
	struct echo e = {0};
	int rv = -1;

	sem_init(&a.sem, 0, 0);
	sem_init(&e.sem, 0, 0);
	e.in = in_bytes;
	e.out = out_bytes;
	if ((e.buf = malloc(in_bytes > out_bytes ? in_bytes : out_bytes)) ==
	    NULL) {
		snprintf(msg, msglen, "no memory");
		return -1;
	}
	fill_random(e.buf, in_bytes > out_bytes ? in_bytes : out_bytes, 4);
	if (gm_listener_open(url, NULL, 0600, &l, msg, msglen) != 0)
		goto out;
	gm_listener_accept(l, on_accept, &a);
	sem_wait(&a.sem);
	if (a.rv != 0) {
		snprintf(msg, msglen, "%s: accepting: %s", url,
			 gm_strerror(a.rv));
		goto out;
	}
	e.s = a.s;
	e.io.done = echo_done;
	e.io.arg = &e;
	echo_next(&e);
	sem_wait(&e.sem); /* until the client closes */
	rv = 0;
out:
	gm_stream_free(a.s);
	gm_listener_free(l);
	free(e.buf);
	return rv;
}

int gm_rawecho(const char *url, uint64_t in_bytes, uint64_t out_bytes, int reps,
	       double *ms, char *msg, size_t msglen)
{
	gm_dialer *d = NULL;
	struct conn_wait c = {0};
	struct xfer cli = {0};
	uint64_t cap = in_bytes > out_bytes ? in_bytes : out_bytes;
	double *t = calloc((size_t)reps + 1, sizeof(*t)), t0;
	int rv = -1;

	sem_init(&c.sem, 0, 0);
	sem_init(&cli.sem, 0, 0);
	if (t == NULL || (cli.buf = malloc(cap)) == NULL) {
		snprintf(msg, msglen, "no memory");
		goto out;
	}
	fill_random(cli.buf, cap, 5);
	if (gm_dialer_open(url, NULL, &d, msg, msglen) != 0)
		goto out;
	gm_dialer_dial(d, on_dial, &c);
	sem_wait(&c.sem);
	if (c.rv != 0) {
		snprintf(msg, msglen, "%s: connecting: %s", url,
			 gm_strerror(c.rv));
		goto out;
	}
	cli.s = c.s;
	cli.cap = cap;
	cli.io.done = xfer_done;
	cli.io.arg = &cli;
	for (int i = 0; i <= reps; i++) {
		t0 = now_ms();
		xfer_start(&cli, in_bytes, 1);
		sem_wait(&cli.sem);
		if (cli.rv == 0) {
			xfer_start(&cli, out_bytes, 0);
			sem_wait(&cli.sem);
		}
		if (cli.rv != 0) {
			snprintf(msg, msglen, "%s: %s", url,
				 gm_stream_error(c.s));
			goto out;
		}
		t[i] = now_ms() - t0;
	}
	*ms = median(t + 1, reps); /* the first was the warm-up */
	rv = 0;
out:
	gm_stream_free(c.s);
	gm_dialer_free(d);
	free(cli.buf);
	free(t);
	return rv;
}

/* One thread's share of a copy: its slice of dst and src. */
typedef struct slice {
	pthread_t t;
	bool here; /* copied by the calling thread */
	uint8_t *dst;
	const uint8_t *src;
	uint64_t bytes;
} slice;

static void *copy_slice(void *arg)
{
	slice *sl = arg;

	memcpy(sl->dst, sl->src, sl->bytes);
	return NULL;
}

/* Copies src to dst on threads (>= 1), each a slice aligned to 4 KiB,
 * the first on this one; returns the milliseconds it took. */
static double copy_on(uint8_t *dst, const uint8_t *src, uint64_t bytes,
		      slice *sl, unsigned threads)
{
	uint64_t each = (bytes / threads + 4095) & ~(uint64_t)4095, at = 0;
	unsigned n = 0;
	double t0 = now_ms();

	for (; n < threads && at < bytes; n++) {
		uint64_t len = bytes - at < each ? bytes - at : each;

		sl[n] = (slice){.dst = dst + at, .src = src + at, .bytes = len};
		at += len;
		/* A slice that gets no thread is copied here too. */
		sl[n].here = n == 0 || pthread_create(&sl[n].t, NULL,
						      copy_slice, &sl[n]) != 0;
	}
	for (unsigned i = 0; i < n; i++)
		if (sl[i].here)
			copy_slice(&sl[i]);
	for (unsigned i = 0; i < n; i++)
		if (!sl[i].here)
			pthread_join(sl[i].t, NULL);
	return now_ms() - t0;
}

double gm_memcpy_ms(uint64_t bytes, unsigned threads, int reps)
{
	unsigned k = threads ? threads : 1;
	uint8_t *src = malloc(bytes), *dst = malloc(bytes);
	double *t = calloc((size_t)reps, sizeof(*t)), ms = -1;
	slice *sl = calloc(k, sizeof(*sl));

	if (src != NULL && dst != NULL && t != NULL && sl != NULL) {
		fill_random(src, bytes, 3);
		memset(dst, 1, bytes);
		for (int i = 0; i < reps; i++)
			t[i] = copy_on(dst, src, bytes, sl, k);
		ms = median(t, reps);
	}
	free(src);
	free(dst);
	free(t);
	free(sl);
	return ms;
}

int gm_rawrate_make_certs(const char *dir, gm_rawrate_tls *t)
{
	static const char script[] =
	    "set -e; cd '%s'; exec >openssl.log 2>&1\n"
	    "key() { openssl genpkey -algorithm EC "
	    "-pkeyopt ec_paramgen_curve:P-256 -out \"$1\"; }\n"
	    "key ca.key; openssl req -x509 -new -key ca.key -out ca.crt "
	    "-days 2 -subj /CN=bench-ca "
	    "-addext basicConstraints=critical,CA:TRUE "
	    "-addext keyUsage=critical,keyCertSign,cRLSign\n"
	    "leaf() { key $1.key; openssl req -new -key $1.key -out $1.csr "
	    "-subj /CN=$2; printf '%%s\\n' \"$3\" >$1.ext; "
	    "openssl x509 -req -in $1.csr -CA ca.crt -CAkey ca.key "
	    "-CAcreateserial -out $1.crt -days 2 -extfile $1.ext; }\n"
	    "leaf server localhost 'subjectAltName=DNS:localhost,"
	    "IP:127.0.0.1\nextendedKeyUsage=serverAuth'\n"
	    "leaf client bench-client extendedKeyUsage=clientAuth\n";
	static char ca[256], scert[256], skey[256], ccert[256], ckey[256];
	char cmd[2048];

	if (system("openssl version >/dev/null 2>&1") != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), script, dir);
	if (system(cmd) != 0)
		return -1;
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(scert, sizeof(scert), "%s/server.crt", dir);
	snprintf(skey, sizeof(skey), "%s/server.key", dir);
	snprintf(ccert, sizeof(ccert), "%s/client.crt", dir);
	snprintf(ckey, sizeof(ckey), "%s/client.key", dir);
	*t = (gm_rawrate_tls){.ca = ca,
			      .server_cert = scert,
			      .server_key = skey,
			      .client_cert = ccert,
			      .client_key = ckey};
	return 0;
}
