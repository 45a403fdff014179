/*
 * test_queue_detach.c - gemmd as a job queue, through a real daemon
 * (queue_fx.h, whose blocker and filler hold the engine as test_queue.c
 * says): detached jobs (status, wait, cancel of queued and running jobs,
 * results that expire, the bound on their memory), drain and resume, by
 * request and by SIGUSR1, and jobs whose phases add up to their totals.
 */
#include "queue_fx.h"

/*
 * A detached request of three jobs gets three ids at once; each result
 * is taken by a wait, on another connection too, in any order; a wait
 * with no out buffer gets one made; the result is gone once taken; ids
 * the daemon never gave are not found.
 */
static void test_detach_wait(void **state)
{
	static const uint32_t dims[3][3] = {
	    {7, 13, 5}, {33, 17, 40}, {1, 1, 1}};
	gemmd_job j[3], got = {0};
	gemmd_job_info in;
	uint64_t ids[3];
	gemmd_client *c2;
	it_daemon d;
	gemmd_client *c = start(&d, NULL);
	int st;

	for (int i = 0; i < 3; i++)
		it_job(&j[i], dims[i][0], dims[i][1], dims[i][2], 50 + i);
	assert_int_equal(gemmd_submit_detached(c, j, 3, NULL, ids, TIMEOUT_MS),
			 GM_OK);
	assert_true(ids[0] != 0 && ids[0] != ids[1] && ids[1] != ids[2]);
	/* The same uid on another connection is the same principal. */
	assert_int_equal(gemmd_open(d.ipc, &socket_only, &c2), GM_OK);
	assert_int_equal(gemmd_wait(c2, ids[2], &j[2], TIMEOUT_MS), GM_OK);
	assert_int_equal(gemmd_wait(c, ids[0], &j[0], TIMEOUT_MS), GM_OK);
	assert_true(it_job_ok(&j[0]) && it_job_ok(&j[2]));
	assert_true(j[0].t.total_us > 0 && j[0].t.kernel_us > 0);
	in = status_of(c, ids[0]);
	assert_int_equal(in.state, GEMMD_JOB_DONE);
	assert_int_equal(in.status, GM_OK);
	assert_false(in.has_result);
	assert_true(in.m == 7 && in.n == 13 && in.k == 5);
	assert_int_equal(in.dtype, GEMMD_FP64);
	assert_true(in.t.total_us > 0);
	assert_true(status_of(c, ids[1]).has_result);
	assert_int_equal(gemmd_wait(c, ids[0], &j[0], TIMEOUT_MS),
			 GM_ENOTFOUND);
	assert_int_equal(j[0].status, GM_ENOTFOUND);

	/* No out: the call makes one the result's size. */
	assert_int_equal(gemmd_wait(c, ids[1], &got, TIMEOUT_MS), GM_OK);
	assert_int_equal(got.status, GM_OK);
	assert_true(got.m == 33 && got.n == 17 && got.dtype == GEMMD_FP64);
	got.a = j[1].a;
	got.b = j[1].b;
	got.k = j[1].k;
	assert_true(it_job_ok(&got));
	free(got.out);

	assert_int_equal(gemmd_job_status(c, 1, &in, TIMEOUT_MS), GM_ENOTFOUND);
	assert_int_equal(gemmd_wait(c, 1, &j[0], TIMEOUT_MS), GM_ENOTFOUND);
	assert_int_equal(gemmd_cancel(c, 1, &st, TIMEOUT_MS), GM_ENOTFOUND);
	assert_int_equal(it_stat(c, "detached.jobs"), 3);
	assert_int_equal(it_stat(c, "detached.results"), 0);
	for (int i = 0; i < 3; i++)
		it_job_free(&j[i]);
	gemmd_close(c2);
	stop(&d, c);
}

/*
 * Behind a detached blocker: a wait with a short timeout times out on
 * the daemon's side; a queued job canceled never runs and its wait says
 * so; the running blocker canceled runs on, and the wait parked on it
 * hears ECANCELED when it ends; the other queued job's wait, parked
 * meanwhile, gets its result.
 */
