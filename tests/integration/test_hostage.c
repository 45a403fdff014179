/*
 * test_hostage.c - clients that try to hold the daemon's memory hostage,
 * through a real gemmd with a small pool (4 MiB) and a short payload
 * grace, in raw frames (gm_rawc.h): a payload paced above
 * payload_min_rate is served whatever it takes, one that stops is cut
 * off within the grace.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest_core.h"

#define WAIT_MS 10000

/* PROTOCOL.md 9. */
enum { ETIMEDOUT = 18 };

/* Polls the stat at path on mon (10 s at most) until it is at least
 * want (least) or exactly want; returns the last value read. */
static double wait_stat(int mon, const char *path, double want, int least)
{
	double v = -1;

	for (int t = 0; t < 1000; t++) {
		v = rc_stat_fd(mon, path);
		if (v == want || (least && v > want))
			return v;
		usleep(10000);
	}
	return v;
}

/* ---- the payload's rate ---- */

/* Sends the payload of req (len bytes, its head first) in 64 KiB
 * pieces, one every gap_ms. */
static void send_paced(int fd, const uint8_t *req, size_t len, int gap_ms)
{
	size_t head = RC_HDR + RC_BATCH + RC_JOB;

	assert_int_equal(rc_write(fd, req, head), 0);
	for (size_t off = head; off < len; off += 65536) {
		size_t n = len - off < 65536 ? len - off : 65536;

		usleep((useconds_t)gap_ms * 1000);
		assert_int_equal(rc_write(fd, req + off, n), 0);
	}
}

/* A payload sent slowly but above payload_min_rate is served, however
 * long it takes past the grace; one that stops after its first bytes is
 * refused ETIMEDOUT with its id, within the grace and a sweep, the
 * connection closed and its slab returned. */
static void test_payload_rate(void **state)
{
	const char *args[] = {
	    "--set", "pool_bytes=4M",	     "--set", "payload_min_rate=256K",
	    "--set", "payload_grace_ms=300", NULL};
	static double zeros[256 * 256];
	rc_job j = {.dtype = 1,
		    .m = 256,
		    .n = 256,
		    .k = 256,
		    .alpha = 1,
		    .a = zeros,
		    .b = zeros};
	double t0, took;
	uint8_t *req;
	char msg[97];
	size_t len;
	it_daemon d;
	rc_frame f;
	rc_reply r;
	int fd, mon;

	(void)state;
	assert_int_equal(it_setup(&d), 0);
	assert_int_equal(it_start(&d, args), 0);
	assert_true((mon = rc_connect(d.ipc, NULL)) >= 0);
	assert_non_null(req = rc_gemm(5, 1, 0, 0, &j, 1, &len));
	/* 1 MiB in 16 pieces, one every 100 ms: 640 KiB/s for 1.6 s, five
	 * graces. */
	assert_true((fd = rc_connect(d.tcp, NULL)) >= 0);
	t0 = it_now_us();
	send_paced(fd, req, len, 100);
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(rc_reply_of(&f, &r), 0);
	assert_int_equal(r.status, 0);
	rc_frame_free(&f);
	fprintf(stderr, "payload rate: 1 MiB paced over %.0f ms served\n",
		(it_now_us() - t0) / 1e3);
	/* Its first 64 bytes, then nothing: not a stall yet (30 s), but far
	 * under the rate. */
	assert_int_equal(rc_write(fd, req, RC_HDR + RC_BATCH + RC_JOB + 64), 0);
	t0 = it_now_us();
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(rc_error(&f, msg), ETIMEDOUT);
	assert_int_equal(f.id, 5);
	assert_non_null(strstr(msg, "payload_min_rate"));
	rc_frame_free(&f);
	assert_true(rc_closed(fd, 2000));
	took = it_now_us() - t0;
	fprintf(stderr,
		"payload rate: a stopped payload cut after %.0f ms "
		"(grace 300 ms): \"%s\"\n",
		took / 1e3, msg);
	assert_true(took >= 290e3 && took < 300e3 + 250e3 + 1e6);
	close(fd);
	assert_int_equal(rc_stat_fd(mon, "connections.dropped_by.payload_rate"),
			 1);
	assert_int_equal(
	    rc_stat_fd(mon, "connections.dropped_by.stall_timeout"), 0);
	assert_int_equal(wait_stat(mon, "pool.used", 0, 0), 0);
	free(req);
	close(mon);
	assert_int_equal(it_stop(&d), 0);
	it_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_payload_rate),
	};

	if (getenv("GEMMD") == NULL) {
		fprintf(stderr, "GEMMD is not set\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
