/*
 * net_fx.h - what the tests of net/ share: a temporary directory with
 * certificates (setup, teardown), a listener and a dialer joined into a
 * pair of streams of any kind, TLS contexts, random bytes exchanged both
 * ways.
 */
#ifndef NET_FX_H
#define NET_FX_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_net.h"
#include "gm_stream.h"
#include "gm_teststream.h"
#include "gm_testpki.h"
#include "gm_tls.h"

extern gm_testpki pki;
extern int have_pki;
extern char dir[];

struct pair {
	gm_listener *l;
	gm_dialer *d;
	gm_stream *srv, *cli;
	gm_tls_ctx *sctx, *cctx;
	char msg[256];
	int srv_rv, cli_rv;
};

/* Opens a listener on url (port 0 for TCP) and a dialer for it. */
void pair_listen(struct pair *p, const char *url, gm_tls_ctx *sctx,
		 gm_tls_ctx *cctx);

void pair_open(struct pair *p, const char *url, gm_tls_ctx *sctx,
	       gm_tls_ctx *cctx);

void pair_close(struct pair *p);
gm_tls_ctx *server_ctx(void);
gm_tls_ctx *client_ctx(const char *cert, const char *key, const char *name);
void fill(uint8_t *p, size_t n, uint32_t seed);
void exchange(struct pair *p, size_t len);

/* A run of tiny reads from one buffer of records: each read's callback
 * starts the next, which must complete after the callback returned. */
struct chain {
	gm_stream *s;
	gm_io io;
	uint8_t *buf;
	size_t len, got, step;
	int max_depth, rv;
	sem_t sem;
};

/* How deep chain_done is nested on this thread: a callback that runs
 * inside the receive its caller started counts 2. Another thread's
 * callback overlapping this one's end does not count. */
extern __thread int chain_depth;

void chain_done(gm_io *io, int rv, size_t n);
void chain_next(struct chain *c);
int setup(void **state);
int teardown(void **state);

#endif
