/*
 * gm_verify.h - checks a finished job's result against a reference
 * computed here, for gemmctl submit --verify.
 */
#ifndef GM_VERIFY_H
#define GM_VERIFY_H

#include "gemmd.h"

/*
 * Computes j's result again in long double from its operands as sent
 * (j->a, j->b, j->c in j's dtype and layout; M*N*K work) and compares
 * j->out with it: *rel is the Frobenius norm of the error relative to
 * the reference's (absolute for an all-zero reference), *tol what the
 * dtype and K allow (see gm_verify.c). The result is right when
 * rel <= tol, which NaN fails. GM_OK, or GM_ENOMEM. Blocks while it
 * computes; reads j only.
 */
int gm_verify_job(const gemmd_job *j, double *rel, double *tol);

#endif
