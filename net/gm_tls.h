/*
 * gm_tls.h - TLS contexts made from PEM files, for tls+tcp://.
 *
 * gemmd runs TLS itself (OpenSSL, TLS 1.2 and 1.3) over nng's TCP byte
 * stream rather than through nng's TLS transport: nng 1.5.2's TLS layer
 * moves one 16 KiB record per asynchronous operation, which measured
 * 0.25 GB/s on a host where the same TCP connection carries 2.2 GB/s,
 * whichever TLS library is under it; the stream layer here moves a whole
 * buffer of records per operation (gm_stream_tls.c). A context holds the
 * certificates and settings; each connection gets its own state from it.
 * Contexts are made once, at startup or open, and are read-only after:
 * any thread may use one.
 */
#ifndef GM_TLS_H
#define GM_TLS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gm_tls_ctx gm_tls_ctx;

/* PEM files; NULL when not given. */
typedef struct gm_tls_files {
	const char *cert;	 /* own certificate (chain); the key may be
				    in the same file when key is NULL */
	const char *key;	 /* own private key, unencrypted */
	const char *ca;		 /* CA certificates that sign the peer's */
	const char *server_name; /* client: the name the daemon's
				    certificate must carry (DNS name or IP
				    address); NULL: the URL's host */
} gm_tls_files;

/*
 * A daemon's context: presents f->cert and f->key and requires every
 * client to present a certificate signed by f->ca (all three needed).
 * Each file is read and checked here; on failure returns GM_ECONFIG with
 * a message naming the file and what is wrong with it, or GM_ENOMEM.
 */
int gm_tls_server_ctx(const gm_tls_files *f, gm_tls_ctx **out, char *msg,
		      size_t msglen);

/*
 * A client's context for a daemon at host (the URL's host, used when
 * f->server_name is NULL): verifies the daemon's certificate against
 * f->ca (needed) and its name, and presents f->cert (with f->key, or the
 * key in the cert file) when given. GM_EINVAL with a message naming the
 * file on failure, or GM_ENOMEM.
 */
int gm_tls_client_ctx(const gm_tls_files *f, const char *host, gm_tls_ctx **out,
		      char *msg, size_t msglen);

/* Frees a context; connections made from it keep what they need. */
void gm_tls_ctx_free(gm_tls_ctx *c);

#ifdef __cplusplus
}
#endif
#endif
