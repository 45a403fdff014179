/*
 * ooc_fx.c - what the tests in test_ooc.c, test_ooc_schedule.c share; see
 * ooc_fx.h.
 */
#include "ooc_fx.h"

uint64_t rs;

uint32_t rnd(uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(gm_testref_next(&rs) % (hi - lo + 1));
}

gm_job_desc desc(int dtype, uint32_t m, uint32_t n, uint32_t k)
{
	gm_job_desc d = {0};

	d.dtype = (uint8_t)dtype;
	d.kernel = GM_KERNEL_CUBLAS;
	d.m = m;
	d.n = n;
	d.k = k;
	d.alpha = 1.5;
	return d;
}

void check_plan(const gm_ooc_plan *p, uint64_t budget)
{
	const gm_job_desc *d = &p->d;
	uint64_t sum = 0;

	assert_true(p->bytes <= budget);
	for (int x = 0; x < GM_OOC_OPERANDS; x++) {
		assert_true(p->slots[x] >= 1 && p->slots[x] <= GM_OOC_SLOTS);
		assert_int_equal(p->slot_bytes[x] % GM_OOC_ALIGN, 0);
		assert_int_equal(gm_ooc_slot_offset(p, x, 0) % GM_OOC_ALIGN, 0);
		sum += p->slots[x] * p->slot_bytes[x];
	}
	assert_int_equal(sum, p->bytes);
	assert_true(p->mt >= 1 && p->mt <= d->m);
	assert_true(p->nt >= 1 && p->nt <= d->n);
	assert_true(p->kb >= 1 && p->kb <= d->k);
	/* The tiles and panels cover the job, none of them empty. */
	assert_int_equal(p->tm, (d->m + p->mt - 1) / p->mt);
	assert_int_equal(p->tn, (d->n + p->nt - 1) / p->nt);
	assert_int_equal(p->nk, (d->k + p->kb - 1) / p->kb);
	assert_true(p->h2d_bytes >= (uint64_t)p->esize * d->k * (d->m + d->n));
	assert_int_equal(p->d2h_bytes, (uint64_t)p->esize * d->m * d->n);
}

int setup(void **state)
{
	rs = gm_testref_seed();
	return 0;
}
