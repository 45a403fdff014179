/*
 * gm_region_fd.h - the system calls behind the hand-off socket: where it
 * lives, opening it safely, and checking and mapping the memfds that
 * come through it. Private to gm_region_srv.c; no libuv here, so each
 * piece can be tested on its own. Any thread.
 */
#ifndef GM_REGION_FD_H
#define GM_REGION_FD_H

#include <stddef.h>
#include <stdint.h>

#include "gm_config.h"

#define GM_REGION_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path) */

/* The socket path cfg asks for: 1 with path set; 0 when none (regions
 * off, or no ipc:// URL and no region_socket); GM_ECONFIG negated, with
 * msg, for a path too long for a Unix socket. */
int gm_region_fd_path(const gm_config *cfg, char path[GM_REGION_PATH_MAX],
		      char *msg, size_t msglen);

/*
 * Listens on a SOCK_SEQPACKET socket at path (non-blocking, close on
 * exec). The socket is bound under a temporary name, given mode 0660 and
 * renamed into place, so it is never reachable with the umask's mode. A
 * socket file nobody serves on is replaced; one some process answers on
 * is not. Returns the descriptor, or -1 with msg.
 */
int gm_region_fd_listen(const char *path, char *msg, size_t msglen);

/*
 * Checks a descriptor handed over as a region of size bytes: a regular
 * file (a memfd) that has seals, among them F_SEAL_SHRINK and none that
 * forbids writing, holding exactly size bytes. GM_OK, or GM_EINVAL with
 * msg saying which and what to do.
 */
int gm_region_fd_check(int fd, uint64_t size, char *msg, size_t msglen);

/* Maps size bytes of fd shared, read and write. GM_OK; GM_EACCES when
 * the descriptor does not allow it, else GM_ENOMEM, with msg. */
int gm_region_fd_map(int fd, uint64_t size, void **base, char *msg,
		     size_t msglen);

#endif
