/*
 * test_soak.c - hostile traffic, all of it at once, for a bounded time,
 * while a well-behaved client runs jobs (the hostile processes are
 * soak_fx.h's). The client's jobs are all answered, each right against a
 * reference, its p99 round trip within 5x of its p99 unloaded plus a
 * scheduler's slack, and its detached job is neither seen nor touched by
 * the probes; afterwards gemmd holds what it held before: connections,
 * descriptors, memory, the pool, regions.
 *
 * Run as root, the hostile processes on ipc:// become uid nobody (the
 * admin is root); otherwise they keep the test's uid, which is then not
 * in admin_uids.
 */
#include "soak_fx.h"

/* ---- the well-behaved client ---- */

/* One small job on c, checked; its round trip in microseconds. */
static double good_job(gemmd_client *c, unsigned seed)
{
	double us = it_timed_job(c, 32, 33, 34, seed, WAIT_MS);

	assert_true(us >= 0);
	return us;
}

/* What gemmd holds for clients, as the stats and the kernel say. */
typedef struct held {
	double conns, pool, regions, requests, unsent;
	double detached; /* results kept, jobs pending, waits */
	int fds;
	long rss_kb;
} held;

static held held_now(gemmd_client *c, pid_t pid)
{
	cJSON *st = it_stats(c);
	held h = {it_num(st, "connections.open"),
		  it_num(st, "pool.used"),
		  it_num(st, "regions.count"),
		  it_num(st, "requests.inflight"),
		  it_num(st, "connections.unsent_bytes"),
		  it_num(st, "detached.results") +
		      it_num(st, "detached.pending") +
		      it_num(st, "detached.waits"),
		  it_fds(pid),
		  it_rss_kb(pid)};

	cJSON_Delete(st);
	return h;
}

static bool not_draining(gemmd_client *c)
{
	cJSON *st = it_stats(c);
	bool no =
	    cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(st, "draining"));

	cJSON_Delete(st);
	return no;
}

/* Whether gemmd holds no more than base (memory: 64 MiB of slack for
 * the allocator's arenas, where resident memory tells: it_rss_tells). */
static bool back_to(const held *h, const held *base)
{
	return h->conns == base->conns && h->pool == 0 &&
	       h->regions == base->regions && h->requests == base->requests &&
	       h->unsent == 0 && h->detached == base->detached &&
	       h->fds <= base->fds &&
	       (!it_rss_tells() || h->rss_kb <= base->rss_kb + 65536);
}

