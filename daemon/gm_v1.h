/*
 * gm_v1.h - answering a client of protocol version 1 (PROTOCOL.md 2.4).
 *
 * Version 1 ran over nng's REQ/REP sockets, whose connections start with
 * the 8-byte Scalability Protocols header, 00 'S' 'P' 00 and the
 * protocol number. A v1 client sends that and waits for the daemon's
 * before it sends its request: so the daemon answers as a REP socket
 * would, reads the first request's framing, its 4-byte REQ id and
 * version-1 header, and replies to it with a version-1 ERROR carrying
 * EVERSION; then the connection closes. The client fails at once
 * instead of waiting for its timeout. Pure functions over bytes; any
 * thread.
 */
#ifndef GM_V1_H
#define GM_V1_H

#include <stddef.h>
#include <stdint.h>

#define GM_V1_HELLO_SIZE 8  /* the SP header each side sends */
#define GM_V1_REQ_HEAD	 28 /* a request's REQ id and v1 header */
#define GM_V1_REPLY_MAX	 (9 + 4 + 24 + 104)

/* The daemon's SP header, as a REP socket: 00 'S' 'P' 00 00 31 00 00. */
extern const uint8_t gm_v1_hello[GM_V1_HELLO_SIZE];

/* Bytes of a message's SP framing on the transport: 9 on ipc:// (a type
 * byte and the length), 8 on tcp://. */
size_t gm_v1_frame_size(int ipc);

/* The body length in a message's framing at p (gm_v1_frame_size(ipc)
 * bytes). */
uint64_t gm_v1_frame_length(const uint8_t *p, int ipc);

/*
 * Writes into out (GM_V1_REPLY_MAX bytes of room) the reply to the
 * request whose body starts with head (have bytes of it, at most
 * GM_V1_REQ_HEAD; at least 4, the REQ id): its framing, the REQ id, a
 * version-1 ERROR header (version 1, type 5, the request's id when its
 * header came whole, else 0, count 104) and the ERROR body, EVERSION.
 * Returns its length.
 */
size_t gm_v1_reply(uint8_t *out, int ipc, const uint8_t *head, size_t have);

#endif
