/*
 * gm_stream_tls.h - private to net/: making a TLS stream, for the
 * listener and the dialer (gm_stream_tls.c runs it).
 */
#ifndef GM_STREAM_TLS_H
#define GM_STREAM_TLS_H

#include <stdbool.h>

#include "gm_stream.h"

/* A TLS stream over ns (taken, also on failure) with its state made
 * from tls; its handshake starts now when start, else at its first
 * operation (gm_listener_defer_handshakes). GM_OK or GM_ENOMEM. */
int gm_stream_tls_new(nng_stream *ns, const gm_tls_ctx *tls, bool start,
		      gm_stream **out);

#endif
