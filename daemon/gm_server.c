/*
 * gm_server.c - nng rep0 socket, listeners and the context state
 * machines, and who may connect: the ipc:// allow-lists checked against
 * the peer's credentials, TLS files checked before nng sees them, and a
 * warning for plain TCP off the loopback; see gm_server.h.
 */
#include "gm_server.h"

#include <errno.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/supplemental/util/platform.h>
#include <nng/transport/ipc/ipc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gm_clock.h"
#include "gm_error_nng.h"
#include "gm_inbox.h"
#include "gm_log.h"

#define TLS_FILE_MAX (1u << 20) /* certificates are a few KiB */

/* A refused client redials every 100 ms or so: log one refusal a second. */
#define REFUSAL_LOG_MS 1000

struct gm_work {
	enum { RECV, WAIT, SEND } state;
	nng_aio *aio;
	nng_ctx ctx;
	nng_msg *msg;
	gm_server *srv;
	void *link; /* on the inbox while WAIT and not yet handed over */
};

struct gm_server {
	nng_socket sock;
	nng_listener *listeners;
	unsigned nlisteners;
	gm_work *works;
	unsigned nworks;
	gm_inbox *inbox; /* received requests, for the loop */
	atomic_uint sending;
	double flush_eta_us; /* loop thread: see gm_server_flushed */
	atomic_uint busy;    /* contexts out of RECV */
	gm_server_req_fn fn;
	void *arg;
	const gm_config *cfg; /* the allow-lists; read-only, outlives us */
	/* Connections, counted on nng threads by pipe_cb. */
	atomic_uint_fast64_t pipes_added, pipes_removed, pipes_refused;
	atomic_uint_fast64_t refusal_logged; /* nng_clock() of the last line */
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
		atomic_fetch_add(&s->busy, 1);
		gm_inbox_post(s->inbox, w); /* open as long as the socket */
		break;
	case SEND:
		/* On failure the message is still ours to free. */
		if (rv != 0)
			nng_msg_free(nng_aio_get_msg(w->aio));
		atomic_fetch_sub(&s->sending, 1);
		atomic_fetch_sub(&s->busy, 1);
		if (rv == NNG_ECLOSED)
			return;
		w->state = RECV;
		nng_ctx_recv(w->ctx, w->aio);
		break;
	case WAIT:
		break;
	}
}

/* Loop thread: a request the inbox handed over. */
static void on_received(void *item, void *arg)
{
	gm_work *w = item;
	gm_server *s = arg;
	nng_msg *m = w->msg;

	w->msg = NULL;
	s->fn(w, m, s->arg);
}

/* A rate the transports beat with room to spare (nng ipc:// moves about
 * 2 GB/s), for how long queued replies may still be in flight. */
#define FLUSH_BYTES_PER_US 200.0

void gm_server_reply(gm_work *w, nng_msg *reply)
{
	gm_server *s = w->srv;
	double now = gm_clock_now_us();

	/* Replies leave one after another, so each one's bytes extend the
	 * time by which all of them should be written. */
	if (s->flush_eta_us < now)
		s->flush_eta_us = now;
	s->flush_eta_us += (double)nng_msg_len(reply) / FLUSH_BYTES_PER_US;
	atomic_fetch_add(&w->srv->sending, 1);
	w->state = SEND;
	nng_aio_set_msg(w->aio, reply);
	nng_ctx_send(w->ctx, w->aio);
}

void gm_server_drop(gm_work *w)
{
	/* A rep0 context that receives again drops the request it held. */
	atomic_fetch_sub(&w->srv->busy, 1);
	w->state = RECV;
	nng_ctx_recv(w->ctx, w->aio);
}

int gm_server_flushed(gm_server *s)
{
	gm_server_count c;

	if (atomic_load(&s->sending) != 0)
		return 0;
	gm_server_counts(s, &c);
	return c.open == 0 || gm_clock_now_us() >= s->flush_eta_us;
}

