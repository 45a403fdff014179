/*
 * gm_error_nng.h - nng's error codes folded into gemmd's, in one place
 * for the two sides that speak nng: the daemon and the client library.
 * Header only, so that proto/ itself needs nothing but libc; include it
 * where <nng/nng.h> is available. The nng text (nng_strerror) belongs in
 * the message that goes with the code.
 */
#ifndef GM_ERROR_NNG_H
#define GM_ERROR_NNG_H

#include <nng/nng.h>

#include "gm_error.h"

/* X(nng code, gemmd code): the nng errors that mean something of ours;
 * any other is a transport error. */
#define GM_ERROR_NNG_MAP(X)            \
	X(NNG_ETIMEDOUT, GM_ETIMEDOUT) \
	X(NNG_ECANCELED, GM_ECANCELED) \
	X(NNG_ECLOSED, GM_ECANCELED)   \
	X(NNG_ENOMEM, GM_ENOMEM)       \
	X(NNG_EINVAL, GM_EINVAL)       \
	X(NNG_EADDRINVAL, GM_EINVAL)   \
	X(NNG_ENOTSUP, GM_EINVAL)

#define GM_ERROR_NNG_CASE(nng, gm) \
	case nng:                  \
		return gm;

/* The gemmd code for nng's rv: GM_OK for 0, GM_ETRANSPORT for a code
 * not in GM_ERROR_NNG_MAP. Any thread. */
static inline int gm_error_nng(int rv)
{
	switch (rv) {
	case 0:
		return GM_OK;
		GM_ERROR_NNG_MAP(GM_ERROR_NNG_CASE)
	default:
		return GM_ETRANSPORT;
	}
}

#undef GM_ERROR_NNG_CASE

#endif
