/*
 * gm_principal.h - who a connection speaks for (PROTOCOL.md 2.1): the
 * peer's uid on ipc://, the verified client certificate's subject on
 * tls+tcp://, and "anonymous" on plain tcp:// (and for any peer whose
 * identity cannot be read). Detached jobs belong to the principal that
 * submitted them; admin operations need a principal that admin_uids or
 * admin_subjects names, which an anonymous one never is.
 *
 * A principal is made once per connection, when its first frame header
 * has come (a TLS peer's subject is known only after the handshake),
 * and is shared by reference with the jobs it owns, which outlive the
 * connection. Principals are compared by value. Loop thread only.
 */
#ifndef GM_PRINCIPAL_H
#define GM_PRINCIPAL_H

#include <stdbool.h>

#include "gm_config.h"
#include "gm_net.h"

typedef struct gm_principal gm_principal;

/* Bytes of a principal's name, its NUL included: "subject " and a
 * subject as gm_peer holds it. */
#define GM_PRINCIPAL_NAME_MAX \
	(sizeof("subject ") + sizeof(((gm_peer *)0)->subject))

enum gm_principal_kind {
	GM_PRINCIPAL_ANONYMOUS = 0,
	GM_PRINCIPAL_UID,     /* ipc://, from SO_PEERCRED */
	GM_PRINCIPAL_SUBJECT, /* tls+tcp://, RFC 2253 */
};

/* The principal of peer p, with one reference; NULL when out of
 * memory. */
gm_principal *gm_principal_new(const gm_peer *p);

/* One more reference / one fewer (NULL: nothing); the last frees it. */
gm_principal *gm_principal_hold(gm_principal *p);
void gm_principal_release(gm_principal *p);

/* Whether a and b are the same principal (both non-NULL). */
bool gm_principal_same(const gm_principal *a, const gm_principal *b);

/* enum gm_principal_kind of p. */
int gm_principal_kind(const gm_principal *p);

/* For logs and messages: "uid 1000", "subject CN=svc,O=lab",
 * "anonymous". */
const char *gm_principal_name(const gm_principal *p);

/* Whether p may run admin operations: its uid is in cfg's admin_uids,
 * or its subject in admin_subjects (exactly, as the RFC 2253 string);
 * never for anonymous. When not, and why is not NULL, writes there
 * (len bytes) why, naming the key to change. */
bool gm_principal_is_admin(const gm_principal *p, const gm_config *cfg,
			   char *why, size_t len);

#endif
