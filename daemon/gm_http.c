/*
 * gm_http.c - /metrics, /healthz and /readyz on nng's HTTP server, each
 * request answered on the loop thread; see gm_http.h.
 *
 * Lifetimes: nng may call a handler, or cancel a parked request, from
 * its threads until the server is fully gone, which happens on nng's
 * reaper some time after gm_http_close. What those threads touch (the
 * lock, the parked list, the closed flag) is therefore a separately
 * counted block: gm_http holds one reference and each registered
 * handler one, dropped by nng when it frees the handler.
 */
#include "gm_http.h"

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"
#include "gm_metrics.h"

enum route { R_METRICS, R_HEALTHZ, R_READYZ, R_COUNT };

static const char *const paths[R_COUNT] = {"/metrics", "/healthz", "/readyz"};

/* A request waiting for the loop. */
struct parked {
	nng_aio *aio;
	enum route route;
	struct parked *next;
};

/* What nng's threads share with the loop. */
struct shared {
	pthread_mutex_t mu;
	struct parked *head; /* under mu */
	int closed;	     /* under mu: the async below is gone */
	uv_async_t *async;   /* woken under mu while !closed */
	int refs;	     /* atomic */
};

/* A handler's data: which route, and the block it points into. */
struct handler_data {
	struct shared *sh;
	enum route route;
};

struct gm_http {
	uv_async_t async; /* first: the close callback frees through it */
	struct shared *sh;
	nng_http_server *srv;
	gm_http_ops ops;
	void *arg;
};

static void shared_unref(struct shared *sh)
{
	if (__atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_mutex_destroy(&sh->mu);
	free(sh);
}

static void handler_data_free(void *p)
{
	struct handler_data *hd = p;

	shared_unref(hd->sh);
	free(hd);
}

/* nng thread: the connection went away while the request was parked.
 * When the loop has already taken it, the loop completes it instead. */
static void cancel(nng_aio *aio, void *arg, int rv)
{
	struct shared *sh = arg;
	struct parked **pp, *p = NULL;

	pthread_mutex_lock(&sh->mu);
	for (pp = &sh->head; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->aio == aio) {
			p = *pp;
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&sh->mu);
	if (p != NULL) {
		free(p);
		nng_aio_finish(aio, rv);
	}
}

/* nng thread: park the request and wake the loop. */
static void on_request(nng_aio *aio)
{
	nng_http_handler *h = nng_aio_get_input(aio, 1);
	struct handler_data *hd = nng_http_handler_get_data(h);
	struct shared *sh = hd->sh;
	struct parked *p = malloc(sizeof(*p));

	if (p == NULL) {
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	*p = (struct parked){.aio = aio, .route = hd->route};
	pthread_mutex_lock(&sh->mu);
	if (sh->closed) {
		pthread_mutex_unlock(&sh->mu);
		free(p);
		nng_aio_finish(aio, NNG_ECLOSED);
		return;
	}
	nng_aio_defer(aio, cancel, sh);
	p->next = sh->head;
	sh->head = p;
	uv_async_send(sh->async);
	pthread_mutex_unlock(&sh->mu);
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

static struct parked *take_all(struct shared *sh)
{
	struct parked *list;

	pthread_mutex_lock(&sh->mu);
	list = sh->head;
	sh->head = NULL;
	pthread_mutex_unlock(&sh->mu);
	return list;
}

/* Loop thread: answer everything parked since the last wake-up. */
static void on_async(uv_async_t *a)
{
	gm_http *h = (gm_http *)a;
	struct parked *p = take_all(h->sh);

	while (p != NULL) {
		struct parked *next = p->next;

		answer(h, p->aio, p->route);
		free(p);
		p = next;
	}
}

static int add_route(gm_http *h, enum route route)
{
	struct handler_data *hd = malloc(sizeof(*hd));
	nng_http_handler *handler;
	int rv;

	if (hd == NULL)
		return NNG_ENOMEM;
	*hd = (struct handler_data){.sh = h->sh, .route = route};
	if ((rv = nng_http_handler_alloc(&handler, paths[route], on_request)) !=
	    0) {
		free(hd);
		return rv;
	}
	__atomic_add_fetch(&h->sh->refs, 1, __ATOMIC_ACQ_REL);
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
	return rv == NNG_ENOMEM ? GM_ENOMEM : GM_ETRANSPORT;
}

static void free_on_close(uv_handle_t *handle)
{
	gm_http *h = (gm_http *)handle;

	shared_unref(h->sh);
	free(h);
}

int gm_http_open(uv_loop_t *loop, const char *addr, const gm_http_ops *ops,
		 void *arg, gm_http **out, char *msg, size_t msglen)
{
	gm_http *h = calloc(1, sizeof(*h));
	struct shared *sh = calloc(1, sizeof(*sh));
	int rv;

	if (h == NULL || sh == NULL) {
		free(h);
		free(sh);
		snprintf(msg, msglen, "metrics_listen: out of memory");
		return GM_ENOMEM;
	}
	pthread_mutex_init(&sh->mu, NULL);
	sh->refs = 1;
	sh->async = &h->async;
	h->sh = sh;
	h->ops = *ops;
	h->arg = arg;
	uv_async_init(loop, &h->async, on_async);
	if ((rv = start_server(h, addr, msg, msglen)) != 0) {
		gm_http_close(h);
		return rv;
	}
	*out = h;
	return GM_OK;
}

void gm_http_close(gm_http *h)
{
	struct parked *p;

	pthread_mutex_lock(&h->sh->mu);
	h->sh->closed = 1;
	pthread_mutex_unlock(&h->sh->mu);
	p = take_all(h->sh);
	while (p != NULL) {
		struct parked *next = p->next;

		nng_aio_finish(p->aio, NNG_ECLOSED);
		free(p);
		p = next;
	}
	if (h->srv != NULL) {
		nng_http_server_stop(h->srv);
		nng_http_server_release(h->srv);
	}
	uv_close((uv_handle_t *)&h->async, free_on_close);
}
