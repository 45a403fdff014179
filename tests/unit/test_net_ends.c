/*
 * test_net_ends.c - unit tests for net/: gemmd's TLS refusing the
 * wrong certificates with a reason, an accepted stream's handshake
 * waiting for its first operation, its contexts naming broken files; an
 * accepted plain stream's read ahead; closing, operations after close,
 * peers that go away and dials refused.
 */
#include "net_fx.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_ahead),
	    cmocka_unit_test(test_tls_refusals),
	    cmocka_unit_test(test_tls_handshake_waits),
	    cmocka_unit_test(test_tls_files),
	    cmocka_unit_test(test_close_and_peer_gone),
	    cmocka_unit_test(test_op_after_close),
	    cmocka_unit_test(test_dial_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
