/*
 * detach_fx.h - what the tests of daemon/gm_detach share: a table of
 * detached jobs opened and closed, principals, bare scheduler records
 * whose state the test sets and whose replies it builds (nothing runs,
 * and no job is ever queued in a scheduler), the answer callback's last
 * call, states, counts and status documents read back.
 */
#ifndef DETACH_FX_H
#define DETACH_FX_H

#include <cjson/cJSON.h>
#include <inttypes.h>
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

#include "gm_detach.h"

#define MAXREQ 16
#define BIG    (UINT64_C(1) << 30)

/* What the answer callback was last given. */
struct answer {
	int n;
	void *w;
	uint64_t id;
	uint8_t *result;
	uint64_t len;
	int code;
	char text[160];
};

extern struct answer ans;
extern gm_sched_request *reqs[MAXREQ];
extern int nreqs;

/* The principal the jobs are added for, and two others: another uid,
 * and an anonymous client. */
extern gm_principal *me, *other, *anon;

gm_principal *principal(int kind, uint64_t uid);

void on_answer(void *w, uint64_t id, uint8_t *result, uint64_t len, int code,
	       const char *text, void *arg);

gm_detach *open_t(unsigned keep_s, uint64_t max_bytes);
void close_t(gm_detach *t);

/* A one-job fp64 m x m x m request, its job queued. */
gm_sched_request *req(uint32_t m);

uint64_t reply_bytes(uint32_t m);

/* Records r's job after making room for it. */
uint64_t add(gm_detach *t, gm_sched_request *r);

/* r's reply frame (malloc'd, *len bytes): its result (every byte 0x5a)
 * when status is 0. */
uint8_t *reply(const gm_sched_request *r, int status, uint64_t *len);

/* Finishes r's job (id) with status. */
void finish(gm_detach *t, gm_sched_request *r, uint64_t id, int status);

/* What the last wait_job was told. */
extern char said[128];

/* gm_detach_wait of job id for who, as wait w of request req_id. */
int wait_job(gm_detach *t, const gm_principal *who, uint64_t id, int64_t ms,
	     void *w, uint64_t req_id);

cJSON *status_doc(gm_detach *t, uint64_t id);
const char *state_of(gm_detach *t, uint64_t id);
gm_stats_detach counts(gm_detach *t);

/* The GEMM_REPLY a wait was answered with: its header carries the
 * wait's request id and job index 0. */
void check_result(uint64_t req_id, int status);

void sleep_ms(long ms);

/* The number at key of job id's status document. */
double status_num(gm_detach *t, uint64_t id, const char *key);

#endif
