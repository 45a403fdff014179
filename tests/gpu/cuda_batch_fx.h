/*
 * cuda_batch_fx.h - what the tests of coalesced small jobs share: the small
 * shapes, a job's result and its poisoning, a wave run job by job with
 * each result kept, and freeing what a wave made.
 */
#ifndef CUDA_BATCH_FX_H
#define CUDA_BATCH_FX_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gm_build.h"
#include "gm_testref.h"
#include "gputest.h"

#define REPEATS 4 /* jobs of each key in a wave */

#define KEYS_MAX 128 /* shapes x combinations */

#define JOBS_MAX (REPEATS * KEYS_MAX)

#define SLOT 256 /* the engine's slot alignment */

#define SMALL_SHAPES 4
extern const struct shape small_shapes[SMALL_SHAPES];

uint64_t align_up(uint64_t x);

void *result_of(const struct tjob *t);

void poison(struct tjob *t);

/* Runs each job of t as a wave of its own and keeps its result. */
void run_alone(struct bench *b, struct tjob *t, size_t n, char **saved);

void free_all(struct bench *b, struct tjob *t, size_t n, char **saved);

#endif
