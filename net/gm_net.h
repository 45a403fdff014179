/*
 * gm_net.h - what the daemon and the client library share about the
 * network: the URL schemes gemmd speaks, who is at the other end of a
 * connection, and nng's error codes folded into gemmd's, in one place.
 * Pure functions; any thread.
 */
#ifndef GM_NET_H
#define GM_NET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gm_url_kind {
	GM_URL_BAD = 0,
	GM_URL_IPC, /* ipc:///path: a UNIX-domain stream socket */
	GM_URL_TCP, /* tcp://host:port */
	GM_URL_TLS, /* tls+tcp://host:port: TLS that gemmd runs over TCP */
};

/* The kind of url, GM_URL_BAD for anything else (http://, a typo). */
int gm_url_kind(const char *url);

/* The schemes gm_url_kind knows, for messages: "ipc://, tcp://,
 * tls+tcp://". */
extern const char gm_url_schemes[];

/* Writes into out (len bytes) the URL nng dials or listens on for url:
 * tls+tcp:// becomes tcp://, since TLS is gemmd's own layer; others are
 * copied. GM_EINVAL when it does not fit or url is not one of ours. */
int gm_url_transport(const char *url, char *out, size_t len);

/* Whether a tcp:// or tls+tcp:// URL names a loopback address. */
int gm_url_is_loopback(const char *url);

/* Who is at the other end of a connection. */
typedef struct gm_peer {
	int kind;      /* enum gm_url_kind of the connection */
	int has_cred;  /* ipc: uid and gid are the peer's, from the kernel */
	uint64_t uid;  /* ipc */
	uint64_t gid;  /* ipc */
	char addr[64]; /* tcp, tls: the remote address, "1.2.3.4" or "::1" */
	char subject[256]; /* tls: the verified client certificate's subject
			      (RFC 2253), "" when none */
} gm_peer;

/* nng's error code as a gm_err: NNG_ETIMEDOUT -> GM_ETIMEDOUT,
 * NNG_ENOMEM -> GM_ENOMEM, NNG_ECLOSED and NNG_ECANCELED ->
 * GM_ECANCELED, NNG_EINVAL, NNG_EADDRINVAL and NNG_ENOTSUP -> GM_EINVAL,
 * NNG_EPERM -> GM_EACCES, everything else ->
 * GM_ETRANSPORT. */
int gm_net_err(int nng_rv);

#ifdef __cplusplus
}
#endif
#endif
