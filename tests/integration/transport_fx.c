/*
 * transport_fx.c - what the tests in test_transport.c, test_transport_slow.c
 * share; see transport_fx.h.
 */
#include "transport_fx.h"

void tjob_make(tjob *t, uint32_t m, uint32_t n, uint32_t k, unsigned seed)
{
	rc_job_fp64(&t->j, m, n, k, seed, &t->a, &t->b);
	assert_non_null(t->a);
	assert_non_null(t->b);
}

void tjob_free(tjob *t)
{
	free(t->a);
	free(t->b);
}

void send_req(int fd, uint64_t id, const tjob *t, uint32_t n, uint32_t bflags)
{
	rc_job j[64];
	uint8_t *req;
	size_t len;

	assert_true(n <= 64);
	for (uint32_t i = 0; i < n; i++)
		j[i] = t[i].j;
	assert_non_null(req = rc_gemm(id, 1, 0, bflags, j, n, &len));
	assert_int_equal(rc_write(fd, req, len), 0);
	free(req);
}

uint32_t read_ok(int fd, uint64_t id, const tjob *t, uint32_t n)
{
	rc_frame f;
	rc_reply r;
	uint32_t idx;

	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(f.type, RC_GEMM_REPLY);
	assert_int_equal(f.id, id);
	assert_true(f.count < n);
	assert_int_equal(rc_reply_of(&f, &r), 0);
	assert_int_equal(r.status, 0);
	assert_true(r.total_us >= r.queue_us);
	idx = f.count;
	assert_int_equal(r.result_bytes, (uint64_t)t[idx].j.m * t[idx].j.n * 8);
	assert_true(rc_check_fp64(&t[idx].j, r.result));
	rc_frame_free(&f);
	return idx;
}

double one_job(const char *url, unsigned seed)
{
	double t0 = it_now_us();
	int fd = rc_connect(url, NULL);
	tjob t;

	assert_true(fd >= 0);
	tjob_make(&t, 16, 16, 16, seed);
	send_req(fd, 1, &t, 1, 0);
	read_ok(fd, 1, &t, 1);
	close(fd);
	tjob_free(&t);
	return it_now_us() - t0;
}

double timed_jobs(int fd, int n, double *p50)
{
	double *lat = calloc((size_t)n, sizeof(double)), p99;
	tjob t;

	assert_non_null(lat);
	tjob_make(&t, 32, 32, 32, 3);
	for (int i = 0; i < n; i++) {
		double t0 = it_now_us();

		send_req(fd, 100 + (uint64_t)i, &t, 1, 0);
		read_ok(fd, 100 + (uint64_t)i, &t, 1);
		lat[i] = it_now_us() - t0;
	}
	tjob_free(&t);
	*p50 = it_quantile(lat, (size_t)n, 0.50);
	p99 = it_quantile(lat, (size_t)n, 0.99);
	free(lat);
	return p99;
}

uint32_t read_error(int fd, uint64_t *id, char msg[97])
{
	rc_frame f;
	uint32_t st;

	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(f.type, RC_ERROR_T);
	st = rc_error(&f, msg);
	*id = f.id;
	rc_frame_free(&f);
	return st;
}

snapshot snap(const it_daemon *d)
{
	return (snapshot){it_fds(d->pid), it_rss_kb(d->pid)};
}

void assert_idle(const it_daemon *d, double open, const snapshot *base,
		 int more_fds)
{
	/* The stats come on a connection of their own: one more. */
	assert_int_equal(it_wait_stat(d, "connections.open", open + 1, WAIT_MS),
			 open + 1);
	assert_int_equal(it_wait_stat(d, "pool.used", 0, WAIT_MS), 0);
	/* The stats request itself is the one in flight. */
	assert_int_equal(it_wait_stat(d, "requests.inflight", 1, WAIT_MS), 1);
	assert_int_equal(it_rstat(d, "jobs.inflight"), 0);
	assert_int_equal(it_rstat(d, "pool.waiting"), 0);
	assert_int_equal(it_rstat(d, "connections.unsent_bytes"), 0);
	/* No descriptor kept: as many as in base at most (one more, for
	 * the stats connection, may still be closing). */
	if (base != NULL) {
		int fds = it_fds(d->pid);

		for (int i = 0; i < 200 && fds > base->fds + more_fds; i++) {
			usleep(10000);
			fds = it_fds(d->pid);
		}
		assert_true(fds <= base->fds + more_fds);
	}
}

void start(it_daemon *d, const char *const *args)
{
	assert_int_equal(it_launch(d, args), 0);
}

void finish(it_daemon *d)
{
	assert_int_equal(it_finish(d), 0);
}
