/*
 * test_crash.c - processes that die at the worst moment. Clients killed
 * with SIGKILL mid-send or while waiting for a reply, hundreds of times
 * beside a client that keeps running jobs: gemmd stays up and, once
 * idle, holds no pool bytes, slabs, queued or running jobs, busy
 * requests in flight or stale connections. gemmd killed in the middle of a
 * batch and restarted on the same socket: the waiting call fails, no byte
 * of a job not yet answered lands, and the new daemon never sees the
 * request (the client
 * library does not resend); with two daemons dialed, the request of the
 * one killed is not moved to the other. gemmd stopped (SIGSTOP): the
 * call times out, and the job runs once when gemmd resumes, its late
 * reply discarded.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "it_case.h"

#define KILLS	     200
#define LOAD_TIMEOUT 30000
#define IDLE_WAIT_US 20e6
#define CALL_TIMEOUT 30000
#define BATCH_JOBS   4
#define FIRST_DIM    300 /* done quickly: the batch has started ... */
#define BATCH_DIM                                            \
	2000 /* ... and 3 of these keep one BLAS thread busy \
		for a few hundred ms at least */

/* A client that runs jobs one after another until told to stop. */
typedef struct load {
	pthread_t thread;
	const char *url;
	int stop;
	unsigned ok, failed;
	int last_rv; /* the last failure's code */
} load;

static void *load_run(void *arg)
{
	load *l = arg;
	gemmd_client *c;
	gemmd_job j;

	if (gemmd_open(l->url, NULL, &c) != GM_OK) {
		l->failed++;
		return NULL;
	}
	it_job(&j, 96, 96, 96, 7);
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		double t0 = it_now_us();
		int rv = gemmd_submit(c, &j, 1, NULL, LOAD_TIMEOUT);

		if (rv == GM_OK && j.status == GM_OK) {
			l->ok++;
			continue;
		}
		l->failed++;
		l->last_rv = rv != GM_OK ? rv : j.status;
		fprintf(stderr, "load client: %s after %.0f ms: %s\n",
			gemmd_strerror(l->last_rv), (it_now_us() - t0) / 1e3,
			j.message);
	}
	if (!it_job_ok(&j))
		l->failed++;
	it_job_free(&j);
	gemmd_close(c);
	return NULL;
}

/*
 * The child's whole life: connect with a plain socket, send the frame,
 * then, when wait is set, read until the reply comes; then hold the
 * connection until killed. Plain syscalls on buffers made before the
 * fork: the parent's nng threads do not exist in the child.
 */
static void child(const char *url, uint8_t *msg, size_t len, int wait)
{
	char buf[4096];
	int fd = rc_connect(url, NULL);

	if (fd < 0 || rc_write(fd, msg, len) != 0)
		_exit(1);
	while (wait && read(fd, buf, sizeof(buf)) > 0)
		;
	pause();
	_exit(0);
}

/* j as a one-job GEMM request frame with id (malloc'd, *len bytes). */
static uint8_t *request(const gemmd_job *j, uint64_t id, size_t *len)
{
	rc_job r = {.dtype = 1,
		    .m = j->m,
		    .n = j->n,
		    .k = j->k,
		    .alpha = j->alpha,
		    .a = j->a,
		    .b = j->b};

	return rc_gemm(id, 1, 0, 0, &r, 1, len);
}

/* What an idle gemmd holds; the regions keys only where the daemon has
 * regions (the stats of one without them lack the keys). */
static const struct {
	const char *key;
	double want; /* -1: the number of open connections */
	int optional;
} idle[] = {
    {"pool.used", 0, 0},
    {"pool.slabs", 0, 0},
    {"jobs.queued", 0, 0},
    {"jobs.inflight", 0, 0},
    {"queue.depth", 0, 0},
    {"contexts.busy", 1, 0}, /* the stats request being answered */
    {"connections.open", -1, 0},
    {"regions.count", 0, 1},
    {"regions.mapped_bytes", 0, 1},
    {"regions.registered_bytes", 0, 1},
};

#define NIDLE (sizeof(idle) / sizeof(idle[0]))

/* The first idle key that s does not show, or NIDLE; prints it when
 * report is set. */
static size_t not_idle(const cJSON *s, unsigned open, int report)
{
	for (size_t i = 0; i < NIDLE; i++) {
		double v = it_num(s, idle[i].key);
		double want = idle[i].want < 0 ? open : idle[i].want;

		if (v == want || (idle[i].optional && v == -1))
			continue;
		if (report)
			print_error("%s = %g, want %g\n", idle[i].key, v, want);
		return i;
	}
	return NIDLE;
}

/* Waits until gemmd is idle and holds nothing: returns whether it got
 * there within IDLE_WAIT_US; prints what is left when it did not. */
static int wait_idle(gemmd_client *mon, unsigned open)
{
	double end = it_now_us() + IDLE_WAIT_US;
	cJSON *s = it_stats(mon);
	int ok;

	while (not_idle(s, open, 0) != NIDLE && it_now_us() < end) {
		usleep(20000);
		cJSON_Delete(s);
		s = it_stats(mon);
	}
	ok = not_idle(s, open, 1) == NIDLE;
	cJSON_Delete(s);
	return ok;
}

