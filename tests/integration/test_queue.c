/*
 * test_queue.c - gemmd as a job queue, through a real daemon (queue_fx.h):
 * priority order on a loaded queue, a deadline that passes while the
 * engine is busy, fairness between two principals flooding one priority
 * (one of them over four connections), queue limits per priority.
 * Detached jobs, drain and resume, and phases are in
 * test_queue_detach.c.
 *
 * A "blocker" is one job sized, by a calibration run, to keep the CPU
 * engine (one BLAS thread) busy for about BLOCK_S seconds, larger than
 * the scheduler's whole budget of bytes in flight (so it starts beside
 * others), followed by a "filler" that takes that budget, so that
 * whatever is sent while they run waits in the scheduler's queue, and
 * starts, in the scheduler's order, once the filler is done. The daemon
 * runs each job whole here (pieces of cpu_piece_flops far over any job
 * here): the order these tests read is the scheduler's, not the engine's
 * turns between pieces (test_fair.c has those). The host pool is made
 * large enough for both and the small jobs beside them (a request
 * waiting for pool bytes waits in arrival order, before the scheduler
 * sees it). The order is read from each job's start_seq, the daemon's
 * own numbering of the jobs it hands to its engine: replies on two
 * connections may arrive either way round, and callbacks run on the
 * library's threads.
 */
#include "queue_fx.h"

/*
 * Once a blocker holds the engine, four requests at priority 0 and then
 * four at priority 3 queue behind it; every high one finishes before
 * any low one, and each priority keeps its order. (The small jobs go on
 * a connection of their own: behind the blocker's large reply on one
 * connection, their replies would come in a burst.)
 */
static void test_priority_order(void **state)
{
	enum { N = 4 };
	slot blk = {0}, lo[N] = {0}, hi[N] = {0};
	gemmd_client *cs;
	it_daemon d;
	gemmd_client *c = start(&d, NULL);

	assert_int_equal(gemmd_open(d.ipc, &socket_only, &cs), GM_OK);
	send_blocker(c, &blk);
	for (int i = 0; i < N; i++)
		queue_small(cs, c, &lo[i], 10 + i, 0, i + 1);
	for (int i = 0; i < N; i++)
		queue_small(cs, c, &hi[i], 20 + i, 3, N + i + 1);
	/* Still on the blocker, else the order would prove nothing. */
	assert_int_equal(it_stat(c, "jobs.inflight"), 1);
	end_blocker(&blk);
	for (int i = 0; i < N; i++) {
		wait_done(&lo[i]);
		wait_done(&hi[i]);
	}
	for (int i = 0; i < N; i++) {
		assert_true(it_job_ok(&lo[i].job) && it_job_ok(&hi[i].job));
		for (int j = 0; j < N; j++)
			assert_true(hi[i].seq < lo[j].seq);
		if (i > 0)
			assert_true(lo[i - 1].seq < lo[i].seq &&
				    hi[i - 1].seq < hi[i].seq);
	}
	for (int i = 0; i < N; i++) {
		it_job_free(&lo[i].job);
		it_job_free(&hi[i].job);
	}
	it_job_free(&blk.job);
	gemmd_close(cs);
	stop(&d, c);
}

/*
 * A job with a 200 ms deadline queued behind a blocker gets ETIMEDOUT
 * about 200 ms after it was sent, while the blocker still runs: the
 * daemon's timer expires it, not the queue moving. It never runs; a job
 * without a deadline sent after it does.
 */
