/*
 * test_net.c - unit tests for net/: URL kinds and the nng error map;
 * byte streams of every kind carrying random bytes both ways through
 * scattered buffers; who the peer is; gemmd's TLS refusing the wrong
 * certificates with a reason, delivering a run of small reads from
 * records decrypted ahead without recursing, an accepted stream's
 * handshake waiting for its first operation, and its contexts naming
 * broken files; an accepted plain stream's read ahead; closing and peers
 * that go away.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_net.h"
#include "gm_stream.h"
#include "gm_teststream.h"
#include "gm_testpki.h"
#include "gm_tls.h"

static gm_testpki pki;
static int have_pki;
static char dir[] = "/tmp/gemmd-test-net.XXXXXX";

struct pair {
	gm_listener *l;
	gm_dialer *d;
	gm_stream *srv, *cli;
	gm_tls_ctx *sctx, *cctx;
	char msg[256];
	int srv_rv, cli_rv;
};

/* Opens a listener on url (port 0 for TCP) and a dialer for it. */
static void pair_listen(struct pair *p, const char *url, gm_tls_ctx *sctx,
			gm_tls_ctx *cctx)
{
	char durl[256];

	memset(p, 0, sizeof(*p));
	p->sctx = sctx;
	p->cctx = cctx;
	assert_int_equal(
	    gm_listener_open(url, sctx, 0600, &p->l, p->msg, sizeof(p->msg)),
	    GM_OK);
	if (gm_listener_port(p->l) != 0)
		snprintf(durl, sizeof(durl), "%.*s:%d",
			 (int)(strrchr(url, ':') - url), url,
			 gm_listener_port(p->l));
	else
		snprintf(durl, sizeof(durl), "%s", url);
	assert_int_equal(
	    gm_dialer_open(durl, cctx, &p->d, p->msg, sizeof(p->msg)), GM_OK);
}

static void pair_open(struct pair *p, const char *url, gm_tls_ctx *sctx,
		      gm_tls_ctx *cctx)
{
	pair_listen(p, url, sctx, cctx);
	assert_int_equal(gm_teststream_connect(p->l, p->d, &p->srv, &p->cli),
			 GM_OK);
}

static void pair_close(struct pair *p)
{
	gm_stream_free(p->srv);
	gm_stream_free(p->cli);
	gm_dialer_free(p->d);
	gm_listener_free(p->l);
	gm_tls_ctx_free(p->sctx);
	gm_tls_ctx_free(p->cctx);
}

static gm_tls_ctx *server_ctx(void)
{
	gm_tls_files f = {.cert = pki.cert, .key = pki.key, .ca = pki.ca};
	gm_tls_ctx *c = NULL;
	char msg[256];

	assert_int_equal(gm_tls_server_ctx(&f, &c, msg, sizeof(msg)), GM_OK);
	return c;
}

static gm_tls_ctx *client_ctx(const char *cert, const char *key,
			      const char *name)
{
	gm_tls_files f = {
	    .cert = cert, .key = key, .ca = pki.ca, .server_name = name};
	gm_tls_ctx *c = NULL;
	char msg[256];

	assert_int_equal(
	    gm_tls_client_ctx(&f, "127.0.0.1", &c, msg, sizeof(msg)), GM_OK);
	return c;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (uint8_t)(seed >> 24);
	}
}

/* ---- URLs and errors ---- */

