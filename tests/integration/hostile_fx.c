/*
 * hostile_fx.c - what the tests in raw frames share; see hostile_fx.h.
 */
#include "hostile_fx.h"

rc_job region_job(const double *b)
{
	rc_job reg = rc_job_on(1, 1, 1, NULL, b);

	reg.flags = 2;
	reg.refs[0] = 7;
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

double timed_jobs(int fd, int min, int ms, double *p50, double *max, int *n)
{
	enum { MAX_JOBS = 200000 };
	static double lat[MAX_JOBS], a[64 * 64], b[64 * 64];
	rc_job j = rc_job_on(64, 64, 64, a, b);
	double end = it_now_us() + ms * 1e3;
	uint8_t *req;
	size_t len;
	int i;

	assert_non_null(req = rc_gemm(1, 1, 0, 0, &j, 1, &len));
	for (i = 0; i < MAX_JOBS && (i < min || it_now_us() < end); i++)
		lat[i] = job_ok_us(fd, req, len);
	free(req);
	if (n != NULL)
		*n = i;
	if (max != NULL)
		*max = it_quantile(lat, (size_t)i, 1.0);
	*p50 = it_quantile(lat, (size_t)i, 0.50);
	return it_quantile(lat, (size_t)i, 0.99);
}
