/*
 * gm_server.c - nng rep0 socket, listeners and the context state
 * machines; see gm_server.h.
 */
#include "gm_server.h"

#include <errno.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/transport/ipc/ipc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gm_error.h"
#include "gm_log.h"

#define TLS_FILE_MAX (1u << 20) /* certificates are a few KiB */

struct gm_work {
	enum { RECV, WAIT, SEND } state;
	nng_aio *aio;
	nng_ctx ctx;
	nng_msg *msg;
	gm_server *srv;
	gm_work *next;
};

struct gm_server {
	nng_socket sock;
	nng_listener *listeners;
	unsigned nlisteners;
	gm_work *works;
	unsigned nworks;
	uv_async_t async;
	pthread_mutex_t lock;
	gm_work *ready; /* received, waiting for the loop; under lock */
	atomic_uint sending;
	gm_server_req_fn fn;
	void *arg;
};

/* nng thread: hand a received message to the loop, or re-arm. */
static void work_cb(void *p)
{
	gm_work *w = p;
	gm_server *s = w->srv;
	int rv = nng_aio_result(w->aio);

	switch (w->state) {
	case RECV:
		if (rv == NNG_ECLOSED)
			return;
		if (rv != 0) {
			nng_ctx_recv(w->ctx, w->aio);
			return;
		}
		w->msg = nng_aio_get_msg(w->aio);
		w->state = WAIT;
		pthread_mutex_lock(&s->lock);
		w->next = s->ready;
		s->ready = w;
		pthread_mutex_unlock(&s->lock);
		uv_async_send(&s->async);
		break;
	case SEND:
		/* On failure the message is still ours to free. */
		if (rv != 0)
			nng_msg_free(nng_aio_get_msg(w->aio));
		atomic_fetch_sub(&s->sending, 1);
		if (rv == NNG_ECLOSED)
			return;
		w->state = RECV;
		nng_ctx_recv(w->ctx, w->aio);
		break;
	case WAIT:
		break;
	}
}

/* Loop thread: drain the hand-off list, oldest first. */
static void async_cb(uv_async_t *h)
{
	gm_server *s = h->data;
	gm_work *list, *rev = NULL;

	pthread_mutex_lock(&s->lock);
	list = s->ready;
	s->ready = NULL;
	pthread_mutex_unlock(&s->lock);
	while (list != NULL) {
		gm_work *next = list->next;

		list->next = rev;
		rev = list;
		list = next;
	}
	while (rev != NULL) {
		gm_work *w = rev;
		nng_msg *m = w->msg;

		rev = rev->next;
		w->msg = NULL;
		s->fn(w, m, s->arg);
	}
}

void gm_server_reply(gm_work *w, nng_msg *reply)
{
	atomic_fetch_add(&w->srv->sending, 1);
	w->state = SEND;
	nng_aio_set_msg(w->aio, reply);
	nng_ctx_send(w->ctx, w->aio);
}

unsigned gm_server_sending(gm_server *s)
{
	return atomic_load(&s->sending);
}

static int nng_fail(int rv, const char *what, const char *url, char *msg,
		    size_t len)
{
	snprintf(msg, len, "%s %s: %s", what, url, nng_strerror(rv));
	return GM_ETRANSPORT;
}

/* Reads a whole PEM file into a NUL-terminated malloc'd string. */
static int read_pem(const char *path, char **out, char *msg, size_t len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (f == NULL) {
		snprintf(msg, len, "TLS file %s: %s", path, strerror(errno));
		return GM_ECONFIG;
	}
	buf = malloc(TLS_FILE_MAX + 1);
	n = buf ? fread(buf, 1, TLS_FILE_MAX + 1, f) : 0;
	fclose(f);
	if (buf == NULL)
		return GM_ENOMEM;
	if (n == 0 || n > TLS_FILE_MAX) {
		free(buf);
		snprintf(msg, len, "TLS file %s: %s", path,
			 n ? "larger than 1 MiB" : "empty");
		return GM_ECONFIG;
	}
	buf[n] = '\0';
	*out = buf;
	return GM_OK;
}

static int tls_setup(nng_listener l, const gm_config *cfg, char *msg,
		     size_t len)
{
	nng_tls_config *tc;
	char *cert = NULL, *key = NULL;
	int rv;

	if (!cfg->tls_cert || !cfg->tls_key || !cfg->tls_ca) {
		snprintf(msg, len,
			 "tls+tcp:// needs tls_cert, tls_key and "
			 "tls_ca in the configuration");
		return GM_ECONFIG;
	}
	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_SERVER)) != 0)
		return nng_fail(rv, "TLS", "config", msg, len);
	if ((rv = read_pem(cfg->tls_cert, &cert, msg, len)) != 0 ||
	    (rv = read_pem(cfg->tls_key, &key, msg, len)) != 0)
		goto out;
	if ((rv = nng_tls_config_own_cert(tc, cert, key, NULL)) != 0) {
		snprintf(msg, len, "TLS certificate %s or key %s: %s",
			 cfg->tls_cert, cfg->tls_key, nng_strerror(rv));
		rv = GM_ECONFIG;
		goto out;
	}
	if ((rv = nng_tls_config_ca_file(tc, cfg->tls_ca)) != 0) {
		snprintf(msg, len, "TLS CA file %s: %s", cfg->tls_ca,
			 nng_strerror(rv));
		rv = GM_ECONFIG;
		goto out;
	}
	nng_tls_config_auth_mode(tc, NNG_TLS_AUTH_MODE_REQUIRED);
	if ((rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, tc)) != 0)
		rv = nng_fail(rv, "TLS", "listener", msg, len);