unsigned gm_server_sending(gm_server *s)
{
	return atomic_load(&s->sending);
}

void gm_server_counts(gm_server *s, gm_server_count *out)
{
	uint64_t removed = atomic_load(&s->pipes_removed);

	out->contexts = s->nworks;
	out->busy = atomic_load(&s->busy);
	/* Removals are read first, so a connection that comes and goes
	 * between the two loads cannot make the difference negative. */
	out->open = atomic_load(&s->pipes_added) - removed;
	out->refused = atomic_load(&s->pipes_refused);
}

/* Logs a refusal unless one was logged less than REFUSAL_LOG_MS ago. */
static void log_refusal(gm_server *s, const char *why)
{
	uint_fast64_t last = atomic_load(&s->refusal_logged);
	nng_time now = nng_clock();

	if ((last != 0 && now - last < REFUSAL_LOG_MS) ||
	    !atomic_compare_exchange_strong(&s->refusal_logged, &last, now))
		return;
	GM_LOG(GM_LOG_WARN,
	       "refused an ipc connection %s (%llu refused so far; one such "
	       "line a second at most)",
	       why, (unsigned long long)atomic_load(&s->pipes_refused) + 1);
}

/* tcp:// and tls+tcp:// peers are not subject to the allow-lists; an
 * ipc:// peer whose credentials cannot be read is refused. */
static bool peer_allowed(gm_server *s, nng_pipe p)
{
	nng_sockaddr sa;
	uint64_t uid, gid;
	char why[96];

	if (s->cfg->nallow_uids == 0 && s->cfg->nallow_gids == 0)
		return true;
	if (nng_pipe_get_addr(p, NNG_OPT_LOCADDR, &sa) != 0)
		return false;
	if (sa.s_family != NNG_AF_IPC)
		return true;
	if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) != 0 ||
	    nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_GID, &gid) != 0) {
		log_refusal(s, "whose peer credentials cannot be read");
		return false;
	}
	if (gm_config_allows(s->cfg, uid, gid))
		return true;
	snprintf(why, sizeof(why),
		 "from uid %llu gid %llu, in neither allow_uids nor allow_gids",
		 (unsigned long long)uid, (unsigned long long)gid);
	log_refusal(s, why);
	return false;
}

/*
 * nng thread. ADD_PRE comes once per connection, after the handshake and
 * before the pipe joins the socket: a pipe closed here never reaches a
 * context, so a refused peer gets nothing run. REM_POST follows every
 * ADD_PRE, refused pipes included, so added - removed is what is open.
 */
static void pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	gm_server *s = arg;

	if (ev == NNG_PIPE_EV_REM_POST) {
		atomic_fetch_add(&s->pipes_removed, 1);
		return;
	}
	atomic_fetch_add(&s->pipes_added, 1);
	if (!peer_allowed(s, p)) {
		atomic_fetch_add(&s->pipes_refused, 1);
		nng_pipe_close(p);
	}
}

static int nng_fail(int rv, const char *what, const char *url, char *msg,
		    size_t len)
{
	snprintf(msg, len, "%s %s: %s", what, url, nng_strerror(rv));
	return gm_error_nng(rv);
}

/* Reads a whole PEM file into a NUL-terminated malloc'd string and
 * checks that it holds a PEM block of the kind named by marker. */
static int read_pem(const char *path, const char *marker, char **out, char *msg,
		    size_t len)
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
	if (strstr(buf, marker) == NULL) {
		free(buf);
		snprintf(msg, len, "TLS file %s: no \"%s\" PEM block in it",
			 path, marker);
		return GM_ECONFIG;
	}
	*out = buf;
	return GM_OK;
}

/* Whether nng can parse the certificate(s) in pem: loading them as a CA
 * chain of a scratch configuration parses them without a key. */
