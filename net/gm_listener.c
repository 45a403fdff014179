/*
 * gm_listener.c - listeners: the streams a daemon accepts, plain or
 * TLS (gm_stream.h). A plain stream is read ahead as it is accepted
 * (gm_poller.c says why).
 */
#include "gm_stream.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "gm_error.h"
#include "gm_poller_impl.h"
#include "gm_stream_impl.h"
#include "gm_stream_tls.h"

struct gm_listener {
	nng_stream_listener *l;
	nng_aio *aio;
	nng_aio *ahead; /* the read ahead's, which has no callback */
	int kind;
	const gm_tls_ctx *tls;
	bool defer; /* gm_listener_defer_handshakes */
	gm_accept_fn fn;
	void *arg;
};

static void accept_cb(void *arg)
{
	gm_listener *l = arg;
	int nrv = nng_aio_result(l->aio);
	gm_stream *s = NULL;
	nng_stream *ns;
	int rv;

	if (nrv != 0) {
		l->fn(l->arg, gm_net_err(nrv), nrv, NULL);
		return;
	}
	ns = nng_aio_get_output(l->aio, 0);
	if (l->kind == GM_URL_TLS) {
		rv = gm_stream_tls_new(ns, l->tls, !l->defer, &s);
	} else if ((rv = gm_stream_plain_new(ns, l->kind, &s)) == GM_OK) {
		gm_stream_read_ahead(s, l->ahead);
	}
	l->fn(l->arg, rv, 0, s);
}

int gm_listener_open(const char *url, const gm_tls_ctx *tls, int ipc_mode,
		     gm_listener **out, char *msg, size_t msglen)
{
	gm_listener *l = calloc(1, sizeof(*l));
	char turl[512];
	int nrv;

	if (l == NULL)
		return GM_ENOMEM;
	l->kind = gm_url_kind(url);
	l->tls = tls;
	if (gm_url_transport(url, turl, sizeof(turl)) != 0 ||
	    (l->kind == GM_URL_TLS && tls == NULL)) {
		snprintf(msg, msglen, "%s: not a URL gemmd serves (%s)", url,
			 gm_url_schemes);
		free(l);
		return GM_EINVAL;
	}
	if ((nrv = nng_aio_alloc(&l->aio, accept_cb, l)) != 0 ||
	    (nrv = nng_aio_alloc(&l->ahead, NULL, NULL)) != 0 ||
	    (nrv = nng_stream_listener_alloc(&l->l, turl)) != 0 ||
	    (l->kind == GM_URL_IPC &&
	     (nrv = nng_stream_listener_set_int(l->l, NNG_OPT_IPC_PERMISSIONS,
						ipc_mode)) != 0) ||
	    (nrv = nng_stream_listener_listen(l->l)) != 0) {
		snprintf(msg, msglen, "listening on %s: %s", url,
			 nng_strerror(nrv));
		gm_listener_free(l);
		return gm_net_err(nrv) == GM_EINVAL ? GM_EINVAL : GM_ETRANSPORT;
	}
	*out = l;
	return GM_OK;
}

void gm_listener_defer_handshakes(gm_listener *l)
{
	l->defer = true;
}

void gm_listener_accept(gm_listener *l, gm_accept_fn fn, void *arg)
{
	l->fn = fn;
	l->arg = arg;
	nng_stream_listener_accept(l->l, l->aio);
}

int gm_listener_port(gm_listener *l)
{
	int port = 0;

	if (l->kind == GM_URL_IPC ||
	    nng_stream_listener_get_int(l->l, NNG_OPT_TCP_BOUND_PORT, &port))
		return 0;
	return port;
}

void gm_listener_free(gm_listener *l)
{
	if (l == NULL)
		return;
	if (l->l != NULL)
		nng_stream_listener_close(l->l);
	if (l->aio != NULL)
		nng_aio_stop(l->aio);
	nng_aio_free(l->aio);
	nng_aio_free(l->ahead);
	nng_stream_listener_free(l->l);
	free(l);
}
