/*
 * test_hostile_conn.c - known-bad traffic through a real gemmd, in raw
 * frames (hostile_fx.h): refusals that depend on the daemon's state
 * (draining, a full queue, a request larger than the pool); frames that
 * lie about their length (promising more and stalling: dropped at
 * stall_timeout_ms; sending more: the rest read as the next frame); a
 * client going away at every point of a frame; and a thousand
 * connections stalled in the middle of a frame while another client runs
 * jobs, the staging pool never over-committed. Latencies are printed,
 * not asserted beyond a generous bound: they measure the machine as much
 * as gemmd.
 */
#include "hostile_fx.h"

/* ---- refusals that depend on the daemon's state ---- */

/* Sends request req on fd and expects an ERROR with want and id. */
static void refused(int fd, const uint8_t *req, size_t len, uint64_t id,
		    int want)
{
	char msg[97];
	rc_frame f;

	assert_int_equal(rc_write(fd, req, len), 0);
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(f.type, RC_ERROR_T);
	assert_int_equal(f.id, id);
	assert_int_equal(rc_error(&f, msg), want);
	rc_frame_free(&f);
}

/* Steps 19-24 against the daemon's state: a region it does not hold
 * (ENOTFOUND over ipc://, EACCES over tcp://), draining (EDRAINING), a
 * queue without room at the request's priority (EBUSY), a request whose
 * operands and results are more than the whole pool, with no pageable
 * memory beyond it (ETOOBIG naming pool_bytes); nothing of them runs,
 * and the connection goes on. Drain and resume are an admin's: root
 * over ipc:// is one, the anonymous tcp:// client is refused EACCES and
 * drains through root's connection. */
