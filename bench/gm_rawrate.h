/*
 * gm_rawrate.h - the bounds of the socket path, measured in the same run
 * as what is compared with them: the raw rate of one connection of a
 * kind (nng's byte stream for ipc:// and tcp://, gemmd's TLS stream for
 * tls+tcp://) carrying a request's bytes one way and its results back,
 * with no framing and no GEMM; and memcpy on one thread.
 */
#ifndef GM_RAWRATE_H
#define GM_RAWRATE_H

#include <stddef.h>
#include <stdint.h>

/* Certificates for tls+tcp:// (PEM files); all NULL for other URLs. */
typedef struct gm_rawrate_tls {
	const char *ca;
	const char *server_cert, *server_key;
	const char *client_cert, *client_key;
} gm_rawrate_tls;

/*
 * Opens a listener on url and a connection to it in this process, then
 * reps times: the client writes in_bytes, the server reads them all,
 * writes out_bytes back, and the client reads them. The median time of a
 * repetition goes to *ms (after one untimed warm-up). Buffers are
 * written with random bytes first. Returns 0, or -1 with a line in msg.
 */
int gm_rawrate(const char *url, const gm_rawrate_tls *tls, uint64_t in_bytes,
	       uint64_t out_bytes, int reps, double *ms, char *msg,
	       size_t msglen);

/*
 * An echo across two processes, as between a client and gemmd: in one,
 * gm_rawecho_serve listens on url (ipc:// or tcp://), accepts one
 * connection and, from nng's callbacks, reads in_bytes and writes
 * out_bytes back until the peer closes. In the other, gm_rawecho dials
 * it and, reps times after one untimed, writes in_bytes and reads
 * out_bytes, waiting for each as a client waits for a reply: the median
 * round trip goes to *ms. Both return 0, or -1 with a line in msg.
 */
int gm_rawecho_serve(const char *url, uint64_t in_bytes, uint64_t out_bytes,
		     char *msg, size_t msglen);
int gm_rawecho(const char *url, uint64_t in_bytes, uint64_t out_bytes, int reps,
	       double *ms, char *msg, size_t msglen);

/* Milliseconds threads (1: this one) take to memcpy bytes, each a slice
 * of it at once (median of reps, fresh source and destination larger
 * than the caches). */
double gm_memcpy_ms(uint64_t bytes, unsigned threads, int reps);

/* Makes a CA, a server certificate for 127.0.0.1/localhost and a client
 * certificate in dir with the openssl command, and fills t with their
 * paths (which live in static storage). Returns 0, or -1 when openssl is
 * missing or fails. */
int gm_rawrate_make_certs(const char *dir, gm_rawrate_tls *t);

#endif
