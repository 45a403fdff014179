/*
 * test_pageable.c - requests larger than the whole staging pool, which
 * gemmd receives into pageable memory up to pageable_max_bytes, against
 * a real daemon on the CPU engine with a 1 MiB pool and an 8 MiB cap.
 * Such a request is served (one job with C, three jobs in one request)
 * with correct results, the pool untouched, its memory counted while it
 * is held and back to zero once its replies are out. A request that
 * holds most of the cap (its head sent, its payload not) makes the next
 * large one be refused EBUSY and one over the cap ETOOBIG, each naming
 * the key, while a small client is served beside it; once it goes away
 * the large one is served. With the cap 0 a request over the pool is
 * refused ETOOBIG naming both keys.
 *
 * Every client sends through the socket (GEMMD_OPEN_NO_SHM): staged
 * through a region, a job would not need the pool.
 */
#include "it_case.h"

#define TIMEOUT_MS 30000
#define WAIT_MS	   10000
#define MIB	   (1024 * 1024)

static const gemmd_open_opts socket_only = {.flags = GEMMD_OPEN_NO_SHM};

static void start(it_daemon *d, const char *cap)
{
	char set[64];
	const char *args[] = {"--set", "pool_bytes=1M",		  "--set", set,
			      "--set", "stall_timeout_ms=120000", NULL};

	snprintf(set, sizeof(set), "pageable_max_bytes=%s", cap);
	assert_int_equal(it_setup(d), 0);
	if (it_start(d, args) != 0)
		fail_msg("gemmd did not start; see %s", d->log);
}

/* Waits until the daemon holds no pageable memory (a request's memory
 * goes once its last reply is written, which may be a moment after
 * the client read it) and no pool. */
static void assert_released(const it_daemon *d)
{
	assert_int_equal(it_wait_stat(d, "pageable.bytes", 0, WAIT_MS), 0);
	assert_int_equal(it_rstat(d, "pageable.held"), 0);
	assert_int_equal(it_rstat(d, "pool.used"), 0);
}

/* A 256^3 fp64 job with C (all 1) and beta 2 (1.5 MiB of operands and
 * result with a 512 KiB C: over the pool), then three 160^3 jobs in one
 * request (each 600 KiB, 1.8 MiB in all): each served, right. */
static void test_served(void **state)
{
	gemmd_job j, three[3];
	gemmd_client *c;
	double *cin;
	it_daemon d;

	start(&d, "8M");
	assert_int_equal(gemmd_open(d.ipc, &socket_only, &c), GM_OK);
	it_job(&j, 256, 256, 256, 1);
	assert_non_null(cin = malloc(256 * 256 * sizeof(double)));
	for (size_t i = 0; i < 256 * 256; i++)
		cin[i] = 1.0;
	j.c = cin;
	j.beta = 2;
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, TIMEOUT_MS), GM_OK);
	assert_int_equal(j.status, GM_OK);
	for (size_t i = 0; i < 256 * 256; i++)
		((double *)j.out)[i] -= 2.0;
	j.c = NULL;
	assert_true(it_job_ok(&j));
	for (int i = 0; i < 3; i++)
		it_job(&three[i], 160, 160, 160, 10 + (unsigned)i);
	assert_int_equal(gemmd_submit(c, three, 3, NULL, TIMEOUT_MS), GM_OK);
	for (int i = 0; i < 3; i++)
		assert_true(it_job_ok(&three[i]));
	assert_released(&d);
	assert_int_equal(it_stat(c, "pageable.requests"), 2);
	assert_true(it_stat(c, "pageable.peak_bytes") > 1.8 * MIB);
	assert_int_equal(it_stat(c, "pageable.limit"), 8 * MIB);
	assert_int_equal(it_stat(c, "pageable.busy"), 0);
	assert_int_equal(it_stat(c, "jobs.ok"), 4);
	for (int i = 0; i < 3; i++)
		it_job_free(&three[i]);
	it_job_free(&j);
	free(cin);
	gemmd_close(c);
	assert_int_equal(it_finish(&d), 0);
}

