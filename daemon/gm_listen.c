/*
 * gm_listen.c - listeners and their accept loops; see gm_listen.h.
 */
#include "gm_listen.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gm_conn.h"
#include "gm_log.h"
#include "gm_stream.h"
#include "gm_tls.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000

/* Connections a listener has accepted that are neither admitted nor
 * gone: on their way to the loop, or refused and being sent their
 * ERROR. Past it the listener waits: a loop slower than a flood of
 * connections (a loaded host) would otherwise hold a descriptor for
 * each, past every cap, until it ran out; the flood waits in the
 * kernel's backlog instead, costing the daemon nothing. */
#define PENDING_MAX 16

/* One listener and its accept loop. */
typedef struct lsn {
	gm_loop *l;
	struct gm_listen *ls;
	gm_listener *gl;
	const char *url;
	gm_event ev;	  /* an accept failed */
	int nng_rv;	  /* why (written before the post) */
	uv_timer_t retry; /* back-off after a failed accept */
	unsigned backoff_ms;
	int failing;	   /* loop: an episode of failures is on */
	atomic_int worked; /* an accept succeeded since the last failure */
	/* Connections pending (PENDING_MAX): the accept that makes it
	 * PENDING_MAX is not followed by another until one settles and
	 * sees it at PENDING_MAX. */
	atomic_uint pending;
	int closing;
} lsn;

/* A connection accepted, on its way to the loop. */
typedef struct accepted {
	gm_event ev;
	gm_stream *s;
	lsn *ln;
} accepted;

struct gm_listen {
	gm_loop *l;
	gm_tls_ctx *tls; /* for tls+tcp://; NULL when none is listed */
	lsn *v;
	unsigned n;	      /* listeners with their timer made */
	unsigned open_timers; /* not yet closed: ls is freed after */
};

static void accept_cb(void *arg, int rv, int nng_rv, gm_stream *s);

static void accept_next(lsn *ln)
{
	gm_listener_accept(ln->gl, accept_cb, ln);
}

/* Loop thread: a connection of ln is admitted or gone. */
static void settled(gm_loop *l, void *arg)
{
	lsn *ln = arg;

	if (l->listen == NULL) /* closed: ln may be gone */
		return;
	if (atomic_fetch_sub(&ln->pending, 1) == PENDING_MAX && !ln->closing)
		accept_next(ln);
}

/* Loop thread: a connection for the set, unless the listeners are
 * closed already (the daemon is stopping). */
static void on_accepted(gm_event *ev, gm_loop *l)
{
	accepted *a = (accepted *)(void *)ev;

	if (l->listen != NULL)
		gm_conns_accept(l, a->s, settled, a->ln);
	else
		gm_stream_free(a->s);
	free(a);
}

/*
 * nng thread: hands the connection to the loop and accepts the next at
 * once, so that a burst of connections is taken as fast as they come
 * (the loop checks the caps), while fewer than PENDING_MAX are
 * pending; past that, the loop accepts the next once one settles. One
 * whose peer had gone before it was accepted (its read ahead met the
 * end) is freed here and only counted: under a storm of connections
 * opened and closed at once, the loop and nng's threads would otherwise
 * make, arm and tear down a connection for each, and the clients that
 * stay wait behind that work. A failure
 * goes to the loop instead, which accepts again after a pause: out of
 * descriptors, the pending connections wait in the kernel's backlog,
 * and retrying at once would spin on them.
 */
static void accept_cb(void *arg, int rv, int nng_rv, gm_stream *s)
{
	lsn *ln = arg;
	accepted *a;

	if (rv == GM_ECANCELED)
		return;
	if (rv == GM_OK && gm_stream_gone(s)) {
		atomic_fetch_add(&ln->l->conns.gone, 1);
		accept_next(ln); /* first: the backlog waits for no free */
		gm_stream_free(s);
		return;
	}
	if (rv == GM_OK && (a = malloc(sizeof(*a))) != NULL) {
		unsigned n = atomic_fetch_add(&ln->pending, 1) + 1;

		a->ev.fn = on_accepted;
		a->s = s;
		a->ln = ln;
		if (gm_loop_post(ln->l, &a->ev)) {
			atomic_store(&ln->worked, 1);
			if (n < PENDING_MAX)
				accept_next(ln);
			return;
		}
		atomic_fetch_sub(&ln->pending, 1);
		free(a);
		gm_stream_free(s);
		return;
	}
	if (rv == GM_OK) {
		gm_stream_free(s);
		nng_rv = NNG_ENOMEM;
	}
	ln->nng_rv = nng_rv;
	gm_loop_post(ln->l, &ln->ev);
}

static void retry_cb(uv_timer_t *t)
{
	lsn *ln = t->data;

	if (!ln->closing)
		accept_next(ln);
}

/* Loop thread: an accept failed. */
static void on_failed(gm_event *ev, gm_loop *l)
{
	lsn *ln = (lsn *)(void *)((char *)ev - offsetof(lsn, ev));

	if (ln->closing)
		return;
	/* Connections came since the last failure: a new episode. */
	if (atomic_exchange(&ln->worked, 0))
		ln->failing = 0;
	if (!ln->failing) {
		l->conns.n.accept_pauses++;
		GM_LOG(GM_LOG_WARN,
		       "%s: cannot accept connections: %s; pausing (up to %d "
		       "ms at a time) until it can",
		       ln->url, nng_strerror(ln->nng_rv), BACKOFF_MAX_MS);
		ln->failing = 1;
		ln->backoff_ms = BACKOFF_MIN_MS;
	} else if ((ln->backoff_ms *= 2) > BACKOFF_MAX_MS) {
		ln->backoff_ms = BACKOFF_MAX_MS;
	}
	uv_timer_start(&ln->retry, retry_cb, ln->backoff_ms, 0);
}