static void test_deadline_while_busy(void **state)
{
	slot blk = {0}, late = {0}, after = {0};
	it_daemon d;
	gemmd_client *c = start(&d, NULL);
	double ms;

	send_blocker(c, &blk);
	it_job(&late.job, SMALL, SMALL, SMALL, 2);
	it_job(&after.job, SMALL, SMALL, SMALL, 3);
	send_job(c, &late, GEMMD_PRIORITY_DEFAULT, DEADLINE_MS);
	send_job(c, &after, GEMMD_PRIORITY_DEFAULT, 0);
	wait_done(&late);
	assert_int_equal(it_stat(c, "jobs.inflight"), 1); /* the blocker */
	ms = (late.done_us - late.sent_us) / 1e3;
	print_message("deadline %d ms: %s after %.1f ms\n", DEADLINE_MS,
		      gm_errname(late.job.status), ms);
	assert_int_equal(late.rv, GM_OK);
	assert_int_equal(late.job.status, GM_ETIMEDOUT);
	assert_true(it_job_untouched(&late.job));
	assert_true(ms >= DEADLINE_MS - 1 && ms < DEADLINE_MS + 150);
	end_blocker(&blk);
	wait_done(&after);
	/* The blocker is too large to check here in reasonable time. */
	assert_int_equal(blk.job.status, GM_OK);
	assert_true(it_job_ok(&after.job));
	assert_int_equal(it_stat(c, "errors.ETIMEDOUT"), 1);
	it_job_free(&blk.job);
	it_job_free(&late.job);
	it_job_free(&after.job);
	stop(&d, c);
}

/*
 * Two connections of two principals (a uid over ipc://, the plain
 * tcp:// one: turns are taken between principals, and one principal's
 * connections share its queue) flood the same priority behind a blocker,
 * the first sending all its jobs before the second sends any. They start
 * taking turns, in the daemon's own start order (start_seq, not the
 * order the replies happen to arrive in on two connections): strictly
 * A, B, A, B, ..., each connection's jobs in the order it sent them.
 */
static void test_fairness(void **state)
{
	enum { N = 8 };
	slot blk = {0}, a[N] = {0}, b[N] = {0};
	struct done_at order[2 * N];
	int run = 1, longest = 1;
	char text[2 * N + 1];
	gemmd_client *ca, *cb;
	it_daemon d;
	gemmd_client *c = start(&d, NULL);

	assert_int_equal(gemmd_open(d.ipc, &socket_only, &ca), GM_OK);
	assert_int_equal(gemmd_open(d.tcp, &socket_only, &cb), GM_OK);
	send_blocker(c, &blk);
	for (int i = 0; i < N; i++)
		queue_small(ca, c, &a[i], 30 + i, GEMMD_PRIORITY_DEFAULT,
			    i + 1);
	for (int i = 0; i < N; i++)
		queue_small(cb, c, &b[i], 40 + i, GEMMD_PRIORITY_DEFAULT,
			    N + i + 1);
	assert_int_equal(it_stat(c, "jobs.inflight"), 1);
	end_blocker(&blk);
	for (int i = 0; i < N; i++) {
		wait_done(&a[i]);
		wait_done(&b[i]);
		assert_true(it_job_ok(&a[i].job) && it_job_ok(&b[i].job));
		order[2 * i] = (struct done_at){a[i].seq, 'A'};
		order[2 * i + 1] = (struct done_at){b[i].seq, 'B'};
		if (i > 0)
			assert_true(a[i - 1].seq < a[i].seq &&
				    b[i - 1].seq < b[i].seq);
	}
	qsort(order, 2 * N, sizeof(order[0]), by_seq);
	for (int i = 1; i < 2 * N; i++) {
		run = order[i].tag == order[i - 1].tag ? run + 1 : 1;
		longest = run > longest ? run : longest;
	}
	for (int i = 0; i < 2 * N; i++)
		text[i] = (char)order[i].tag;
	text[2 * N] = '\0';
	print_message("start order %s\n", text);
	assert_int_equal(longest, 1);
	for (int i = 0; i < N; i++) {
		it_job_free(&a[i].job);
		it_job_free(&b[i].job);
	}
	it_job_free(&blk.job);
	gemmd_close(ca);
	gemmd_close(cb);
	stop(&d, c);
}

/*
 * One principal's connections share its turn: behind a blocker, a uid
 * over ipc:// queues 2 jobs, then the plain tcp:// principal 2 on each
 * of 4 connections (in turn, one on each). The uid goes first: it is
 * the blocker's principal, over its share of the pool, and would wait
 * for pool room (PROTOCOL.md 2.2) behind another principal's requests.
 * The two principals take turns: in start order the uid's jobs are the
 * first and the third (U T U T T ...), where turns by connection gave
 * it the first and the sixth; and the tcp:// principal's jobs start in
 * the order they came, whatever their connection.
 */
