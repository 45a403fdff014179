/*
 * gm_region_srv.h - the hand-off socket, where local clients give gemmd
 * their shared-memory regions.
 *
 * nng's ipc transport cannot carry file descriptors, so gemmd listens on
 * a second Unix socket, of type SOCK_SEQPACKET: one record per packet, a
 * REGISTER record carrying the client's memfd as SCM_RIGHTS ancillary
 * data (PROTOCOL.md, "Regions"). It is driven by the libuv loop through
 * uv_poll. The peer's uid and gid come from SO_PEERCRED, and the
 * allow-lists of the ipc:// listeners apply to it too. A memfd is taken
 * only when it is sealed against shrinking (so the mapping can never
 * lose pages under a DMA), its size is the one the record states, and
 * the uid's quotas allow it. It is mapped on the loop thread and
 * registered with the engine on libuv's thread pool, because pinning
 * takes about a millisecond per MiB; meanwhile that connection is not
 * read, so its records are answered in order. A connection's regions are
 * released when it closes, whatever the client did or did not send.
 *
 * Everything here runs on the loop thread.
 */
#ifndef GM_REGION_SRV_H
#define GM_REGION_SRV_H

#include <stddef.h>
#include <uv.h>

#include "gm_config.h"
#include "gm_regions.h"

typedef struct gm_region_srv gm_region_srv;

/*
 * Opens the hand-off socket that cfg names (region_socket, else the
 * one named after the first ipc:// socket: gm_handoff_path), mode 0660, and
 * hooks the asynchronous retiring of rs's regions onto loop. Sets *out
 * to NULL and returns GM_OK when cfg asks for no socket ("regions"
 * false, or no ipc:// URL and no region_socket). A stale socket file is
 * replaced; one another process serves on is an error. On failure msg
 * names the path.
 */
int gm_region_srv_open(uv_loop_t *loop, const gm_config *cfg, gm_regions *rs,
		       gm_region_srv **out, char *msg, size_t msglen);

/* From now on REGISTER is refused with GM_ESHUTDOWN; RELEASE still
 * works. NULL is fine. */
void gm_region_srv_stop(gm_region_srv *s);

/* Closes the socket and every connection (releasing their regions) and
 * removes the socket file; s is freed once the loop has closed its
 * handles and finished its registrations. NULL is fine. */
void gm_region_srv_close(gm_region_srv *s);

/* Hand-off connections open now (0 for NULL). */
unsigned gm_region_srv_conns(const gm_region_srv *s);

#endif