static void test_urls(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(gm_url_kind("ipc:///run/x.sock"), GM_URL_IPC);
	assert_int_equal(gm_url_kind("tcp://127.0.0.1:5555"), GM_URL_TCP);
	assert_int_equal(gm_url_kind("tls+tcp://host:5555"), GM_URL_TLS);
	assert_int_equal(gm_url_kind("http://host:80"), GM_URL_BAD);
	assert_int_equal(gm_url_kind("tcp://"), GM_URL_BAD);
	assert_int_equal(gm_url_kind(NULL), GM_URL_BAD);
	assert_int_equal(gm_url_transport("tls+tcp://h:1", out, sizeof(out)),
			 GM_OK);
	assert_string_equal(out, "tcp://h:1");
	assert_int_equal(gm_url_transport("ipc:///a", out, sizeof(out)), GM_OK);
	assert_string_equal(out, "ipc:///a");
	assert_int_equal(gm_url_transport("ws://h:1", out, sizeof(out)),
			 GM_EINVAL);
	assert_int_equal(gm_url_transport("tcp://h:1", out, 4), GM_EINVAL);
	assert_true(gm_url_is_loopback("tcp://127.0.0.1:1"));
	assert_true(gm_url_is_loopback("tls+tcp://localhost:1"));
	assert_true(gm_url_is_loopback("tcp://[::1]:1"));
	assert_false(gm_url_is_loopback("tcp://0.0.0.0:1"));
	assert_false(gm_url_is_loopback("tcp://10.1.2.3:1"));
}

static void test_error_map(void **state)
{
	static const struct {
		int nng, gm;
	} rows[] = {
	    {0, GM_OK},
	    {NNG_ETIMEDOUT, GM_ETIMEDOUT},
	    {NNG_ENOMEM, GM_ENOMEM},
	    {NNG_ECLOSED, GM_ECANCELED},
	    {NNG_ECANCELED, GM_ECANCELED},
	    {NNG_EINVAL, GM_EINVAL},
	    {NNG_EADDRINVAL, GM_EINVAL},
	    {NNG_ENOTSUP, GM_EINVAL},
	    {NNG_EPERM, GM_EACCES},
	    {NNG_ECONNREFUSED, GM_ETRANSPORT},
	    {NNG_ECONNSHUT, GM_ETRANSPORT},
	    {NNG_ECONNRESET, GM_ETRANSPORT},
	    {NNG_ENOFILES, GM_ETRANSPORT},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++)
		assert_int_equal(gm_net_err(rows[i].nng), rows[i].gm);
}

/* ---- streams ---- */

/* Sends len bytes at p, each send scattered over three iovs. */
struct sender {
	gm_stream *s;
	uint8_t *p;
	size_t len;
	int rv;
};

static void *send_scattered(void *arg)
{
	struct sender *x = arg;
	gm_teststream_wait w = {0};
	gm_io io = {.done = gm_teststream_on_io, .arg = &w};
	size_t done = 0;

	sem_init(&w.sem, 0, 0);
	while (done < x->len && x->rv == 0) {
		size_t left = x->len - done, third = left / 3 + 1;

		io.niov = 0;
		for (size_t off = 0; off < left; off += third)
			io.iov[io.niov++] =
			    (nng_iov){x->p + done + off,
				      off + third <= left ? third : left - off};
		gm_stream_send(x->s, &io);
		sem_wait(&w.sem);
		x->rv = w.rv;
		done += w.n;
	}
	sem_destroy(&w.sem);
	return NULL;
}

/* 3 MiB each way: more than the socket and TLS buffers hold, so the
 * sender is in flight while the receiver reads. */
static void round_trip(struct pair *p)
{
	size_t len = 3u << 20;
	uint8_t *a = malloc(len), *b = malloc(len);

	assert_non_null(a);
	assert_non_null(b);
	fill(a, len, 7);
	for (int way = 0; way < 2; way++) {
		struct sender x = {way ? p->srv : p->cli, a, len, 0};
		pthread_t t;

		memset(b, 0, len);
		assert_int_equal(pthread_create(&t, NULL, send_scattered, &x),
				 0);
		assert_int_equal(
		    gm_teststream_move_all(way ? p->cli : p->srv, 0, b, len),
		    GM_OK);
		pthread_join(t, NULL);
		assert_int_equal(x.rv, GM_OK);
		assert_memory_equal(a, b, len);
	}
	free(a);
	free(b);
}

