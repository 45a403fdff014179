/*
 * gmc_reply.h - private to the client library: what a reply says, put
 * into what the caller gave: a job's reply record into its gemmd_job, a
 * CTRL_REPLY's JSON into a control call's document, a detached
 * request's ids, an ERROR into a code and message. Pure functions on
 * bytes already read and checked by gm_proto; any thread.
 */
#ifndef GMC_REPLY_H
#define GMC_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"
#include "gm_proto.h"

/*
 * Checks that reply record r (which passed gm_proto_get_reply_job)
 * answers job j: a result of j's dtype, layout and shape, of
 * result_bytes bytes (0 when the result goes to a region); for a wait
 * of a job without out (alloc_out), takes the result's shape and
 * allocates out. GM_OK, or the job's status with msg: a mismatch is
 * mismatch (GM_EINTERNAL for a daemon bug, GM_EINVAL for a wait with
 * the wrong shape), GM_ENOMEM. Only a record with status 0 is checked.
 */
int gmc_reply_check(gemmd_job *j, const gm_reply_job *r, uint64_t result_bytes,
		    bool alloc_out, int mismatch, char *msg, size_t msglen);

/* Puts r's status, message and timings into j. */
void gmc_reply_take(gemmd_job *j, const gm_reply_job *r);

/* {"ok":true,...}: GM_OK with *doc a NUL-terminated copy (malloc'd);
 * {"ok":false,"code":N,"message":...}: N with the message in msg;
 * anything else GM_EJSON. */
int gmc_reply_ctrl(const char *body, size_t len, char **doc, char *msg,
		   size_t msglen);

/* {"ok":true,"jobs":[ID,...]} with exactly n ids into ids[]; else as
 * gmc_reply_ctrl, or GM_EJSON. */
int gmc_reply_ids(const char *body, size_t len, uint64_t *ids, uint32_t n,
		  char *msg, size_t msglen);

#endif
