/*
 * fuzz_ctrlreq.c - fuzz target for the strict reader of CTRL bodies
 * (proto/gm_ctrlreq.c): whatever the bytes, it returns one of its codes,
 * a message, and on success an op from the table with only the members
 * that op takes.
 */
#include <string.h>

#include "fuzz.h"
#include "gm_ctrlreq.h"
#include "gm_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gm_ctrlreq q;
	char msg[128];
	int rv;

	msg[0] = '\0';
	rv = gm_ctrlreq_parse(data, size, &q, msg, sizeof(msg));
	FUZZ_CHECK(rv == GM_OK || rv == GM_EJSON || rv == GM_EINVAL ||
		   rv == GM_EFIELD);
	FUZZ_CHECK(rv == GM_OK || msg[0] != '\0');
	if (rv == GM_OK) {
		FUZZ_CHECK(gm_ctrlreq_op_name(q.op) != NULL);
		FUZZ_CHECK((q.members &
			    ~(GM_CTRLREQ_M_JOB | GM_CTRLREQ_M_TIMEOUT)) == 0);
		FUZZ_CHECK(!(q.members & GM_CTRLREQ_M_JOB) || q.job != 0);
		FUZZ_CHECK(q.timeout_ms <= GM_CTRLREQ_TIMEOUT_MAX);
	}
	return 0;
}