static void exchange(struct pair *p, size_t len)
{
	uint8_t *a = malloc(len), *b = calloc(1, len);

	assert_non_null(a);
	assert_non_null(b);
	fill(a, len, (uint32_t)len);
	assert_int_equal(gm_teststream_move_all(p->cli, 1, a, len), GM_OK);
	assert_int_equal(gm_teststream_move_all(p->srv, 0, b, len), GM_OK);
	assert_memory_equal(a, b, len);
	memset(b, 0, len);
	assert_int_equal(gm_teststream_move_all(p->srv, 1, a, len), GM_OK);
	assert_int_equal(gm_teststream_move_all(p->cli, 0, b, len), GM_OK);
	assert_memory_equal(a, b, len);
	free(a);
	free(b);
}

static void test_ipc(void **state)
{
	struct pair p;
	gm_peer peer;
	char url[160];

	(void)state;
	snprintf(url, sizeof(url), "ipc://%s/s.sock", dir);
	pair_open(&p, url, NULL, NULL);
	/* Smaller than the socket buffers: no concurrency needed. */
	exchange(&p, 100000);
	gm_stream_peer(p.srv, &peer);
	assert_int_equal(peer.kind, GM_URL_IPC);
	assert_true(peer.has_cred);
	assert_int_equal(peer.uid, (uint64_t)getuid());
	assert_int_equal(peer.gid, (uint64_t)getgid());
	pair_close(&p);
}

static void test_tcp(void **state)
{
	struct pair p;
	gm_peer peer;

	(void)state;
	pair_open(&p, "tcp://127.0.0.1:0", NULL, NULL);
	exchange(&p, 100000);
	gm_stream_peer(p.srv, &peer);
	assert_int_equal(peer.kind, GM_URL_TCP);
	assert_false(peer.has_cred);
	assert_string_equal(peer.addr, "127.0.0.1");
	pair_close(&p);
}

static void test_tls(void **state)
{
	struct pair p;
	gm_peer peer;

	(void)state;
	if (!have_pki)
		skip();
	pair_open(&p, "tls+tcp://127.0.0.1:0", server_ctx(),
		  client_ctx(pki.ccert, pki.ckey, "localhost"));
	exchange(&p, 100000);
	gm_stream_peer(p.srv, &peer);
	assert_int_equal(peer.kind, GM_URL_TLS);
	assert_string_equal(peer.addr, "127.0.0.1");
	assert_string_equal(peer.subject, "CN=gemmd-client");
	/* The server's name checked as an address works too. */
	pair_close(&p);
	pair_open(&p, "tls+tcp://127.0.0.1:0", server_ctx(),
		  client_ctx(pki.ccert, pki.ckey, NULL));
	exchange(&p, 1000);
	pair_close(&p);
}

static void test_large_scattered(void **state)
{
	struct pair p;

	(void)state;
	pair_open(&p, "tcp://127.0.0.1:0", NULL, NULL);
	round_trip(&p);
	pair_close(&p);
	if (!have_pki)
		return;
	pair_open(&p, "tls+tcp://127.0.0.1:0", server_ctx(),
		  client_ctx(pki.ccert, pki.ckey, "localhost"));
	round_trip(&p);
	pair_close(&p);
}

/* A run of tiny reads from one buffer of records: each read's callback
 * starts the next, which must complete after the callback returned. */
struct chain {
	gm_stream *s;
	gm_io io;
	uint8_t *buf;
	size_t len, got, step;
	int max_depth, rv;
	sem_t sem;
};

/* How deep chain_done is nested on this thread: a callback that runs
 * inside the receive its caller started counts 2. Another thread's
 * callback overlapping this one's end does not count. */
static __thread int chain_depth;

static void chain_next(struct chain *c);

static void chain_done(gm_io *io, int rv, size_t n)
{
	struct chain *c = io->arg;

	chain_depth++;
	if (chain_depth > c->max_depth)
		c->max_depth = chain_depth;
	c->got += n;
	if (rv != 0 || c->got >= c->len) {
		c->rv = rv;
		sem_post(&c->sem);
	} else {
		chain_next(c);
	}
	chain_depth--;
}

static void chain_next(struct chain *c)
{
	size_t left = c->len - c->got;

	c->io.niov = 1;
	c->io.iov[0] =
	    (nng_iov){c->buf + c->got, left < c->step ? left : c->step};
	gm_stream_recv(c->s, &c->io);
}

