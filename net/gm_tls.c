/*
 * gm_tls.c - TLS contexts from PEM files (OpenSSL); see gm_tls.h.
 *
 * Every file is checked on its own before it is used, so that a broken
 * one is named with what is wrong with it: missing or unreadable, no PEM
 * block of the expected kind, a certificate that does not parse, a key
 * that is not the certificate's.
 */
#include "gm_tls_impl.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

#define PEM_FILE_MAX (1u << 20) /* certificates are a few KiB */

void gm_tls_errstr(const char *fallback, char *out, size_t len)
{
	unsigned long e = ERR_get_error();

	if (e == 0)
		snprintf(out, len, "%s", fallback);
	else
		ERR_error_string_n(e, out, len);
	ERR_clear_error();
}

/* Reads a whole PEM file into a malloc'd NUL-terminated string, after
 * checking that it holds a block whose BEGIN line ends with marker. */
static int slurp_pem(const char *what, const char *path, const char *marker,
		     char **text, int code, char *msg, size_t len)
{
	FILE *f = fopen(path, "rb");
	const char *why = NULL;
	char *buf;
	size_t n;

	if (f == NULL) {
		snprintf(msg, len, "TLS %s file %s: %s", what, path,
			 strerror(errno));
		return code;
	}
	buf = malloc(PEM_FILE_MAX + 1);
	n = buf ? fread(buf, 1, PEM_FILE_MAX + 1, f) : 0;
	fclose(f);
	if (buf == NULL)
		return GM_ENOMEM;
	buf[n <= PEM_FILE_MAX ? n : PEM_FILE_MAX] = '\0';
	if (n == 0)
		why = "empty";
	else if (n > PEM_FILE_MAX)
		why = "larger than 1 MiB";
	else if (strstr(buf, marker) == NULL)
		why = "no PEM block of the right kind in it";
	if (why != NULL) {
		snprintf(msg, len, "TLS %s file %s: %s", what, path, why);
		free(buf);
		return code;
	}
	*text = buf;
	return GM_OK;
}

static int load_certs(SSL_CTX *ctx, const char *path, int code, char *msg,
		      size_t len)
{
	char *text = NULL;
	BIO *b;
	X509 *x;
	int rv, n = 0;

	if ((rv = slurp_pem("certificate", path, "CERTIFICATE-----", &text,
			    code, msg, len)) != 0)
		return rv;
	b = BIO_new_mem_buf(text, -1);
	rv = b == NULL ? GM_ENOMEM : GM_OK;
	while (rv == 0 && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		int ok = n == 0 ? SSL_CTX_use_certificate(ctx, x)
				: SSL_CTX_add_extra_chain_cert(ctx, x);
		if (n == 0 || !ok)
			X509_free(x);
		if (!ok)
			rv = code;
		n++;
	}
	if (rv == 0 && n == 0)
		rv = code;
	if (rv == code) {
		char why[160];

		gm_tls_errstr("no certificate parses", why, sizeof(why));
		snprintf(msg, len, "TLS certificate file %s: %s", path, why);
	}
	ERR_clear_error();
	BIO_free(b);
	free(text);
	return rv;
}

static int load_key(SSL_CTX *ctx, const char *path, const char *cert, int code,
		    char *msg, size_t len)
{
	char *text = NULL;
	EVP_PKEY *pk = NULL;
	BIO *b;
	int rv;

	if ((rv = slurp_pem("key", path, "PRIVATE KEY-----", &text, code, msg,
			    len)) != 0)
		return rv;
	if ((b = BIO_new_mem_buf(text, -1)) != NULL)
		pk = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	free(text);
	if (pk == NULL) {
		char why[160];

		gm_tls_errstr("does not parse", why, sizeof(why));
		snprintf(msg, len, "TLS key file %s: %s", path, why);
		return code;
	}
	rv = SSL_CTX_use_PrivateKey(ctx, pk) == 1 &&
		     SSL_CTX_check_private_key(ctx) == 1
		 ? GM_OK
		 : code;
	EVP_PKEY_free(pk);
	ERR_clear_error();
	if (rv != 0)
		snprintf(msg, len, "TLS key file %s: not the key of %s", path,
			 cert);
	return rv;
}

static int load_ca(SSL_CTX *ctx, const char *path, int code, char *msg,
		   size_t len)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	char *text = NULL;
	BIO *b;
	X509 *x;
	int rv, n = 0;

	if ((rv = slurp_pem("CA", path, "CERTIFICATE-----", &text, code, msg,
			    len)) != 0)
		return rv;
	if ((b = BIO_new_mem_buf(text, -1)) == NULL) {
		free(text);
		return GM_ENOMEM;
	}
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n += X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(b);
	free(text);
	if (n == 0) {
		snprintf(msg, len, "TLS CA file %s: no certificate parses",
			 path);
		return code;
	}
	return GM_OK;
}