static bool cert_parses(const char *pem)
{
	nng_tls_config *tc;
	bool ok;

	if (nng_tls_config_alloc(&tc, NNG_TLS_MODE_CLIENT) != 0)
		return true; /* cannot tell; the caller's message names both */
	ok = nng_tls_config_ca_chain(tc, pem, NULL) == 0;
	nng_tls_config_free(tc);
	return ok;
}

/* Names the file nng could not use: the certificate when it does not
 * parse alone, else the key. (A key that parses but is not the
 * certificate's is not caught here: handshakes fail instead.) */
static int own_cert_error(const gm_config *cfg, const char *cert, int rv,
			  char *msg, size_t len)
{
	if (!cert_parses(cert))
		snprintf(msg, len, "TLS certificate file %s: %s", cfg->tls_cert,
			 nng_strerror(rv));
	else
		snprintf(msg, len, "TLS key file %s (for %s): %s", cfg->tls_key,
			 cfg->tls_cert, nng_strerror(rv));
	return GM_ECONFIG;
}

static int tls_setup(nng_listener l, const gm_config *cfg, char *msg,
		     size_t len)
{
	nng_tls_config *tc;
	char *cert = NULL, *key = NULL, *ca = NULL;
	int rv;

	if (!cfg->tls_cert || !cfg->tls_key || !cfg->tls_ca) {
		snprintf(msg, len,
			 "tls+tcp:// needs tls_cert, tls_key and "
			 "tls_ca in the configuration");
		return GM_ECONFIG;
	}
	if ((rv = nng_tls_config_alloc(&tc, NNG_TLS_MODE_SERVER)) != 0)
		return nng_fail(rv, "TLS", "config", msg, len);
	if ((rv = read_pem(cfg->tls_cert, "-----BEGIN CERTIFICATE-----", &cert,
			   msg, len)) != 0 ||
	    (rv = read_pem(cfg->tls_key, "PRIVATE KEY-----", &key, msg, len)) !=
		0 ||
	    (rv = read_pem(cfg->tls_ca, "-----BEGIN CERTIFICATE-----", &ca, msg,
			   len)) != 0)
		goto out;
	if ((rv = nng_tls_config_own_cert(tc, cert, key, NULL)) != 0) {
		rv = own_cert_error(cfg, cert, rv, msg, len);
		goto out;
	}
	if ((rv = nng_tls_config_ca_chain(tc, ca, NULL)) != 0) {
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
	free(ca);
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
		/* A directory made here gets exactly 0750 whatever the
		 * umask; one that exists is the operator's to set. */
		if (mkdir(dir, 0750) == 0)
			rv = chmod(dir, 0750);
		else
			rv = errno == EEXIST ? 0 : -1;
		if (rv != 0) {
			snprintf(msg, len, "creating %s for %s: %s", dir, url,
				 strerror(errno));
			return GM_EIO;
		}
	}
	if ((rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS, 0660)) != 0)
		return nng_fail(rv, "setting permissions on", url, msg, len);
	return GM_OK;
}

/* Plain TCP has neither authentication nor encryption: fine on the
 * loopback, worth a warning anywhere else. */
static void warn_plain_tcp(const char *url)
{
	const char *host = url + strlen("tcp://");

	if (strncmp(host, "127.", 4) == 0 ||
	    strncmp(host, "localhost:", 10) == 0 ||
	    strncmp(host, "[::1]:", 6) == 0)
		return;
	GM_LOG(GM_LOG_WARN,
	       "%s is plain TCP off the loopback: anyone who can reach it can "
	       "submit jobs, and nothing is encrypted; use tls+tcp:// or a "
	       "loopback address unless the network is trusted",
	       url);
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
	else
		warn_plain_tcp(url);
	if (rv != 0)
		return rv;
	if ((rv = nng_listener_start(l, 0)) != 0)
		return nng_fail(rv, "listening on", url, msg, len);
	GM_LOG(GM_LOG_INFO, "listening on %s", url);
	return GM_OK;
}

/* Hooks pipe_cb on before any listener starts, so that no connection
 * is let in unchecked. */
