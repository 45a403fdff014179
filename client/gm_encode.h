/*
 * gm_encode.h - private to the client library: the caller's jobs and
 * control requests as request messages (PROTOCOL.md 4 and 7). A job is
 * checked here as the daemon would check it with its hard limits, so
 * that a bad job costs no round trip. Any thread.
 */
#ifndef GM_ENCODE_H
#define GM_ENCODE_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"
#include "gm_proto.h"

/*
 * Checks job j and fills d, its wire description: each of A, B and
 * (with need_out) the result given once, as a pointer or in a region,
 * and C at most once (GM_EINVAL); the shape, dtype and sizes as
 * gm_job_check; each operand named in a region inside it (GM_EBOUNDS,
 * or as gm_proto_check_refs). Writes why into detail.
 */
int gm_encode_job(const gemmd_job *j, bool need_out, gm_job_desc *d,
		  char *detail, size_t len);

/*
 * Builds GEMM request id of jobs[0..n), described by d[0..n) (each
 * checked by gm_encode_job), with batch b: one message of exactly its
 * size, each inline operand copied once; operands in regions travel as
 * a region descriptor. GM_EOVERFLOW or GM_ENOMEM, with
 * gemmd_last_error() set.
 */
int gm_encode_gemm(const gemmd_job *jobs, const gm_job_desc *d, uint32_t n,
		   const gm_batch *b, uint64_t id, nng_msg **out);

/* Builds control request id carrying the JSON text request. GM_ETOOBIG
 * or GM_ENOMEM, with gemmd_last_error() set. */
int gm_encode_ctrl(const char *request, uint64_t id, nng_msg **out);

#endif
