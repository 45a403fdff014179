/*
 * gm_slab.h - the layout of a GEMM request's slab in the host pool.
 *
 * A request gets one slab, reserved once its head and descriptors have
 * passed their checks and before any of its payload is read:
 *
 *   [payload section, byte for byte as on the wire]
 *   [reply 0][reply 1]...[reply count-1]
 *
 * where reply i is job i's whole GEMM_REPLY frame: its frame header and
 * reply record (GM_SLAB_REPLY_HEAD bytes, written by the daemon when the
 * job is done) and, when the job's result comes back through the
 * socket, OUT_i, where the engine writes the result. The payload is read
 * from the socket straight into the slab, so a job's inline A, B and C
 * are where the wire put them; replies are written to the socket
 * straight from the slab, and those of jobs that finished one after
 * another are one run of bytes, sent in one piece. OUT_i is aligned to
 * GM_SLAB_OUT_ALIGN, with padding before reply i only when its natural
 * place is not, so that jobs of one shape sit at one constant stride
 * both in the payload and among the results: the engine moves a run of
 * them with one copy each way. Operands in regions take no room; a
 * job's reply always does, so that answering it never allocates.
 * Pure arithmetic; any thread.
 */
#ifndef GM_SLAB_H
#define GM_SLAB_H

#include <stdint.h>

#include "gm_proto.h"

/* Bytes before a result in its reply frame. */
#define GM_SLAB_REPLY_HEAD (GM_HDR_SIZE + GM_REPLY_JOB_SIZE)

/* Alignment of every OUT_i: what the CPU engine's BLAS and cuBLAS with
 * mapped output want of a result. */
#define GM_SLAB_OUT_ALIGN 16

/* Bit of an operand (enum gm_operand) that is in a region. */
#define GM_PLACED(op) (1u << (op))

/* Lays a slab out, reply by reply. */
typedef struct gm_slab_cursor {
	uint64_t at; /* bytes laid out so far */
} gm_slab_cursor;

/* Starts a slab whose payload section takes payload bytes. */
void gm_slab_begin(gm_slab_cursor *c, uint64_t payload);

/* Places the next job's reply, whose result takes out bytes in the slab
 * (0: it has none there, its result going to a region). Returns the
 * reply's offset; the result's, when out is not 0, is that plus
 * GM_SLAB_REPLY_HEAD. */
uint64_t gm_slab_next(gm_slab_cursor *c, uint64_t out);

/* The slab's bytes: what was laid out so far. */
uint64_t gm_slab_size(const gm_slab_cursor *c);

#endif
