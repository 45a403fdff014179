/*
 * access_fx.h - what the access tests share: the uid of nobody, how long a
 * call may wait, and the check that a client finds no trace of another's
 * detached job.
 */
#ifndef ACCESS_FX_H
#define ACCESS_FX_H

#include <grp.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "it_case.h"

#define NOBODY 65534

#define WAIT_MS 10000

#define PROBE_IDS 64 /* ids tried on each side of an owner's */

/* For client c: status, wait and cancel of id all ENOTFOUND. */
void not_found_to(gemmd_client *c, uint64_t id);

#endif
