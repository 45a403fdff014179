/*
 * gm_tls_impl.h - private to net/: what gm_stream_tls.c needs of a TLS
 * context to run a connection.
 */
#ifndef GM_TLS_IMPL_H
#define GM_TLS_IMPL_H

#include <openssl/ssl.h>

#include "gm_tls.h"

struct gm_tls_ctx {
	SSL_CTX *ctx;
	int server;
	char host[256]; /* client: the name or address to verify */
};

/* A connection's TLS state over bio (taken), in accept or connect state
 * as c says, with the host check set for a client. NULL on no memory. */
SSL *gm_tls_ssl_new(const gm_tls_ctx *c, BIO *bio);

/* The verified peer certificate's subject (RFC 2253) into out, "" when
 * there is none. */
void gm_tls_subject(SSL *ssl, char *out, size_t len);

/* A line for the first error in OpenSSL's queue (then cleared), or
 * fallback when the queue is empty. */
void gm_tls_errstr(const char *fallback, char *out, size_t len);

#endif
