/*
 * gmc_encode.h - private to the client library: the caller's jobs and
 * control requests as request frames (PROTOCOL.md 4 and 7), in pieces
 * that a connection writes without copying the operands. A job is
 * checked here as the daemon would check it with its hard limits, so
 * that a bad job costs no round trip. Any thread.
 */
#ifndef GM_ENCODE_H
#define GM_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"
#include "gm_proto.h"
#include "gm_proto_region.h"

/*
 * Checks job j and fills d, its wire description: each of A, B and
 * (with need_out) the result given once, as a pointer or in a region,
 * and C at most once (GM_EINVAL); the shape, dtype and sizes as
 * gm_job_check; each operand named in a region inside it (GM_EBOUNDS,
 * or as gm_proto_check_refs). Writes why into detail.
 */
int gmc_encode_job(const gemmd_job *j, bool need_out, gm_job_desc *d,
		   char *detail, size_t len);

/* One piece of a request frame, written as it is: bytes of the frame
 * the library built, or of the caller's operands (user), which the
 * library reads only while the call lasts; p NULL stands for len zero
 * bytes (what is sent in place of the caller's operands once its call
 * has ended with the frame half written). */
typedef struct gmc_seg {
	const void *p;
	size_t len;
	bool user;
} gmc_seg;

/* A request frame: the pieces in order, and what the library owns. */
typedef struct gmc_frame {
	uint8_t *built; /* header, head, descriptors, small operands */
	gmc_seg *segs;
	unsigned nsegs;
	uint64_t bytes; /* the whole frame */
} gmc_frame;

/* Operands below this many bytes are copied into the built part, so
 * that a request of many small jobs goes out in a few large writes;
 * larger ones are written straight from the caller's memory. */
#define GM_ENCODE_COALESCE (32u << 10)

/* Fills ref[] from j's region operands (ids and offsets; inline ones
 * 0); returns whether any operand is in a region. */
int gmc_encode_refs(const gemmd_job *j, gm_region_ref ref[GM_OPND_COUNT]);

/*
 * Builds GEMM request id of jobs[0..n), described by d[0..n) (each
 * checked by gmc_encode_job), with batch b. refs (4 per job) says where
 * each job's operands are, overriding the jobs' own region refs (the
 * staging of gmc_stage.h); NULL: the jobs' own. Operands in regions
 * travel as a region descriptor, inline ones as pieces of the caller's
 * memory or copied into the built part (GM_ENCODE_COALESCE).
 * GM_EOVERFLOW or GM_ENOMEM, with gemmd_last_error() set.
 */
int gmc_encode_gemm(const gemmd_job *jobs, const gm_job_desc *d, uint32_t n,
		    const gm_batch *b, uint64_t id, const gm_region_ref *refs,
		    gmc_frame *f);

/* Builds control request id carrying the JSON text request. GM_ETOOBIG
 * or GM_ENOMEM, with gemmd_last_error() set. */
int gmc_encode_ctrl(const char *request, uint64_t id, gmc_frame *f);

/* Frees what f owns. */
void gmc_frame_free(gmc_frame *f);

#endif
