/*
 * test_pool.c - unit tests of gm_pool: creation over aligned and
 * misaligned arenas, rounding and alignment, first fit, coalescing,
 * GM_ETOOBIG against GM_ENOMEM, frees of pointers the pool never handed
 * out, and a randomized run checked address by address against a shadow
 * model of first fit. The seed is printed; GM_TEST_SEED replays one.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_pool.h"
#include "gm_testref.h"

#define U GM_POOL_ALIGN

/* An aligned arena and a pool over all of it, of the size a test's table
 * row names. */
struct fixture {
	void *arena;
	gm_pool *pool;
};

static int setup(void **state)
{
	uint64_t size = (uintptr_t)*state;
	struct fixture *f = malloc(sizeof(*f));

	assert_non_null(f);
	f->arena = aligned_alloc(U, size);
	assert_non_null(f->arena);
	assert_int_equal(gm_pool_create(f->arena, size, &f->pool), GM_OK);
	assert_int_equal(gm_pool_size(f->pool), size);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gm_pool_destroy(f->pool);
	free(f->arena);
	free(f);
	return 0;
}

static void *at(const struct fixture *f, uint64_t off)
{
	return (uint8_t *)f->arena + off;
}

static void *must_alloc(gm_pool *p, uint64_t bytes)
{
	void *slab = NULL;

	assert_int_equal(gm_pool_alloc(p, bytes, &slab), GM_OK);
	assert_non_null(slab);
	return slab;
}

static void expect_alloc(gm_pool *p, uint64_t bytes, int code)
{
	void *slab = (void *)1;

	assert_int_equal(gm_pool_alloc(p, bytes, &slab), code);
	if (code != GM_OK)
		assert_null(slab);
}

/* Nothing handed out, and the whole arena again one slab at its start. */
static void expect_empty(struct fixture *f)
{
	assert_int_equal(gm_pool_used(f->pool), 0);
	assert_int_equal(gm_pool_slabs(f->pool), 0);
	assert_ptr_equal(must_alloc(f->pool, gm_pool_size(f->pool)), f->arena);
}

static void test_create_aligned(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(gm_pool_used(f->pool), 0);
	assert_int_equal(gm_pool_slabs(f->pool), 0);
}

static void test_create_misaligned(void **state)
{
	uint8_t *arena = aligned_alloc(U, 8 * U);
	gm_pool *p;
	void *slab;

	assert_non_null(arena);
	/* Starts at arena + U; the ragged tail is not managed. */
	assert_int_equal(gm_pool_create(arena + 1, 8 * U - 2, &p), GM_OK);
	assert_int_equal(gm_pool_size(p), 6 * U);
	slab = must_alloc(p, 1);
	assert_ptr_equal(slab, arena + U);
	gm_pool_destroy(p);

	/* No aligned unit inside: nothing is managed, nothing ever fits. */
	assert_int_equal(gm_pool_create(arena + 1, U, &p), GM_OK);
	assert_int_equal(gm_pool_size(p), 0);
	expect_alloc(p, 1, GM_ETOOBIG);
	gm_pool_destroy(p);
	free(arena);
}

static void test_zero_bytes(void **state)
{
	struct fixture *f = *state;

	expect_alloc(f->pool, 0, GM_EINVAL);
	assert_int_equal(gm_pool_slabs(f->pool), 0);
}

static void test_rounding_and_alignment(void **state)
{
	static const uint64_t sizes[] = {1, U - 1, U, U + 1, 3 * U - 7};
	static const uint64_t offs[] = {0, U, 2 * U, 3 * U, 5 * U};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *slab = must_alloc(f->pool, sizes[i]);

		assert_int_equal((uintptr_t)slab % U, 0);
		assert_ptr_equal(slab, at(f, offs[i]));
	}
	assert_int_equal(gm_pool_used(f->pool), 8 * U);
	assert_int_equal(gm_pool_slabs(f->pool), 5);
}

static void test_toobig_vs_nomem(void **state)
{
	struct fixture *f = *state;
	void *whole;

	expect_alloc(f->pool, 16 * U + 1, GM_ETOOBIG);
	expect_alloc(f->pool, UINT64_MAX, GM_ETOOBIG);
	whole = must_alloc(f->pool, 16 * U);
	assert_ptr_equal(whole, f->arena);
	expect_alloc(f->pool, 1, GM_ENOMEM);
	expect_alloc(f->pool, 16 * U + 1, GM_ETOOBIG);
	gm_pool_free(f->pool, whole);
	must_alloc(f->pool, 1);
}

