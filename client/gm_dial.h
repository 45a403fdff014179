/*
 * gm_dial.h - private to the client library: the REQ socket of a
 * client, dialling daemons on it (TLS for tls+tcp://) and closing it.
 * Any thread.
 */
#ifndef GM_DIAL_H
#define GM_DIAL_H

#include <nng/nng.h>

#include "gemmd.h"

/* Opens a REQ socket with no receive size limit (replies are as large
 * as the results) and no resend, so that a request runs at most once
 * (see gemmd.h). Error with gemmd_last_error() set. */
int gm_dial_socket(nng_socket *sock);

/* Dials url on sock with opts (TLS files and server name for
 * tls+tcp://, GEMMD_OPEN_LAZY not to wait for the connection). Error
 * with gemmd_last_error() set. */
int gm_dial_url(nng_socket sock, const char *url, const gemmd_open_opts *o);

/* Closes sock without hanging on nng 1.5.2's close of a half-written
 * large message: on a thread of its own, left behind if it has not
 * returned within a second. */
void gm_dial_close(nng_socket sock);

#endif
