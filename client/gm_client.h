/*
 * gm_client.h - private to the client library: what its other files
 * (gemmd_ctrl.c, gemmd_region.c) need of the client core in gemmd.c.
 */
#ifndef GM_CLIENT_H
#define GM_CLIENT_H

#include "gemmd.h"
#include "gm_creg.h"

/* The client's regions, for gemmd_region_create. */
gm_creg *gm_client_creg(gemmd_client *c);

/* Sets the calling thread's gemmd_last_error() and returns code. */
int gm_client_seterr(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