static void test_detach_cancel(void **state)
{
	gemmd_job blk, q[2];
	uint64_t bid, qid[2];
	it_daemon d;
	gemmd_client *c = start(&d, NULL);
	double t0, ms;
	int st;

	it_job(&blk, blocker_n, blocker_n, blocker_n, 60);
	it_job(&q[0], SMALL, SMALL, SMALL, 61);
	it_job(&q[1], SMALL, SMALL, SMALL, 62);
	assert_int_equal(
	    gemmd_submit_detached(c, &blk, 1, NULL, &bid, TIMEOUT_MS), GM_OK);
	wait_state(c, bid, GEMMD_JOB_RUNNING);
	assert_int_equal(gemmd_submit_detached(c, q, 2, NULL, qid, TIMEOUT_MS),
			 GM_OK);
	assert_int_equal(status_of(c, qid[0]).state, GEMMD_JOB_QUEUED);

	t0 = it_now_us();
	assert_int_equal(gemmd_wait(c, qid[1], &q[1], 100), GM_ETIMEDOUT);
	ms = (it_now_us() - t0) / 1e3;
	assert_true(ms >= 95 && ms < 600);

	assert_int_equal(gemmd_cancel(c, qid[0], &st, TIMEOUT_MS), GM_OK);
	assert_int_equal(st, GEMMD_JOB_CANCELED);
	assert_int_equal(status_of(c, qid[0]).state, GEMMD_JOB_CANCELED);
	assert_int_equal(status_of(c, qid[0]).status, GM_ECANCELED);
	assert_int_equal(gemmd_wait(c, qid[0], &q[0], TIMEOUT_MS),
			 GM_ECANCELED);
	assert_true(it_job_untouched(&q[0]));

	assert_int_equal(gemmd_cancel(c, bid, &st, TIMEOUT_MS), GM_OK);
	assert_int_equal(st, GEMMD_JOB_RUNNING);
	assert_int_equal(status_of(c, bid).state, GEMMD_JOB_RUNNING);
	assert_int_equal(gemmd_wait(c, bid, &blk, TIMEOUT_MS), GM_ECANCELED);
	assert_int_equal(blk.status, GM_ECANCELED);
	assert_true(it_job_untouched(&blk));
	/* It ran to its end, but reads canceled, ECANCELED. */
	assert_int_equal(status_of(c, bid).state, GEMMD_JOB_CANCELED);
	assert_int_equal(status_of(c, bid).status, GM_ECANCELED);

	assert_int_equal(gemmd_wait(c, qid[1], &q[1], GEMMD_FOREVER), GM_OK);
	assert_true(it_job_ok(&q[1]));
	assert_int_equal(it_stat(c, "detached.pending"), 0);
	assert_int_equal(it_stat(c, "detached.waits"), 0);
	it_job_free(&blk);
	it_job_free(&q[0]);
	it_job_free(&q[1]);
	stop(&d, c);
}

/* With detach_keep_s=1 an unclaimed result is dropped a second after
 * its job finished (logged; the job reads "expired"), and the job is
 * forgotten a second after that. */
static void test_detach_expiry(void **state)
{
	const char *extra[] = {"--set", "detach_keep_s=1", NULL};
	gemmd_job j;
	gemmd_job_info in;
	uint64_t id;
	it_daemon d;
	gemmd_client *c = start(&d, extra);

	it_job(&j, 16, 16, 16, 70);
	assert_int_equal(gemmd_submit_detached(c, &j, 1, NULL, &id, TIMEOUT_MS),
			 GM_OK);
	wait_state(c, id, GEMMD_JOB_DONE);
	assert_true(status_of(c, id).has_result);
	usleep(1300 * 1000);
	in = status_of(c, id);
	assert_int_equal(in.state, GEMMD_JOB_EXPIRED);
	assert_false(in.has_result);
	assert_int_equal(gemmd_wait(c, id, &j, TIMEOUT_MS), GM_ENOTFOUND);
	assert_int_equal(it_stat(c, "detached.dropped"), 1);
	usleep(1200 * 1000);
	assert_int_equal(gemmd_job_status(c, id, &in, TIMEOUT_MS),
			 GM_ENOTFOUND);
	assert_true(it_file_has(d.log, "unclaimed for detach_keep_s=1 s"));
	it_job_free(&j);
	stop(&d, c);
}

/* With detach_max_bytes=2M, four small results fit; a fifth job drops
 * the oldest (logged); a job whose result alone is over the bound is
 * refused EBUSY. */
