/*
 * test_transport.c - gemmd's transport on byte streams, through raw
 * frames (gm_rawc.h) only, each case against its own gemmd on the CPU
 * engine. Requests pipelined on one connection are answered job by job,
 * out of order, with results identical over ipc:// and tcp://; detached
 * requests answer with ids and their waits with the results. Every
 * resource a client can make gemmd hold is driven past its cap while a
 * well-behaved client is still served: connect-and-close storms,
 * connections over max_connections and max_connections_per_peer (an
 * EBUSY ERROR), an ipc peer the allow-lists refuse (EACCES), 1,100
 * half-open connections (the handshake deadline), descriptors run out
 * (accepting pauses without spinning). After each, what gemmd holds goes
 * back to where it was. Clients that do not keep up and other speakers
 * are in test_transport_slow.c.
 */
#include "transport_fx.h"

/* ---- pipelining ---- */

/* Eight requests of 1..8 jobs of different sizes written back to back
 * before any reply is read: every job answered once, correct, in any
 * order; the same bytes over ipc:// and tcp://. */
static void test_pipelined(void **state)
{
	enum { NREQ = 8, MAXJ = 8 };
	tjob t[NREQ][MAXJ];
	uint8_t seen[NREQ][MAXJ];
	const char *urls[2];
	int inorder = 1, last = -1;
	it_daemon d;

	start(&d, NULL);
	urls[0] = d.ipc;
	urls[1] = d.tcp;
	for (int r = 0; r < NREQ; r++)
		for (int i = 0; i <= r; i++)
			tjob_make(&t[r][i], 8 + 40 * ((r + i) % 4), 8 + 13 * i,
				  5 + 31 * r, 100 * r + i);
	for (int u = 0; u < 2; u++) {
		int fd = rc_connect(urls[u], NULL);

		assert_true(fd >= 0);
		memset(seen, 0, sizeof(seen));
		for (int r = 0; r < NREQ; r++)
			send_req(fd, 1000 + (uint64_t)r, t[r], (uint32_t)r + 1,
				 0);
		for (int k = 0; k < NREQ * (NREQ + 1) / 2; k++) {
			rc_frame f;
			rc_reply rep;
			int r;

			assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
			r = (int)(f.id - 1000);
			assert_true(r >= 0 && r < NREQ &&
				    f.count <= (uint32_t)r);
			assert_int_equal(rc_reply_of(&f, &rep), 0);
			assert_int_equal(rep.status, 0);
			assert_true(
			    rc_check_fp64(&t[r][f.count].j, rep.result));
			assert_int_equal(seen[r][f.count]++, 0);
			inorder &= r >= last;
			last = r;
			rc_frame_free(&f);
		}
		close(fd);
	}
	fprintf(stderr, "pipelined: 36 jobs in 8 requests answered %s\n",
		inorder ? "in request order" : "out of request order");
	assert_int_equal(it_rstat(&d, "jobs.ok"), 2 * 36);
	assert_idle(&d, 0, NULL, 0);
	for (int r = 0; r < NREQ; r++)
		for (int i = 0; i <= r; i++)
			tjob_free(&t[r][i]);
	finish(&d);
}

/* A detached request is answered with its ids at once; wait gives each
 * job's result as a GEMM_REPLY carrying the wait's id and index 0, once;
 * status reads done. */
static void test_detached(void **state)
{
	tjob t[3];
	uint64_t ids[3];
	char *doc, json[160];
	it_daemon d;
	rc_frame f;
	rc_reply r;
	int fd;

	start(&d, NULL);
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	for (int i = 0; i < 3; i++)
		tjob_make(&t[i], 20 + i, 30, 40, 7 + i);
	send_req(fd, 42, t, 3, 1);
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(f.type, RC_CTRL_REPLY);
	assert_int_equal(f.id, 42);
	assert_int_equal(sscanf((char *)f.body,
				"{\"ok\":true,\"jobs\":[%lu,%lu,%lu]}", &ids[0],
				&ids[1], &ids[2]),
			 3);
	rc_frame_free(&f);
	for (int i = 2; i >= 0; i--) {
		snprintf(json, sizeof(json),
			 "{\"op\":\"wait\",\"job\":%lu,\"timeout_ms\":5000}",
			 ids[i]);
		assert_int_equal(rc_send_ctrl(fd, 50 + (uint64_t)i, json), 0);
		assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
		assert_int_equal(f.type, RC_GEMM_REPLY);
		assert_int_equal(f.id, 50 + (uint64_t)i);
		assert_int_equal(f.count, 0);
		assert_int_equal(rc_reply_of(&f, &r), 0);
		assert_int_equal(r.status, 0);
		assert_true(rc_check_fp64(&t[i].j, r.result));
		rc_frame_free(&f);
	}
	snprintf(json, sizeof(json), "{\"op\":\"wait\",\"job\":%lu}", ids[0]);
	assert_int_equal(rc_ctrl(fd, 60, json, &doc, WAIT_MS), 0);
	assert_non_null(strstr(doc, "\"error\":\"ENOTFOUND\""));
	free(doc);
	snprintf(json, sizeof(json), "{\"op\":\"status\",\"job\":%lu}", ids[1]);
	assert_int_equal(rc_ctrl(fd, 61, json, &doc, WAIT_MS), 0);
	assert_non_null(strstr(doc, "\"state\":\"done\""));
	free(doc);
	close(fd);
	assert_idle(&d, 0, NULL, 0);
	for (int i = 0; i < 3; i++)
		tjob_free(&t[i]);
	finish(&d);
}

