/*
 * test_deadline.c - no call of the client library waits past its
 * timeout, and a call sees a dead daemon at once, against a real gemmd:
 * stopped (SIGSTOP) under a call, each entry point (a GEMM through the
 * socket, through a region, and staged; a control request; the making
 * of a region) returns GM_ETIMEDOUT within its timeout and SLACK_MS,
 * and gemmd serves again once continued; killed (SIGKILL) under a call
 * that waits FOREVER_MS, each returns GM_ETRANSPORT within DEAD_MS. A
 * call that gave up takes its job with it: a job still queued behind a
 * long one when its caller's timeout passes never runs (gemmd counts it
 * ETIMEDOUT, not ok): there the daemon runs each job whole (pieces
 * of cpu_piece_flops far over the long one's FLOPs, not a time the
 * load at start would scale) and the job is too large for the side
 * thread that runs the smallest jobs beside a piece, so that it really
 * waits, in the engine's queue, until the long one ends. Closing a client of a
 * stopped gemmd returns at once, and opening one against a TCP listener that
 * accepts nothing returns GM_ETIMEDOUT within its timeout.
 */
#include <pthread.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "it_case.h"

#define TIMEOUT_MS 400	 /* the timeout of the calls a stop outlasts */
#define SLACK_MS   400	 /* what a call may take past it: a loaded host */
#define FOREVER_MS 60000 /* the timeout of the calls a kill ends */
#define DEAD_MS	   1000	 /* the most a call may take to see the kill */
#define STAGED	   512	 /* m = n = k of a job staged through shm (6 MiB) */
/* How long the blocker keeps one BLAS thread busy: many times
 * TIMEOUT_MS. Its size comes from the engine's speed measured on this
 * host (calibrate): a fixed 2500^3 took 0.7 s with OpenBLAS's Haswell
 * kernels and under 0.4 s with those it picks by itself on the same
 * host, and then the job queued behind it ran in time. */
#define BLOCK_S 3.0
/* m = n = k of a job that waits behind the blocker: over the 64^3 that
 * OpenBLAS runs on one thread, which the CPU engine runs beside a
 * piece instead of after it. */
#define QUEUED	 72
#define DEAF_FDS 8 /* a listener and what fills its backlog */

static const gemmd_open_opts socket_only = {.flags = GEMMD_OPEN_NO_SHM};

static uint32_t blocker_n; /* m = n = k of the blocker (calibrate) */

static struct {
	it_daemon d;
	gemmd_client *c;
	gemmd_region *r;
} fx;

static void start(const char *const *args)
{
	memset(&fx, 0, sizeof(fx));
	if (it_launch(&fx.d, args) != 0)
		fail_msg("gemmd did not start; see %s", fx.d.log);
}

static int setup(void **state)
{
	const char *args[] = {"--set", "cpu_threads=1", NULL};

	start(args);
	return 0;
}

/* gemmd running each job whole: a job behind a long one waits for all
 * of it, not for a piece. (cpu_piece_us would not do: pieces it sizes
 * at the speed timed at start, and a loaded host times a slow one.) */
static int setup_whole(void **state)
{
	const char *args[] = {"--set", "cpu_threads=1", "--set",
			      "cpu_piece_flops=1000000000000000", NULL};

	start(args);
	return 0;
}

static int teardown(void **state)
{
	if (fx.d.pid > 0)
		kill(fx.d.pid, SIGCONT);
	if (fx.r != NULL)
		gemmd_region_release(fx.r);
	if (fx.c != NULL)
		gemmd_close(fx.c);
	it_cleanup(&fx.d);
	return 0;
}

static void open_client(const gemmd_open_opts *o)
{
	assert_int_equal(gemmd_open(fx.d.ipc, o, &fx.c), GM_OK);
}

/* ---- the calls under test ---- */

/* Makes one call with timeout_ms and returns its code; -1 when the job
 * says otherwise, or succeeded with a wrong result. Called from other
 * threads than the test's: it asserts nothing. */
typedef int (*call_fn)(int timeout_ms);

static int call_socket(int timeout_ms)
{
	gemmd_job j;
	int rv;

	it_job(&j, 64, 64, 64, 1);
	rv = gemmd_submit(fx.c, &j, 1, NULL, timeout_ms);
	if (j.status != rv || (rv == GM_OK && !it_job_ok(&j)))
		rv = -1;
	it_job_free(&j);
	return rv;
}

