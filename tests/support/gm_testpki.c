/*
 * gm_testpki.c - test certificates made by the openssl command; see
 * gm_testpki.h.
 */
#include "gm_testpki.h"

#include <stdio.h>
#include <stdlib.h>

int gm_testpki_make(gm_testpki *p, const char *dir)
{
	static const char script[] =
	    "set -e; cd '%s'; exec >openssl.log 2>&1\n"
	    "key() { openssl genpkey -algorithm EC "
	    "-pkeyopt ec_paramgen_curve:P-256 -out \"$1\"; }\n"
	    "ca() { key $1.key; openssl req -x509 -new -key $1.key -out "
	    "$1.crt -days 2 -subj /CN=$1 "
	    "-addext basicConstraints=critical,CA:TRUE "
	    "-addext keyUsage=critical,keyCertSign,cRLSign; }\n"
	    "leaf() { key $1.key; openssl req -new -key $1.key -out $1.csr "
	    "-subj /CN=$3; printf '%%s\\n' \"$4\" >$1.ext; "
	    "openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key "
	    "-CAcreateserial -out $1.crt -days 2 -extfile $1.ext; }\n"
	    "ca ca; ca other-ca\n"
	    "leaf server ca localhost "
	    "'subjectAltName=DNS:localhost,IP:127.0.0.1\n"
	    "extendedKeyUsage=serverAuth'\n"
	    "leaf client ca gemmd-client extendedKeyUsage=clientAuth\n"
	    "leaf client2 ca other-client extendedKeyUsage=clientAuth\n"
	    "leaf rogue other-ca rogue-client extendedKeyUsage=clientAuth\n";
	char cmd[2048];

	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	snprintf(p->ca, sizeof(p->ca), "%s/ca.crt", dir);
	snprintf(p->cert, sizeof(p->cert), "%s/server.crt", dir);
	snprintf(p->key, sizeof(p->key), "%s/server.key", dir);
	snprintf(p->ccert, sizeof(p->ccert), "%s/client.crt", dir);
	snprintf(p->ckey, sizeof(p->ckey), "%s/client.key", dir);
	snprintf(p->c2cert, sizeof(p->c2cert), "%s/client2.crt", dir);
	snprintf(p->c2key, sizeof(p->c2key), "%s/client2.key", dir);
	snprintf(p->rcert, sizeof(p->rcert), "%s/rogue.crt", dir);
	snprintf(p->rkey, sizeof(p->rkey), "%s/rogue.key", dir);
	if (system("openssl version >/dev/null 2>&1") != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), script, dir);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "cat '%s/openssl.log' >&2", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "no %s/openssl.log\n", dir);
		return -2;
	}
	return 0;
}
