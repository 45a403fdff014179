/*
 * gm_ctrlreq_json.h - private to proto/: the first pass of
 * gm_ctrlreq_parse, which reads a CTRL body as one strict JSON object
 * and notes what the second pass needs of its top object's members.
 * Allocates nothing: about 100 KiB of stack. Pure; any thread.
 */
#ifndef GM_CTRLREQ_JSON_H
#define GM_CTRLREQ_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GM_CTRLREQ_MEMBERS_MAX 256 /* in any object: a request has three */
/* Nesting read at most: GM_CTRLREQ_DEPTH_MAX of gm_ctrlreq.h, which
 * gm_ctrlreq.c checks; this pass builds on no other file of proto/. */
#define GM_CTRLREQ_JSON_DEPTH_MAX 16
/* A member name or op longer than this is none of ours. */
#define GM_CTRLREQ_NAME_MAX 32

enum gm_ctrlreq_vtype {
	GM_CTRLREQ_V_NONE,
	GM_CTRLREQ_V_STRING,
	GM_CTRLREQ_V_INT,
	GM_CTRLREQ_V_OTHER
};

/* What the first pass notes about a member of the top object. */
typedef struct gm_ctrlreq_member {
	char name[GM_CTRLREQ_NAME_MAX + 1]; /* decoded, cut to fit */
	bool long_name; /* longer than GM_CTRLREQ_NAME_MAX: not one of ours */
	int type;	/* enum gm_ctrlreq_vtype */
	bool overflow;	/* an integer over 2^64 - 1, or negative */
	uint64_t u;	/* an integer's value */
	char s[GM_CTRLREQ_NAME_MAX + 1]; /* a string's value, when short */
	bool long_s;
} gm_ctrlreq_member;

/*
 * Reads the len bytes at body as one strict JSON object (gm_ctrlreq.h
 * says how strict); its top object's members go into top
 * (GM_CTRLREQ_MEMBERS_MAX of room), in the body's order, and their
 * count into *n. GM_OK, or GM_EJSON with msg naming the byte offset.
 */
int gm_ctrlreq_read_json(const uint8_t *body, size_t len,
			 gm_ctrlreq_member *top, unsigned *n, char *msg,
			 size_t msglen);

#endif
