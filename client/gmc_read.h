/*
 * gmc_read.h - private to the client library: the reading side of a
 * connection, a state machine over the frames the daemon writes.
 *
 * The reader keeps a small buffer that it fills greedily: frame
 * headers, reply records, ERROR bodies and the start of what follows
 * come through it, so that a run of small replies (4096 jobs of one
 * request) takes a few reads. A job's result is read straight into the
 * job's out once its record has been checked against the job (what the
 * buffer already holds of it is copied, the rest lands by the read
 * itself), together with the bytes after it into the buffer. A reply
 * for a request that is over for its caller (a zombie part), for an id
 * not in flight or a duplicate is read into the buffer and dropped.
 * What cannot be a frame from a gemmd of protocol version 2 ends the
 * connection (gmc_read_got says so, and the connection fails), and so
 * does a daemon of version 1 (its first bytes are the SP handshake): its
 * requests fail GM_EVERSION.
 *
 * The reader is below its connection (README.md): it knows the
 * connection only as the one its parts were written on, and is given
 * where the connection keeps why it was closed.
 *
 * Under the client's lock, on the connection's receive callback.
 */
#ifndef GMC_READ_H
#define GMC_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_proto.h"
#include "gm_stream.h"
#include "gmc_call.h"
#include "gmc_client.h"
#include "gmc_error.h"

/* The reader's buffer: headers, records and small results. */
#define GMC_READ_BUF (64u << 10)

/* The longest CTRL_REPLY body taken (a stats document is a few KiB). */
#define GMC_READ_CTRL_MAX (16u << 20)

typedef struct gmc_reader {
	gemmd_client *cl;     /* whose parts the replies answer */
	const gmc_conn *conn; /* the parts written there */
	int *refused;	      /* the daemon refused the connection: its code */
	char *why;	      /* why the daemon closed the connection */
	size_t whylen;
	char fail[GMC_ERRLEN]; /* why the connection is to end */
	uint8_t *buf;
	size_t off, len; /* unread bytes: buf[off, off + len) */
	int state;
	gm_hdr h;	    /* the frame being read */
	gmc_part *part;	    /* its part, held; NULL: dropped */
	uint32_t index;	    /* GEMM_REPLY: the job's index in the part */
	gm_reply_job rec;   /* its record */
	int job_rv;	    /* the job's status when its reply is unusable */
	uint8_t *dst;	    /* BULK: where the bytes go; NULL: dropped */
	bool dst_caller;    /* dst is the caller's memory */
	uint64_t need, got; /* BULK: bytes of the piece, read so far */
	int then;	    /* BULK: what the bytes complete */
	uint8_t *body;	    /* a CTRL_REPLY's body */
	size_t into_dst;    /* the receive in flight: its first iov's bytes */
	uint64_t frames;    /* frames read on this stream */
	bool started;	    /* the stream's first bytes were looked at */
	char msg[2 * GM_MSG_TEXT];
} gmc_reader;

/* A reader of the replies to cl's parts written on conn, which keeps
 * the daemon's refusal in *refused and its words in why. GM_OK or
 * GM_ENOMEM. */
int gmc_read_init(gmc_reader *rd, gemmd_client *cl, const gmc_conn *conn,
		  int *refused, char *why, size_t whylen);
void gmc_read_free(gmc_reader *rd);

/* A new stream: nothing read, nothing held. */
void gmc_read_reset(gmc_reader *rd);

/* Sets up the next receive in io, pinning the call whose memory it reads
 * into (in *pin, NULL if none). */
void gmc_read_plan(gmc_reader *rd, gm_io *io, gmc_call **pin);

/* n bytes came by the receive gmc_read_plan set up: takes every frame
 * they complete. GM_OK, or the code the connection is to fail with (why
 * in rd->fail): a frame no daemon of version 2 writes. */
int gmc_read_got(gmc_reader *rd, size_t n, gmc_todo *t);

#endif
