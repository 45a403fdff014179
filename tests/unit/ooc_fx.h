/*
 * ooc_fx.h - what the tests of gpu/gm_ooc share: random sizes from the
 * seed in rs (gm_testref_seed, printed; GM_TEST_SEED replays one), job
 * descriptions, and the invariants every plan must hold.
 */
#ifndef OOC_FX_H
#define OOC_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <cmocka.h>

#include "gm_error.h"
#include "gm_ooc.h"
#include "gm_testref.h"

#define OPS_MAX 200000
#define KIB	1024ull
#define GIB	(1024ull * 1024 * 1024)
#define ROUNDS	4 /* random interleavings of each schedule */

extern uint64_t rs;

uint32_t rnd(uint32_t lo, uint32_t hi);
gm_job_desc desc(int dtype, uint32_t m, uint32_t n, uint32_t k);

/* ---- the plan ------------------------------------------------------ */

/* What every plan promises, whatever the job and budget. */
void check_plan(const gm_ooc_plan *p, uint64_t budget);

int setup(void **state);

#endif