static void test_state_refusals(void **state)
{
	const char *args[] = {"--set", "pool_bytes=1M",
			      "--set", "pageable_max_bytes=0",
			      "--set", "queue_depth_per_priority=0,0,0,2",
			      NULL};
	static double a[1024], b[1024];
	rc_job j = rc_job_on(1024, 1024, 1, a, b);
	rc_job small[3] = {
	    {.dtype = 1, .m = 1, .n = 1, .k = 1, .alpha = 1, .a = a, .b = b}};
	rc_job reg = region_job(b);
	char *doc, msg[97];
	uint8_t *req;
	size_t len;
	it_daemon d;
	rc_frame f;
	int fd, adm;

	assert_int_equal(it_launch(&d, args), 0);
	assert_true((adm = rc_connect(d.ipc, NULL)) >= 0);
	for (int u = 0; u < 2; u++) {
		assert_true((fd = rc_connect(u ? d.tcp : d.ipc, NULL)) >= 0);
		assert_non_null(req = rc_gemm(5, 1, 0, 0, &reg, 1, &len));
		refused(fd, req, len, 5, u ? EACCES : ENOTFOUND);
		free(req);
		/* 16 KiB of operands, 8 MiB of result: over a 1 MiB pool. */
		assert_non_null(req = rc_gemm(6, 1, 0, 0, &j, 1, &len));
		assert_int_equal(rc_write(fd, req, len), 0);
		assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
		assert_int_equal(rc_error(&f, msg), ETOOBIG);
		assert_non_null(strstr(msg, "pool_bytes"));
		assert_non_null(strstr(msg, "pageable_max_bytes=0"));
		rc_frame_free(&f);
		free(req);
		small[1] = small[2] = small[0];
		assert_non_null(req = rc_gemm(7, 3, 0, 0, small, 3, &len));
		refused(fd, req, len, 7, EBUSY);
		free(req);
		assert_int_equal(
		    rc_ctrl(fd, 8, "{\"op\":\"drain\"}", &doc, WAIT_MS), 0);
		assert_non_null(strstr(doc, u ? "\"error\":\"EACCES\""
					      : "\"draining\":true"));
		free(doc);
		assert_int_equal(
		    rc_ctrl(adm, 8, "{\"op\":\"drain\"}", &doc, WAIT_MS), 0);
		free(doc);
		assert_non_null(req = rc_gemm(9, 1, 0, 0, small, 1, &len));
		refused(fd, req, len, 9, EDRAINING);
		assert_int_equal(
		    rc_ctrl(adm, 10, "{\"op\":\"resume\"}", &doc, WAIT_MS), 0);
		free(doc);
		/* The connection goes on: this one runs. */
		assert_int_equal(rc_write(fd, req, len), 0);
		assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
		assert_int_equal(f.type, RC_GEMM_REPLY);
		rc_frame_free(&f);
		free(req);
		close(fd);
	}
	close(adm);
	assert_int_equal(it_rstat(&d, "jobs.ok"), 2);
	assert_int_equal(it_rstat(&d, "requests.refused"), 8);
	/* Every job of a refused request: 1 + 1 + 3 + 1 on each socket. */
	assert_int_equal(it_rstat(&d, "jobs.rejected"), 12);
	assert_int_equal(it_rstat(&d, "pool.used"), 0);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- frames that lie about their length ---- */

/* A header that promises more than comes, then nothing: dropped at
 * stall_timeout_ms without a word. More than promised: what follows is
 * read as the next frame, here not one (EMAGIC), and the connection
 * closed. A client beside them is served throughout. */
static void test_lying_lengths(void **state)
{
	const char *args[] = {"--set", "stall_timeout_ms=500", NULL};
	static double a[64], b[64];
	rc_job j = rc_job_on(8, 8, 8, a, b);
	uint8_t *req, extra[32];
	double t0, t1;
	char msg[97];
	size_t len;
	it_daemon d;
	rc_frame f;
	int fd;

	assert_int_equal(it_launch(&d, args), 0);
	assert_non_null(req = rc_gemm(3, 1, 0, 0, &j, 1, &len));
	/* All but its last 100 bytes, then silence. */
	assert_true((fd = rc_connect(d.tcp, NULL)) >= 0);
	assert_int_equal(rc_write(fd, req, len - 100), 0);
	t0 = it_now_us();
	assert_true(rc_closed(fd, 5000));
	t1 = it_now_us();
	close(fd);
	fprintf(stderr,
		"lying lengths: a frame 100 bytes short dropped %.0f ms after "
		"its last byte (stall_timeout_ms=500)\n",
		(t1 - t0) / 1e3);
	assert_true(t1 - t0 >= 400e3 && t1 - t0 < 2e6);
	assert_int_equal(it_rstat(&d, "connections.dropped_by.stall_timeout"),
			 1);
	/* The whole frame, then 32 bytes more that are no frame: the
	 * request runs (its reply may come before or after the ERROR, or
	 * not at all once the connection is closed), the rest is refused
	 * and the connection closed. */
	memset(extra, 0x5a, sizeof(extra));
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	assert_int_equal(rc_write(fd, req, len), 0);
	assert_int_equal(rc_write(fd, extra, sizeof(extra)), 0);
	for (int errors = 0; errors == 0;) {
		assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
		if (f.type == RC_ERROR_T) {
			assert_int_equal(rc_error(&f, msg), EMAGIC);
			errors++;
		} else {
			assert_int_equal(f.type, RC_GEMM_REPLY);
		}
		rc_frame_free(&f);
	}
	assert_true(rc_closed(fd, 2000));
	close(fd);
	assert_int_equal(it_wait_stat(&d, "jobs.ok", 1, WAIT_MS), 1);
	free(req);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- clients that go away at every point of a frame ---- */

/* Connects, writes the first n bytes of frame p, reads `take` bytes of
 * the answer (0: none) and closes. */
static void go_away(const char *url, const uint8_t *p, size_t n, size_t take)
{
	static uint8_t buf[1 << 20];
	int fd = rc_connect(url, NULL);

	assert_true(fd >= 0);
	assert_int_equal(rc_write(fd, p, n), 0);
	if (take != 0)
		assert_int_equal(rc_read(fd, buf, take, WAIT_MS), 0);
	close(fd);
}

static void test_go_away(void **state)
{
	static double a[512 * 512], b[512 * 512];
	rc_job big = rc_job_on(512, 512, 512, a, b);
	rc_job wide = rc_job_on(1024, 1024, 1, a, b);
	rc_job reg = region_job(b);
	const char *ctrl = "{\"op\":\"stats\"}";
	uint8_t *g, *w, *r, c[64];
	size_t gl, wl, rl;
	it_daemon d;

	assert_int_equal(it_launch(&d, NULL), 0);
	/* 4 MiB of payload; 8 MiB of result; a descriptor to cut. */
	assert_non_null(g = rc_gemm(1, 1, 0, 0, &big, 1, &gl));
	assert_non_null(w = rc_gemm(2, 1, 0, 0, &wide, 1, &wl));
	assert_non_null(r = rc_gemm(3, 1, 0, 0, &reg, 1, &rl));
	rc_put_hdr(c, RC_CTRL, 4, 0, strlen(ctrl));
	memcpy(c + RC_HDR, ctrl, strlen(ctrl));
	for (int u = 0; u < 2; u++) {
		const char *url = u ? d.tcp : d.ipc;

		go_away(url, g, 10, 0);		      /* in the header */
		go_away(url, g, RC_HDR, 0);	      /* after it */
		go_away(url, g, RC_HDR + 40, 0);      /* in the head */
		go_away(url, r, RC_HDR + 64 + 20, 0); /* in a descriptor */
		go_away(url, g, RC_HDR + 64, 0);      /* before the payload */
		go_away(url, g, gl / 2, 0);	      /* in the payload */
		go_away(url, g, gl, 0);		      /* before its reply */
		go_away(url, w, wl, 100);	      /* in the reply */
		go_away(url, w, wl, 1 << 20);	      /* further in */
		go_away(url, c, RC_HDR + 5, 0);	      /* in a CTRL */
	}
	/* Every request that was read whole ran; gemmd holds nothing. */
	assert_int_equal(it_wait_stat(&d, "connections.open", 1, WAIT_MS), 1);
	assert_int_equal(it_wait_stat(&d, "pool.used", 0, WAIT_MS), 0);
	assert_int_equal(it_rstat(&d, "requests.inflight"), 1);
	assert_int_equal(it_wait_stat(&d, "jobs.ok", 6, WAIT_MS), 6);
	free(g);
	free(w);
	free(r);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- connections stalled mid-frame ---- */

#define STALLED_MAX 1000
#define TIMED_JOBS  600

/* Watches the stats from its own thread and connection while a test
 * runs: the pool is never over-committed. */
typedef struct monitor {
	pthread_t thread;
	int fd, stop;
	unsigned samples, overcommitted;
	double max_used, size;
} monitor;

static void *monitor_run(void *arg)
{
	monitor *m = arg;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		double used = rc_stat_fd(m->fd, "pool.used");

		if (used >= 0) {
			m->samples++;
			m->size = rc_stat_fd(m->fd, "pool.size");
			m->max_used = used > m->max_used ? used : m->max_used;
			m->overcommitted += used > m->size;
		}
		usleep(5000);
	}
	return NULL;
}

/* n connections, alternately ipc:// and tcp://, each stopped in the
 * middle of a request of 64 KiB of operands: one in four in its head
 * (nothing is reserved yet), the others in its payload (its slab is). */
static void open_stalled(const it_daemon *d, int mon, int *fds, int n)
{
	static double a[64 * 64];
	rc_job j = rc_job_on(64, 64, 64, a, a);
	double base = rc_stat_fd(mon, "connections.open");
	uint8_t *req;
	size_t len;

	assert_non_null(req = rc_gemm(1, 1, 0, 0, &j, 1, &len));
	for (int i = 0; i < n; i++) {
		size_t part = i % 4 == 0 ? RC_HDR + 40 : RC_HDR + 64 + 1000;

		fds[i] = rc_connect(i % 2 ? d->tcp : d->ipc, NULL);
		assert_true(fds[i] >= 0);
		assert_int_equal(rc_write(fds[i], req, part), 0);
	}
	free(req);
	for (int t = 0;
	     t < 500 && rc_stat_fd(mon, "connections.open") < base + n; t++)
		usleep(10000);
	assert_true(rc_stat_fd(mon, "connections.open") >= base + n);
}

static void test_stalled_frames(void **state)
{
	static int fds[STALLED_MAX];
	const char *args[] = {"--set", "max_connections_per_peer=2000",
			      "--set", "max_connections=2000",
			      "--set", "max_connections_anonymous=2000",
			      NULL};
	long limit = it_raise_nofile();
	int n = limit - 100 < STALLED_MAX ? (int)(limit - 100) : STALLED_MAX;
	double p99_idle, p99_loaded, p50_idle, p50_loaded;
	monitor m = {0};
	it_daemon d;
	int c, mon;

	assert_true(n > 0);
	assert_int_equal(it_launch(&d, args), 0);
	assert_true((c = rc_connect(d.ipc, NULL)) >= 0);
	assert_true((mon = rc_connect(d.tcp, NULL)) >= 0);
	assert_true((m.fd = rc_connect(d.tcp, NULL)) >= 0);
	/* The monitor polls all along, so both timed runs share its load
	 * and differ only by the stalled connections. */
	assert_int_equal(pthread_create(&m.thread, NULL, monitor_run, &m), 0);
	p99_idle = timed_jobs(c, TIMED_JOBS, 0, &p50_idle, NULL, NULL);
	open_stalled(&d, mon, fds, n);
	p99_loaded = timed_jobs(c, TIMED_JOBS, 0, &p50_loaded, NULL, NULL);
	__atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
	pthread_join(m.thread, NULL);
	fprintf(stderr,
		"stalled frames: %d connections (%d ipc, %d tcp) stopped "
		"in the head or the payload of a request of 64 KiB of "
		"operands; %d 64x64x64 fp64 jobs in turn: "
		"p50 %.0f us, p99 %.0f us without them; p50 %.0f us, p99 "
		"%.0f us with them (p99 x%.2f); pool.used at most %.0f of "
		"%.0f bytes over %u samples\n",
		n, (n + 1) / 2, n / 2, TIMED_JOBS, p50_idle, p99_idle,
		p50_loaded, p99_loaded, p99_loaded / p99_idle, m.max_used,
		m.size, m.samples);
	assert_true(m.samples > 0);
	assert_int_equal(m.overcommitted, 0);
	assert_true(p99_loaded < 10 * p99_idle + 50e3);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	for (int t = 0; t < 500 && rc_stat_fd(mon, "connections.open") > 3; t++)
		usleep(10000);
	assert_int_equal(rc_stat_fd(mon, "connections.open"), 3);
	assert_int_equal(rc_stat_fd(mon, "requests.refused"), 0);
	assert_int_equal(rc_stat_fd(mon, "pool.used"), 0);
	close(m.fd);
	close(mon);
	close(c);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_state_refusals),
	    cmocka_unit_test(test_lying_lengths),
	    cmocka_unit_test(test_go_away),
	    cmocka_unit_test(test_stalled_frames),
	};

	return IT_RUN(tests);
}
