/*
 * gm_peers.h - connections counted by peer, for max_connections_per_peer,
 * and by any other key a cap counts (GM_PEERS_ANONYMOUS): a peer is a uid
 * on ipc://, a source address on tcp:// and tls+tcp:// (PROTOCOL.md
 * 2.1). Where addresses are cheap, one peer stands for many of them:
 * every loopback address (127.0.0.0/8, ::1, and IPv4 ones mapped into
 * IPv6) is the one peer "loopback", since any local user may bind all
 * of them, and an IPv6 address counts by its /64, which one host
 * usually holds whole. A small hash table of counts, one entry per key
 * with a connection open; an entry goes with its last connection. Loop
 * thread only.
 */
#ifndef GM_PEERS_H
#define GM_PEERS_H

#include <stdint.h>

#include "gm_net.h"

typedef struct gm_peers gm_peers;

int gm_peers_create(gm_peers **out);
void gm_peers_destroy(gm_peers *t);

/* The key p is counted under, into key (GM_PEER_KEY bytes): "uid N",
 * "addr A" (IPv4), "addr loopback", or "net6 P::/64" (P the address's
 * first four groups); "" when the peer is not known (it is then not
 * counted). */
#define GM_PEER_KEY	   80
#define GM_PEERS_ANONYMOUS "anonymous" /* every plain tcp:// connection */
void gm_peers_key(const gm_peer *p, char key[GM_PEER_KEY]);

/* Connections of key open now. */
uint64_t gm_peers_count(const gm_peers *t, const char *key);

/* One more connection of key. GM_ENOMEM. */
int gm_peers_add(gm_peers *t, const char *key);

/* One connection of key fewer. */
void gm_peers_del(gm_peers *t, const char *key);

#endif
