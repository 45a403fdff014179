/*
 * test_net.c - unit tests for net/: URL kinds and the nng error map;
 * byte streams of every kind carrying random bytes both ways through
 * scattered buffers; who the peer is; a run of small TLS reads from
 * records decrypted ahead without recursing. TLS refusals and the ends of
 * streams are in test_net_ends.c.
 */
#include "net_fx.h"

/* ---- URLs and errors ---- */

static void test_urls(void **state)
{
	char out[64];

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

	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++)
		assert_int_equal(gm_net_err(rows[i].nng), rows[i].gm);
}

/* ---- streams ---- */

/* One side of a transfer on a thread of its own: len bytes at p. */
struct mover {
	gm_stream *s;
	uint8_t *p;
	size_t len;
	int rv;
};

/* Sends x's bytes, each send scattered over three iovs. */
static void *send_scattered(void *arg)
{
	struct mover *x = arg;
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
		struct mover x = {way ? p->srv : p->cli, a, len, 0};
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

static void test_ipc(void **state)
{
	struct pair p;
	gm_peer peer;
	char url[160];

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

static void *read_all(void *arg)
{
	struct mover *r = arg;

	r->rv = gm_teststream_move_all(r->s, 0, r->p, r->len);
	return NULL;
}

/* A send tried at once writes on the calling thread what the socket
 * takes: all of a small buffer, then, the peer not reading, less and at
 * last nothing; nng sends the rest, and every byte arrives in order. A
 * TLS stream writes nothing this way. */
static void test_try_send(void **state)
{
	enum { LEN = 64 << 20 };
	uint8_t *out = malloc(LEN), *in = malloc(LEN);
	struct mover r = {.p = in, .len = LEN};
	size_t n, off;
	struct pair p;
	pthread_t t;
	char url[160];
	gm_io io = {.niov = 1};

	assert_true(out != NULL && in != NULL);
	fill(out, LEN, 7);
	snprintf(url, sizeof(url), "ipc://%s/t.sock", dir);
	pair_open(&p, url, NULL, NULL);
	io.iov[0] = (nng_iov){out, 1000};
	assert_int_equal(gm_stream_try_send(p.srv, &io, &n), GM_OK);
	assert_int_equal(n, 1000);
	for (off = n; n > 0 && off < LEN; off += n) {
		io.iov[0] = (nng_iov){out + off, LEN - off};
		assert_int_equal(gm_stream_try_send(p.srv, &io, &n), GM_OK);
	}
	assert_true(off < LEN); /* the socket holds less than 64 MiB */
	r.s = p.cli;
	assert_int_equal(pthread_create(&t, NULL, read_all, &r), 0);
	assert_int_equal(gm_teststream_move_all(p.srv, 1, out + off, LEN - off),
			 GM_OK);
	pthread_join(t, NULL);
	assert_int_equal(r.rv, GM_OK);
	assert_memory_equal(in, out, LEN);
	pair_close(&p);
	free(out);
	free(in);
	if (!have_pki)
		return;
	pair_open(&p, "tls+tcp://127.0.0.1:0", server_ctx(),
		  client_ctx(pki.ccert, pki.ckey, "localhost"));
	io.iov[0] = (nng_iov){url, 10};
	assert_int_equal(gm_stream_try_send(p.srv, &io, &n), GM_OK);
	assert_int_equal(n, 0);
	exchange(&p, 1000);
	pair_close(&p);
}

static void test_tls_small_reads(void **state)
{
	struct chain c = {.len = 200000, .step = 7};
	uint8_t *a = malloc(c.len);
	struct pair p;

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_error_map),
	    cmocka_unit_test(test_ipc),
	    cmocka_unit_test(test_tcp),
	    cmocka_unit_test(test_tls),
	    cmocka_unit_test(test_large_scattered),
	    cmocka_unit_test(test_tls_small_reads),
	    cmocka_unit_test(test_try_send),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
