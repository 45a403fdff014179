/*
 * hostile_fx.c - what the tests in raw frames share; see hostile_fx.h.
 */
#include "hostile_fx.h"

rc_job region_job(const double *b)
{
	rc_job reg = {.dtype = 1,
		      .flags = 2,
		      .m = 1,
		      .n = 1,
		      .k = 1,
		      .alpha = 1,
		      .refs = {7, 0},
		      .b = b};

	return reg;
}

double job_ok_us(int fd, const uint8_t *req, size_t len)
{
	double t0 = it_now_us();
	rc_frame f;
	rc_reply r;

	assert_int_equal(rc_write(fd, req, len), 0);
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(rc_reply_of(&f, &r), 0);
	assert_int_equal(r.status, 0);
	rc_frame_free(&f);
	return it_now_us() - t0;
}