static SSL_CTX *new_ctx(int server)
{
	SSL_CTX *ctx =
	    SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* Records are written into the stream's own buffer and the buffer
	 * handed to the socket; a write may take part of what it is given
	 * and be retried with the rest at another address. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
				  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* A peer that closes the TCP connection without a close_notify is
	 * an end of stream like any other: frames say where they end. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
				     SSL_OP_NO_RENEGOTIATION);
	/* No session resumption: connections are long-lived. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	/* Whole buffers of records per BIO read, not a header, then a body. */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, 256 * 1024);
	return ctx;
}

static int finish(gm_tls_ctx *c, int rv, gm_tls_ctx **out)
{
	if (rv != 0) {
		gm_tls_ctx_free(c);
		return rv;
	}
	*out = c;
	return GM_OK;
}

int gm_tls_server_ctx(const gm_tls_files *f, gm_tls_ctx **out, char *msg,
		      size_t msglen)
{
	gm_tls_ctx *c;
	int rv;

	if (f->cert == NULL || f->key == NULL || f->ca == NULL) {
		snprintf(msg, msglen,
			 "tls+tcp:// needs tls_cert, tls_key and "
			 "tls_ca in the configuration");
		return GM_ECONFIG;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->ctx = new_ctx(1)) == NULL)
		return finish(c, GM_ENOMEM, out);
	c->server = 1;
	SSL_CTX_set_verify(
	    c->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	if ((rv = load_certs(c->ctx, f->cert, GM_ECONFIG, msg, msglen)) == 0 &&
	    (rv = load_key(c->ctx, f->key, f->cert, GM_ECONFIG, msg, msglen)) ==
		0)
		rv = load_ca(c->ctx, f->ca, GM_ECONFIG, msg, msglen);
	return finish(c, rv, out);
}

int gm_tls_client_ctx(const gm_tls_files *f, const char *host, gm_tls_ctx **out,
		      char *msg, size_t msglen)
{
	const char *name = f->server_name ? f->server_name : host;
	gm_tls_ctx *c;
	int rv;

	if (f->ca == NULL) {
		snprintf(msg, msglen,
			 "TLS needs a CA file to verify the daemon");
		return GM_EINVAL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->ctx = new_ctx(0)) == NULL)
		return finish(c, GM_ENOMEM, out);
	snprintf(c->host, sizeof(c->host), "%s", name ? name : "");
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
	rv = load_ca(c->ctx, f->ca, GM_EINVAL, msg, msglen);
	if (rv == 0 && f->cert != NULL)
		rv = load_certs(c->ctx, f->cert, GM_EINVAL, msg, msglen);
	if (rv == 0 && f->cert != NULL)
		rv = load_key(c->ctx, f->key ? f->key : f->cert, f->cert,
			      GM_EINVAL, msg, msglen);
	return finish(c, rv, out);
}

void gm_tls_ctx_free(gm_tls_ctx *c)
{
	if (c == NULL)
		return;
	SSL_CTX_free(c->ctx);
	free(c);
}

SSL *gm_tls_ssl_new(const gm_tls_ctx *c, BIO *bio)
{
	SSL *ssl = SSL_new(c->ctx);

	if (ssl == NULL) {
		BIO_free(bio);
		return NULL;
	}
	SSL_set_bio(ssl, bio, bio);
	if (c->server) {
		SSL_set_accept_state(ssl);
		return ssl;
	}
	SSL_set_connect_state(ssl);
	if (c->host[0] != '\0') {
		X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);

		/* An address is checked as an address, a name as a name
		 * (and sent for SNI). */
		if (X509_VERIFY_PARAM_set1_ip_asc(vp, c->host) != 1) {
			ERR_clear_error();
			SSL_set_tlsext_host_name(ssl, c->host);
			SSL_set1_host(ssl, c->host);
		}
	}
	return ssl;
}

void gm_tls_subject(SSL *ssl, char *out, size_t len)
{
	X509 *peer = SSL_get0_peer_certificate(ssl);
	BIO *b;
	int n;

	out[0] = '\0';
	if (peer == NULL || SSL_get_verify_result(ssl) != X509_V_OK ||
	    (b = BIO_new(BIO_s_mem())) == NULL)
		return;
	X509_NAME_print_ex(b, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253);
	n = BIO_read(b, out, (int)len - 1);
	out[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}