static void test_clients_killed(void **state)
{
	const char *args[] = {"--set", "pool_bytes=256M", NULL};
	gemmd_job big, small;
	uint8_t *big_msg, *small_msg;
	size_t big_len, small_len;
	unsigned seed = 11;
	gemmd_client *mon;
	load l = {0};
	it_daemon d;
	int st;

	assert_int_equal(it_launch(&d, args), 0);
	/* 4 MiB of operands: a kill lands mid-send as often as not. */
	it_job(&big, 512, 512, 512, 5);
	/* Runs for a few ms: a kill lands while it is queued or running. */
	it_job(&small, 160, 160, 160, 6);
	big_msg = request(&big, 1, &big_len);
	small_msg = request(&small, 2, &small_len);
	assert_non_null(big_msg);
	assert_non_null(small_msg);
	l.url = d.ipc;
	assert_int_equal(pthread_create(&l.thread, NULL, load_run, &l), 0);
	for (int i = 0; i < KILLS; i++) {
		int wait = i % 2;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0)
			child(i % 4 < 2 ? d.ipc : d.tcp,
			      wait ? small_msg : big_msg,
			      wait ? small_len : big_len, wait);
		usleep(wait ? 1000 + rand_r(&seed) % 20000
			    : rand_r(&seed) % 3000);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st)); /* it was killed, not failed */
		assert_int_equal(waitpid(d.pid, &st, WNOHANG), 0);
	}
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	pthread_join(l.thread, NULL);
	assert_int_equal(l.failed, 0);
	assert_true(l.ok > 0);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	assert_true(wait_idle(mon, 1));
	fprintf(stderr,
		"killed clients: %d children killed beside %u jobs of "
		"another client; gemmd took %.0f requests, ran %.0f jobs\n",
		KILLS, l.ok, it_stat(mon, "requests.total"),
		it_stat(mon, "jobs.ok"));
	assert_int_equal(gemmd_ping(mon, NULL, 1000), GM_OK);
	gemmd_close(mon);
	free(big_msg);
	free(small_msg);
	it_job_free(&big);
	it_job_free(&small);
	assert_int_equal(it_finish(&d), 0);
}

static void test_daemon_killed_mid_batch(void **state)
{
	gemmd_job jobs[BATCH_JOBS], j;
	gemmd_client *c, *mon;
	it_waiter w = {0};
	it_daemon d;
	double killed;
	const char *one_thread[] = {"--set", "cpu_threads=1", NULL};

	assert_int_equal(it_launch(&d, one_thread), 0);
	/* One request through the socket: staged, the batch would be
	 * chunks, each a request of its own, and the call would succeed
	 * with the chunks answered before the kill. */
	assert_int_equal(
	    gemmd_open(d.ipc, &(gemmd_open_opts){.flags = GEMMD_OPEN_NO_SHM},
		       &c),
	    GM_OK);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	it_job(&jobs[0], FIRST_DIM, FIRST_DIM, FIRST_DIM, 20);
	for (int i = 1; i < BATCH_JOBS; i++)
		it_job(&jobs[i], BATCH_DIM, BATCH_DIM, BATCH_DIM, 20 + i);
	assert_int_equal(gemmd_submit_async(c, jobs, BATCH_JOBS, NULL,
					    CALL_TIMEOUT, it_done, &w),
			 GM_OK);
	/* Mid-batch: the first job done, the last of the others hundreds
	 * of milliseconds of work away. The counters move when a whole
	 * request is done, so "running" is the sign to wait for. */
	while (it_stat(mon, "jobs.inflight") < 1)
		usleep(1000);
	usleep(50000);
	killed = it_now_us();
	it_kill(&d);
	gemmd_close(mon);
	if (it_wait_done(&w, 0) && w.at_us < killed)
		fail_msg("the call ended %s before the kill: %s",
			 gemmd_strerror(w.rv), jobs[0].message);
	/* With no daemon a call fails as soon as its dial does, long
	 * before its timeout, and is never sent. */
	it_job(&j, 50, 40, 30, 8);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, CALL_TIMEOUT),
			 GM_ETRANSPORT);
	assert_true(it_job_untouched(&j));
	it_job_free(&j);
	/* The same socket path, as systemd would restart it. */
	assert_int_equal(it_start(&d, one_thread), 0);
	assert_true(it_wait_done(&w, 2 * CALL_TIMEOUT));
	fprintf(stderr,
		"daemon killed mid-batch: the call ended %s %.1f ms after "
		"the kill\n",
		gemmd_strerror(w.rv), (w.at_us - killed) / 1e3);
	assert_true(w.rv == GM_ETRANSPORT || w.rv == GM_ETIMEDOUT);
	/* Each job's reply is its own frame: a job answered before the
	 * kill keeps its result; every other carries the call's failure,
	 * its output untouched. The kill came mid-batch: the last job
	 * was never answered. */
	for (int i = 0; i < BATCH_JOBS; i++) {
		if (jobs[i].status == GM_OK) {
			/* The reference of a large one would take seconds. */
			assert_true(i > 0 || it_job_ok(&jobs[i]));
		} else {
			assert_int_equal(jobs[i].status, w.rv);
			assert_true(it_job_untouched(&jobs[i]));
		}
	}
	assert_int_not_equal(jobs[BATCH_JOBS - 1].status, GM_OK);
	for (int i = 0; i < BATCH_JOBS; i++)
		it_job_free(&jobs[i]);
	/* The client has redialed the new daemon ... */
	assert_int_equal(gemmd_ping(c, NULL, 5000), GM_OK);
	usleep(300000);
	/* ... which never received the old request. */
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	assert_int_equal(it_stat(mon, "requests.total"), 0);
	assert_int_equal(it_stat(mon, "jobs.ok"), 0);
	assert_int_equal(it_stat(mon, "jobs.failed"), 0);
	assert_int_equal(it_stat(mon, "jobs.inflight"), 0);
	/* Retrying is the caller's decision; this one retries once. */
	it_job(&j, 50, 40, 30, 9);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 10000), GM_OK);
	assert_true(it_job_ok(&j));
	assert_int_equal(it_stat(mon, "requests.total"), 1);
	it_job_free(&j);
	gemmd_close(mon);
	gemmd_close(c);
	assert_int_equal(it_finish(&d), 0);
}