static void test_detach_bound(void **state)
{
	const char *extra[] = {"--set", "detach_max_bytes=2M", NULL};
	gemmd_job j[5], big;
	uint64_t id[5], bid;
	it_daemon d;
	gemmd_client *c = start(&d, extra);

	/* 250^3: 500 KB of result each, four of them fit in 2 MiB. */
	for (int i = 0; i < 5; i++) {
		it_job(&j[i], 250, 250, 250, 80 + i);
		assert_int_equal(gemmd_submit_detached(c, &j[i], 1, NULL,
						       &id[i], TIMEOUT_MS),
				 GM_OK);
		wait_state(c, id[i], GEMMD_JOB_DONE);
	}
	assert_int_equal(status_of(c, id[0]).state, GEMMD_JOB_EXPIRED);
	assert_true(status_of(c, id[1]).has_result);
	assert_true(it_file_has(d.log, "to make room"));
	it_job(&big, 600, 600, 4, 90);
	assert_int_equal(
	    gemmd_submit_detached(c, &big, 1, NULL, &bid, TIMEOUT_MS),
	    GM_EBUSY);
	assert_int_equal(big.status, GM_EBUSY);
	assert_int_equal(gemmd_wait(c, id[4], &j[4], TIMEOUT_MS), GM_OK);
	assert_true(it_job_ok(&j[4]));
	for (int i = 0; i < 5; i++)
		it_job_free(&j[i]);
	it_job_free(&big);
	stop(&d, c);
}

/*
 * Drained, the daemon refuses new jobs (plain and detached) with
 * EDRAINING, finishes what was queued, and still answers ping, stats,
 * status and wait; resumed, it takes jobs again.
 */
static void test_drain_resume(void **state)
{
	slot blk = {0}, q[2] = {0};
	gemmd_job no, det, ok;
	gemmd_job_info in;
	uint64_t did, nid;
	it_daemon d;
	gemmd_client *c = start(&d, NULL);

	send_blocker(c, &blk);
	for (int i = 0; i < 2; i++)
		queue_small(c, c, &q[i], 100 + i, GEMMD_PRIORITY_DEFAULT,
			    i + 1);
	it_job(&det, SMALL, SMALL, SMALL, 102);
	assert_int_equal(
	    gemmd_submit_detached(c, &det, 1, NULL, &did, TIMEOUT_MS), GM_OK);
	wait_queued(c, 3);
	assert_false(draining(c));
	assert_int_equal(ready(c), 1);
	assert_int_equal(gemmd_drain(c, TIMEOUT_MS), GM_OK);
	assert_true(draining(c));
	assert_int_equal(ready(c), 0);

	it_job(&no, 8, 8, 8, 103);
	assert_int_equal(gemmd_submit(c, &no, 1, NULL, TIMEOUT_MS),
			 GM_EDRAINING);
	assert_int_equal(no.status, GM_EDRAINING);
	assert_int_equal(
	    gemmd_submit_detached(c, &no, 1, NULL, &nid, TIMEOUT_MS),
	    GM_EDRAINING);
	assert_int_equal(gemmd_ping(c, NULL, TIMEOUT_MS), GM_OK);
	assert_int_equal(gemmd_job_status(c, did, &in, TIMEOUT_MS), GM_OK);
	assert_int_equal(in.state, GEMMD_JOB_QUEUED);

	end_blocker(&blk);
	for (int i = 0; i < 2; i++) {
		wait_done(&q[i]);
		assert_true(it_job_ok(&q[i].job));
	}
	assert_int_equal(gemmd_wait(c, did, &det, TIMEOUT_MS), GM_OK);
	assert_true(it_job_ok(&det));
	assert_int_equal(it_stat(c, "errors.EDRAINING"), 2);

	assert_int_equal(gemmd_resume(c, TIMEOUT_MS), GM_OK);
	assert_false(draining(c));
	assert_int_equal(ready(c), 1);
	it_job(&ok, 8, 8, 8, 104);
	assert_int_equal(gemmd_submit(c, &ok, 1, NULL, TIMEOUT_MS), GM_OK);
	assert_true(it_job_ok(&ok));
	it_job_free(&blk.job);
	it_job_free(&q[0].job);
	it_job_free(&q[1].job);
	it_job_free(&no);
	it_job_free(&det);
	it_job_free(&ok);
	stop(&d, c);
}