static void test_tls_small_reads(void **state)
{
	struct chain c = {.len = 200000, .step = 7};
	uint8_t *a = malloc(c.len);
	struct pair p;

	(void)state;
	if (!have_pki)
		skip();
	pair_open(&p, "tls+tcp://127.0.0.1:0", server_ctx(),
		  client_ctx(pki.ccert, pki.ckey, "localhost"));
	c.buf = calloc(1, c.len);
	c.s = p.srv;
	c.io = (gm_io){.done = chain_done, .arg = &c};
	sem_init(&c.sem, 0, 0);
	fill(a, c.len, 3);
	assert_int_equal(gm_teststream_move_all(p.cli, 1, a, c.len), GM_OK);
	chain_next(&c);
	sem_wait(&c.sem);
	assert_int_equal(c.rv, GM_OK);
	assert_memory_equal(a, c.buf, c.len);
	/* 28,572 reads; a recursive delivery would nest thousands deep. */
	assert_true(c.max_depth <= 2);
	pair_close(&p);
	free(a);
	free(c.buf);
}

/* ---- TLS refusals ---- */

/* Dials with cctx; the first receive on each side must fail. Returns
 * the server's reason. */
static void tls_refused(gm_tls_ctx *cctx, const char *srv_has,
			const char *cli_has)
{
	struct pair p;
	uint8_t b[16];
	size_t n;

	pair_open(&p, "tls+tcp://127.0.0.1:0", server_ctx(), cctx);
	assert_int_equal(gm_teststream_op(p.cli, 1, "hello", 5, &n) == GM_OK ||
			     gm_teststream_op(p.cli, 0, b, sizeof(b), &n) !=
				 GM_OK,
			 1);
	assert_int_equal(gm_teststream_op(p.srv, 0, b, sizeof(b), &n),
			 GM_ETRANSPORT);
	if (srv_has != NULL)
		assert_non_null(strstr(gm_stream_error(p.srv), srv_has));
	assert_int_not_equal(gm_teststream_op(p.cli, 0, b, sizeof(b), &n),
			     GM_OK);
	if (cli_has != NULL)
		assert_non_null(strstr(gm_stream_error(p.cli), cli_has));
	pair_close(&p);
}

static void test_tls_refusals(void **state)
{
	(void)state;
	if (!have_pki)
		skip();
	/* A client certificate another CA signed. */
	tls_refused(client_ctx(pki.rcert, pki.rkey, "localhost"), "TLS:", NULL);
	/* No client certificate at all. */
	tls_refused(client_ctx(NULL, NULL, "localhost"), "TLS:", NULL);
	/* The daemon's certificate does not carry the name asked for. */
	tls_refused(client_ctx(pki.ccert, pki.ckey, "gemmd.example"), NULL,
		    "hostname mismatch");
}

/* From a listener that defers handshakes, an accepted TLS stream does
 * nothing of its handshake until its owner starts an operation: the
 * daemon frees one it refuses without a byte of the handshake read or a
 * signature made. The client's first send, which waits for the
 * handshake, ends only once the server receives. */
