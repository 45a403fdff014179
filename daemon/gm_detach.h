/*
 * gm_detach.h - detached jobs: the ids a detached request was answered
 * with, each job's state, and its result until a wait takes it.
 *
 * A detached job is recorded (gm_detach_add) when its request's payload
 * is in and finished (gm_detach_done) with its reply: the GEMM_REPLY
 * frame the daemon built for it, copied out of the request's slab, which
 * the table keeps as it is and hands to the wait that asks for it with
 * only the request id and job index in its header rewritten. A wait for
 * a job that has not finished parks the caller's connection here (the
 * loop goes on) until the job finishes or the wait's timeout passes.
 *
 * A result is kept detach_keep_s after its job finished, then dropped
 * with a log line (the job reads "expired"); the job's record (state,
 * status, timings, no result) stays as long again, then its id is
 * forgotten. Results and records, each record counted at its size in
 * memory, stay under detach_max_bytes, and a job queued or running
 * holds room for its reply: to make room for a new request the oldest
 * records go first, then the oldest results (logged); a request whose
 * results do not fit even then is refused.
 *
 * Each job belongs to the principal that submitted it (gm_principal.h),
 * and only that principal finds it: to any other its id is unknown, as
 * an id never given is, so that ids cannot be probed. Ids are drawn at
 * random (gm_id.h) from 1..GM_DETACH_ID_MAX, never one in the table:
 * another client cannot guess them, and an id from an earlier daemon is,
 * in practice, unknown to a later one. They stay below 2^53, exact as
 * JSON numbers (PROTOCOL.md 4.3). Loop thread only.
 */
#ifndef GM_DETACH_H
#define GM_DETACH_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "gm_jobstate.h"
#include "gm_principal.h"
#include "gm_sched.h"

/* The largest id: 2^53 - 1, so that a JSON reader keeping numbers as
 * doubles reads every id exactly. */
#define GM_DETACH_ID_MAX ((UINT64_C(1) << 53) - 1)

typedef struct gm_detach gm_detach;

/*
 * Answers a parked wait of waiter w for request req_id: with result (len
 * bytes, malloc'd), the job's GEMM_REPLY frame whose header already
 * carries req_id and index 0 (ownership passes), or when result is NULL
 * with a refusal, code and text. Called from gm_detach_wait,
 * gm_detach_done, gm_detach_cancel and gm_detach_sweep.
 */
typedef void (*gm_detach_answer_fn)(void *w, uint64_t req_id, uint8_t *result,
				    uint64_t len, int code, const char *text,
				    void *arg);

/* A table keeping results keep_s seconds within max_bytes; s is the
 * scheduler queued jobs are canceled from. GM_ENOMEM. */
int gm_detach_create(gm_sched *s, unsigned keep_s, uint64_t max_bytes,
		     gm_detach_answer_fn fn, void *arg, gm_detach **out);

/* Frees every kept result and record. No wait may be parked. */
void gm_detach_destroy(gm_detach *t);

/* What a job whose reply takes reply_bytes counts against max_bytes. */
uint64_t gm_detach_cost(uint64_t reply_bytes);

/* Makes room for a request of njobs jobs taking bytes (gm_detach_cost
 * summed over them): sets aside their records and draws their ids, then
 * drops old records, then old results, until the bytes fit. GM_ENOMEM;
 * GM_EIO when no random id can be had; GM_EBUSY when even a table
 * emptied of finished jobs would not hold them. */
int gm_detach_room(gm_detach *t, uint32_t njobs, uint64_t bytes);

/* Records the one job of request r, about to be submitted, its reply
 * to take reply_bytes, owned by owner (the table takes a reference), and
 * returns the job's new id. Cannot fail: gm_detach_room made room for it
 * and drew its id. */
uint64_t gm_detach_add(gm_detach *t, gm_sched_request *r, uint64_t reply_bytes,
		       gm_principal *owner);

/* Job id is back: reply is its GEMM_REPLY frame, len bytes, malloc'd
 * (ownership passes), or NULL when there was no memory for it (the job
 * then reads failed, ENOMEM). Hands it to a parked wait, drops it if
 * the job was canceled, or keeps it. */
void gm_detach_done(gm_detach *t, uint64_t id, uint8_t *reply, uint64_t len);

/* The status document of job id ({"ok":true,"job":ID,...}, malloc'd),
 * or NULL when out of memory; GM_ENOTFOUND for an id not (or no
 * longer) known, or not who's. */
int gm_detach_status(gm_detach *t, const gm_principal *who, uint64_t id,
		     char **json);

/*
 * A wait of principal who for job id from waiter w, request req_id,
 * answered through the callback at once when the job has finished, else
 * when it does or when timeout_ms (< 0: none) has passed (GM_ETIMEDOUT);
 * the result goes to the wait, which takes it. Returns GM_OK when the
 * callback has answered or will; else the refusal, with text for it,
 * in this order (PROTOCOL.md 7.1): GM_ENOTFOUND (unknown id, not who's,
 * or the result expired or was taken), GM_ECANCELED, GM_EBUSY (another
 * wait is parked on the job), GM_ETIMEDOUT (not finished, timeout_ms 0).
 */
int gm_detach_wait(gm_detach *t, const gm_principal *who, uint64_t id,
		   int64_t timeout_ms, void *w, uint64_t req_id, char *text,
		   size_t len);

/* Cancels who's job id: a queued job is taken out of the queue and never
 * runs, a running one runs to its end but its result is dropped, a kept
 * result is dropped; the job then reads canceled, status GM_ECANCELED.
 * *state is the state after (a running job reads GM_JOBSTATE_RUNNING
 * until it ends). GM_ENOTFOUND, also for another principal's job. */
int gm_detach_cancel(gm_detach *t, const gm_principal *who, uint64_t id,
		     int *state);

/* Adds to into (a cJSON array) one object per job of the table that who
 * owns (NULL: every job), {"job":ID,"detached":true,"state":...,
 * "owner":...,"dtype":...,"m":...,"n":...,"k":...,"priority":...,
 * "status":...,"error":...,"result":...}, as long as *room is not 0;
 * lowers *room by what it added and returns how many it left out for
 * want of room. */
uint64_t gm_detach_list(const gm_detach *t, const gm_principal *who,
			cJSON *into, uint64_t *room);

/* Drops results and records whose time is up, and answers the waits
 * whose timeout passed. */
void gm_detach_sweep(gm_detach *t);

/* When gm_detach_sweep next has work (gm_clock_now_us clock); 0: none. */
double gm_detach_next_due(const gm_detach *t);

/* Fills the stats document's view of the table. */
void gm_detach_counts(const gm_detach *t, gm_stats_detach *out);

#endif