/* Creates the directory of an ipc socket, owner and group only. */
static int ipc_dir(const char *url, char *msg, size_t len)
{
	char dir[512];
	char *slash;
	int rv;

	snprintf(dir, sizeof(dir), "%s", url + strlen("ipc://"));
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return GM_OK;
	*slash = '\0';
	/* A directory made here gets exactly 0750 whatever the umask; one
	 * that exists is the operator's to set. */
	if (mkdir(dir, 0750) == 0)
		rv = chmod(dir, 0750);
	else
		rv = errno == EEXIST ? 0 : -1;
	if (rv != 0) {
		snprintf(msg, len, "creating %s for %s: %s", dir, url,
			 strerror(errno));
		return GM_EIO;
	}
	return GM_OK;
}

/* Plain TCP has no authentication: every client there is "anonymous"
 * (gm_principal.h), whatever the address; off the loopback it is open
 * to the network as well, and unencrypted. allow_plain_tcp false
 * refuses it before this (gm_config_check). */
static void warn_plain_tcp(const char *url)
{
	int loopback = gm_url_is_loopback(url);

	GM_LOG(GM_LOG_WARN,
	       "%s is plain TCP%s: unauthenticated, its clients are all "
	       "\"anonymous\" (they share their detached jobs and are never "
	       "admin)%s; use tls+tcp:// or ipc://, or set allow_plain_tcp "
	       "false to forbid it",
	       url, loopback ? " on the loopback" : " off the loopback",
	       loopback ? ", and any local user can connect"
			: ", open to anyone who can reach it and unencrypted");
}

static int open_tls(gm_listen *ls, char *msg, size_t len)
{
	const gm_config *cfg = ls->l->cfg;
	gm_tls_files f = {
	    .cert = cfg->tls_cert, .key = cfg->tls_key, .ca = cfg->tls_ca};

	for (unsigned i = 0; i < cfg->nlisten; i++)
		if (gm_url_kind(cfg->listen[i]) == GM_URL_TLS)
			return gm_tls_server_ctx(&f, &ls->tls, msg, len);
	return GM_OK;
}

static int listen_one(gm_listen *ls, lsn *ln, const char *url, char *msg,
		      size_t len)
{
	int kind = gm_url_kind(url), rv;

	*ln = (lsn){.l = ls->l, .ls = ls, .url = url};
	ln->ev.fn = on_failed;
	ln->retry.data = ln;
	if ((rv = uv_timer_init(&ls->l->uv, &ln->retry)) != 0) {
		snprintf(msg, len, "%s: %s", url, uv_strerror(rv));
		return GM_EINTERNAL;
	}
	ls->n++;
	if (kind == GM_URL_IPC && (rv = ipc_dir(url, msg, len)) != 0)
		return rv;
	if (kind == GM_URL_TCP)
		warn_plain_tcp(url);
	if ((rv = gm_listener_open(url, ls->tls, 0660, &ln->gl, msg, len)) != 0)
		return rv;
	/* A connection refused as it came costs no cryptography; one taken
	 * in is read at once, which starts its handshake. */
	gm_listener_defer_handshakes(ln->gl);
	GM_LOG(GM_LOG_INFO, "listening on %s", url);
	return GM_OK;
}

/* The last listener's timer closed: nothing refers to ls any more. */
static void timer_closed(uv_handle_t *h)
{
	lsn *ln = h->data;
	gm_listen *ls = ln->ls;

	if (--ls->open_timers == 0) {
		free(ls->v);
		free(ls);
	}
}

int gm_listen_open(gm_loop *l, gm_listen **out, char *msg, size_t msglen)
{
	const gm_config *cfg = l->cfg;
	gm_listen *ls = calloc(1, sizeof(*ls));
	int rv = GM_ENOMEM;

	snprintf(msg, msglen, "listeners: out of memory");
	if (ls == NULL)
		return rv;
	ls->l = l;
	if ((ls->v = calloc(cfg->nlisten, sizeof(*ls->v))) == NULL)
		goto fail;
	if ((rv = open_tls(ls, msg, msglen)) != 0)
		goto fail;
	for (unsigned i = 0; i < cfg->nlisten; i++) {
		if ((rv = listen_one(ls, &ls->v[i], cfg->listen[i], msg,
				     msglen)) != 0)
			goto fail;
	}
	/* Every listener is bound before any connection is taken. */
	for (unsigned i = 0; i < ls->n; i++)
		accept_next(&ls->v[i]);
	*out = ls;
	return GM_OK;
fail:
	gm_listen_close(ls);
	return rv;
}

static bool is_event(void *item, void *key)
{
	return item == key;
}

void gm_listen_close(gm_listen *ls)
{
	ls->open_timers = ls->n;
	for (unsigned i = 0; i < ls->n; i++) {
		lsn *ln = &ls->v[i];

		ln->closing = 1;
		/* No accept callback after this; a failure one posted just
		 * before is taken back (the connections it posted are freed
		 * as they come, l->listen being NULL). */
		gm_listener_free(ln->gl);
		ln->gl = NULL;
		gm_inbox_cancel(ls->l->events, is_event, &ln->ev);
		uv_close((uv_handle_t *)&ln->retry, timer_closed);
	}
	gm_tls_ctx_free(ls->tls);
	ls->tls = NULL;
	if (ls->n == 0) {
		free(ls->v);
		free(ls);
	}
}

int gm_listen_port(const gm_listen *ls)
{
	for (unsigned i = 0; i < ls->n; i++)
		if (ls->v[i].gl != NULL && gm_listener_port(ls->v[i].gl) != 0)
			return gm_listener_port(ls->v[i].gl);
	return 0;
}
