/*
 * test_queue.c - gemmd as a job queue, through a real daemon: priority
 * order on a loaded queue, a deadline that passes while the engine is
 * busy, fairness between two principals flooding one priority (one of
 * them over four connections), queue limits per priority, detached jobs
 * (status, wait, cancel of queued and running jobs, results that expire, the
 * bound on their memory), drain and resume, by request and by SIGUSR1, and jobs
 * whose phases add up to their totals.
 *
 * A "blocker" is one job sized, by a calibration run, to keep the CPU
 * engine (one BLAS thread) busy for about BLOCK_S seconds, larger than
 * the scheduler's whole budget of bytes in flight (so it starts beside
 * others), followed by a "filler" that takes that budget, so that
 * whatever is sent while they run waits in the scheduler's queue, and
 * starts, in the scheduler's order, once the filler is done. The daemon
 * runs each job whole here (pieces of cpu_piece_flops far over any job here):
 * the order these tests read is the scheduler's, not the engine's turns between
 * pieces (test_fair.c has those). The host pool is made large enough for both
 * and the small jobs beside them (a request waiting for pool bytes waits
 * in arrival order, before the scheduler sees it). The order is read
 * from each job's start_seq, the daemon's own numbering of the jobs it
 * hands to its engine: replies on two connections may arrive either way
 * round, and callbacks run on the library's threads.
 */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_proto.h"
#include "itest.h"

#define BLOCK_S	    1.5	  /* how long a blocker keeps the engine busy */
#define SMALL	    300	  /* m = n = k of a small job: 2.2 MB of pool */
#define TIMEOUT_MS  60000 /* for calls that should never take it */
#define DEADLINE_MS 200
#define PHASE_S	    0.15 /* work of each job of test_phases_add_up */
#define SMALLS_ROOM (64ull * 3 * SMALL * SMALL * 8) /* 64 small jobs */
/* The CPU engine's budget of bytes in flight (gm_daemon.c's
 * CPU_BUDGET_BYTES): a job over it is run beside others. */
#define BUDGET_BYTES (64ull << 20)
/* The filler, 3 * 1660^2 doubles: within that budget by less than a
 * small job's 3 * 300^2, so that none fits beside it. */
#define FILLER_N 1660

static uint32_t blocker_n = 1700; /* set by calibrate() */
static char pool_arg[64];	  /* pool_bytes=..., for the blocker */

/* Every job through the socket and the pool, whose order is the
 * daemon's: staged through a region, a result is copied out by one of
 * the library's threads, and callbacks of one connection could overtake
 * each other. */
static const gemmd_open_opts socket_only = {.flags = GEMMD_OPEN_NO_SHM};

/* An asynchronous job and what became of it. */
typedef struct slot {
	gemmd_job job;
	int rv, done;
	uint64_t seq; /* the job's place in the daemon's start order */
	double sent_us, done_us;
} slot;

static void on_done(void *arg, int rv)
{
	slot *s = arg;

	s->rv = rv;
	s->done_us = it_now_us();
	s->seq = s->job.t.start_seq;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
}

static int is_done(slot *s)
{
	return __atomic_load_n(&s->done, __ATOMIC_ACQUIRE);
}

static void wait_done(slot *s)
{
	for (int i = 0; i < 120000 && !is_done(s); i++)
		usleep(1000);
	assert_true(is_done(s));
}

static void send_job(gemmd_client *c, slot *s, int prio, uint32_t dl_ms)
{
	gemmd_submit_opts o = {prio, dl_ms};

	s->sent_us = it_now_us();
	assert_int_equal(
	    gemmd_submit_async(c, &s->job, 1, &o, TIMEOUT_MS, on_done, s),
	    GM_OK);
}

/* The filler behind the blocker under way, and the jobs it adds to
 * jobs.queued (1 while it waits behind the blocker, else 0). */
static slot filler;
static int queued_base;

/* Waits until the daemon has at least n jobs queued besides the
 * filler. */
static void wait_queued(gemmd_client *c, double n)
{
	n += queued_base;
	for (int i = 0; i < 5000 && it_stat(c, "jobs.queued") < n; i++)
		usleep(1000);
	assert_true(it_stat(c, "jobs.queued") >= n);
}

/* Starts a blocker on c and its filler, and returns once the engine
 * runs the blocker with the filler handed to it, waiting. */
static void send_blocker(gemmd_client *c, slot *s)
{
	it_job(&s->job, blocker_n, blocker_n, blocker_n, 1);
	send_job(c, s, GEMMD_PRIORITY_DEFAULT, 0);
	for (int i = 0; i < 5000 && it_stat(c, "jobs.inflight") < 1; i++)
		usleep(1000);
	assert_true(it_stat(c, "jobs.inflight") >= 1);
	memset(&filler, 0, sizeof(filler));
	it_job(&filler.job, FILLER_N, FILLER_N, FILLER_N, 2);
	send_job(c, &filler, GEMMD_PRIORITY_DEFAULT, 0);
	queued_base = 0;
	wait_queued(c, 1);
	queued_base = 1;
}

/* Waits for the blocker s and its filler to end. */
static void end_blocker(slot *s)
{
	wait_done(s);
	wait_done(&filler);
	queued_base = 0;
	assert_int_equal(filler.job.status, GM_OK);
	it_job_free(&filler.job);
}

/* Sends a small job on c and waits (asking on stats) until it is the
 * nth queued, so that jobs sent one after another arrive in that order:
 * requests on different contexts of one socket may overtake each
 * other. */
