/*
 * gm_testpki.h - certificates for one test run, made by the openssl
 * command: a CA, a server certificate for localhost and 127.0.0.1, a
 * client certificate the CA signed and another one (a second subject),
 * and a client certificate from an unrelated CA.
 */
#ifndef GM_TESTPKI_H
#define GM_TESTPKI_H

typedef struct gm_testpki {
	char dir[96];
	char ca[128], cert[128], key[128]; /* the daemon's */
	char ccert[128], ckey[128];	   /* a client the CA signed */
	char c2cert[128], c2key[128];	   /* another one */
	char rcert[128], rkey[128];	   /* a client another CA signed */
} gm_testpki;

/* Makes them in dir (which exists); openssl's output goes to
 * dir/openssl.log, and is copied to stderr when it fails. Returns 0, -1
 * when there is no openssl command (the caller skips), -2 when openssl
 * failed. */
int gm_testpki_make(gm_testpki *p, const char *dir);

#endif