static void test_soak(void **state)
{
	char admin_uids[32], ctrl[32], jobs[32];
	const char *args[] = {"--set", admin_uids,
			      "--set", ctrl,
			      "--set", jobs,
			      "--set", "max_connections=256",
			      "--set", "max_connections_per_peer=64",
			      "--set", "handshake_timeout_ms=500",
			      "--set", "stall_timeout_ms=500",
			      "--set", "send_timeout_ms=1000",
			      NULL};
	static double lat[IDLE_JOBS], loaded[200000];
	unsigned long ops[NHOSTILE], refusals = 0;
	pid_t kids[NHOSTILE];
	int pipes[NHOSTILE][2];
	double p99_idle, p99, bound;
	size_t n = 0;
	held base, now;
	gemmd_client *c;
	gemmd_job dj, got;
	uint64_t owned;
	it_daemon d;
	soak s;

	snprintf(admin_uids, sizeof(admin_uids), "admin_uids=0");
	snprintf(ctrl, sizeof(ctrl), "max_ctrl_bytes=%d", MAX_CTRL);
	snprintf(jobs, sizeof(jobs), "max_jobs_per_request=%d", MAX_JOBS);
	assert_int_equal(it_launch(&d, args), 0);
	s = (soak){.d = &d, .as_nobody = getuid() == 0};
	if (s.as_nobody) {
		char run[160];

		/* gemmd makes the socket 0660 in a directory 0750. */
		snprintf(run, sizeof(run), "%s/run", d.dir);
		assert_int_equal(chmod(d.dir, 0755), 0);
		assert_int_equal(chmod(run, 0755), 0);
		assert_int_equal(chmod(d.path, 0666), 0);
	}
	assert_int_equal(gemmd_open(d.ipc, NULL, &c), GM_OK);
	/* A detached job the probes look for. */
	it_job(&dj, 40, 41, 42, 99);
	assert_int_equal(
	    gemmd_submit_detached(c, &dj, 1, NULL, &owned, WAIT_MS), GM_OK);
	s.owned = owned;
	for (int i = 0; i < IDLE_JOBS; i++)
		lat[i] = good_job(c, (unsigned)i);
	p99_idle = it_quantile(lat, IDLE_JOBS, 0.99);
	base = held_now(c, d.pid);

	s.until_us = it_now_us() + SOAK_S * 1e6;
	for (size_t i = 0; i < NHOSTILE; i++) {
		assert_int_equal(pipe(pipes[i]), 0);
		assert_true((kids[i] = fork()) >= 0);
		if (kids[i] == 0) {
			close(pipes[i][0]);
			hostile_child(&s, i, pipes[i][1]);
		}
		close(pipes[i][1]);
	}
	while (it_now_us() < s.until_us && n < sizeof(loaded) / sizeof(*loaded))
		loaded[n] = good_job(c, (unsigned)(IDLE_JOBS + n)), n++;
	for (size_t i = 0; i < NHOSTILE; i++) {
		unsigned long r = 0;
		int st;

		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		ops[i] = 0;
		assert_int_equal(read(pipes[i][0], &ops[i], sizeof(ops[i])),
				 sizeof(ops[i]));
		assert_int_equal(read(pipes[i][0], &r, sizeof(r)), sizeof(r));
		refusals += r;
		close(pipes[i][0]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("%s: step %d failed", hostile[i].name,
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	p99 = it_quantile(loaded, n, 0.99);
	bound = 5 * p99_idle + SCHED_SLACK_US;
	fprintf(stderr,
		"soak: %d s of hostile traffic (%s on ipc://): %lu malformed "
		"frames, %lu connect+close, %lu requests never read, %lu "
		"big control bodies, %lu id probes, %lu admin attempts; "
		"%lu connections refused at a cap; the client's %zu jobs all "
		"right, p99 %.0f us against %.0f us unloaded (bound %.0f "
		"us)\n",
		SOAK_S, s.as_nobody ? "as nobody" : "as the test's uid", ops[0],
		ops[1], ops[2], ops[3], ops[4], ops[5], refusals, n, p99,
		p99_idle, bound);
	for (size_t i = 0; i < NHOSTILE; i++)
		assert_true(ops[i] > 0);
	assert_true(n > 0);
	assert_true(p99 <= bound);
	/* Nobody drained it, and the detached job is intact. */
	assert_true(not_draining(c));
	got = dj;
	got.out = calloc(1, (size_t)dj.m * dj.n * sizeof(double));
	assert_int_equal(gemmd_wait(c, owned, &got, WAIT_MS), GM_OK);
	free(dj.out);
	dj.out = got.out;
	dj.status = got.status;
	assert_true(it_job_ok(&dj));
	it_job_free(&dj);
	/* Back to what it held before, once the dropped connections are
	 * gone; the detached job's result was taken. */
	base.detached--;
	now = held_now(c, d.pid);
	for (int t = 0; t < 500 && !back_to(&now, &base); t++) {
		usleep(10000);
		now = held_now(c, d.pid);
	}
	if (!back_to(&now, &base))
		fail_msg("gemmd holds %.0f connections (%.0f before), pool "
			 "%.0f, %.0f regions (%.0f), %.0f requests (%.0f), "
			 "%.0f unsent bytes, %.0f detached (%.0f), %d fds "
			 "(%d), %ld KiB (%ld)",
			 now.conns, base.conns, now.pool, now.regions,
			 base.regions, now.requests, base.requests, now.unsent,
			 now.detached, base.detached, now.fds, base.fds,
			 now.rss_kb, base.rss_kb);
	gemmd_close(c);
	assert_int_equal(it_wait_stat(&d, "regions.count", 0, WAIT_MS), 0);
	assert_int_equal(it_wait_stat(&d, "connections.open", 1, WAIT_MS), 1);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_soak),
	};

	return IT_RUN(tests);
}
