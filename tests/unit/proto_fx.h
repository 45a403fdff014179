/*
 * proto_fx.h - what the tests of proto/gm_proto share: a scratch buffer,
 * the limits the tables run against, byte patterns, frames encoded as a
 * client would, and readers of a byte stream that run the checks as
 * gemmd and the client library do, each given only the bytes the checks
 * before it allow, in heap buffers of exactly that size (so that
 * AddressSanitizer reports a decoder that reads further).
 */
#ifndef PROTO_FX_H
#define PROTO_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gm_proto.h"
#include "gm_proto_region.h"

#define MSG_LEN 256
#define RID	0x1122334455667788ull /* region ids */
#define RID2	0x99aabbccddeeff01ull

/* Room for the largest frame a test builds, plus slack for offsets. */
#define PROTO_BUF (1 << 18)
extern uint8_t buf[PROTO_BUF];

/* The message of the last check the readers below, or a test, ran. */
extern char msg[MSG_LEN];

/* What the tables run against: 4 jobs of dims up to 64 and 4096 bytes,
 * GEMM bodies up to 1024 bytes, CTRL bodies up to 64. */
extern const gm_limits lim_small;

/* No limit below the hard ceilings. */
extern const gm_limits lim_open;

/* A connection's bytes; pos: how many a reader has taken. */
struct stream {
	const uint8_t *p;
	size_t len, pos;
	int fresh; /* nothing read yet: the connection's first frame */
};

/* Which check stopped a reader; AT_END: it read the whole frame. */
enum stage {
	AT_SP = 1,    /* gm_proto_is_sp, on a connection's first 4 bytes */
	AT_HDR,	      /* gm_proto_get_hdr */
	AT_REQUEST,   /* gm_proto_check_request */
	AT_HEAD,      /* gm_proto_check_head */
	AT_DESCS,     /* gm_proto_check_descs */
	AT_REPLY_HDR, /* gm_proto_check_reply_hdr */
	AT_REPLY_JOB, /* gm_proto_get_reply_job */
	AT_ERROR,     /* gm_proto_get_error */
	AT_END,
};

/* What a request reader took from the stream, in exact copies. */
struct request {
	enum stage at;
	gm_hdr h;
	gm_batch b;
	uint32_t ndesc;
	uint64_t payload_bytes;
	uint8_t *head, *desc;
	uint8_t *body; /* a CTRL's JSON, a GEMM's payload */
};

/* What a client reader took from the stream. */
struct answer {
	enum stage at;
	gm_hdr h;
	gm_reply_job r;
	uint8_t *result; /* GEMM_REPLY's result bytes */
	uint32_t status; /* ERROR's */
	char text[GM_MSG_TEXT + 1];
};

/* Fills n bytes with a pattern that differs per seed. */
void fill(uint8_t *p, uint64_t n, uint8_t seed);

int same(const uint8_t *p, uint64_t n, uint8_t seed);

void put_le(uint8_t *p, int width, uint64_t v);

uint64_t get_le(const uint8_t *p, int width);

gm_job_desc job(int dtype, uint32_t m, uint32_t n, uint32_t k);

/* A little-endian field written over a frame's byte off. */
struct patch {
	size_t off;
	int width; /* bytes; 0 ends a list */
	uint64_t val;
};

/* Writes the patches at p[0..max-1] into frame, up to one of width 0. */
void apply_patches(uint8_t *frame, const struct patch *p, int max);

/* Encodes a GEMM request for jobs d[0..n-1] at p (room bytes): header,
 * batch, job headers, the descriptors of the jobs with GM_JOB_REGIONS
 * (ref[i] for job i; ref may be NULL when no job has the flag), then
 * each job's inline operands, operand op of job i filled with seed
 * 16 * i + op. Returns the frame's length. */
size_t put_request(uint8_t *p, size_t room, uint64_t id, const gm_batch *b,
		   const gm_job_desc *d,
		   const gm_region_ref (*ref)[GM_OPND_COUNT], uint32_t n);

/* A heap copy of n bytes that starts at an odd address and ends exactly
 * where the bytes end, so that a decoder reading past them is a heap
 * overflow for ASan; NULL for n = 0. */
uint8_t *exact(const uint8_t *p, uint64_t n);

void exact_free(uint8_t *p);

/* The next n bytes, as an exact copy. The stream must hold them: a
 * reader asking for bytes the checks so far did not promise is a test
 * failure. */
uint8_t *take(struct stream *s, uint64_t n);

void request_free(struct request *r);

/* What the daemon relies on once a request passed: the iterator, with
 * and without the payload at hand, locates every inline operand inside
 * the payload, back to back in job order; the jobs fill the payload
 * exactly; each job header re-encodes to the bytes it came from. */
void check_walk(const struct request *r);

/*
 * Reads one request frame from s as the daemon reads a connection
 * (PROTOCOL.md §8): on a fresh connection its first 4 bytes (a v1
 * client?), then the header, and after each check only what it allows:
 * a CTRL's body, or a GEMM's head, descriptors and payload. Returns the
 * first failure's code, r->at naming the check, or GM_OK with the
 * frame read whole and its jobs walked.
 */
int read_request(struct stream *s, const gm_limits *lim, struct request *r);

/* Reads a whole frame of len bytes at p as a fresh connection's first. */
int read_one(const uint8_t *p, size_t len, const gm_limits *lim,
	     struct request *r);

/* gm_proto_check_gemm on len bytes at p, its message in msg. */
int check_gemm(const uint8_t *p, size_t len, const gm_limits *lim, gm_hdr *h,
	       gm_batch *b);

/* Reads one frame from the daemon as a client waiting for the replies
 * of a request of njobs jobs does: an ERROR by gm_proto_get_error on a
 * body of the length its header says, anything else as a GEMM_REPLY,
 * its record and then its result. */
int read_answer(struct stream *s, uint32_t njobs, struct answer *a);

/* Field by field: the struct has padding that no decoder writes. */
void assert_job_equal(const gm_job_desc *x, const gm_job_desc *y);

/* A GEMM_REPLY frame for job index of a request, result filled with
 * seed 40 + index; returns its length. */
size_t put_reply(uint8_t *p, uint64_t id, uint32_t index,
		 const gm_reply_job *r);

#endif
