/*
 * gm_dial.c - a client's socket: opening it, dialling with TLS, closing
 * it; see gm_dial.h.
 */
#include "gm_dial.h"

#include <errno.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_client.h"
#include "gm_error_nng.h"

static bool has_tls_opts(const gemmd_open_opts *o)
{
	return o->tls_ca_file || o->tls_cert_file || o->tls_key_file ||
	       o->tls_server_name;
}

/* A whole small text file, malloc'd; NULL with errno set on failure. */
static char *slurp(const char *path)
{
	char *text = NULL;
	size_t cap = 0;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	if (getdelim(&text, &cap, '\0', f) < 0) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

/* nng takes a key from its own file only together with the certificate,
 * and a separate one only as PEM text. */
static int tls_cert(nng_tls_config *cfg, const gemmd_open_opts *o)
{
	char *cert, *key;
	int nrv;

	if (o->tls_key_file == NULL)
		nrv = nng_tls_config_cert_key_file(cfg, o->tls_cert_file, NULL);
	else if ((cert = slurp(o->tls_cert_file)) == NULL)
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_cert_file,
					strerror(errno));
	else if ((key = slurp(o->tls_key_file)) == NULL) {
		free(cert);
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_key_file,
					strerror(errno));
	} else {
		nrv = nng_tls_config_own_cert(cfg, cert, key, NULL);
		free(cert);
		free(key);
	}
	if (nrv != 0)
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_cert_file,
					nng_strerror(nrv));
	return GM_OK;
}

static int tls_setup(nng_tls_config *cfg, const char *url,
		     const gemmd_open_opts *o)
{
	const char *name = o->tls_server_name;
	nng_url *u = NULL;
	int nrv, rv;

	if (o->tls_ca_file == NULL)
		return gm_client_seterr(
		    GM_EINVAL, "%s: TLS needs a CA file to verify the daemon",
		    url);
	nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED);
	if ((nrv = nng_tls_config_ca_file(cfg, o->tls_ca_file)) != 0)
		return gm_client_seterr(GM_EINVAL, "%s: %s", o->tls_ca_file,
					nng_strerror(nrv));
	if (o->tls_cert_file != NULL && (rv = tls_cert(cfg, o)) != 0)
		return rv;
	if (name == NULL && nng_url_parse(&u, url) == 0)
		name = u->u_hostname;
	nrv = nng_tls_config_server_name(cfg, name != NULL ? name : "");
	nng_url_free(u);
	if (nrv != 0)
		return gm_client_seterr(gm_error_nng(nrv),
					"%s: server name: %s", url,
					nng_strerror(nrv));
	return GM_OK;
}

static int tls_dialer(nng_dialer d, const char *url, const gemmd_open_opts *o)
{
	nng_tls_config *cfg;
	int rv, nrv;

	if ((nrv = nng_tls_config_alloc(&cfg, NNG_TLS_MODE_CLIENT)) != 0)
		return gm_client_seterr(gm_error_nng(nrv), "%s: TLS: %s", url,
					nng_strerror(nrv));
	if ((rv = tls_setup(cfg, url, o)) == 0 &&
	    (nrv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg)) != 0)
		rv = gm_client_seterr(gm_error_nng(nrv), "%s: TLS: %s", url,
				      nng_strerror(nrv));
	nng_tls_config_free(cfg); /* the dialer keeps its own hold */
	return rv;
}

int gm_dial_url(nng_socket sock, const char *url, const gemmd_open_opts *o)
{
	bool tls = strncmp(url, "tls+", 4) == 0;
	nng_dialer d;
	int rv, nrv;

	if (!tls && has_tls_opts(o))
		return gm_client_seterr(
		    GM_EINVAL, "%s: TLS options need a tls+tcp:// URL", url);
	if ((nrv = nng_dialer_create(&d, sock, url)) != 0)
		return gm_client_seterr(gm_error_nng(nrv), "%s: %s", url,
					nng_strerror(nrv));
	if (tls && (rv = tls_dialer(d, url, o)) != 0)
		return rv;
	nrv = nng_dialer_start(
	    d, (o->flags & GEMMD_OPEN_LAZY) ? NNG_FLAG_NONBLOCK : 0);
	if (nrv != 0) {
		rv = gm_error_nng(nrv);
		return gm_client_seterr(rv == GM_EINVAL ? rv : GM_ETRANSPORT,
					"%s: %s", url, nng_strerror(nrv));
	}
	return GM_OK;
}

/* Large replies are the point, so no receive limit; no resend, so a
 * request runs at most once (see gemmd.h). */
int gm_dial_socket(nng_socket *sock)
{
	int nrv;

	if ((nrv = nng_req0_open(sock)) != 0)
		return gm_client_seterr(gm_error_nng(nrv), "socket: %s",
					nng_strerror(nrv));
	if ((nrv = nng_socket_set_size(*sock, NNG_OPT_RECVMAXSZ, 0)) != 0 ||
	    (nrv = nng_socket_set_ms(*sock, NNG_OPT_REQ_RESENDTIME,
				     NNG_DURATION_INFINITE)) != 0) {
		nng_close(*sock);
		return gm_client_seterr(gm_error_nng(nrv), "socket: %s",
					nng_strerror(nrv));
	}
	return GM_OK;
}

static void *close_main(void *arg)
{
	nng_socket *sock = arg;

	nng_close(*sock);
	free(sock);
	return NULL;
}

/*
 * nng 1.5.2 can block forever in nng_close when a connection is closed
 * while a large message is half written: a REQ socket closed 2 ms after
 * sending 64 MiB hangs, over ipc:// and tcp:// alike, with or without
 * contexts. A client closing with a big request still on the wire (a
 * timeout, or gemmd_close with calls in flight) would hang with it, so
 * the socket is closed on a thread of its own; if that has not returned
 * within CLOSE_WAIT_S, the thread, and the socket, are left behind.
 */
#define CLOSE_WAIT_S 1

void gm_dial_close(nng_socket sock)
{
	nng_socket *arg = malloc(sizeof(*arg));
	struct timespec deadline;
	pthread_t t;

	if (arg == NULL) {
		nng_close(sock);
		return;
	}
	*arg = sock;
	if (pthread_create(&t, NULL, close_main, arg) != 0) {
		free(arg);
		nng_close(sock);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += CLOSE_WAIT_S;
	if (pthread_timedjoin_np(t, NULL, &deadline) != 0)
		pthread_detach(t);
}
