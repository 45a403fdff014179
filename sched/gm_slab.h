/*
 * gm_slab.h - where a job's operands go in its slab of the host pool.
 *
 * A slab holds what of a job arrives in the request message: those of
 * A, B and C that are inline, back to back in that order as on the wire,
 * so that one copy stages them all, then room for the result unless it
 * overwrites an inline C or goes to a region. Operands in registered
 * shared-memory regions take no room: the daemon points the job at them
 * first and says which with the GM_PLACED bits, and a job with every
 * operand in regions needs no slab at all. Pure arithmetic; any thread.
 */
#ifndef GM_SLAB_H
#define GM_SLAB_H

#include <stdint.h>

#include "gm_job.h"
#include "gm_proto_region.h"

/* Bit of an operand (enum gm_operand) already placed in a region. */
#define GM_PLACED(op) (1u << (op))

/* Slab bytes a job d needs with the operands in placed already placed;
 * 0: none. */
uint64_t gm_slab_bytes(const gm_job_desc *d, unsigned placed);

/*
 * Points the operands of j not in placed into slab (which has
 * gm_slab_bytes of room; NULL when that is 0). With C inline the result
 * overwrites C in the slab: C is on the device, or already in the
 * result on the CPU, by the time it is written. Sets j->copy_to to the
 * slab when some inputs are in regions and others inline, so that the
 * engine copies the message's inline bytes to the slab, not to a.
 */
void gm_slab_place(gm_job *j, unsigned placed, void *slab);

#endif