/* ---- connections ---- */

/* Connect-and-close storms, 1,000 on each listener, some closed at
 * once, some after half a header; then a new client is served within a
 * second and gemmd holds no more descriptors than before. */
static void test_storms(void **state)
{
	enum { STORM = 1000 };
	/* The storm comes from the new client's own uid and address:
	 * connections it closed count until gemmd has seen them go, so the
	 * per-peer and anonymous caps are out of the way here (test_caps
	 * has them). */
	const char *args[] = {"--set", "max_connections_per_peer=100000",
			      "--set", "max_connections_anonymous=100000",
			      NULL};
	static const uint8_t half[16] = {0x47, 0x45, 0x4d, 0x4d, 2};
	const char *urls[2];
	snapshot base;
	it_daemon d;
	double t0, ms;

	start(&d, args);
	urls[0] = d.ipc;
	urls[1] = d.tcp;
	one_job(d.ipc, 1);
	assert_idle(&d, 0, NULL, 0);
	base = snap(&d);
	for (int u = 0; u < 2; u++) {
		double accepted = it_rstat(&d, "connections.accepted");

		t0 = it_now_us();
		for (int i = 0; i < STORM; i++) {
			int fd = rc_connect(urls[u], NULL);

			assert_true(fd >= 0);
			if (i % 2)
				rc_write(fd, half, sizeof(half));
			close(fd);
		}
		ms = (it_now_us() - t0) / 1e3;
		/* The new client comes once gemmd has taken the storm:
		 * nng 1.5.2 listens with a backlog of 128, and a SYN that
		 * finds it full is dropped and sent again after 1 s, by
		 * any server's kernel, so a connect made while the storm
		 * still queues can wait that second (one run in some
		 * twenty did). */
		assert_true(it_wait_stat_min(&d, "connections.accepted",
					     accepted + STORM,
					     WAIT_MS) >= accepted + STORM);
		t0 = it_now_us();
		one_job(urls[u], 2);
		fprintf(stderr,
			"storm: %d connect+close on %s in %.0f ms; then a new "
			"client's job in %.1f ms\n",
			STORM, u ? "tcp" : "ipc", ms, (it_now_us() - t0) / 1e3);
		assert_true(it_now_us() - t0 < 1e6);
	}
	assert_idle(&d, 0, &base, 0);
	assert_true(it_rstat(&d, "connections.accepted") >= 2 * STORM);
	finish(&d);
}

/* Connects to url (from src) and expects one ERROR, EBUSY with id 0
 * and a message naming key, then the connection closed. */
static void refused_busy(const char *url, const char *src, const char *key)
{
	int fd = rc_connect(url, src);
	char msg[97];
	uint64_t id;

	assert_true(fd >= 0);
	assert_int_equal(read_error(fd, &id, msg), 14 /* EBUSY */);
	assert_int_equal(id, 0);
	if (strstr(msg, key) == NULL)
		fail_msg("\"%s\" does not name %s", msg, key);
	assert_true(rc_closed(fd, 2000));
	close(fd);
}

/* Waits (up to 10 s) until the daemon counts n connections open: it
 * frees a closed connection a moment after it sees it go. */
static void wait_open(int mon, double n)
{
	double until = it_now_us() + 10e6;

	while (rc_stat_fd(mon, "connections.open") != n && it_now_us() < until)
		usleep(1000);
	assert_int_equal(rc_stat_fd(mon, "connections.open"), n);
}

/* A connection to url from src that gemmd admitted. */
static int admitted(const char *url, const char *src)
{
	int fd = rc_admitted(url, src, WAIT_MS);

	assert_true(fd >= 0);
	return fd;
}

