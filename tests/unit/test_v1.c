/*
 * test_v1.c - gm_v1, the answer a client of protocol version 1 gets: the
 * daemon's SP header as a REP socket, the framing of a message on
 * ipc:// and tcp://, and the reply to a request, byte for byte as
 * PROTOCOL.md 2.4 says (its REQ id echoed, a v1 ERROR header with the
 * request's id and the EVERSION body), also for a request too short to
 * carry its id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_v1.h"

static void test_hello_and_framing(void **state)
{
	static const uint8_t want[8] = {0, 'S', 'P', 0, 0, 0x31, 0, 0};
	const uint8_t ipc[9] = {1, 0, 0, 0, 0, 0, 0, 0x01, 0x02};
	const uint8_t tcp[8] = {0, 0, 0, 0, 0, 1, 0, 0x1c};

	(void)state;
	assert_memory_equal(gm_v1_hello, want, 8);
	assert_int_equal(gm_v1_frame_size(1), 9);
	assert_int_equal(gm_v1_frame_size(0), 8);
	assert_int_equal(gm_v1_frame_length(ipc, 1), 0x102);
	assert_int_equal(gm_v1_frame_length(tcp, 0), 0x1001c);
}

static void test_reply(void **state)
{
	/* REQ id 0x80000007, then a v1 header: magic, version 1, type 1,
	 * id 0x1122334455667788. */
	static const uint8_t req[28] = {
	    0x80, 0, 0,	   0x07, 0x47, 0x45, 0x4d, 0x4d, 1,    0,
	    1,	  0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
	uint8_t out[GM_V1_REPLY_MAX];
	size_t n;

	(void)state;
	n = gm_v1_reply(out, 0, req, sizeof(req));
	assert_int_equal(n, 8 + 4 + 24 + 104);
	assert_int_equal(out[7], 4 + 24 + 104); /* big-endian length */
	assert_memory_equal(out + 8, req, 4);
	assert_memory_equal(out + 12, "GEMM", 4);
	assert_int_equal(out[16], 1); /* version 1 */
	assert_int_equal(out[18], 5); /* ERROR */
	assert_memory_equal(out + 20, req + 12, 8);
	assert_int_equal(out[28], 104); /* count: the body's bytes */
	assert_int_equal(out[36], GM_EVERSION);
	assert_non_null(strstr((const char *)out + 44, "protocol v2"));
	/* On ipc:// a type byte comes first. */
	n = gm_v1_reply(out, 1, req, sizeof(req));
	assert_int_equal(n, 9 + 4 + 24 + 104);
	assert_int_equal(out[0], 1);
	/* A request too short for its header: id 0. */
	n = gm_v1_reply(out, 0, req, 6);
	assert_int_equal(n, 8 + 4 + 24 + 104);
	for (int i = 0; i < 8; i++)
		assert_int_equal(out[20 + i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hello_and_framing),
	    cmocka_unit_test(test_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