static void test_first_fit(void **state)
{
	struct fixture *f = *state;
	void *s[5];
	int i;

	for (i = 0; i < 5; i++)
		s[i] = must_alloc(f->pool, 2 * U);
	gm_pool_free(f->pool, s[1]);
	gm_pool_free(f->pool, s[3]);
	/* The lowest hole wins, and what is left of it serves next. */
	assert_ptr_equal(must_alloc(f->pool, U), s[1]);
	assert_ptr_equal(must_alloc(f->pool, 2 * U), s[3]);
	assert_ptr_equal(must_alloc(f->pool, U), at(f, 3 * U));
	expect_alloc(f->pool, 1, GM_ENOMEM);
}

/* Last fit takes the top of the highest free block that is large
 * enough, and what it leaves merges back as usual. */
static void test_last_fit(void **state)
{
	struct fixture *f = *state;
	void *lo, *hi, *mid, *big;

	assert_int_equal(gm_pool_alloc_high(f->pool, 4 * U, &hi), GM_OK);
	assert_ptr_equal(hi, at(f, 12 * U));
	lo = must_alloc(f->pool, 2 * U);
	assert_ptr_equal(lo, f->arena);
	/* The highest free block that fits is [2U, 12U): its top. */
	assert_int_equal(gm_pool_alloc_high(f->pool, U + 1, &mid), GM_OK);
	assert_ptr_equal(mid, at(f, 10 * U));
	assert_int_equal(gm_pool_alloc_high(f->pool, 9 * U, &big), GM_ENOMEM);
	assert_null(big);
	assert_int_equal(gm_pool_alloc_high(f->pool, 17 * U, &big), GM_ETOOBIG);
	assert_int_equal(gm_pool_alloc_high(f->pool, 0, &big), GM_EINVAL);
	/* First fit still finds the lowest room. */
	assert_ptr_equal(must_alloc(f->pool, U), at(f, 2 * U));
	assert_int_equal(gm_pool_used(f->pool), 9 * U);
	gm_pool_free(f->pool, mid);
	gm_pool_free(f->pool, hi);
	assert_int_equal(gm_pool_alloc_high(f->pool, 13 * U, &big), GM_OK);
	assert_ptr_equal(big, at(f, 3 * U));
}

static void test_coalesce_middle_first(void **state)
{
	struct fixture *f = *state;
	void *s[4];
	int i;

	for (i = 0; i < 4; i++)
		s[i] = must_alloc(f->pool, 2 * U);
	gm_pool_free(f->pool, s[1]);
	expect_alloc(f->pool, 4 * U, GM_ENOMEM);
	gm_pool_free(f->pool, s[2]); /* merges with the hole before it */
	assert_ptr_equal(must_alloc(f->pool, 4 * U), s[1]);
	gm_pool_free(f->pool, s[1]);
	gm_pool_free(f->pool, s[0]); /* merges with the hole after it */
	gm_pool_free(f->pool, s[3]);
	expect_empty(f);
}

static void test_coalesce_both_sides(void **state)
{
	struct fixture *f = *state;
	void *s[3];
	int i;

	for (i = 0; i < 3; i++)
		s[i] = must_alloc(f->pool, U);
	gm_pool_free(f->pool, s[0]);
	gm_pool_free(f->pool, s[2]);
	expect_alloc(f->pool, 2 * U, GM_ENOMEM);
	gm_pool_free(f->pool, s[1]); /* joins the holes on both sides */
	assert_ptr_equal(must_alloc(f->pool, 3 * U), f->arena);
}