out:
	free(cert);
	free(key);
	nng_tls_config_free(tc); /* the listener holds its own reference */
	return rv;
}

/* Creates the directory of an ipc socket, owner and group only. */
static int ipc_setup(nng_listener l, const char *url, char *msg, size_t len)
{
	char dir[512];
	char *slash;
	int rv;

	snprintf(dir, sizeof(dir), "%s", url + strlen("ipc://"));
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
			snprintf(msg, len, "creating %s for %s: %s", dir, url,
				 strerror(errno));
			return GM_EIO;
		}
	}
	if ((rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS, 0660)) != 0)
		return nng_fail(rv, "setting permissions on", url, msg, len);
	return GM_OK;
}

static int listen_one(gm_server *s, const gm_config *cfg, const char *url,
		      char *msg, size_t len)
{
	nng_listener l;
	int rv;

	if ((rv = nng_listener_create(&l, s->sock, url)) != 0)
		return nng_fail(rv, "listening on", url, msg, len);
	s->listeners[s->nlisteners++] = l;
	if (strncmp(url, "ipc://", 6) == 0)
		rv = ipc_setup(l, url, msg, len);
	else if (strncmp(url, "tls+tcp://", 10) == 0)
		rv = tls_setup(l, cfg, msg, len);
	if (rv != 0)
		return rv;
	if ((rv = nng_listener_start(l, 0)) != 0)
		return nng_fail(rv, "listening on", url, msg, len);
	GM_LOG(GM_LOG_INFO, "listening on %s", url);
	return GM_OK;
}

static int open_works(gm_server *s, unsigned n, char *msg, size_t len)
{
	int rv;

	s->works = calloc(n, sizeof(*s->works));
	if (s->works == NULL)
		return GM_ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		gm_work *w = &s->works[i];

		w->srv = s;
		if ((rv = nng_aio_alloc(&w->aio, work_cb, w)) != 0 ||
		    (rv = nng_ctx_open(&w->ctx, s->sock)) != 0)
			return nng_fail(rv, "opening", "context", msg, len);
		s->nworks++;
	}
	return GM_OK;
}

int gm_server_open(uv_loop_t *loop, const gm_config *cfg, gm_server_req_fn fn,
		   void *arg, gm_server **out, char *msg, size_t msglen)
{
	gm_server *s = calloc(1, sizeof(*s));
	int rv;

	if (s == NULL)
		return GM_ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->fn = fn;
	s->arg = arg;
	s->async.data = s;
	uv_async_init(loop, &s->async, async_cb);
	s->listeners = calloc(cfg->nlisten, sizeof(*s->listeners));
	if (s->listeners == NULL) {
		rv = GM_ENOMEM;
		goto fail_sock;
	}
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		rv = nng_fail(rv, "opening", "socket", msg, msglen);
		goto fail_sock;
	}
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ,
			    (size_t)cfg->max_message_bytes);
	if ((rv = open_works(s, cfg->contexts, msg, msglen)) != 0)
		goto fail;
	for (unsigned i = 0; i < cfg->nlisten; i++)
		if ((rv = listen_one(s, cfg, cfg->listen[i], msg, msglen)) != 0)
			goto fail;
	for (unsigned i = 0; i < s->nworks; i++) {
		s->works[i].state = RECV;
		nng_ctx_recv(s->works[i].ctx, s->works[i].aio);
	}
	*out = s;
	return GM_OK;
fail:
	gm_server_close(s);
	return rv;
fail_sock:
	free(s->listeners);
	uv_close((uv_handle_t *)&s->async, NULL);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return rv;
}

static void free_server(uv_handle_t *h)
{
	gm_server *s = h->data;

	pthread_mutex_destroy(&s->lock);
	free(s);
}

void gm_server_close(gm_server *s)
{
	nng_close(s->sock);
	/* nng_aio_free waits for a running callback; after the close no
	 * new one starts. */
	for (unsigned i = 0; i < s->nworks; i++) {
		nng_aio_free(s->works[i].aio);
		if (s->works[i].msg != NULL)
			nng_msg_free(s->works[i].msg);
	}
	free(s->works);
	free(s->listeners);
	uv_close((uv_handle_t *)&s->async, free_server);
}
