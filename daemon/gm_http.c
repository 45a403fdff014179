/*
 * gm_http.c - /metrics, /healthz and /readyz on nng's HTTP server, each
 * request answered on the loop thread; see gm_http.h.
 *
 * Lifetimes: nng may call a handler, or cancel a parked request, from
 * its threads until the server is fully gone, which happens on nng's
 * reaper some time after gm_http_close. What those threads touch is the
 * inbox, which each registered handler holds a reference on, dropped
 * by nng when it frees the handler; after the close the inbox refuses
 * new requests.
 */
#include "gm_http.h"

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"
#include "gm_inbox.h"
#include "gm_metrics.h"
#include "gm_net.h"

enum route { R_METRICS, R_HEALTHZ, R_READYZ, R_COUNT };

static const char *const paths[R_COUNT] = {"/metrics", "/healthz", "/readyz"};

/* A request waiting for the loop. */
struct parked {
	nng_aio *aio;
	enum route route;
	void *link; /* the inbox's */
};

/* A handler's data: which route, and the inbox it posts to. */
struct handler_data {
	gm_inbox *inbox;
	enum route route;
};

struct gm_http {
	gm_inbox *inbox;
	nng_http_server *srv;
	gm_http_ops ops;
	void *arg;
};

static void handler_data_free(void *p)
{
	struct handler_data *hd = p;

	gm_inbox_release(hd->inbox);
	free(hd);
}

static bool parked_for(void *item, void *aio)
{
	return ((struct parked *)item)->aio == aio;
}

/* nng thread: the connection went away while the request was parked.
 * When the loop has already taken it, the loop completes it instead. */
static void cancel(nng_aio *aio, void *arg, int rv)
{
	struct parked *p = gm_inbox_cancel(arg, parked_for, aio);

	if (p != NULL) {
		free(p);
		nng_aio_finish(aio, rv);
	}
}

/* nng thread: park the request for the loop. */
static void on_request(nng_aio *aio)
{
	nng_http_handler *h = nng_aio_get_input(aio, 1);
	struct handler_data *hd = nng_http_handler_get_data(h);
	struct parked *p = malloc(sizeof(*p));

	if (p == NULL) {
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	*p = (struct parked){.aio = aio, .route = hd->route};
	/* Cancelable before the loop can see it; a cancel that comes
	 * before the post finds nothing and leaves it to the loop. */
	nng_aio_defer(aio, cancel, hd->inbox);
	if (!gm_inbox_post(hd->inbox, p)) {
		free(p);
		nng_aio_finish(aio, NNG_ECLOSED);
	}
}

/* Completes aio with a response, or with an error when none can be made
 * (nng then drops the connection). */
static void respond(nng_aio *aio, uint16_t status, const char *type,
		    const char *body)
{
	nng_http_res *res;

	if (body == NULL || nng_http_res_alloc(&res) != 0) {
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	if (nng_http_res_set_status(res, status) != 0 ||
	    nng_http_res_set_header(res, "Content-Type", type) != 0 ||
	    nng_http_res_copy_data(res, body, strlen(body)) != 0) {
		nng_http_res_free(res);
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

static void answer(gm_http *h, nng_aio *aio, enum route route)
{
	const char *why = "not ready";
	char text[160];
	char *body;

	switch (route) {
	case R_METRICS:
		body = h->ops.metrics(h->arg);
		respond(aio, 200, GM_METRICS_CONTENT_TYPE, body);
		free(body);
		break;
	case R_HEALTHZ:
		respond(aio, 200, "text/plain", "ok\n");
		break;
	case R_READYZ:
		if (h->ops.ready(h->arg, &why)) {
			respond(aio, 200, "text/plain", "ready\n");
			break;
		}
		snprintf(text, sizeof(text), "not ready: %s\n", why);
		respond(aio, 503, "text/plain", text);
		break;
	default:
		nng_aio_finish(aio, NNG_EINTERNAL);
	}
}

/* Loop thread: answer a request the inbox handed over. */
static void on_parked(void *item, void *arg)
{
	struct parked *p = item;

	answer(arg, p->aio, p->route);
	free(p);
}

/* A request parked when the endpoints closed. */
static void refuse(void *item, void *arg)
{
	struct parked *p = item;

	nng_aio_finish(p->aio, NNG_ECLOSED);
	free(p);
}

static int add_route(gm_http *h, enum route route)
{
	struct handler_data *hd = malloc(sizeof(*hd));
	nng_http_handler *handler;
	int rv;

	if (hd == NULL)
		return NNG_ENOMEM;
	*hd = (struct handler_data){.inbox = h->inbox, .route = route};
	if ((rv = nng_http_handler_alloc(&handler, paths[route], on_request)) !=
	    0) {
		free(hd);
		return rv;
	}
	gm_inbox_hold(h->inbox);
	nng_http_handler_set_data(handler, hd, handler_data_free);
	/* On success the server owns the handler and frees it with itself. */
	if ((rv = nng_http_server_add_handler(h->srv, handler)) != 0)
		nng_http_handler_free(handler);
	return rv;
}

/* "HOST:PORT" as nng's http:// URL. The port must be given: nng would
 * take 80 for a bare host. */
static int parse_addr(const char *addr, nng_url **url)
{
	char text[300];

	if (strrchr(addr, ':') == NULL || strchr(addr, '/') != NULL)
		return NNG_EADDRINVAL;
	snprintf(text, sizeof(text), "http://%s", addr);
	return nng_url_parse(url, text);
}

/* Holds and starts the server with every route. */
static int start_server(gm_http *h, const char *addr, char *msg, size_t len)
{
	nng_url *url = NULL;
	int rv;

	if (parse_addr(addr, &url) != 0) {
		snprintf(msg, len,
			 "metrics_listen \"%.200s\": want HOST:PORT, e.g. "
			 "127.0.0.1:9464",
			 addr);
		return GM_ECONFIG;
	}
	rv = nng_http_server_hold(&h->srv, url);
	nng_url_free(url);
	for (int r = 0; rv == 0 && r < R_COUNT; r++)
		rv = add_route(h, (enum route)r);
	if (rv == 0)
		rv = nng_http_server_start(h->srv);
	if (rv == 0)
		return 0;
	snprintf(msg, len, "metrics_listen \"%.200s\": %s", addr,
		 nng_strerror(rv));
	return gm_net_err(rv);
}

int gm_http_open(uv_loop_t *loop, const char *addr, const gm_http_ops *ops,
		 void *arg, gm_http **out, char *msg, size_t msglen)
{
	gm_http *h = calloc(1, sizeof(*h));
	int rv;

	if (h == NULL) {
		snprintf(msg, msglen, "metrics_listen: out of memory");
		return GM_ENOMEM;
	}
	h->ops = *ops;
	h->arg = arg;
	if ((rv = gm_inbox_open(loop, offsetof(struct parked, link), on_parked,
				NULL, h, &h->inbox, msg, msglen)) != 0) {
		free(h);
		return rv;
	}
	if ((rv = start_server(h, addr, msg, msglen)) != 0) {
		gm_http_close(h);
		return rv;
	}
	*out = h;
	return GM_OK;
}

void gm_http_close(gm_http *h)
{
	gm_inbox_close(h->inbox, refuse, NULL);
	if (h->srv != NULL) {
		nng_http_server_stop(h->srv);
		nng_http_server_release(h->srv);
	}
	free(h);
}