static void shuffle(void **v, size_t n, uint64_t *rs)
{
	size_t i, j;
	void *t;

	for (i = n; i > 1; i--) {
		j = gm_testref_next(rs) % i;
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

static void test_free_all_in_any_order(void **state)
{
	uint64_t rs = gm_testref_seed();
	struct fixture *f = *state;
	void *s[256];
	size_t n = 0;
	void *slab;

	while (n < 256 &&
	       gm_pool_alloc(f->pool, 1 + gm_testref_next(&rs) % (4 * U),
			     &slab) == GM_OK)
		s[n++] = slab;
	assert_true(n > 1);
	shuffle(s, n, &rs);
	while (n > 0)
		gm_pool_free(f->pool, s[--n]);
	expect_empty(f);
}

/* Frees that never came from the pool: ignored in release builds, an
 * assertion in debug builds; run in a child so the abort is observable. */
static void test_foreign_free(void **state)
{
	struct fixture *f = *state;
	int status;
	pid_t pid;

	gm_pool_free(f->pool, NULL); /* like free(NULL) */
	assert_int_equal(gm_pool_slabs(f->pool), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		void *s = must_alloc(f->pool, U);

		freopen("/dev/null", "w", stderr);
		gm_pool_free(f->pool, at(f, U / 2)); /* inside a block */
		gm_pool_free(f->pool, at(f, 4 * U)); /* free space */
		gm_pool_free(f->pool, at(f, 8 * U)); /* past the end */
		gm_pool_free(f->pool, s);
		gm_pool_free(f->pool, s); /* twice */
		_exit(gm_pool_used(f->pool) == 0 &&
			      gm_pool_slabs(f->pool) == 0 &&
			      gm_pool_alloc(f->pool, 8 * U, &s) == GM_OK
			  ? 0
			  : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
#ifdef NDEBUG
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
#else
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
#endif
}

#define STRESS_UNITS 1024

/* The shadow: live slabs as (offset, rounded size), sorted by offset; at
 * most one per unit of the arena. */
struct shadow {
	uint64_t off[STRESS_UNITS], size[STRESS_UNITS];
	size_t n;
	uint64_t used;
};

/* Where first fit must place size bytes, or UINT64_MAX when nowhere. */
static uint64_t shadow_fit(const struct shadow *sh, uint64_t arena,
			   uint64_t size)
{
	uint64_t start = 0;
	size_t i;

	for (i = 0; i < sh->n; i++) {
		if (sh->off[i] - start >= size)
			return start;
		start = sh->off[i] + sh->size[i];
	}
	return arena - start >= size ? start : UINT64_MAX;
}

static void shadow_insert(struct shadow *sh, uint64_t off, uint64_t size)
{
	size_t i = sh->n;

	while (i > 0 && sh->off[i - 1] > off) {
		sh->off[i] = sh->off[i - 1];
		sh->size[i] = sh->size[i - 1];
		i--;
	}
	sh->off[i] = off;
	sh->size[i] = size;
	sh->n++;
	sh->used += size;
}

static uint64_t shadow_remove(struct shadow *sh, size_t i)
{
	uint64_t off = sh->off[i];

	sh->used -= sh->size[i];
	for (sh->n--; i < sh->n; i++) {
		sh->off[i] = sh->off[i + 1];
		sh->size[i] = sh->size[i + 1];
	}
	return off;
}

static void stress_alloc(struct fixture *f, struct shadow *sh, uint64_t *rs)
{
	uint64_t arena = gm_pool_size(f->pool);
	/* Mostly small, sometimes large, now and then too big. */
	uint64_t bytes =
	    1 + gm_testref_next(rs) %
		    (gm_testref_next(rs) % 8 == 0 ? arena + 2 * U : 16 * U);
	uint64_t size = (bytes + U - 1) / U * U;
	uint64_t want = shadow_fit(sh, arena, size);
	void *slab;
	int rv = gm_pool_alloc(f->pool, bytes, &slab);

	if (bytes > arena) {
		assert_int_equal(rv, GM_ETOOBIG);
	} else if (want == UINT64_MAX) {
		assert_int_equal(rv, GM_ENOMEM);
	} else {
		assert_int_equal(rv, GM_OK);
		assert_ptr_equal(slab, at(f, want));
		shadow_insert(sh, want, size);
	}
}

static void test_stress_against_shadow(void **state)
{
	static struct shadow sh;
	uint64_t rs = gm_testref_seed();
	struct fixture *f = *state;
	int op;

	sh.n = 0;
	sh.used = 0;
	for (op = 0; op < 200000; op++) {
		/* Alternate phases that fill up and drain. */
		int fill = (op / 5000) % 2 == 0 ? 3 : 1;

		if (sh.n > 0 && gm_testref_next(&rs) % 4 >= (uint64_t)fill)
			gm_pool_free(
			    f->pool,
			    at(f, shadow_remove(&sh,
						gm_testref_next(&rs) % sh.n)));
		else
			stress_alloc(f, &sh, &rs);
		assert_int_equal(gm_pool_used(f->pool), sh.used);
		assert_int_equal(gm_pool_slabs(f->pool), sh.n);
	}
	while (sh.n > 0)
		gm_pool_free(f->pool, at(f, shadow_remove(&sh, 0)));
	expect_empty(f);
}

/* A test on a pool of size bytes. */
#define POOL_TEST(t, size)                                           \
	cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, \
						 (void *)(uintptr_t)(size))

int main(void)
{
	const struct CMUnitTest tests[] = {
	    POOL_TEST(test_create_aligned, 64 * 1024),
	    cmocka_unit_test(test_create_misaligned),
	    POOL_TEST(test_zero_bytes, 4 * U),
	    POOL_TEST(test_rounding_and_alignment, 16 * U),
	    POOL_TEST(test_toobig_vs_nomem, 16 * U),
	    POOL_TEST(test_first_fit, 10 * U),
	    POOL_TEST(test_last_fit, 16 * U),
	    POOL_TEST(test_coalesce_middle_first, 8 * U),
	    POOL_TEST(test_coalesce_both_sides, 3 * U),
	    POOL_TEST(test_free_all_in_any_order, 512 * U),
	    POOL_TEST(test_foreign_free, 8 * U),
	    POOL_TEST(test_stress_against_shadow, STRESS_UNITS * U),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
