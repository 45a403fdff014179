/*
 * cuda_batch_fx.c - what the tests in test_cuda_batch.c,
 * test_cuda_batch_waves.c share; see cuda_batch_fx.h.
 */
#include "cuda_batch_fx.h"

const struct shape small_shapes[] = {
    {1, 1, 1},
    {7, 13, 5},
    {64, 64, 64},
    {33, 17, 129},
};
_Static_assert(sizeof(small_shapes) / sizeof(small_shapes[0]) == SMALL_SHAPES,
	       "SMALL_SHAPES counts the rows of small_shapes[]");

uint64_t align_up(uint64_t x)
{
	return (x + SLOT - 1) & ~(uint64_t)(SLOT - 1);
}

void *result_of(const struct tjob *t)
{
	return t->copy_out ? t->copy_out : t->job.out;
}

void poison(struct tjob *t)
{
	memset(result_of(t), 0xff, t->sz.out); /* NaN in every dtype */
	t->job.status = -1;
}

void run_alone(struct bench *b, struct tjob *t, size_t n, char **saved)
{
	for (size_t i = 0; i < n; i++) {
		gm_job *j = &t[i].job;

		poison(&t[i]);
		run_wave(b, &j, 1);
		assert_int_equal(j->status, GM_OK);
		saved[i] = malloc(t[i].sz.out);
		assert_non_null(saved[i]);
		memcpy(saved[i], result_of(&t[i]), t[i].sz.out);
	}
}

void free_all(struct bench *b, struct tjob *t, size_t n, char **saved)
{
	for (size_t i = 0; i < n; i++) {
		free_job(b, &t[i]);
		free(saved[i]);
	}
}
