/*
 * gm_ctlurl.h - gemmctl's look at a daemon URL before it dials, so that
 * a mistake gets a message that says what would work and the exit
 * status of its kind: a scheme gemmd does not serve or a malformed
 * address is a usage error, a host name that does not resolve means the
 * daemon cannot be reached.
 */
#ifndef GM_CTLURL_H
#define GM_CTLURL_H

#include <stddef.h>

/*
 * Checks url: its scheme must be one gemmd listens on (ipc://, tcp://,
 * tls+tcp://, or nng's tcp4/tcp6 forms of the last two), a TCP address
 * must be HOST:PORT, and HOST must resolve. Returns GM_OK, GM_EINVAL
 * (usage) or GM_ETRANSPORT (the host does not resolve), with a message
 * in msg that names the URL. Blocks while the resolver answers.
 */
int gm_ctlurl_check(const char *url, char *msg, size_t msglen);

#endif
