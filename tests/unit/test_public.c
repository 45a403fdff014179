/*
 * test_public.c - the version and error API of libgemmd.so, linked the
 * way a service links it: only gemmd.h, only the shared library (whose
 * version script exports nothing else, so a gm_* call would not link).
 * The library's version is the headers'; every public code has the
 * wire's value, its own name and its text; other values read unknown.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gemmd.h"

static void test_version_is_the_headers(void **state)
{
	char want[32];

	(void)state;
	assert_string_equal(gemmd_version(), GEMMD_VERSION_STRING);
	snprintf(want, sizeof(want), "%d.%d.%d", GEMMD_VERSION_MAJOR,
		 GEMMD_VERSION_MINOR, GEMMD_VERSION_PATCH);
	assert_string_equal(gemmd_version(), want);
	assert_int_equal(GEMMD_VERSION_NUMBER, GEMMD_VERSION_MAJOR * 10000 +
						   GEMMD_VERSION_MINOR * 100 +
						   GEMMD_VERSION_PATCH);
}

struct code {
	int value;
	int wire;
	const char *name;
	const char *text;
};

/* The public names beside the values the protocol assigns them
 * (proto/PROTOCOL.md, "Error codes"): written out, not generated, so
 * that a change to the list shows here. */
static const struct code codes[] = {
    {GEMMD_OK, 0, "OK", "success"},
    {GEMMD_EINVAL, 1, "EINVAL", "invalid argument"},
    {GEMMD_EDTYPE, 5, "EDTYPE", "unknown dtype"},
    {GEMMD_EDIM, 7, "EDIM", "dimension zero or over limit"},
    {GEMMD_EBUSY, 14, "EBUSY", "queue full, try again later"},
    {GEMMD_ESHUTDOWN, 17, "ESHUTDOWN", "daemon shutting down"},
    {GEMMD_ETIMEDOUT, 18, "ETIMEDOUT", "timed out"},
    {GEMMD_ETRANSPORT, 21, "ETRANSPORT", "transport error"},
    {GEMMD_ENOTFOUND, 27, "ENOTFOUND", "not found"},
    {GEMMD_EDRAINING, 30, "EDRAINING",
     "daemon draining: not accepting new jobs"},
    {GEMMD_EBOUNDS, 32, "EBOUNDS", "offset or length outside the region"},
};

static void test_codes_names_texts(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		assert_int_equal(codes[i].value, codes[i].wire);
		assert_string_equal(gemmd_errname(codes[i].value),
				    codes[i].name);
		assert_string_equal(gemmd_strerror(codes[i].value),
				    codes[i].text);
	}
}

static void test_unknown_codes(void **state)
{
	static const int bad[] = {-1, 1000, INT_MAX, INT_MIN};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_string_equal(gemmd_errname(bad[i]), "E?");
		assert_string_equal(gemmd_strerror(bad[i]), "unknown error");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_version_is_the_headers),
	    cmocka_unit_test(test_codes_names_texts),
	    cmocka_unit_test(test_unknown_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