static void queue_small(gemmd_client *c, gemmd_client *stats, slot *s,
			unsigned seed, int prio, double nth)
{
	it_job(&s->job, SMALL, SMALL, SMALL, seed);
	send_job(c, s, prio, 0);
	wait_queued(stats, nth);
}

struct done_at {
	uint64_t seq;
	int tag;
};

static int by_seq(const void *a, const void *b)
{
	uint64_t x = ((const struct done_at *)a)->seq,
		 y = ((const struct done_at *)b)->seq;

	return (x > y) - (x < y);
}

/* Starts gemmd with one BLAS thread running each job whole, the
 * blocker's pool and extra arguments, and opens a client on its ipc://
 * socket. */
static gemmd_client *start(it_daemon *d, const char *const *extra)
{
	const char *args[24] = {"--set", "cpu_threads=1",
				"--set", "cpu_piece_flops=1000000000000000",
				"--set", pool_arg};
	int n = 6;
	gemmd_client *c;

	for (int i = 0; extra != NULL && extra[i] != NULL; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	assert_int_equal(it_launch(d, args), 0);
	assert_int_equal(gemmd_open(d->ipc, &socket_only, &c), GM_OK);
	return c;
}

static void stop(it_daemon *d, gemmd_client *c)
{
	gemmd_close(c);
	assert_int_equal(it_stop(d), 0);
	it_cleanup(d);
}

static gemmd_job_info status_of(gemmd_client *c, uint64_t id)
{
	gemmd_job_info in;

	assert_int_equal(gemmd_job_status(c, id, &in, TIMEOUT_MS), GM_OK);
	assert_int_equal(in.id, id);
	return in;
}

/* Polls job id until it is in state (10 s at most). */
static void wait_state(gemmd_client *c, uint64_t id, int state)
{
	for (int i = 0; i < 10000 && status_of(c, id).state != state; i++)
		usleep(1000);
	assert_int_equal(status_of(c, id).state, state);
}

/* Whether the stats say the daemon is draining. */
static int draining(gemmd_client *c)
{
	cJSON *s = it_stats(c);
	int on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "draining"));

	cJSON_Delete(s);
	return on;
}

/* What a ping says of the daemon's readiness (as /readyz): 1, 0, or -1
 * when it says nothing. */
static int ready(gemmd_client *c)
{
	char *doc = NULL;
	cJSON *p = NULL;
	int on = -1;

	if (gemmd_ping(c, &doc, TIMEOUT_MS) == GM_OK &&
	    (p = cJSON_Parse(doc)) != NULL) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "ready");

		on = cJSON_IsBool(r) ? cJSON_IsTrue(r) : -1;
	}
	cJSON_Delete(p);
	free(doc);
	return on;
}

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

/*
 * Sizes the blocker from the engine's speed on this host: one 400^3 job
 * with one BLAS thread gives the rate; the blocker is the cube that
 * takes BLOCK_S at it (at least 1700^3, over the budget), and the pool
 * is made large enough for it, the filler and SMALLS_ROOM more.
 */
static int calibrate(void **state)
{
	const char *args[] = {"--set", "cpu_threads=1", NULL};
	gemmd_client *c;
	gemmd_job j;
	it_daemon d;
	double flops_per_us, n;
	uint64_t bytes;

	if (it_launch(&d, args) != 0 || gemmd_open(d.ipc, NULL, &c) != GM_OK)
		return -1;
	it_job(&j, 400, 400, 400, 1);
	for (int i = 0; i < 2; i++) /* the first warms OpenBLAS up */
		if (gemmd_submit(c, &j, 1, NULL, TIMEOUT_MS) != GM_OK ||
		    j.status != GM_OK)
			return -1;
	flops_per_us = 2.0 * 400 * 400 * 400 / j.t.kernel_us;
	n = cbrt(BLOCK_S * 1e6 * flops_per_us / 2.0);
	/* Over the budget, so that it starts beside the filler. */
	blocker_n = (uint32_t)(n < 1700 ? 1700 : n > 4000 ? 4000 : n);
	bytes = 3ull * blocker_n * blocker_n * 8 + SMALLS_ROOM +
		3ull * FILLER_N * FILLER_N * 8;
	snprintf(pool_arg, sizeof(pool_arg), "pool_bytes=%llu",
		 (unsigned long long)(((bytes >> 20) + 1) << 20));
	print_message("%.1f GFLOP/s on one thread: blocker %u^3, %s\n",
		      flops_per_us / 1e3, blocker_n, pool_arg);
	it_job_free(&j);
	gemmd_close(c);
	it_stop(&d);
	it_cleanup(&d);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_priority_order),
	    cmocka_unit_test(test_deadline_while_busy),
	    cmocka_unit_test(test_fairness),
	    cmocka_unit_test(test_fairness_principals),
	    cmocka_unit_test(test_priority_limit),
	    cmocka_unit_test(test_detach_wait),
	    cmocka_unit_test(test_detach_cancel),
	    cmocka_unit_test(test_detach_expiry),
	    cmocka_unit_test(test_detach_bound),
	    cmocka_unit_test(test_drain_resume),
	    cmocka_unit_test(test_sigusr1_drains),
	    cmocka_unit_test(test_phases_add_up),
	};

	if (getenv("GEMMD") == NULL) {
		fprintf(stderr, "GEMMD is not set\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, calibrate, NULL);
}
