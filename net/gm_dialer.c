/*
 * gm_dialer.c - dialers: the streams a client connects, plain or TLS
 * (gm_stream.h).
 */
#include "gm_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"
#include "gm_stream_impl.h"
#include "gm_stream_tls.h"

struct gm_dialer {
	nng_stream_dialer *d;
	nng_aio *aio;
	int kind;
	const gm_tls_ctx *tls;
	char url[256];
	gm_dial_fn fn;
	void *arg;
};

/* Why a dial failed, for a person: over ipc:// a refused connection or
 * a missing socket file means that no gemmd runs there, which nng's
 * "Connection refused" leaves the reader to guess. */
static void dial_failure(const gm_dialer *d, int nrv, char *msg, size_t len)
{
	if (d->kind == GM_URL_IPC &&
	    (nrv == NNG_ECONNREFUSED || nrv == NNG_ENOENT))
		snprintf(msg, len, "no gemmd listening at %s (is it running?)",
			 d->url + strlen("ipc://"));
	else
		snprintf(msg, len, "%s: %s", d->url, nng_strerror(nrv));
}

static void dial_cb(void *arg)
{
	gm_dialer *d = arg;
	int nrv = nng_aio_result(d->aio);
	gm_stream *s = NULL;
	nng_stream *ns;
	char msg[320];
	int rv;

	if (nrv != 0) {
		dial_failure(d, nrv, msg, sizeof(msg));
		d->fn(d->arg, gm_net_err(nrv), NULL, msg);
		return;
	}
	ns = nng_aio_get_output(d->aio, 0);
	if (d->kind == GM_URL_TLS)
		rv = gm_stream_tls_new(ns, d->tls, true, &s);
	else
		rv = gm_stream_plain_new(ns, d->kind, &s);
	snprintf(msg, sizeof(msg), "%s: %s", d->url, rv ? "no memory" : "");
	d->fn(d->arg, rv, s, msg);
}

int gm_dialer_open(const char *url, const gm_tls_ctx *tls, gm_dialer **out,
		   char *msg, size_t msglen)
{
	gm_dialer *d = calloc(1, sizeof(*d));
	char turl[512];
	int nrv;

	if (d == NULL)
		return GM_ENOMEM;
	d->kind = gm_url_kind(url);
	d->tls = tls;
	snprintf(d->url, sizeof(d->url), "%s", url);
	if (gm_url_transport(url, turl, sizeof(turl)) != 0 ||
	    (d->kind == GM_URL_TLS && tls == NULL)) {
		snprintf(msg, msglen, "%s: not a gemmd URL (%s)", url,
			 gm_url_schemes);
		free(d);
		return GM_EINVAL;
	}
	if ((nrv = nng_aio_alloc(&d->aio, dial_cb, d)) != 0 ||
	    (nrv = nng_stream_dialer_alloc(&d->d, turl)) != 0) {
		snprintf(msg, msglen, "%s: %s", url, nng_strerror(nrv));
		gm_dialer_free(d);
		return gm_net_err(nrv) == GM_ENOMEM ? GM_ENOMEM : GM_EINVAL;
	}
	*out = d;
	return GM_OK;
}

void gm_dialer_dial(gm_dialer *d, gm_dial_fn fn, void *arg)
{
	d->fn = fn;
	d->arg = arg;
	nng_stream_dialer_dial(d->d, d->aio);
}

void gm_dialer_free(gm_dialer *d)
{
	if (d == NULL)
		return;
	if (d->d != NULL)
		nng_stream_dialer_close(d->d);
	if (d->aio != NULL)
		nng_aio_stop(d->aio);
	nng_aio_free(d->aio);
	nng_stream_dialer_free(d->d);
	free(d);
}
