/*
 * gm_creg.h - private to the client library: what gemmd.c needs of a
 * client's shared-memory regions (gemmd_region.c); what that needs of the
 * client is in gm_client.h.
 */
#ifndef GM_CREG_H
#define GM_CREG_H

#include <stddef.h>

#include "gemmd.h"
#include "gm_proto_region.h"

/* A client's regions: the hand-off socket's path and connection, and
 * the regions made through it. */
typedef struct gm_creg gm_creg;

/* Made at gemmd_open for the URL it dials and opts->region_socket (NULL:
 * beside url's socket when url is ipc://, else none). GM_ENOMEM. */
int gm_creg_new(const char *url, const char *socket, gm_creg **out);

/* Closes the hand-off connection (the daemon then releases every region
 * of it), unmaps and frees every region, and frees g. NULL is fine. */
void gm_creg_free(gm_creg *g);

/* Fills ref[] from j's region operands (ids and offsets; inline ones
 * 0); returns whether any operand is in a region. */
int gm_creg_refs(const gemmd_job *j, gm_region_ref ref[GM_OPND_COUNT]);

/* Checks that each of A, B and (with need_out) the result of j is given
 * once, as a pointer or in a region, and C at most once: GM_EINVAL with
 * detail. */
int gm_creg_given(const gemmd_job *j, int need_out, char *detail, size_t len);

/* Checks j's region operands as the daemon will, in its order, for a
 * job d that passed gm_job_check: gm_proto_check_refs, then each inside
 * its region (GM_EBOUNDS). Writes why into detail. */
int gm_creg_check(const gemmd_job *j, const gm_job_desc *d, char *detail,
		  size_t len);

#endif
