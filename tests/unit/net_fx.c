/*
 * net_fx.c - what test_net.c, test_net_ends.c and test_poller.c share;
 * see net_fx.h.
 */
#include "net_fx.h"

gm_testpki pki;
int have_pki;
char dir[] = "/tmp/gemmd-test-net.XXXXXX";

void pair_listen(struct pair *p, const char *url, gm_tls_ctx *sctx,
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

void pair_open(struct pair *p, const char *url, gm_tls_ctx *sctx,
	       gm_tls_ctx *cctx)
{
	pair_listen(p, url, sctx, cctx);
	assert_int_equal(gm_teststream_connect(p->l, p->d, &p->srv, &p->cli),
			 GM_OK);
}

void pair_close(struct pair *p)
{
	gm_stream_free(p->srv);
	gm_stream_free(p->cli);
	gm_dialer_free(p->d);
	gm_listener_free(p->l);
	gm_tls_ctx_free(p->sctx);
	gm_tls_ctx_free(p->cctx);
}

gm_tls_ctx *server_ctx(void)
{
	gm_tls_files f = {.cert = pki.cert, .key = pki.key, .ca = pki.ca};
	gm_tls_ctx *c = NULL;
	char msg[256];

	assert_int_equal(gm_tls_server_ctx(&f, &c, msg, sizeof(msg)), GM_OK);
	return c;
}

gm_tls_ctx *client_ctx(const char *cert, const char *key, const char *name)
{
	gm_tls_files f = {
	    .cert = cert, .key = key, .ca = pki.ca, .server_name = name};
	gm_tls_ctx *c = NULL;
	char msg[256];

	assert_int_equal(
	    gm_tls_client_ctx(&f, "127.0.0.1", &c, msg, sizeof(msg)), GM_OK);
	return c;
}

void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (uint8_t)(seed >> 24);
	}
}

void exchange(struct pair *p, size_t len)
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

__thread int chain_depth;

void chain_done(gm_io *io, int rv, size_t n)
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

void chain_next(struct chain *c)
{
	size_t left = c->len - c->got;

	c->io.niov = 1;
	c->io.iov[0] =
	    (nng_iov){c->buf + c->got, left < c->step ? left : c->step};
	gm_stream_recv(c->s, &c->io);
}

int setup(void **state)
{
	if (mkdtemp(dir) == NULL)
		return -1;
	have_pki = gm_testpki_make(&pki, dir) == 0;
	if (!have_pki)
		fprintf(stderr, "no openssl command: TLS tests skipped\n");
	return 0;
}

int teardown(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}
