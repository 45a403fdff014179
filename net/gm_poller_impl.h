/*
 * gm_poller_impl.h - private to net/: the read ahead of an accepted
 * plain stream, for the listener. It lives with the poller because it
 * is the poller's trick: a receive started and taken back at once, on
 * the calling thread.
 */
#ifndef GM_POLLER_IMPL_H
#define GM_POLLER_IMPL_H

#include <nng/nng.h>

#include "gm_stream.h"

/* Reads what has come on s, a plain stream just accepted, with aio (the
 * listener's, which has no callback), without blocking; its first
 * receives take it. A peer found gone closes s (gm_stream_gone). On the
 * accepting thread, before s is handed on. */
void gm_stream_read_ahead(gm_stream *s, nng_aio *aio);

#endif