/* A connection over a cap gets one ERROR, EBUSY with id 0 naming the
 * key, and is closed; those already open are served; once one closes
 * there is room again. Per peer: a uid on ipc://, an address on tcp://,
 * where every loopback address is one peer (127.0.0.2 is the same peer
 * as 127.0.0.1 and 127.0.0.9). */
static void test_caps(void **state)
{
	const char *args[] = {"--set", "max_connections=8", "--set",
			      "max_connections_per_peer=4", NULL};
	int fd[7], mon;
	it_daemon d;

	start(&d, args);
	/* The stats come on a connection of their own, from 127.0.0.9. */
	mon = admitted(d.tcp, "127.0.0.9");
	for (int i = 0; i < 3; i++)
		fd[i] = admitted(d.tcp, "127.0.0.1");
	refused_busy(d.tcp, "127.0.0.2", "max_connections_per_peer=4");
	for (int i = 3; i < 7; i++)
		fd[i] = admitted(d.ipc, NULL);
	refused_busy(d.ipc, NULL, "max_connections_per_peer=4");
	/* A refused connection is never counted open. */
	assert_int_equal(rc_stat_fd(mon, "connections.open"), 8);
	/* Eight open: the next is over max_connections, whoever it is. */
	refused_busy(d.tcp, "127.0.0.3", "max_connections=8");
	/* Those open are served. */
	for (int i = 0; i < 7; i++) {
		char *doc;

		assert_int_equal(
		    rc_ctrl(fd[i], 7, "{\"op\":\"ping\"}", &doc, WAIT_MS), 0);
		free(doc);
	}
	assert_int_equal(rc_stat_fd(mon, "connections.refused_by."
					 "max_connections_per_peer"),
			 2);
	assert_int_equal(
	    rc_stat_fd(mon, "connections.refused_by.max_connections"), 1);
	assert_int_equal(rc_stat_fd(mon, "connections.refused"), 3);
	/* Room again once one goes. */
	close(fd[0]);
	wait_open(mon, 7);
	fd[0] = admitted(d.tcp, "127.0.0.1");
	assert_int_equal(rc_stat_fd(mon, "connections.open"), 8);
	for (int i = 0; i < 7; i++)
		close(fd[i]);
	close(mon);
	assert_idle(&d, 0, NULL, 0);
	finish(&d);
}

/* An ipc:// peer the allow-lists refuse gets one ERROR, EACCES with id
 * 0, and is closed; nothing it sent runs; tcp:// is not subject to the
 * lists. */
static void test_allow_list(void **state)
{
	char uids[32];
	const char *args[] = {"--set", uids, NULL};
	uint8_t *req;
	char msg[97];
	uint64_t id;
	it_daemon d;
	size_t len;
	tjob t;
	int fd;

	snprintf(uids, sizeof(uids), "allow_uids=%u",
		 getuid() == 12345 ? 12346 : 12345);
	start(&d, args);
	tjob_make(&t, 8, 8, 8, 1);
	assert_non_null(req = rc_gemm(5, 1, 0, 0, &t.j, 1, &len));
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	rc_write(fd, req, len); /* it may be refused before it is sent */
	assert_int_equal(read_error(fd, &id, msg), 31 /* EACCES */);
	assert_int_equal(id, 0);
	assert_non_null(strstr(msg, "allow_uids"));
	assert_true(rc_closed(fd, 2000));
	close(fd);
	assert_int_equal(it_rstat(&d, "connections.refused_by.allow_list"), 1);
	assert_int_equal(it_rstat(&d, "requests.total"), 0);
	assert_int_equal(it_rstat(&d, "jobs.ok"), 0);
	one_job(d.tcp, 2);
	free(req);
	tjob_free(&t);
	assert_int_equal(it_stop(&d), 0);
	assert_true(it_file_has(d.log, "refused an ipc connection from uid"));
	it_cleanup(&d);
}

/* 1,100 connections that never send a whole header, while a client
 * connected before them runs jobs: those over max_connections (or, on
 * tcp://, max_connections_anonymous) are refused at once, the rest dropped at
 * handshake_timeout_ms; the client is served throughout, and gemmd ends where
 * it began. */
