/*
 * test_jobstate.c - unit tests for proto/gm_jobstate: every state of
 * GM_JOBSTATE_MAP has the value and wire name PROTOCOL.md (7.1) gives
 * it, names and values map both ways, and anything else reads as
 * unknown.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "gm_jobstate.h"

/* The wire's names and values: fixed forever, so pinned here. */
static const struct {
	int value;
	const char *name;
} pinned[] = {
    {GM_JOBSTATE_QUEUED, "queued"},	{GM_JOBSTATE_RUNNING, "running"},
    {GM_JOBSTATE_DONE, "done"},		{GM_JOBSTATE_FAILED, "failed"},
    {GM_JOBSTATE_CANCELED, "canceled"}, {GM_JOBSTATE_EXPIRED, "expired"},
};

#define NPINNED (sizeof(pinned) / sizeof(pinned[0]))

static void test_pinned(void **state)
{
	(void)state;
	assert_int_equal(NPINNED, GM_JOBSTATE_COUNT);
	for (size_t i = 0; i < NPINNED; i++) {
		assert_int_equal(pinned[i].value, (int)i);
		assert_string_equal(gm_jobstate_name(pinned[i].value),
				    pinned[i].name);
		assert_int_equal(gm_jobstate_parse(pinned[i].name),
				 pinned[i].value);
	}
}

static void test_unknown(void **state)
{
	const int bad[] = {-1, GM_JOBSTATE_COUNT, 1000, INT_MAX, INT_MIN};
	const char *const names[] = {"",	"QUEUED",    "queue",
				     "queued ", "cancelled", NULL};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_null(gm_jobstate_name(bad[i]));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(gm_jobstate_parse(names[i]), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pinned),
	    cmocka_unit_test(test_unknown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
