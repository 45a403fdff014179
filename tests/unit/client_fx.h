/*
 * client_fx.h - what the client library's tests share: a fixture with a
 * temporary directory, a scripted peer (gm_testpeer.h) and a client;
 * jobs with random operands checked against the long double reference;
 * calls run on a thread of their own, so that the test's thread plays
 * the daemon meanwhile.
 */
#ifndef CLIENT_FX_H
#define CLIENT_FX_H

#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gemmd.h"
#include "gm_testpeer.h"
#include "gm_testpki.h"
#include "gm_testref.h"

/* A call run on its own thread: a blocking one, its code and
 * gemmd_last_error() kept. */
struct bg {
	pthread_t thread;
	bool running;
	int rv;
	char msg[256];
	int (*fn)(struct bg *b);
	gemmd_client *cl;
	gemmd_job *jobs;
	uint32_t n;
	int timeout_ms;
	const char *json;
	char *reply;
	uint64_t id, *ids;
	gm_batch batch;
};

struct fixture {
	char dir[64];
	char url[128];
	gm_testpeer *peer;
	gm_testconn *conn;
	gemmd_client *cl;
	struct bg call;
	char last_error[256];
	gm_testpki pki;
};

#define FX_TEST(t) cmocka_unit_test_setup_teardown(t, fx_setup, fx_teardown)

int fx_setup(void **state);
int fx_teardown(void **state);

/* url: ipc:// in the fixture's directory. */
void fx_url(struct fixture *fx);

/* A peer listening on fx->url (made by fx_url when empty). */
void fx_peer(struct fixture *fx);

/* A peer, and a client of it opened with opts (NULL: none) that
 * connected. */
void fx_client_opts(struct fixture *fx, const gemmd_open_opts *opts);
void fx_client(struct fixture *fx, unsigned flags);

/* The next connection the peer accepted, into fx->conn. */
void fx_accept(struct fixture *fx);
#define fx_accept_next fx_accept

void fx_free_peer(struct fixture *fx);

/* Certificates in the fixture's directory and a server context; false
 * without the openssl command. */
bool fx_pki(struct fixture *fx, gm_tls_ctx **sctx);

double now_ms(void);

/* ---- jobs ---- */

typedef struct tjob {
	gemmd_job job;
	void *a, *b, *c, *out;
	size_t out_bytes;
} tjob;

/* A job of random operands, out filled with NaN. */
void tjob_make(tjob *j, int dtype, int layout, uint32_t m, uint32_t n,
	       uint32_t k, int trans_a, int trans_b, int has_c);

/* n jobs of one shape, every other one with C, into j[] and jobs[]. */
void tjobs_make(tjob *j, gemmd_job *jobs, int n, int dtype, uint32_t m,
		uint32_t nn, uint32_t k);

/* Takes jobs[] back into j[], checks each (tjob_check) and frees it. */
void tjobs_check(tjob *j, const gemmd_job *jobs, int n);

/* Asserts that j succeeded with the reference's result. */
void tjob_check(const tjob *j);

/* Asserts that j's out was not written. */
void tjob_untouched(const tjob *j);

void tjob_free(tjob *j);

/* ---- calls on their own thread ---- */

/* gemmd_submit of jobs on fx->call. */
void async_submit(struct fixture *fx, gemmd_job *jobs, uint32_t n,
		  int timeout_ms);

/* Joins fx->call: its code, gemmd_last_error() in fx->last_error. */
int async_wait(struct fixture *fx);

/* gemmd_submit_async with a semaphore. */
struct async {
	sem_t sem;
	int rv;
};
void async_start(gemmd_client *cl, gemmd_job *jobs, uint32_t n, int timeout_ms,
		 struct async *a);
int async_end(struct async *a);

/* gemmd_ctrl, gemmd_wait and gemmd_submit_detached on a thread. */
void ctrl_start(struct fixture *fx, struct bg *b, const char *json);
void wait_start(struct fixture *fx, struct bg *b, uint64_t id, gemmd_job *job);
void detach_start(struct fixture *fx, struct bg *b, gemmd_job *jobs, uint32_t n,
		  uint64_t *ids);
int bg_end(struct bg *b);

/* A client of a new peer (fx_client(fx, 0)), jobs submitted on
 * fx->call, its connection accepted and the request's frame read into
 * f. */
void fx_submit_read(struct fixture *fx, gemmd_job *jobs, uint32_t n,
		    int timeout_ms, gm_testframe *f);

/* Serves the call async_submit started: its frame read on fx->conn,
 * every job of it answered, the call's success awaited. */
void serve_pending(struct fixture *fx);

/* Runs jobs through fx->conn: the call, the frame, its replies. */
void serve_one(struct fixture *fx, gemmd_job *jobs, uint32_t n);
void serve_ping(struct fixture *fx);

/* Writes a GEMM_REPLY whose result stops after cut bytes. */
void write_cut_reply(gm_testconn *c, uint64_t id, uint32_t index,
		     const gm_reply_job *r, const void *result, size_t cut);

#endif
