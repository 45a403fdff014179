/*
 * gm_jobstate.h - the states of a detached job, as the daemon records
 * them and control replies carry them ("state":"queued", PROTOCOL.md
 * 7.1).
 *
 * Every state is listed once in GM_JOBSTATE_MAP so that the enum, the
 * value and the name on the wire cannot drift apart; the daemon's
 * detached-job table and the client library (whose public enum
 * gemmd_job_state is checked against this one at compile time) both use
 * it. The values are an API: append, never renumber.
 */
#ifndef GM_JOBSTATE_H
#define GM_JOBSTATE_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, wire name) */
#define GM_JOBSTATE_MAP(X)         \
	X(QUEUED, 0, "queued")     \
	X(RUNNING, 1, "running")   \
	X(DONE, 2, "done")         \
	X(FAILED, 3, "failed")     \
	X(CANCELED, 4, "canceled") \
	X(EXPIRED, 5, "expired")

typedef enum gm_jobstate {
#define GM_JOBSTATE_ENUM(name, val, wire) GM_JOBSTATE_##name = val,
	GM_JOBSTATE_MAP(GM_JOBSTATE_ENUM)
#undef GM_JOBSTATE_ENUM
	    GM_JOBSTATE_COUNT
} gm_jobstate;

/* The wire name of state ("queued", ...), or NULL for a value not in
 * GM_JOBSTATE_MAP. Any thread. */
const char *gm_jobstate_name(int state);

/* The state named name, or -1 for a name not in GM_JOBSTATE_MAP (and
 * for NULL). Any thread. */
int gm_jobstate_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif
