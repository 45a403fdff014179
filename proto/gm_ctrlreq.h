/*
 * gm_ctrlreq.h - the JSON body of a CTRL request, read strictly.
 *
 * A control request is one JSON object and nothing else (white space
 * around it aside), in valid UTF-8, with no member twice and at most 256
 * members in any object, nested or not. Its members are those its op
 * takes, each of its type: an integer is a JSON number without fraction
 * or exponent, read exactly (never through a double), and a string holds
 * no NUL. Anything else is refused with the code PROTOCOL.md §7 gives
 * and a message naming what is wrong and where. The parser allocates
 * nothing (it takes about 110 KiB of stack), so it may run on the
 * daemon's loop: its work is linear in the body, which the transport
 * caps at max_ctrl_bytes (at most 256 KiB: the worst body of that size,
 * objects of 256 members throughout, takes about 0.7 ms on a 2-core x86
 * host, 64 KiB 0.2 ms; tests/unit/test_ctrlreq.c times it). Pure; any
 * thread with that much stack.
 */
#ifndef GM_CTRLREQ_H
#define GM_CTRLREQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, "wire name", members it takes: GM_CTRLREQ_M_* bits, whether
 * only an admin principal may ask it: PROTOCOL.md 7.3) */
#define GM_CTRLREQ_OP_MAP(X)                                        \
	X(PING, "ping", 0, 0)                                       \
	X(STATS, "stats", 0, 0)                                     \
	X(STATUS, "status", GM_CTRLREQ_M_JOB, 0)                    \
	X(WAIT, "wait", GM_CTRLREQ_M_JOB | GM_CTRLREQ_M_TIMEOUT, 0) \
	X(CANCEL, "cancel", GM_CTRLREQ_M_JOB, 0)                    \
	X(DRAIN, "drain", 0, 1)                                     \
	X(RESUME, "resume", 0, 1)                                   \
	X(JOBS, "jobs", 0, 0)

/* Members beside "op". */
#define GM_CTRLREQ_M_JOB     0x1u /* "job": integer 1 .. 2^64 - 1 */
#define GM_CTRLREQ_M_TIMEOUT 0x2u /* "timeout_ms": integer 0 .. 10^12 */

enum gm_ctrlreq_op {
	GM_CTRLREQ_NONE = 0,
#define GM_CTRLREQ_ENUM(name, wire, members, admin) GM_CTRLREQ_##name,
	GM_CTRLREQ_OP_MAP(GM_CTRLREQ_ENUM)
#undef GM_CTRLREQ_ENUM
	    GM_CTRLREQ_OP_COUNT
};

/* Nesting of objects and arrays: the top object is level 1, and each
 * object or array inside another one level more. */
#define GM_CTRLREQ_DEPTH_MAX   16
#define GM_CTRLREQ_TIMEOUT_MAX 1000000000000ull

/* A control request, read. */
typedef struct gm_ctrlreq {
	int op;		     /* enum gm_ctrlreq_op */
	unsigned members;    /* GM_CTRLREQ_M_* present */
	uint64_t job;	     /* with GM_CTRLREQ_M_JOB */
	uint64_t timeout_ms; /* with GM_CTRLREQ_M_TIMEOUT */
} gm_ctrlreq;

/*
 * Reads the len bytes at body into r. Returns GM_OK; GM_EJSON when the
 * body is not one strict JSON object (syntax, invalid UTF-8, a NUL in a
 * string, a member twice or over 256 members in any object, bytes after
 * the object, nesting over GM_CTRLREQ_DEPTH_MAX); GM_EINVAL for no "op", an op
 * not in the table, or a member of the wrong type or range; GM_EFIELD for a
 * member the op does not take. Checked in that order: the whole body is JSON
 * before any member is looked at. msg names the byte offset or the member.
 */
int gm_ctrlreq_parse(const uint8_t *body, size_t len, gm_ctrlreq *r, char *msg,
		     size_t msglen);

/* "ping", "stats", ...; NULL for another value. */
const char *gm_ctrlreq_op_name(int op);

/* Whether op is an admin operation (drain, resume); 0 for another
 * value. */
int gm_ctrlreq_op_admin(int op);

/* The ops, comma-separated, for messages: "ping, stats, ...". */
extern const char gm_ctrlreq_ops[];

#ifdef __cplusplus
}
#endif
#endif