static void test_fairness_principals(void **state)
{
	enum { NC = 4, PER = 2, NT = NC * PER, NU = 2 };
	slot blk = {0}, t[NT] = {0}, u[NU] = {0};
	struct done_at order[NT + NU];
	char text[NT + NU + 1];
	gemmd_client *ct[NC], *cu;
	it_daemon d;
	gemmd_client *c = start(&d, NULL);

	for (int i = 0; i < NC; i++)
		assert_int_equal(gemmd_open(d.tcp, &socket_only, &ct[i]),
				 GM_OK);
	assert_int_equal(gemmd_open(d.ipc, &socket_only, &cu), GM_OK);
	send_blocker(c, &blk);
	for (int i = 0; i < NU; i++)
		queue_small(cu, c, &u[i], 90 + i, GEMMD_PRIORITY_DEFAULT,
			    i + 1);
	for (int i = 0; i < NT; i++)
		queue_small(ct[i % NC], c, &t[i], 60 + i,
			    GEMMD_PRIORITY_DEFAULT, NU + i + 1);
	assert_int_equal(it_stat(c, "jobs.inflight"), 1);
	end_blocker(&blk);
	for (int i = 0; i < NT; i++) {
		wait_done(&t[i]);
		assert_true(it_job_ok(&t[i].job));
		order[i] = (struct done_at){t[i].seq, 'T'};
		if (i > 0)
			assert_true(t[i - 1].seq < t[i].seq);
	}
	for (int i = 0; i < NU; i++) {
		wait_done(&u[i]);
		assert_true(it_job_ok(&u[i].job));
		order[NT + i] = (struct done_at){u[i].seq, 'U'};
	}
	qsort(order, NT + NU, sizeof(order[0]), by_seq);
	for (int i = 0; i < NT + NU; i++)
		text[i] = (char)order[i].tag;
	text[NT + NU] = '\0';
	print_message("start order %s\n", text);
	assert_string_equal(text, "UTUTTTTTTT");
	for (int i = 0; i < NT; i++)
		it_job_free(&t[i].job);
	for (int i = 0; i < NU; i++)
		it_job_free(&u[i].job);
	it_job_free(&blk.job);
	for (int i = 0; i < NC; i++)
		gemmd_close(ct[i]);
	gemmd_close(cu);
	stop(&d, c);
}

/* With a limit of one queued job at priority 0, a second is refused
 * EBUSY at once while priority 1 still queues. */
static void test_priority_limit(void **state)
{
	const char *extra[] = {"--set", "queue_depth_per_priority=1,4,4,4",
			       NULL};
	slot blk = {0}, p0 = {0}, p1 = {0};
	gemmd_job over;
	gemmd_submit_opts low = {0, 0};
	it_daemon d;
	gemmd_client *c = start(&d, extra);
	double t0;

	send_blocker(c, &blk);
	it_job(&over, SMALL, SMALL, SMALL, 6);
	queue_small(c, c, &p0, 4, 0, 1);
	t0 = it_now_us();
	assert_int_equal(gemmd_submit(c, &over, 1, &low, TIMEOUT_MS), GM_EBUSY);
	assert_true(it_now_us() - t0 < 500e3);
	assert_string_equal(over.message,
			    "priority 0 queue full: 1 jobs + 1 over "
			    "queue_depth_per_priority[0]=1");
	queue_small(c, c, &p1, 5, 1, 2);
	assert_int_equal(it_stat(c, "jobs.inflight"), 1);
	end_blocker(&blk);
	wait_done(&p0);
	wait_done(&p1);
	assert_true(it_job_ok(&p0.job) && it_job_ok(&p1.job));
	assert_true(it_job_untouched(&over));
	it_job_free(&blk.job);
	it_job_free(&p0.job);
	it_job_free(&p1.job);
	it_job_free(&over);
	stop(&d, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_priority_order),
	    cmocka_unit_test(test_deadline_while_busy),
	    cmocka_unit_test(test_fairness),
	    cmocka_unit_test(test_fairness_principals),
	    cmocka_unit_test(test_priority_limit),
	};

	return IT_RUN_SETUP(tests, calibrate);
}