static void test_no_failover(void **state)
{
	it_daemon d[2];
	gemmd_client *c, *mon[2];
	gemmd_job jobs[2], j;
	it_waiter w = {0};
	int x = -1;

	for (int i = 0; i < 2; i++) {
		assert_int_equal(it_launch(&d[i], NULL), 0);
		assert_int_equal(gemmd_open(d[i].tcp, NULL, &mon[i]), GM_OK);
	}
	assert_int_equal(gemmd_open(d[0].ipc, NULL, &c), GM_OK);
	assert_int_equal(gemmd_dial(c, d[1].ipc, NULL), GM_OK);
	for (int i = 0; i < 2; i++)
		it_job(&jobs[i], BATCH_DIM, BATCH_DIM, BATCH_DIM, 40 + i);
	assert_int_equal(
	    gemmd_submit_async(c, jobs, 2, NULL, CALL_TIMEOUT, it_done, &w),
	    GM_OK);
	while (x < 0)
		for (int i = 0; i < 2 && x < 0; i++)
			if (it_stat(mon[i], "jobs.inflight") >= 1)
				x = i;
	/* Kill the daemon running it; the other one stays idle. */
	it_kill(&d[x]);
	assert_true(it_wait_done(&w, 2 * CALL_TIMEOUT));
	assert_int_equal(w.rv, GM_ETRANSPORT);
	assert_true(it_job_untouched(&jobs[0]));
	usleep(300000);
	assert_int_equal(it_stat(mon[1 - x], "requests.total"), 0);
	/* The client goes on with the daemon left. */
	it_job(&j, 30, 20, 10, 42);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 5000), GM_OK);
	assert_true(it_job_ok(&j));
	assert_int_equal(it_stat(mon[1 - x], "requests.total"), 1);
	it_job_free(&j);
	gemmd_close(c);
	for (int i = 0; i < 2; i++) {
		it_job_free(&jobs[i]);
		gemmd_close(mon[i]);
		if (i != x)
			assert_int_equal(it_finish(&d[i]), 0);
	}
}

static void test_daemon_stopped_times_out(void **state)
{
	gemmd_client *c, *mon;
	gemmd_job j, k;
	it_daemon d;
	double t0;

	assert_int_equal(it_launch(&d, NULL), 0);
	assert_int_equal(gemmd_open(d.ipc, NULL, &c), GM_OK);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	it_job(&j, 64, 64, 64, 30);
	kill(d.pid, SIGSTOP);
	t0 = it_now_us();
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 500), GM_ETIMEDOUT);
	assert_true(it_now_us() - t0 >= 450e3);
	assert_int_equal(j.status, GM_ETIMEDOUT);
	kill(d.pid, SIGCONT);
	/* The request was delivered: it runs once, and its reply, now
	 * late, is dropped by the client without touching j. */
	for (int i = 0; i < 500 && it_stat(mon, "jobs.ok") < 1; i++)
		usleep(2000);
	usleep(100000);
	assert_int_equal(it_stat(mon, "jobs.ok"), 1);
	assert_int_equal(it_stat(mon, "requests.total"), 1);
	assert_true(it_job_untouched(&j));
	it_job(&k, 8, 8, 8, 31);
	assert_int_equal(gemmd_submit(c, &k, 1, NULL, 5000), GM_OK);
	assert_true(it_job_ok(&k));
	assert_true(it_job_untouched(&j));
	it_job_free(&j);
	it_job_free(&k);
	gemmd_close(mon);
	gemmd_close(c);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clients_killed),
	    cmocka_unit_test(test_daemon_killed_mid_batch),
	    cmocka_unit_test(test_no_failover),
	    cmocka_unit_test(test_daemon_stopped_times_out),
	};

	return IT_RUN(tests);
}