/* A request of n^3 fp64 that must be refused whole with want, its
 * message naming pageable_max_bytes. */
static void assert_refused(gemmd_client *c, uint32_t n, int want)
{
	gemmd_job j;

	it_job(&j, n, n, n, 3);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, TIMEOUT_MS), want);
	assert_int_equal(j.status, want);
	if (strstr(j.message, "pageable_max_bytes") == NULL)
		fail_msg("%s: \"%s\" does not name pageable_max_bytes",
			 gemmd_strerror(want), j.message);
	assert_true(it_job_untouched(&j));
	it_job_free(&j);
}

static void assert_served(gemmd_client *c, uint32_t n)
{
	gemmd_job j;

	it_job(&j, n, n, n, 4);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, TIMEOUT_MS), GM_OK);
	assert_true(it_job_ok(&j));
	it_job_free(&j);
}

/* A 512^3 fp64 request (6 MiB of 8) held open by a client that sent
 * its head and a little of its payload: a 300^3 one (2.1 MiB) is
 * refused EBUSY, a 600^3 one (8.2 MiB) ETOOBIG, a 64^3 one (in the
 * pool) served; when the holder goes, the 300^3 one is served. */
static void test_cap(void **state)
{
	double *a, *b;
	gemmd_client *c;
	uint8_t *req;
	it_daemon d;
	rc_job hold;
	size_t len;
	int fd;

	start(&d, "8M");
	rc_job_fp64(&hold, 512, 512, 512, 5, &a, &b);
	assert_non_null(req = rc_gemm(1, 1, 0, 0, &hold, 1, &len));
	assert_true((fd = rc_connect(d.tcp, NULL)) >= 0);
	assert_int_equal(rc_write(fd, req, RC_HDR + RC_BATCH + RC_JOB + 4096),
			 0);
	assert_int_equal(it_wait_stat(&d, "pageable.held", 1, WAIT_MS), 1);
	assert_true(it_rstat(&d, "pageable.bytes") > 6 * MIB);
	assert_int_equal(gemmd_open(d.ipc, &socket_only, &c), GM_OK);
	assert_refused(c, 300, GM_EBUSY);
	assert_refused(c, 600, GM_ETOOBIG);
	assert_served(c, 64);
	assert_int_equal(it_stat(c, "pageable.busy"), 1);
	assert_int_equal(it_stat(c, "pageable.too_big"), 1);
	assert_int_equal(it_stat(c, "pageable.requests"), 1);
	/* The holder goes: its memory with it. */
	close(fd);
	assert_released(&d);
	assert_served(c, 300);
	assert_released(&d);
	assert_int_equal(it_stat(c, "pageable.requests"), 2);
	assert_int_equal(it_stat(c, "errors.EBUSY"), 1);
	assert_int_equal(it_stat(c, "errors.ETOOBIG"), 1);
	gemmd_close(c);
	free(req);
	free(a);
	free(b);
	assert_int_equal(it_finish(&d), 0);
}

/* pageable_max_bytes=0: over the pool is refused, naming both keys. */
static void test_off(void **state)
{
	gemmd_client *c;
	gemmd_job j;
	it_daemon d;

	start(&d, "0");
	assert_int_equal(gemmd_open(d.ipc, &socket_only, &c), GM_OK);
	it_job(&j, 256, 256, 256, 6);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, TIMEOUT_MS), GM_ETOOBIG);
	assert_non_null(strstr(j.message, "pool_bytes="));
	assert_non_null(strstr(j.message, "pageable_max_bytes=0"));
	it_job_free(&j);
	assert_served(c, 64);
	assert_int_equal(it_stat(c, "pageable.limit"), 0);
	assert_int_equal(it_stat(c, "pageable.too_big"), 1);
	gemmd_close(c);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_served),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
