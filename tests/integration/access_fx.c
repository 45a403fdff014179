/*
 * access_fx.c - what the tests in test_access.c, test_access_tls.c share; see
 * access_fx.h.
 */
#include "access_fx.h"

void not_found_to(gemmd_client *c, uint64_t id)
{
	gemmd_job_info in;
	gemmd_job j = {0};
	int st;

	assert_int_equal(gemmd_job_status(c, id, &in, WAIT_MS), GM_ENOTFOUND);
	assert_int_equal(gemmd_wait(c, id, &j, 0), GM_ENOTFOUND);
	assert_int_equal(gemmd_cancel(c, id, &st, WAIT_MS), GM_ENOTFOUND);
}
