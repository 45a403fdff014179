/*
 * gm_peers.h - connections counted by peer, for max_connections_per_peer:
 * a peer is a uid on ipc://, an IP address on tcp:// and tls+tcp://
 * (PROTOCOL.md 2.1). A small hash table of counts, one entry per peer
 * with a connection open; an entry goes with the peer's last
 * connection. Loop thread only.
 */
#ifndef GM_PEERS_H
#define GM_PEERS_H

#include <stdint.h>

#include "gm_net.h"

typedef struct gm_peers gm_peers;

int gm_peers_create(gm_peers **out);
void gm_peers_destroy(gm_peers *t);

/* The key p is counted under, into key (GM_PEER_KEY bytes): "uid N", or
 * "addr A"; "" when the peer is not known (it is then not counted). */
#define GM_PEER_KEY 80
void gm_peers_key(const gm_peer *p, char key[GM_PEER_KEY]);

/* Connections of key open now. */
uint64_t gm_peers_count(const gm_peers *t, const char *key);

/* One more connection of key. GM_ENOMEM. */
int gm_peers_add(gm_peers *t, const char *key);

/* One connection of key fewer. */
void gm_peers_del(gm_peers *t, const char *key);

#endif