/* A job whose operands are in fx.r: through a region. */
static int call_region(int timeout_ms)
{
	gemmd_job j;
	int rv;

	it_job(&j, 64, 64, 64, 2);
	memcpy(gemmd_region_ptr(fx.r), j.a, 64 * 64 * 8);
	memcpy((char *)gemmd_region_ptr(fx.r) + (64 << 10), j.b, 64 * 64 * 8);
	free((void *)j.a);
	free((void *)j.b);
	j.a = j.b = NULL;
	j.a_ref = (gemmd_region_ref){fx.r, 0};
	j.b_ref = (gemmd_region_ref){fx.r, 64 << 10};
	rv = gemmd_submit(fx.c, &j, 1, NULL, timeout_ms);
	if (j.status != rv)
		rv = -1;
	free(j.out);
	return rv;
}

/* Submits one it_job of n x n x n from seed; returns the call's code. */
static int submit_cube(uint32_t n, unsigned seed, int timeout_ms)
{
	gemmd_job j;
	int rv;

	it_job(&j, n, n, n, seed);
	rv = gemmd_submit(fx.c, &j, 1, NULL, timeout_ms);
	it_job_free(&j);
	return rv;
}

/* Plain pointers of 6 MiB over ipc://: staged through shared memory. */
static int call_staged(int timeout_ms)
{
	return submit_cube(STAGED, 3, timeout_ms);
}

static int call_ping(int timeout_ms)
{
	return gemmd_ping(fx.c, NULL, timeout_ms);
}

static int call_region_create(int timeout_ms)
{
	gemmd_region *r = NULL;
	int rv = gemmd_region_create_timeout(fx.c, 1 << 20, &r, timeout_ms);

	if (r != NULL)
		gemmd_region_release(r);
	return rv;
}

/* ---- a call in a thread of its own, timed ---- */

typedef struct timed {
	call_fn fn;
	int timeout_ms;
	pthread_t t;
	int rv, done;
	double ms, end_us; /* how long it took, and when it returned */
} timed;