static void test_tls_handshake_waits(void **state)
{
	struct pair p;
	gm_teststream_wait w = {0};
	gm_io io = {.niov = 1, .done = gm_teststream_on_io, .arg = &w};
	struct timespec until;
	uint8_t b[8];

	(void)state;
	if (!have_pki)
		skip();
	pair_listen(&p, "tls+tcp://127.0.0.1:0", server_ctx(),
		    client_ctx(pki.ccert, pki.ckey, "localhost"));
	gm_listener_defer_handshakes(p.l);
	assert_int_equal(gm_teststream_connect(p.l, p.d, &p.srv, &p.cli),
			 GM_OK);
	sem_init(&w.sem, 0, 0);
	io.iov[0] = (nng_iov){.iov_buf = "hello", .iov_len = 5};
	gm_stream_send(p.cli, &io);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 300 * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	assert_int_equal(sem_timedwait(&w.sem, &until), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_int_equal(gm_teststream_move_all(p.srv, 0, b, 5), GM_OK);
	assert_memory_equal(b, "hello", 5);
	sem_wait(&w.sem);
	assert_int_equal(w.rv, GM_OK);
	sem_destroy(&w.sem);
	pair_close(&p);
}

static void test_tls_files(void **state)
{
	gm_tls_files f = {.cert = pki.cert, .key = pki.key, .ca = pki.ca};
	gm_tls_ctx *c = NULL;
	char msg[256], empty[160];
	FILE *fp;

	(void)state;
	if (!have_pki)
		skip();
	f.cert = "/nonexistent/server.crt";
	assert_int_equal(gm_tls_server_ctx(&f, &c, msg, sizeof(msg)),
			 GM_ECONFIG);
	assert_non_null(strstr(msg, "/nonexistent/server.crt"));
	assert_non_null(strstr(msg, strerror(ENOENT)));
	/* The key of another certificate. */
	f.cert = pki.cert;
	f.key = pki.ckey;
	assert_int_equal(gm_tls_server_ctx(&f, &c, msg, sizeof(msg)),
			 GM_ECONFIG);
	assert_non_null(strstr(msg, "not the key of"));
	/* A certificate file that holds a key. */
	f.cert = pki.key;
	f.key = pki.key;
	assert_int_equal(gm_tls_server_ctx(&f, &c, msg, sizeof(msg)),
			 GM_ECONFIG);
	assert_non_null(strstr(msg, "no PEM block"));
	/* An empty CA file. */
	snprintf(empty, sizeof(empty), "%s/empty.pem", dir);
	fp = fopen(empty, "w");
	assert_non_null(fp);
	fclose(fp);
	f = (gm_tls_files){.cert = pki.cert, .key = pki.key, .ca = empty};
	assert_int_equal(gm_tls_server_ctx(&f, &c, msg, sizeof(msg)),
			 GM_ECONFIG);
	assert_non_null(strstr(msg, "empty"));
	/* All three are needed by a daemon; a client needs a CA. */
	f = (gm_tls_files){.cert = pki.cert, .key = pki.key};
	assert_int_equal(gm_tls_server_ctx(&f, &c, msg, sizeof(msg)),
			 GM_ECONFIG);
	assert_non_null(strstr(msg, "tls_ca"));
	f = (gm_tls_files){.cert = pki.ccert, .key = pki.ckey};
	assert_int_equal(gm_tls_client_ctx(&f, "h", &c, msg, sizeof(msg)),
			 GM_EINVAL);
	assert_null(c);
}

/* ---- ends ---- */

static void test_close_and_peer_gone(void **state)
{
	gm_teststream_wait w = {0};
	gm_io io = {.niov = 1, .done = gm_teststream_on_io, .arg = &w};
	uint8_t b[64];
	struct pair p;
	size_t n;

	(void)state;
	sem_init(&w.sem, 0, 0);
	for (int tls = 0; tls < 1 + have_pki; tls++) {
		if (tls)
			pair_open(&p, "tls+tcp://127.0.0.1:0", server_ctx(),
				  client_ctx(pki.ccert, pki.ckey, NULL));
		else
			pair_open(&p, "tcp://127.0.0.1:0", NULL, NULL);
		exchange(&p, 10);
		/* A receive in flight ends when its stream is closed. */
		io.iov[0] = (nng_iov){b, sizeof(b)};
		gm_stream_recv(p.srv, &io);
		gm_stream_close(p.srv);
		sem_wait(&w.sem);
		assert_int_equal(w.rv, GM_ECANCELED);
		/* Then the peer sees the connection go. */
		assert_int_equal(gm_teststream_op(p.cli, 0, b, sizeof(b), &n),
				 GM_ETRANSPORT);
		assert_int_not_equal(gm_stream_error(p.cli)[0], '\0');
		pair_close(&p);
	}
	sem_destroy(&w.sem);
}

/*
 * A plain stream accepted by a listener reads ahead before its first
 * receive is started (gm_poller.c): what came before the accept reaches
 * the first receives, in any sizes, delivered without recursing; a receive
 * started before anything came gets it; a peer that is gone before the first
 * receive fails it, rather than hang; one gone before the accept leaves
 * a stream closed at once.
 */
/* Starts a receive on p's server end, then sends len bytes of a from the
 * client: the receive gets some of them, the first. */
static void recv_waiting(struct pair *p, const uint8_t *a, size_t len)
{
	gm_teststream_wait w = {0};
	gm_io io = {.niov = 1, .done = gm_teststream_on_io, .arg = &w};
	uint8_t b[64];

	sem_init(&w.sem, 0, 0);
	io.iov[0] = (nng_iov){b, sizeof(b)};
	gm_stream_recv(p->srv, &io);
	usleep(20000);
	assert_int_equal(gm_teststream_move_all(p->cli, 1, (uint8_t *)a, len),
			 GM_OK);
	sem_wait(&w.sem);
	assert_int_equal(w.rv, GM_OK);
	assert_true(w.n >= 1 && w.n <= len);
	assert_memory_equal(b, a, w.n);
	sem_destroy(&w.sem);
}

/* Opens a listener and a dialer on url and dials, leaving p->cli
 * connected and the connection not yet accepted: pair_accept takes it. */
static void pair_dial_first(struct pair *p, const char *url)
{
	gm_teststream_wait c = {0};

	sem_init(&c.sem, 0, 0);
	pair_listen(p, url, NULL, NULL);
	gm_dialer_dial(p->d, gm_teststream_on_dial, &c);
	sem_wait(&c.sem);
	assert_int_equal(c.rv, GM_OK);
	p->cli = c.s;
	sem_destroy(&c.sem);
}

static void pair_accept(struct pair *p)
{
	gm_teststream_wait a = {0};

	sem_init(&a.sem, 0, 0);
	gm_listener_accept(p->l, gm_teststream_on_accept, &a);
	sem_wait(&a.sem);
	assert_int_equal(a.rv, GM_OK);
	p->srv = a.s;
	sem_destroy(&a.sem);
}

static void test_read_ahead(void **state)
{
	static const char *const urls[] = {"ipc:///tmp/gemmd-test-net-ahead",
					   "tcp://127.0.0.1:0"};
	struct chain c = {.len = 1000, .step = 7};
	uint8_t a[1000], b[64];
	struct pair p;
	size_t n;

	(void)state;
	c.buf = malloc(c.len);
	sem_init(&c.sem, 0, 0);
	for (int u = 0; u < 2; u++) {
		/* Sent before the connection was accepted: more than is
		 * read ahead, taken 7 bytes at a time. */
		pair_dial_first(&p, urls[u]);
		fill(a, sizeof(a), 11);
		assert_int_equal(gm_teststream_move_all(p.cli, 1, a, sizeof(a)),
				 GM_OK);
		usleep(20000);
		pair_accept(&p);
		memset(c.buf, 0, c.len);
		c.got = 0;
		c.max_depth = 0;
		c.s = p.srv;
		c.io = (gm_io){.done = chain_done, .arg = &c};
		chain_next(&c);
		sem_wait(&c.sem);
		assert_int_equal(c.rv, GM_OK);
		assert_memory_equal(a, c.buf, c.len);
		assert_true(c.max_depth <= 1);
		/* A receive that waits for what comes next. */
		recv_waiting(&p, a, 10);
		pair_close(&p);
		/* A receive started before anything came gets the first
		 * bytes. */
		pair_open(&p, urls[u], NULL, NULL);
		recv_waiting(&p, a, 5);
		pair_close(&p);
		/* A peer gone before the first receive. */
		pair_open(&p, urls[u], NULL, NULL);
		gm_stream_free(p.cli);
		p.cli = NULL;
		usleep(20000);
		assert_int_equal(gm_teststream_op(p.srv, 0, b, sizeof(b), &n),
				 GM_ETRANSPORT);
		assert_int_not_equal(gm_stream_error(p.srv)[0], '\0');
		/* A send after it returns; over ipc:// it fails (TCP
		 * may still take bytes for a peer that only shut its
		 * side down). */
		if (gm_teststream_op(p.srv, 1, b, sizeof(b), &n) == GM_OK)
			assert_int_equal(u, 1);
		pair_close(&p);
		/* A peer gone before it was accepted: the read ahead finds
		 * the end and closes the stream, so both operations fail
		 * at once, the receive as the peer's going. */
		pair_dial_first(&p, urls[u]);
		gm_stream_free(p.cli);
		p.cli = NULL;
		usleep(20000);
		pair_accept(&p);
		assert_int_equal(gm_teststream_op(p.srv, 0, b, sizeof(b), &n),
				 GM_ETRANSPORT);
		assert_string_not_equal(gm_stream_error(p.srv), "");
		assert_int_not_equal(
		    gm_teststream_op(p.srv, 1, b, sizeof(b), &n), GM_OK);
		pair_close(&p);
	}
	sem_destroy(&c.sem);
	free(c.buf);
}

/* An operation started after the close (a callback continuing a short
 * read or write while another thread closes the stream) ends too: with
 * GM_ECANCELED, not never. */
static void test_op_after_close(void **state)
{
	static const char *const urls[] = {"ipc:///tmp/gemmd-test-net-close",
					   "tcp://127.0.0.1:0",
					   "tls+tcp://127.0.0.1:0"};
	uint8_t b[64] = {0};
	struct pair p;
	size_t n;

	(void)state;
	for (int u = 0; u < 2 + have_pki; u++) {
		if (u == 2)
			pair_open(&p, urls[u], server_ctx(),
				  client_ctx(pki.ccert, pki.ckey, NULL));
		else
			pair_open(&p, urls[u], NULL, NULL);
		gm_stream_close(p.srv);
		assert_int_equal(gm_teststream_op(p.srv, 0, b, sizeof(b), &n),
				 GM_ECANCELED);
		assert_int_equal(gm_teststream_op(p.srv, 1, b, sizeof(b), &n),
				 GM_ECANCELED);
		pair_close(&p);
	}
}

static void test_dial_refused(void **state)
{
	gm_teststream_wait c = {0};
	gm_dialer *d;
	gm_listener *l;
	char msg[256], url[64];
	int port;

	(void)state;
	/* A port that was just free. */
	assert_int_equal(gm_listener_open("tcp://127.0.0.1:0", NULL, 0600, &l,
					  msg, sizeof(msg)),
			 GM_OK);
	port = gm_listener_port(l);
	assert_true(port > 0);
	gm_listener_free(l);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	sem_init(&c.sem, 0, 0);
	assert_int_equal(gm_dialer_open(url, NULL, &d, msg, sizeof(msg)),
			 GM_OK);
	gm_dialer_dial(d, gm_teststream_on_dial, &c);
	sem_wait(&c.sem);
	assert_int_equal(c.rv, GM_ETRANSPORT);
	assert_null(c.s);
	assert_non_null(strstr(c.msg, url));
	gm_dialer_free(d);
	/* Not ours, and a TLS URL without a context. */
	assert_int_equal(
	    gm_dialer_open("http://h:1", NULL, &d, msg, sizeof(msg)),
	    GM_EINVAL);
	assert_non_null(strstr(msg, "tls+tcp://"));
	assert_int_equal(gm_listener_open("tls+tcp://127.0.0.1:0", NULL, 0600,
					  &l, msg, sizeof(msg)),
			 GM_EINVAL);
}

static int setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	have_pki = gm_testpki_make(&pki, dir) == 0;
	if (!have_pki)
		fprintf(stderr, "no openssl command: TLS tests skipped\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_error_map),
	    cmocka_unit_test(test_ipc),
	    cmocka_unit_test(test_tcp),
	    cmocka_unit_test(test_tls),
	    cmocka_unit_test(test_large_scattered),
	    cmocka_unit_test(test_read_ahead),
	    cmocka_unit_test(test_tls_small_reads),
	    cmocka_unit_test(test_tls_refusals),
	    cmocka_unit_test(test_tls_handshake_waits),
	    cmocka_unit_test(test_tls_files),
	    cmocka_unit_test(test_close_and_peer_gone),
	    cmocka_unit_test(test_op_after_close),
	    cmocka_unit_test(test_dial_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