static int open_access(gm_server *s, const gm_config *cfg, char *msg,
		       size_t len)
{
	bool lists = cfg->nallow_uids != 0 || cfg->nallow_gids != 0;
	bool ipc = false;
	int rv;

	s->cfg = cfg;
	if ((rv = nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, pipe_cb, s)) !=
		0 ||
	    (rv = nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, pipe_cb, s)) !=
		0)
		return nng_fail(rv, "watching", "connections", msg, len);
	for (unsigned i = 0; i < cfg->nlisten; i++)
		ipc = ipc || strncmp(cfg->listen[i], "ipc://", 6) == 0;
	if (lists && !ipc)
		GM_LOG(GM_LOG_WARN, "allow_uids and allow_gids apply to ipc:// "
				    "connections only, and no ipc:// URL is "
				    "listed");
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
		if ((rv = nng_aio_alloc(&w->aio, work_cb, w)) != 0)
			return nng_fail(rv, "opening", "context", msg, len);
		if ((rv = nng_ctx_open(&w->ctx, s->sock)) != 0) {
			nng_aio_free(w->aio);
			return nng_fail(rv, "opening", "context", msg, len);
		}
		s->nworks++;
	}
	return GM_OK;
}

/* Closes the socket, which ends every pipe, listener and callback, and
 * frees the contexts with the requests they still hold. */
static void close_socket(gm_server *s)
{
	/* When nng_close returns, every pipe is gone and pipe_cb is done. */
	nng_close(s->sock);
	/* nng_aio_free waits for a running callback; after the close no
	 * new one starts. */
	for (unsigned i = 0; i < s->nworks; i++) {
		nng_aio_free(s->works[i].aio);
		if (s->works[i].msg != NULL)
			nng_msg_free(s->works[i].msg);
	}
	free(s->works);
}

int gm_server_open(uv_loop_t *loop, const gm_config *cfg, gm_server_req_fn fn,
		   void *arg, gm_server **out, char *msg, size_t msglen)
{
	gm_server *s = calloc(1, sizeof(*s));
	int rv = GM_ENOMEM;

	snprintf(msg, msglen, "server: out of memory");
	if (s == NULL)
		return rv;
	s->fn = fn;
	s->arg = arg;
	if ((rv = gm_inbox_open(loop, offsetof(gm_work, link), on_received,
				NULL, s, &s->inbox, msg, msglen)) != 0)
		goto fail_inbox;
	if ((s->listeners = calloc(cfg->nlisten, sizeof(*s->listeners))) ==
	    NULL) {
		rv = GM_ENOMEM;
		goto fail_listeners;
	}
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		rv = nng_fail(rv, "opening", "socket", msg, msglen);
		goto fail_listeners;
	}
	if ((rv = nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ,
				      (size_t)cfg->max_message_bytes)) != 0) {
		rv = nng_fail(rv, "setting the size limit of", "socket", msg,
			      msglen);
		goto fail_socket;
	}
	if ((rv = open_access(s, cfg, msg, msglen)) != 0 ||
	    (rv = open_works(s, cfg->contexts, msg, msglen)) != 0)
		goto fail_socket;
	for (unsigned i = 0; i < cfg->nlisten; i++)
		if ((rv = listen_one(s, cfg, cfg->listen[i], msg, msglen)) != 0)
			goto fail_socket;
	for (unsigned i = 0; i < s->nworks; i++) {
		s->works[i].state = RECV;
		nng_ctx_recv(s->works[i].ctx, s->works[i].aio);
	}
	*out = s;
	return GM_OK;
fail_socket:
	close_socket(s);
fail_listeners:
	free(s->listeners);
	gm_inbox_close(s->inbox, NULL, NULL);
fail_inbox:
	free(s);
	return rv;
}

void gm_server_close(gm_server *s)
{
	close_socket(s);
	free(s->listeners);
	/* What it still held pointed into the contexts just freed. */
	gm_inbox_close(s->inbox, NULL, NULL);
	free(s);
}
