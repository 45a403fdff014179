/*
 * test_error.c - unit tests for proto/gm_error: every code of
 * GM_ERRNO_MAP has its own text and name, the enum values are the ones
 * the map lists (they travel on the wire), and values outside the map
 * read as unknown rather than crashing or aliasing a real code; and
 * nng's codes fold into ours as gm_error_nng.h lists them.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_error_nng.h"

struct code {
	int value;
	const char *name;
	const char *text;
};

static const struct code codes[] = {
#define GM_ERR_ROW(name, val, text) {GM_##name, #name, text},
    GM_ERRNO_MAP(GM_ERR_ROW)
#undef GM_ERR_ROW
};

#define NCODES (sizeof(codes) / sizeof(codes[0]))

/* The codes are 0..GM_ERR_COUNT-1 in the map's order, each with its
 * own text and name, none of them the unknown one's. */
static void test_map(void **state)
{
	(void)state;
	assert_int_equal(NCODES, GM_ERR_COUNT);
	for (size_t i = 0; i < NCODES; i++) {
		assert_int_equal(codes[i].value, (int)i);
		assert_string_equal(gm_strerror(codes[i].value), codes[i].text);
		assert_string_equal(gm_errname(codes[i].value), codes[i].name);
		assert_string_not_equal(codes[i].text, "unknown error");
		assert_string_not_equal(codes[i].name, "E?");
		assert_true(strlen(codes[i].text) > 0);
		for (size_t j = i + 1; j < NCODES; j++) {
			assert_string_not_equal(gm_strerror(codes[i].value),
						gm_strerror(codes[j].value));
			assert_string_not_equal(gm_errname(codes[i].value),
						gm_errname(codes[j].value));
		}
	}
}

/* Wire values a client may see: fixed forever, so pinned here. */
static void test_wire_values_pinned(void **state)
{
	(void)state;
	assert_int_equal(GM_OK, 0);
	assert_int_equal(GM_EINVAL, 1);
	assert_int_equal(GM_EDIM, 7);
	assert_int_equal(GM_ETRUNC, 9);
	assert_int_equal(GM_EFIELD, 12);
	assert_int_equal(GM_EBUSY, 14);
	assert_int_equal(GM_ENODEV, 29);
	assert_int_equal(GM_EDRAINING, 30);
}

static void test_out_of_range(void **state)
{
	const int bad[] = {-1,	 GM_ERR_COUNT, GM_ERR_COUNT + 1,
			   1000, INT_MAX,      INT_MIN};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_string_equal(gm_strerror(bad[i]), "unknown error");
		assert_string_equal(gm_errname(bad[i]), "E?");
	}
}

/* nng's codes with a meaning of ours map to it, every other one to a
 * transport error. */
static void test_from_nng(void **state)
{
	static const struct {
		int nng, gm;
	} map[] = {
	    {0, GM_OK},
	    {NNG_ETIMEDOUT, GM_ETIMEDOUT},
	    {NNG_ECANCELED, GM_ECANCELED},
	    {NNG_ECLOSED, GM_ECANCELED},
	    {NNG_ENOMEM, GM_ENOMEM},
	    {NNG_EINVAL, GM_EINVAL},
	    {NNG_EADDRINVAL, GM_EINVAL},
	    {NNG_ENOTSUP, GM_EINVAL},
	    {NNG_ECONNREFUSED, GM_ETRANSPORT},
	    {NNG_ECONNRESET, GM_ETRANSPORT},
	    {NNG_ECONNSHUT, GM_ETRANSPORT},
	    {NNG_EADDRINUSE, GM_ETRANSPORT},
	    {NNG_EPROTO, GM_ETRANSPORT},
	    {NNG_ECRYPTO, GM_ETRANSPORT},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		assert_int_equal(gm_error_nng(map[i].nng), map[i].gm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_map),
	    cmocka_unit_test(test_wire_values_pinned),
	    cmocka_unit_test(test_out_of_range),
	    cmocka_unit_test(test_from_nng),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
