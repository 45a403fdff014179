/*
 * gm_stream.h - one connection as a byte stream, whatever carries it: a
 * UNIX-domain socket or a TCP connection (nng's byte streams), or TLS
 * over TCP (gm_tls.h says why gemmd runs TLS itself). The daemon's
 * transport and the client library see only this.
 *
 * I/O is asynchronous and completes through a callback, as nng's aio
 * does: at most one receive and one send may be in flight on a stream at
 * once, and each completes exactly once, with the bytes it moved (at
 * least one; a receive may fill less than it was given, and so may a
 * send on a plain stream) or an error. Callbacks run on nng's threads,
 * on the caller's when the data is already at hand (TLS records
 * decrypted ahead), or on a thread that polls the stream's receives
 * (gm_poller.h); a callback may start the next operation on the same
 * stream, which then completes after the callback returns, never inside
 * it. Callbacks must not block for long: they hold an nng thread.
 */
#ifndef GM_STREAM_H
#define GM_STREAM_H

#include <nng/nng.h>
#include <stddef.h>

#include "gm_net.h"
#include "gm_tls.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gm_stream gm_stream;
typedef struct gm_io gm_io;

#define GM_IO_IOV_MAX 8 /* nng's own limit on one operation */

/* One receive or send: the caller fills iov[0..niov-1] and done. rv is
 * 0 with n >= 1 bytes moved, or a gm_err: GM_ETRANSPORT when the
 * connection failed or the peer closed it (msg on the stream says
 * why), GM_ECANCELED after gm_stream_close. */
struct gm_io {
	nng_iov iov[GM_IO_IOV_MAX];
	unsigned niov;
	void (*done)(gm_io *io, int rv, size_t n);
	void *arg; /* the caller's */
};

/* Reads at least one byte into io's buffers. One at a time. */
void gm_stream_recv(gm_stream *s, gm_io *io);

/* Writes at least one byte of io's buffers. One at a time. */
void gm_stream_send(gm_stream *s, gm_io *io);

/*
 * Writes what io's buffers hold at once, on this thread, as far as the
 * socket takes it without waiting, with no callback and so no thread
 * woken: GM_OK with the bytes written in *n (0: the socket is full, or
 * s is a TLS stream, whose records go through its pump: send the rest
 * with gm_stream_send), else why not, as a send's completion would say
 * (GM_ETRANSPORT, GM_ECANCELED once closed). No send of s may be in
 * flight. A plain stream of nng's writes at once when its queue is
 * empty and finishes the operation with whatever one write took, so
 * taking it back straight away leaves nothing half-done.
 */
int gm_stream_try_send(gm_stream *s, gm_io *io, size_t *n);

/* Who is at the other end. For TLS the certificate subject is known once
 * the handshake is done, that is once a receive has completed. */
void gm_stream_peer(gm_stream *s, gm_peer *p);

/* Why the stream failed, "" while it has not (e.g. "TLS: certificate
 * verify failed"). Valid until gm_stream_free. */
const char *gm_stream_error(gm_stream *s);

/* Whether s, accepted by a listener, found its peer gone before it was
 * handed over: its read ahead met the end (gm_listener_accept). Such a
 * stream is closed already; what it read ahead is still there to read.
 * On the accept callback's thread, before s is handed on. */
bool gm_stream_gone(gm_stream *s);

/* Shuts the connection: operations in flight complete with
 * GM_ECANCELED (perhaps before this returns), new ones at once. Any
 * thread, more than once. */
void gm_stream_close(gm_stream *s);

/* Closes s, waits for its callbacks to finish and frees it. Not from one
 * of its own callbacks. */
void gm_stream_free(gm_stream *s);

/* ---- listening ---- */

typedef struct gm_listener gm_listener;

/* An accepted connection (rv 0, s), or why none could be: GM_ECANCELED
 * once the listener is being freed, else a gm_err with nng's own code in
 * nng_rv (NNG_ENOFILES when out of descriptors), so that the owner can
 * tell a failure worth backing off from. */
typedef void (*gm_accept_fn)(void *arg, int rv, int nng_rv, gm_stream *s);

/*
 * Listens on url (gm_url_kind). ipc:// sockets get mode ipc_mode;
 * tls+tcp:// needs tls, a server context that must outlive the listener.
 * On failure returns a gm_err with msg naming the URL and the reason.
 */
int gm_listener_open(const char *url, const gm_tls_ctx *tls, int ipc_mode,
		     gm_listener **out, char *msg, size_t msglen);

/* Accepts one connection and calls fn with it (or the failure) on an nng
 * thread. One accept at a time; the callback may start the next. A
 * plain stream so accepted has read what had come already, up to a
 * frame header and a small request: its first receives take that
 * (gm_poller.c says why), and gm_stream_gone says whether its peer had
 * gone. */
void gm_listener_accept(gm_listener *l, gm_accept_fn fn, void *arg);

/* TLS streams l accepts from now on begin their handshake at their
 * first receive or send instead of at once: one its owner frees unused
 * (a connection refused as it came) costs no byte of the handshake read
 * and no signature made. For an owner that starts an operation on each
 * stream it keeps, since the peer's first write may wait for the
 * handshake. Before the first gm_listener_accept. */
void gm_listener_defer_handshakes(gm_listener *l);

/* The TCP port a tcp:// or tls+tcp:// listener is bound to (useful with
 * port 0); 0 for ipc://. */
int gm_listener_port(gm_listener *l);

/* Stops listening (an accept in flight completes with GM_ECANCELED),
 * waits for the callback, and frees l. Streams it made live on. */
void gm_listener_free(gm_listener *l);

/* ---- dialing ---- */

typedef struct gm_dialer gm_dialer;

/* A new connection, or why none: rv as for gm_accept_fn, msg a line for
 * people. */
typedef void (*gm_dial_fn)(void *arg, int rv, gm_stream *s, const char *msg);

/* A dialer for url; tls+tcp:// needs tls, a client context that must
 * outlive the dialer. GM_EINVAL with msg for a URL nng refuses. */
int gm_dialer_open(const char *url, const gm_tls_ctx *tls, gm_dialer **out,
		   char *msg, size_t msglen);

/* Connects once; fn on an nng thread. One dial at a time. */
void gm_dialer_dial(gm_dialer *d, gm_dial_fn fn, void *arg);

/* Stops a dial in flight (its callback gets GM_ECANCELED), waits for
 * the callback, and frees d. */
void gm_dialer_free(gm_dialer *d);

#ifdef __cplusplus
}
#endif
#endif
