/*
 * queue_fx.c - what the tests in test_queue.c, test_queue_detach.c share; see
 * queue_fx.h.
 */
#include "queue_fx.h"

uint32_t blocker_n = 1700; /* set by calibrate() */
static char pool_arg[64];  /* pool_bytes=..., for the blocker */

const gemmd_open_opts socket_only = {.flags = GEMMD_OPEN_NO_SHM};

void on_done(void *arg, int rv)
{
	slot *s = arg;

	s->rv = rv;
	s->done_us = it_now_us();
	s->seq = s->job.t.start_seq;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
}

int is_done(slot *s)
{
	return __atomic_load_n(&s->done, __ATOMIC_ACQUIRE);
}

void wait_done(slot *s)
{
	for (int i = 0; i < 120000 && !is_done(s); i++)
		usleep(1000);
	assert_true(is_done(s));
}

void send_job(gemmd_client *c, slot *s, int prio, uint32_t dl_ms)
{
	gemmd_submit_opts o = {prio, dl_ms};

	s->sent_us = it_now_us();
	assert_int_equal(
	    gemmd_submit_async(c, &s->job, 1, &o, TIMEOUT_MS, on_done, s),
	    GM_OK);
}

slot filler;

int queued_base;

void wait_queued(gemmd_client *c, double n)
{
	n += queued_base;
	for (int i = 0; i < 5000 && it_stat(c, "jobs.queued") < n; i++)
		usleep(1000);
	assert_true(it_stat(c, "jobs.queued") >= n);
}

void send_blocker(gemmd_client *c, slot *s)
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

void end_blocker(slot *s)
{
	wait_done(s);
	wait_done(&filler);
	queued_base = 0;
	assert_int_equal(filler.job.status, GM_OK);
	it_job_free(&filler.job);
}

void queue_small(gemmd_client *c, gemmd_client *stats, slot *s, unsigned seed,
		 int prio, double nth)
{
	it_job(&s->job, SMALL, SMALL, SMALL, seed);
	send_job(c, s, prio, 0);
	wait_queued(stats, nth);
}

int by_seq(const void *a, const void *b)
{
	uint64_t x = ((const struct done_at *)a)->seq,
		 y = ((const struct done_at *)b)->seq;

	return (x > y) - (x < y);
}

gemmd_client *start(it_daemon *d, const char *const *extra)
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

void stop(it_daemon *d, gemmd_client *c)
{
	gemmd_close(c);
	assert_int_equal(it_finish(d), 0);
}

gemmd_job_info status_of(gemmd_client *c, uint64_t id)
{
	gemmd_job_info in;

	assert_int_equal(gemmd_job_status(c, id, &in, TIMEOUT_MS), GM_OK);
	assert_int_equal(in.id, id);
	return in;
}

void wait_state(gemmd_client *c, uint64_t id, int state)
{
	for (int i = 0; i < 10000 && status_of(c, id).state != state; i++)
		usleep(1000);
	assert_int_equal(status_of(c, id).state, state);
}

int draining(gemmd_client *c)
{
	cJSON *s = it_stats(c);
	int on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "draining"));

	cJSON_Delete(s);
	return on;
}

int ready(gemmd_client *c)
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

int calibrate(void **state)
{
	const char *args[] = {"--set", "cpu_threads=1", NULL};
	double flops_per_us;
	uint64_t bytes;

	/* Over the budget, so that it starts beside the filler. */
	blocker_n = it_cube_for(args, 400, TIMEOUT_MS, BLOCK_S, 1700, 4000,
				&flops_per_us);
	if (blocker_n == 0)
		return -1;
	bytes = 3ull * blocker_n * blocker_n * 8 + SMALLS_ROOM +
		3ull * FILLER_N * FILLER_N * 8;
	snprintf(pool_arg, sizeof(pool_arg), "pool_bytes=%llu",
		 (unsigned long long)(((bytes >> 20) + 1) << 20));
	print_message("%.1f GFLOP/s on one thread: blocker %u^3, %s\n",
		      flops_per_us / 1e3, blocker_n, pool_arg);
	return 0;
}