static void test_half_open(void **state)
{
	enum { N = 1100, JOBS = 300 };
	const char *args[] = {"--set", "handshake_timeout_ms=2000", "--set",
			      "max_connections_per_peer=100000", NULL};
	static int fds[N];
	double p50_idle, p99_idle, p50, p99, t0;
	long limit = it_raise_nofile();
	snapshot base;
	it_daemon d;
	int good;

	if (limit < N + 200)
		skip();
	start(&d, args);
	assert_true((good = rc_connect(d.tcp, NULL)) >= 0);
	p99_idle = timed_jobs(good, JOBS, &p50_idle);
	assert_idle(&d, 1, NULL, 0);
	base = snap(&d);
	t0 = it_now_us();
	for (int i = 0; i < N; i++) {
		fds[i] = rc_connect(i % 2 ? d.tcp : d.ipc, NULL);
		assert_true(fds[i] >= 0);
		/* Half of them send part of a header. */
		if (i % 4 < 2)
			rc_write(fds[i], "GEMM", 4);
	}
	p99 = timed_jobs(good, JOBS, &p50);
	/* The stats come over the client's connection: a new one would be
	 * over max_connections. */
	fprintf(stderr,
		"half-open: %d connections opened in %.0f ms; %d jobs in "
		"turn: p50 %.0f us, p99 %.0f us without them, p50 %.0f us, "
		"p99 %.0f us with them; refused %.0f, open %.0f\n",
		N, (it_now_us() - t0) / 1e3, JOBS, p50_idle, p99_idle, p50, p99,
		rc_stat_fd(good, "connections.refused_by.max_connections"),
		rc_stat_fd(good, "connections.open"));
	assert_true(p99 < 10 * p99_idle + 50e3);
	/* The handshake deadline frees every one of them. */
	for (int t = 0; t < 1000 && rc_stat_fd(good, "connections.open") != 1;
	     t++)
		usleep(10000);
	assert_int_equal(rc_stat_fd(good, "connections.open"), 1);
	assert_true(
	    rc_stat_fd(good, "connections.dropped_by.handshake_timeout") +
		rc_stat_fd(good, "connections.refused") >=
	    N);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	one_job(d.ipc, 9);
	assert_idle(&d, 1, &base, 0);
	fprintf(stderr,
		"half-open: after them %d descriptors (%d before), %ld KiB "
		"resident (%ld before)\n",
		it_fds(d.pid), base.fds, it_rss_kb(d.pid), base.rss_kb);
	close(good);
	finish(&d);
}

/* With descriptors for only a few connections, the rest wait in the
 * listen backlog: gemmd pauses accepting (logged once), does not spin
 * (its CPU time stays low), and takes them in once descriptors are
 * free. */
static void test_out_of_descriptors(void **state)
{
	enum { N = 100, KEEP = 25 };
	int fds[N], mon, got;
	double cpu0, cpu1;
	it_daemon d;

	assert_int_equal(it_setup(&d), 0);
	d.nofile = 64;
	assert_int_equal(it_start(&d, NULL), 0);
	/* Stats come on a connection made before descriptors run out. */
	assert_true((mon = rc_connect(d.tcp, NULL)) >= 0);
	for (int i = 0; i < N; i++)
		assert_true((fds[i] = rc_connect(d.tcp, NULL)) >= 0);
	usleep(300000);
	got = (int)rc_stat_fd(mon, "connections.open") - 1;
	cpu0 = it_cpu_ms(d.pid);
	sleep(2);
	cpu1 = it_cpu_ms(d.pid);
	fprintf(stderr,
		"out of descriptors: %d of %d connections taken with 64 "
		"descriptors; %.0f ms of CPU in 2 s while the rest wait\n",
		got, N, cpu1 - cpu0);
	assert_true(got > 0 && got < N);
	assert_true(cpu1 - cpu0 < 200);
	assert_true(rc_stat_fd(mon, "connections.accept_pauses") >= 1);
	/* Room for those left: they get in once the back-off retries (at
	 * most 1 s later). */
	for (int i = 0; i < N - KEEP; i++)
		close(fds[i]);
	for (int t = 0;
	     t < 300 && rc_stat_fd(mon, "connections.open") != KEEP + 1; t++)
		usleep(10000);
	assert_int_equal(rc_stat_fd(mon, "connections.open"), KEEP + 1);
	for (int i = N - KEEP; i < N; i++)
		close(fds[i]);
	close(mon);
	one_job(d.ipc, 3);
	assert_idle(&d, 0, NULL, 0);
	assert_int_equal(it_stop(&d), 0);
	assert_true(it_file_has(d.log, "cannot accept connections"));
	it_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pipelined),
	    cmocka_unit_test(test_detached),
	    cmocka_unit_test(test_storms),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_allow_list),
	    cmocka_unit_test(test_half_open),
	    cmocka_unit_test(test_out_of_descriptors),
	};

	return IT_RUN(tests);
}