static void *timed_run(void *arg)
{
	timed *tc = arg;
	double t0 = it_now_us();

	tc->rv = tc->fn(tc->timeout_ms);
	tc->end_us = it_now_us();
	tc->ms = (tc->end_us - t0) / 1e3;
	__atomic_store_n(&tc->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void timed_start(timed *tc, call_fn fn, int timeout_ms)
{
	*tc = (timed){.fn = fn, .timeout_ms = timeout_ms};
	assert_int_equal(pthread_create(&tc->t, NULL, timed_run, tc), 0);
}

/* Joins tc: fails the test (leaving the thread) when it has not
 * returned within ms. */
static void timed_join(timed *tc, int ms)
{
	for (int i = 0; i < ms && !__atomic_load_n(&tc->done, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	if (!__atomic_load_n(&tc->done, __ATOMIC_ACQUIRE))
		fail_msg("the call has not returned after %d ms", ms);
	pthread_join(tc->t, NULL);
}

/* ---- each entry point: stopped, killed, dead ---- */

/* Where the fault falls: gemmd stopped under the call, killed under
 * it, or dead before it. Bits, for entry.region. */
enum { STOPPED = 1, KILLED = 2, DEAD = 4 };

/* One entry point of the client library, a row of the table at the
 * bottom: how its client is opened, under which faults a region is made
 * first (fx.r), the call, and what the stopped case checks once gemmd
 * serves again. */
typedef struct entry {
	const char *name;
	const gemmd_open_opts *open; /* NULL: with shared memory */
	unsigned region;	     /* STOPPED | KILLED | DEAD */
	call_fn call;
	void (*served_again)(void); /* NULL: nothing more */
	bool cold; /* stopped before its first call: no warm-up call */
} entry;

/* The row in *state, its client opened and its region made for fault. */
static const entry *open_entry(void **state, unsigned fault)
{
	const entry *e = *state;

	open_client(e->open);
	if (e->region & fault)
		assert_int_equal(gemmd_region_create(fx.c, 1 << 20, &fx.r),
				 GM_OK);
	return e;
}

/* gemmd stopped under the call: GM_ETIMEDOUT within TIMEOUT_MS +
 * SLACK_MS; continued, it serves the call again. */
static void test_stopped(void **state)
{
	const entry *e = open_entry(state, STOPPED);
	timed tc;

	if (!e->cold) /* connected, warm */
		assert_int_equal(e->call(FOREVER_MS), GM_OK);
	assert_int_equal(kill(fx.d.pid, SIGSTOP), 0);
	timed_start(&tc, e->call, TIMEOUT_MS);
	timed_join(&tc, FOREVER_MS);
	assert_int_equal(kill(fx.d.pid, SIGCONT), 0);
	fprintf(stderr, "stopped %s: %s after %.1f ms, timeout %d ms\n",
		e->name, gemmd_errname(tc.rv), tc.ms, TIMEOUT_MS);
	assert_int_equal(tc.rv, GM_ETIMEDOUT);
	if (tc.ms < TIMEOUT_MS - 5 || tc.ms > TIMEOUT_MS + SLACK_MS)
		fail_msg("%s returned after %.0f ms, timeout %d ms", e->name,
			 tc.ms, TIMEOUT_MS);
	assert_int_equal(e->call(FOREVER_MS), GM_OK);
	if (e->served_again != NULL)
		e->served_again();
}

/* After a region made while gemmd was stopped: the region made before
 * is gemmd's still, and the one gemmd made after the call had given up
 * was released by the next call. */
static void regions_kept(void)
{
	assert_int_equal(call_region(FOREVER_MS), GM_OK);
	assert_int_equal(it_stat(fx.c, "regions.count"), 1);
}

/* Kills gemmd under tc, a call waiting FOREVER_MS: it returns
 * GM_ETRANSPORT within DEAD_MS of the kill. */
static void kill_under(timed *tc, const char *name)
{
	double t0 = it_now_us();

	it_kill(&fx.d);
	timed_join(tc, FOREVER_MS);
	fprintf(stderr, "killed %s: %s %.1f ms after the kill, timeout %d ms\n",
		name, gemmd_errname(tc->rv), (tc->end_us - t0) / 1e3,
		FOREVER_MS);
	assert_int_equal(tc->rv, GM_ETRANSPORT);
	if ((tc->end_us - t0) / 1e3 > DEAD_MS)
		fail_msg("%s returned %.0f ms after the kill", name,
			 (tc->end_us - t0) / 1e3);
}

/* gemmd stopped, then killed under the call. */
static void test_killed(void **state)
{
	const entry *e = open_entry(state, KILLED);
	timed tc;

	assert_int_equal(e->call(FOREVER_MS), GM_OK);
	assert_int_equal(kill(fx.d.pid, SIGSTOP), 0);
	timed_start(&tc, e->call, FOREVER_MS);
	usleep(200 * 1000); /* the call is waiting */
	kill_under(&tc, e->name);
}

/* gemmd killed before the call, twice over (the second finds the
 * redial backing off): GM_ETRANSPORT within DEAD_MS, not at
 * FOREVER_MS. */
static void test_dead(void **state)
{
	const entry *e = open_entry(state, DEAD);

	assert_int_equal(e->call(FOREVER_MS), GM_OK);
	it_kill(&fx.d);
	for (int i = 0; i < 2; i++) {
		double t0 = it_now_us(), ms;
		int rv = e->call(FOREVER_MS);

		ms = (it_now_us() - t0) / 1e3;
		fprintf(stderr, "dead %s: call %d %s after %.1f ms\n", e->name,
			i, gemmd_errname(rv), ms);
		assert_int_equal(rv, GM_ETRANSPORT);
		if (ms > DEAD_MS)
			fail_msg("%s: call %d returned after %.0f ms", e->name,
				 i, ms);
	}
}

/* Opened GEMMD_OPEN_LAZY, a call waits for the daemon to come back,
 * within its timeout. */
static void test_dead_lazy_waits(void **state)
{
	const gemmd_open_opts lazy = {.flags =
					  GEMMD_OPEN_LAZY | GEMMD_OPEN_NO_SHM};
	timed tc;

	open_client(&lazy);
	assert_int_equal(call_ping(FOREVER_MS), GM_OK);
	it_kill(&fx.d);
	/* A ping sent before the client saw the connection close would be
	 * lost with it (GM_ETRANSPORT): this one is to find it down. */
	usleep(200 * 1000);
	timed_start(&tc, call_ping, TIMEOUT_MS);
	timed_join(&tc, FOREVER_MS);
	assert_int_equal(tc.rv, GM_ETIMEDOUT);
	assert_true(tc.ms >= TIMEOUT_MS - 5);
}

static int call_blocker(int timeout_ms)
{
	return submit_cube(blocker_n, 4, timeout_ms);
}

/* Waits (5 s at most) for the blocker to run. */
static void blocker_running(void)
{
	for (int i = 0; i < 5000 && it_stat(fx.c, "jobs.inflight") < 1; i++)
		usleep(1000);
	assert_int_equal(it_stat(fx.c, "jobs.inflight"), 1);
}

/* A job running when gemmd dies: its call fails at once. */
static void test_killed_running(void **state)
{
	timed tc;

	open_client(&socket_only);
	timed_start(&tc, call_blocker, FOREVER_MS);
	blocker_running();
	kill_under(&tc, "running");
}

/* ---- closing ---- */

/* gemmd_close with gemmd stopped under a call, a region and the
 * staging region made: it returns within DEAD_MS, the call told
 * GM_ECANCELED. */
static void test_close_stopped(void **state)
{
	gemmd_job j;
	it_waiter w = {0};
	double t0;

	open_client(NULL);
	assert_int_equal(call_staged(FOREVER_MS), GM_OK);
	assert_int_equal(gemmd_region_create(fx.c, 1 << 20, &fx.r), GM_OK);
	assert_int_equal(kill(fx.d.pid, SIGSTOP), 0);
	it_job(&j, STAGED, STAGED, STAGED, 7);
	assert_int_equal(
	    gemmd_submit_async(fx.c, &j, 1, NULL, FOREVER_MS, it_done, &w),
	    GM_OK);
	usleep(100 * 1000);
	t0 = it_now_us();
	gemmd_close(fx.c);
	fx.c = NULL;
	fx.r = NULL; /* released with its client */
	if ((it_now_us() - t0) / 1e3 > DEAD_MS)
		fail_msg("gemmd_close took %.0f ms", (it_now_us() - t0) / 1e3);
	assert_true(it_wait_done(&w, 0));
	assert_int_equal(w.rv, GM_ECANCELED);
	it_job_free(&j);
}

/* ---- opening ---- */

/* A loopback TCP listener that accepts nothing, its backlog full: a
 * dial to it retries its SYN for minutes. Its port in *port; the
 * listener and the connections that fill its backlog in fds. */
static void deaf_listener(int fds[DEAF_FDS], int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);

	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fds[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fds[0], 0), 0);
	assert_int_equal(getsockname(fds[0], (struct sockaddr *)&sa, &len), 0);
	for (int i = 1; i < DEAF_FDS; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(fds[i], (struct sockaddr *)&sa, sizeof(sa));
	}
	usleep(200 * 1000); /* the handshakes that fit are done */
	*port = ntohs(sa.sin_port);
}

/* One open against a deaf listener, within TIMEOUT_MS + SLACK_MS:
 * its code. */
static int open_deaf(void)
{
	char url[64];
	int fds[DEAF_FDS], port, rv;
	double t0, ms;

	deaf_listener(fds, &port);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	t0 = it_now_us();
	rv = gemmd_open_timeout(url, NULL, &fx.c, TIMEOUT_MS);
	ms = (it_now_us() - t0) / 1e3;
	if (rv == GM_ETIMEDOUT) {
		assert_null(fx.c);
		assert_non_null(
		    strstr(gemmd_last_error(), "no connection within"));
		assert_true(ms >= TIMEOUT_MS - 5);
	}
	if (ms > TIMEOUT_MS + SLACK_MS)
		fail_msg("returned after %.0f ms, timeout %d ms", ms,
			 TIMEOUT_MS);
	if (fx.c != NULL)
		gemmd_close(fx.c);
	fx.c = NULL;
	for (int i = 0; i < DEAF_FDS; i++)
		close(fds[i]);
	return rv;
}

/* A dial through nng now and then connects at once even so (a raw
 * connect never did here): each open returns in time, and most time
 * out. */
static void test_open_not_accepting(void **state)
{
	int timed_out = 0;

	for (int i = 0; i < 4; i++)
		timed_out += open_deaf() == GM_ETIMEDOUT;
	assert_true(timed_out >= 1);
}

/* ---- a timed-out call takes its job with it ---- */

/* A job waiting in the engine's queue behind the blocker when its
 * call's timeout passes: gemmd takes it back and fails it ETIMEDOUT;
 * it never runs. */
static void test_timeout_cancels_job(void **state)
{
	gemmd_job blocker, j;
	it_waiter w = {0};
	int rv;
	double ok;

	open_client(&socket_only);
	ok = it_stat(fx.c, "jobs.ok");
	it_job(&blocker, blocker_n, blocker_n, blocker_n, 5);
	assert_int_equal(gemmd_submit_async(fx.c, &blocker, 1, NULL, FOREVER_MS,
					    it_done, &w),
			 GM_OK);
	blocker_running();
	it_job(&j, QUEUED, QUEUED, QUEUED, 6);
	rv = gemmd_submit(fx.c, &j, 1, NULL, TIMEOUT_MS);
	/* The call's timeout and the job's deadline in gemmd end together:
	 * either the call gave up first, or gemmd's answer that the job
	 * missed its deadline came first. The job never ran either way. */
	assert_true(rv == GM_ETIMEDOUT || rv == GM_OK);
	assert_int_equal(j.status, GM_ETIMEDOUT);
	/* It gave up while the blocker still ran. */
	assert_int_equal(it_stat(fx.c, "jobs.inflight"), 1);
	assert_true(it_wait_done(&w, FOREVER_MS));
	assert_int_equal(w.rv, GM_OK);
	assert_int_equal(it_stat(fx.c, "jobs.ok"), ok + 1);
	assert_int_equal(it_stat(fx.c, "jobs.by_status.ETIMEDOUT"), 1);
	assert_true(it_job_untouched(&j));
	it_job_free(&j);
	it_job_free(&blocker);
}

/* ---- the table ---- */

static entry at_socket = {
    .name = "socket", .open = &socket_only, .call = call_socket};
static entry at_region = {
    .name = "region", .region = STOPPED | KILLED | DEAD, .call = call_region};
static entry at_staged = {.name = "staged", .call = call_staged};
static entry at_ping = {
    .name = "ping", .open = &socket_only, .call = call_ping};
/* A region made first when stopped only: regions_kept checks that the
 * call that gave up left it be. */
static entry at_region_create = {.name = "region_create",
				 .region = STOPPED,
				 .call = call_region_create,
				 .served_again = regions_kept};
/* A first region, its hand-off connection dialed while gemmd is
 * stopped. */
static entry at_first_region = {
    .name = "first_region", .call = call_region_create, .cold = true};

/* Fault f at entry point e: test_<f>_<e>, the row as its state. */
#define CASE(f, e)                                                    \
	{                                                             \
		"test_" #f "_" #e, test_##f, setup, teardown, &at_##e \
	}
#define TEST(f, s) cmocka_unit_test_setup_teardown(f, s, teardown)

/* Sizes the blocker to take BLOCK_S on one BLAS thread of this host,
 * as the daemons here run it. */
static int calibrate(void **state)
{
	const char *args[] = {"--set", "cpu_threads=1", NULL};
	double rate;

	blocker_n =
	    it_cube_for(args, 400, FOREVER_MS, BLOCK_S, 1000, 4500, &rate);
	if (blocker_n == 0)
		return -1;
	fprintf(stderr, "blocker: %u^3 (%.0f flops/us on one thread)\n",
		blocker_n, rate);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    CASE(stopped, socket),
	    CASE(stopped, region),
	    CASE(stopped, staged),
	    CASE(stopped, ping),
	    CASE(stopped, region_create),
	    CASE(stopped, first_region),
	    CASE(killed, socket),
	    CASE(killed, region),
	    CASE(killed, staged),
	    CASE(killed, ping),
	    CASE(killed, region_create),
	    TEST(test_killed_running, setup),
	    CASE(dead, socket),
	    CASE(dead, region),
	    CASE(dead, staged),
	    CASE(dead, ping),
	    CASE(dead, region_create),
	    TEST(test_dead_lazy_waits, setup),
	    TEST(test_timeout_cancels_job, setup_whole),
	    TEST(test_close_stopped, setup),
	    cmocka_unit_test(test_open_not_accepting),
	};

	return IT_RUN_SETUP(tests, calibrate);
}