/* SIGUSR1 drains as the drain request does; resume undoes it. */
static void test_sigusr1_drains(void **state)
{
	gemmd_job j;
	it_daemon d;
	gemmd_client *c = start(&d, NULL);
	int rv = GM_OK;

	it_job(&j, 8, 8, 8, 110);
	assert_int_equal(kill(d.pid, SIGUSR1), 0);
	for (int i = 0; i < 2000 && !draining(c); i++)
		usleep(1000);
	assert_true(draining(c));
	rv = gemmd_submit(c, &j, 1, NULL, TIMEOUT_MS);
	assert_int_equal(rv, GM_EDRAINING);
	assert_true(it_file_has(d.log, "draining (User defined signal 1)"));
	assert_int_equal(gemmd_resume(c, TIMEOUT_MS), GM_OK);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, TIMEOUT_MS), GM_OK);
	assert_true(it_job_ok(&j));
	it_job_free(&j);
	stop(&d, c);
}

/*
 * Behind a blocker, three jobs of about PHASE_S of work each, all handed
 * to the engine together once it is free (their bytes fit its budget),
 * where they run one after another: each job's phases add up to its
 * total within a few ms (the time from its BLAS call's end to its
 * reply), so the time the three waited, behind the blocker and behind
 * each other in the engine's own queue, shows as their queue time; and
 * the device's busy time over the run is no more than the time the run
 * took.
 */
static void test_phases_add_up(void **state)
{
	enum { N = 3 };
	slot blk = {0}, j[N] = {0};
	it_daemon d;
	gemmd_client *c = start(&d, NULL), *cs;
	uint32_t n = (uint32_t)(blocker_n * cbrt(PHASE_S / BLOCK_S));
	double busy0, busy1, t0, t1, kernels;

	n = n < 200 ? 200 : n > 800 ? 800 : n;
	assert_int_equal(gemmd_open(d.ipc, &socket_only, &cs), GM_OK);
	busy0 = it_stat(c, "devices.0.busy_s");
	t0 = it_now_us();
	send_blocker(c, &blk);
	for (int i = 0; i < N; i++) {
		it_job(&j[i].job, n, n, n, 70 + i);
		send_job(cs, &j[i], GEMMD_PRIORITY_DEFAULT, 0);
	}
	end_blocker(&blk);
	for (int i = 0; i < N; i++)
		wait_done(&j[i]);
	t1 = it_now_us();
	busy1 = it_stat(c, "devices.0.busy_s");
	kernels = blk.job.t.kernel_us;
	for (int i = -1; i < N; i++) {
		const gemmd_job *job = i < 0 ? &blk.job : &j[i].job;
		const gemmd_timings *t = &job->t;
		double sum = t->queue_us + t->h2d_us + t->kernel_us + t->d2h_us;

		print_message("%u^3: queue %.1f kernel %.1f total %.1f ms\n",
			      job->m, t->queue_us / 1e3, t->kernel_us / 1e3,
			      t->total_us / 1e3);
		assert_int_equal(job->status, GM_OK);
		assert_true(sum <= t->total_us + 1.0);
		assert_true(t->total_us - sum <= 5000 + 0.05 * t->total_us);
		if (i < 0)
			continue;
		assert_true(it_job_ok(&j[i].job));
		/* Sent as the blocker started, started once it ended. */
		assert_true(t->queue_us >= 0.5 * blk.job.t.kernel_us);
		kernels += t->kernel_us;
	}
	assert_true(busy1 - busy0 <= (t1 - t0) / 1e6);
	assert_true(busy1 - busy0 >= 0.9 * kernels / 1e6);
	for (int i = 0; i < N; i++)
		it_job_free(&j[i].job);
	it_job_free(&blk.job);
	gemmd_close(cs);
	stop(&d, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_detach_wait),
	    cmocka_unit_test(test_detach_cancel),
	    cmocka_unit_test(test_detach_expiry),
	    cmocka_unit_test(test_detach_bound),
	    cmocka_unit_test(test_drain_resume),
	    cmocka_unit_test(test_sigusr1_drains),
	    cmocka_unit_test(test_phases_add_up),
	};

	return IT_RUN_SETUP(tests, calibrate);
}
