/*
 * test_idmap.c - unit tests for the client library's request-id map
 * (client/gmc_idmap.h): ids from a counter and scattered ones in and out
 * in any order, every lookup right after each change, growth, and
 * deletion that keeps later entries of a probe run reachable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gmc_idmap.h"

enum { N = 5000 };

static void *val(uint64_t id)
{
	return (void *)(uintptr_t)(id * 2 + 1);
}

/* Every id in [1, N] is present exactly when in[id]. */
static void check_all(const gmc_idmap *m, const char *in)
{
	size_t n = 0;

	for (uint64_t id = 1; id <= N; id++) {
		void *v = gmc_idmap_get(m, id);

		if (in[id]) {
			assert_ptr_equal(v, val(id));
			n++;
		} else {
			assert_null(v);
		}
	}
	assert_int_equal(m->n, n);
}

static void test_counter_ids(void **state)
{
	gmc_idmap m = {0};
	char *in = calloc(N + 1, 1);
	uint64_t x = 12345;

	(void)state;
	assert_null(gmc_idmap_get(&m, 7));
	for (uint64_t id = 1; id <= N; id++) {
		assert_int_equal(gmc_idmap_put(&m, id, val(id)), GM_OK);
		in[id] = 1;
	}
	check_all(&m, in);
	/* Out in a scattered order, each lookup checked as it goes. */
	for (int i = 0; i < 3 * N; i++) {
		uint64_t id;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		id = x % N + 1;
		if (in[id]) {
			gmc_idmap_del(&m, id);
			in[id] = 0;
		} else {
			assert_int_equal(gmc_idmap_put(&m, id, val(id)), GM_OK);
			in[id] = 1;
		}
		if (i % 997 == 0)
			check_all(&m, in);
	}
	check_all(&m, in);
	gmc_idmap_del(&m, N + 100); /* absent: nothing */
	check_all(&m, in);
	gmc_idmap_free(&m);
	assert_null(gmc_idmap_get(&m, 1));
	free(in);
}

/* Ids that share a home slot: deleting the first of a run keeps the
 * others found. */
static void test_collisions(void **state)
{
	gmc_idmap m = {0};
	uint64_t ids[8];
	size_t found = 0;

	(void)state;
	assert_int_equal(gmc_idmap_put(&m, 1, val(1)), GM_OK);
	/* Ids whose hash lands where 1's does, found by search. */
	for (uint64_t id = 2; found < 8; id++) {
		uint64_t h1 = (1 * 0x9E3779B97F4A7C15ull) >> 17,
			 h = (id * 0x9E3779B97F4A7C15ull) >> 17;

		if ((h & (m.cap - 1)) == (h1 & (m.cap - 1)))
			ids[found++] = id;
	}
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(gmc_idmap_put(&m, ids[i], val(ids[i])), GM_OK);
	gmc_idmap_del(&m, 1);
	for (size_t i = 0; i < 8; i++) {
		assert_ptr_equal(gmc_idmap_get(&m, ids[i]), val(ids[i]));
		gmc_idmap_del(&m, ids[i]);
		for (size_t j = i + 1; j < 8; j++)
			assert_ptr_equal(gmc_idmap_get(&m, ids[j]),
					 val(ids[j]));
	}
	assert_int_equal(m.n, 0);
	gmc_idmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counter_ids),
	    cmocka_unit_test(test_collisions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
