/*
 * gm_testpeer.h - a scripted peer that speaks the daemon's side of
 * protocol v2 (proto/PROTOCOL.md) on real streams (net/), for the tests
 * of the client library: the test reads request frames from it, checks
 * them with gm_proto, and writes the replies it chooses, in the order it
 * chooses (out of order, interleaved, duplicated, to unknown ids, cut in
 * the middle, not at all). It computes fp64 and fp32 jobs naively, so
 * that results can be checked, and it can serve the hand-off socket of
 * regions (PROTOCOL.md 14) to take the staging of plain pointers.
 *
 * Everything is synchronous for the test's thread; timeouts are in ms.
 */
#ifndef GM_TESTPEER_H
#define GM_TESTPEER_H

#include <stddef.h>
#include <stdint.h>

#include "gm_proto.h"
#include "gm_proto_region.h"
#include "gm_tls.h"

typedef struct gm_testpeer gm_testpeer;
typedef struct gm_testconn gm_testconn;

/* A frame read whole: header and body in buf (malloc'd). */
typedef struct gm_testframe {
	gm_hdr h;
	uint8_t *buf;
	size_t len; /* GM_HDR_SIZE + h.length */
} gm_testframe;

/* Listens on url (ipc:///path, or tcp://127.0.0.1:0 for a free port;
 * tls+tcp:// with tls, a server context that outlives p) and accepts
 * whatever connects. GM_OK or an error. */
int gm_testpeer_open(const char *url, const gm_tls_ctx *tls, gm_testpeer **out);

/* The URL to dial (the port filled in). */
const char *gm_testpeer_url(const gm_testpeer *p);

/* Serves the hand-off socket of regions at path (a SOCK_SEQPACKET Unix
 * socket) on a thread of its own: REGISTER maps the memfd and answers a
 * fresh id, RELEASE forgets it. GM_OK or an error. */
int gm_testpeer_handoff(gm_testpeer *p, const char *path);

/* Regions registered and not released. */
unsigned gm_testpeer_regions(gm_testpeer *p);

/* The next connection accepted, waiting up to ms; NULL when none came.
 * It belongs to the peer (freed with it). */
gm_testconn *gm_testpeer_accept(gm_testpeer *p, int ms);

/* Connections accepted so far. */
unsigned gm_testpeer_accepted(gm_testpeer *p);

/* Closes every connection and the listener and frees p. */
void gm_testpeer_free(gm_testpeer *p);

/* The next frame, waiting up to ms: GM_OK, GM_ETIMEDOUT (nothing
 * whole yet; what came stays buffered), GM_ETRANSPORT (closed), or the
 * gm_proto_get_hdr code of a bad header. */
int gm_testconn_read(gm_testconn *c, gm_testframe *f, int ms);

/* Exactly n bytes, as gm_testconn_read. */
int gm_testconn_read_bytes(gm_testconn *c, void *out, size_t n, int ms);

void gm_testframe_free(gm_testframe *f);

/* Writes n bytes: GM_OK or GM_ETRANSPORT. */
int gm_testconn_write(gm_testconn *c, const void *p, size_t n);

/* Closes the connection now (the client sees it drop). */
void gm_testconn_close(gm_testconn *c);

/* Checks request frame f as the daemon does (any limits up to the hard
 * ceilings): the gm_proto code. Fills the batch header. */
int gm_testframe_check(const gm_testframe *f, gm_batch *b);

/* Job index of GEMM request f: its description and operands. */
void gm_testframe_job(const gm_testframe *f, uint32_t index, gm_job_desc *d,
		      gm_job_operands *ops);

/* Computes job index of f (fp64 or fp32; operands inline or in regions
 * registered on p) and writes its GEMM_REPLY: the result in the frame,
 * or written into its OUT region. Timings are 1, 2, 3, 4, 5 us. */
int gm_testconn_reply(gm_testconn *c, const gm_testframe *f, uint32_t index);

/* Computes job index of f as gm_testconn_reply does without writing
 * the reply: its record in *r, its result (malloc'd; NULL when it went
 * to a region or failed) in *result. */
int gm_testpeer_compute(gm_testpeer *p, const gm_testframe *f, uint32_t index,
			gm_reply_job *r, void **result);

/* Replies to every job of f, in order. */
int gm_testconn_reply_all(gm_testconn *c, const gm_testframe *f);

/* Writes a GEMM_REPLY with record r (result_bytes bytes of result
 * follow, from result), id and job index as given. */
int gm_testconn_job_reply(gm_testconn *c, uint64_t id, uint32_t index,
			  const gm_reply_job *r, const void *result);

/* Writes an ERROR frame; a CTRL_REPLY frame with body json. */
int gm_testconn_error(gm_testconn *c, uint64_t id, uint32_t status,
		      const char *msg);
int gm_testconn_ctrl_reply(gm_testconn *c, uint64_t id, const char *json);

#endif
