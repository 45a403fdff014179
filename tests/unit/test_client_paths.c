/*
 * test_client_paths.c - the client library's other paths, against the
 * scripted peer: plain pointers staged through a region the library
 * owns (the frames then carry only descriptors; chunks pipelined; the
 * socket when no region can be made; a new region after a lost chunk),
 * a large request striped over two connections (and one part of it
 * refused), requests spread over two daemons by outstanding work, a
 * call that times out while its request is half written (the rest of
 * the frame is zeros, never the caller's bytes after the return),
 * options refused at open, and an ipc:// socket with no daemon behind
 * it named as such.
 */
#include "client_fx.h"

#include <sys/socket.h>
#include <sys/un.h>

/* Reads requests and answers each whole until n jobs are answered;
 * returns how many requests there were. With regions, every job must
 * name them and carry no payload. */
static int serve_jobs(gm_testconn *c, uint32_t n, int regions)
{
	int frames = 0;

	while (n > 0) {
		gm_testframe f;
		gm_job_operands ops;
		gm_job_desc d;

		assert_int_equal(gm_testconn_read(c, &f, 5000), GM_OK);
		assert_int_equal(gm_testframe_check(&f, NULL), GM_OK);
		for (uint32_t i = 0; i < f.h.count; i++) {
			gm_testframe_job(&f, i, &d, &ops);
			assert_int_equal(!!(d.flags & GM_JOB_REGIONS), regions);
			if (regions)
				assert_int_equal(ops.inline_bytes, 0);
		}
		assert_int_equal(gm_testconn_reply_all(c, &f), GM_OK);
		n -= f.h.count;
		frames++;
		gm_testframe_free(&f);
	}
	return frames;
}

static void handoff(struct fixture *fx)
{
	char path[160];

	fx_peer(fx);
	snprintf(path, sizeof(path), "%s/gemmd-regions.sock", fx->dir);
	assert_int_equal(gm_testpeer_handoff(fx->peer, path), GM_OK);
}

/* ---- staging ---- */

/* 8 jobs of 384 KiB through a 4 MiB region: chunks of two jobs, the
 * frames without payload; the region is made once and reused. */
static void test_staging(void **state)
{
	struct fixture *fx = *state;
	gemmd_open_opts o = {.staging_bytes = 4u << 20};
	tjob j[8];
	gemmd_job jobs[8];

	handoff(fx);
	fx_client_opts(fx, &o);
	fx_accept(fx);
	for (int round = 0; round < 2; round++) {
		tjobs_make(j, jobs, 8, GEMMD_FP64, 128, 128, 128);
		async_submit(fx, jobs, 8, 10000);
		assert_true(serve_jobs(fx->conn, 8, 1) >= 4);
		assert_int_equal(async_wait(fx), GM_OK);
		tjobs_check(j, jobs, 8);
		assert_int_equal(gm_testpeer_regions(fx->peer), 1);
	}
	/* Small calls keep the socket. */
	tjobs_make(j, jobs, 1, GEMMD_FP64, 8, 8, 8);
	async_submit(fx, jobs, 1, 10000);
	serve_jobs(fx->conn, 1, 0);
	assert_int_equal(async_wait(fx), GM_OK);
	tjobs_check(j, jobs, 1);
}

/* GEMMD_OPEN_NO_SHM: the same jobs go through the socket. */
static void test_no_shm(void **state)
{
	struct fixture *fx = *state;
	tjob j[8];
	gemmd_job jobs[8];

	handoff(fx);
	fx_client(fx, GEMMD_OPEN_NO_SHM);
	fx_accept(fx);
	tjobs_make(j, jobs, 8, GEMMD_FP64, 128, 128, 128);
	async_submit(fx, jobs, 8, 10000);
	assert_int_equal(serve_jobs(fx->conn, 8, 0), 1);
	assert_int_equal(async_wait(fx), GM_OK);
	tjobs_check(j, jobs, 8);
	assert_int_equal(gm_testpeer_regions(fx->peer), 0);
}

/* No hand-off socket: staging cannot start, the call takes the socket. */
static void test_staging_falls_back(void **state)
{
	struct fixture *fx = *state;
	tjob j[4];
	gemmd_job jobs[4];

	fx_client(fx, 0);
	fx_accept(fx);
	tjobs_make(j, jobs, 4, GEMMD_FP32, 256, 256, 64);
	async_submit(fx, jobs, 4, 10000);
	assert_int_equal(serve_jobs(fx->conn, 4, 0), 1);
	assert_int_equal(async_wait(fx), GM_OK);
	tjobs_check(j, jobs, 4);
}

/* A chunk lost with its connection may still be written by the daemon:
 * that region is released and the next call makes another. */
static void test_staging_lost_chunk(void **state)
{
	struct fixture *fx = *state;
	gemmd_open_opts o = {.staging_bytes = 4u << 20};
	tjob j[8];
	gemmd_job jobs[8];
	gm_testframe f;

	handoff(fx);
	fx_client_opts(fx, &o);
	fx_accept(fx);
	tjobs_make(j, jobs, 8, GEMMD_FP64, 128, 128, 128);
	async_submit(fx, jobs, 8, 10000);
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	gm_testframe_free(&f);
	gm_testconn_close(fx->conn);
	assert_int_equal(async_wait(fx), GM_ETRANSPORT);
	fx_accept_next(fx);
	async_submit(fx, jobs, 8, 10000);
	serve_jobs(fx->conn, 8, 1);
	assert_int_equal(async_wait(fx), GM_OK);
	for (int i = 0; i < 100 && gm_testpeer_regions(fx->peer) > 1; i++)
		usleep(20 * 1000);
	assert_int_equal(gm_testpeer_regions(fx->peer), 1);
	tjobs_check(j, jobs, 8);
}

/* ---- striping ---- */

/* Two jobs of 32 MiB on a client with two connections: one request on
 * each; one answered, the other refused: the call is answered. */
static void test_striping(void **state)
{
	struct fixture *fx = *state;
	gemmd_open_opts o = {.flags = GEMMD_OPEN_NO_SHM, .connections = 2};
	gm_testconn *c[2];
	gm_testframe f[2];
	tjob j[2];
	gemmd_job jobs[2];

	fx_client_opts(fx, &o);
	c[0] = gm_testpeer_accept(fx->peer, 5000);
	c[1] = gm_testpeer_accept(fx->peer, 5000);
	assert_non_null(c[0]);
	assert_non_null(c[1]);
	tjobs_make(j, jobs, 2, GEMMD_FP64, 4096, 1, 1024);
	async_submit(fx, jobs, 2, 20000);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(gm_testconn_read(c[i], &f[i], 10000), GM_OK);
		assert_int_equal(f[i].h.count, 1);
	}
	assert_int_equal(gm_testconn_reply_all(c[0], &f[0]), GM_OK);
	assert_int_equal(
	    gm_testconn_error(c[1], f[1].h.id, GM_EBUSY, "queue full"), GM_OK);
	assert_int_equal(async_wait(fx), GM_OK);
	for (int i = 0; i < 2; i++) {
		gm_job_desc d;
		gm_job_operands ops;
		int which;

		/* Which job went where: the refused one is EBUSY. */
		gm_testframe_job(&f[1], 0, &d, &ops);
		which = memcmp(ops.data[GM_OPND_A], j[0].a, 64) == 0 ? 0 : 1;
		if (i == which) {
			assert_int_equal(jobs[i].status, GM_EBUSY);
			assert_string_equal(jobs[i].message, "queue full");
			tjob_untouched(&j[i]);
		} else {
			j[i].job = jobs[i];
			tjob_check(&j[i]);
		}
	}
	for (int i = 0; i < 2; i++) {
		gm_testframe_free(&f[i]);
		tjob_free(&j[i]);
	}
}

/* ---- two daemons ---- */

/* A request waits on one daemon: the next goes to the other, which has
 * less outstanding work. */
static void test_two_daemons(void **state)
{
	struct fixture *fx = *state;
	char url2[160];
	gm_testpeer *p2;
	gm_testconn *c[2], *first, *second;
	gm_testframe f1, f2;
	struct async a1, a2;
	tjob j[2];
	gemmd_job jobs[2];

	fx_client(fx, 0);
	snprintf(url2, sizeof(url2), "ipc://%s/second.sock", fx->dir);
	assert_int_equal(gm_testpeer_open(url2, NULL, &p2), GM_OK);
	assert_int_equal(gemmd_dial(fx->cl, url2, NULL), GM_OK);
	c[0] = gm_testpeer_accept(fx->peer, 5000);
	c[1] = gm_testpeer_accept(p2, 5000);
	assert_non_null(c[0]);
	assert_non_null(c[1]);
	tjobs_make(j, jobs, 2, GEMMD_FP64, 64, 64, 64);
	async_start(fx->cl, &jobs[0], 1, 10000, &a1);
	first = gm_testconn_read(c[0], &f1, 1000) == GM_OK ? c[0] : c[1];
	if (first == c[1])
		assert_int_equal(gm_testconn_read(c[1], &f1, 5000), GM_OK);
	second = first == c[0] ? c[1] : c[0];
	async_start(fx->cl, &jobs[1], 1, 10000, &a2);
	assert_int_equal(gm_testconn_read(second, &f2, 5000), GM_OK);
	assert_int_equal(gm_testconn_reply_all(second, &f2), GM_OK);
	assert_int_equal(async_end(&a2), GM_OK);
	assert_int_equal(gm_testconn_reply_all(first, &f1), GM_OK);
	assert_int_equal(async_end(&a1), GM_OK);
	tjobs_check(j, jobs, 2);
	gm_testframe_free(&f1);
	gm_testframe_free(&f2);
	gemmd_close(fx->cl);
	fx->cl = NULL;
	gm_testpeer_free(p2);
}

/* ---- a call that ends with its request half written ---- */

static int has_marker(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 8 <= n; i += 8)
		if (memcmp(p + i, "\x55\x55\x55\x55\x55\x55\x55\x55", 8) == 0)
			return 1;
	return 0;
}

static void test_timeout_mid_write(void **state)
{
	struct fixture *fx = *state;
	enum { CHUNK = 1 << 20 };
	uint8_t *buf = malloc(CHUNK);
	size_t total, got = 0, at_return = 0, a_end;
	uint8_t hdr[GM_HDR_SIZE];
	gm_hdr h;
	tjob j;
	gemmd_job job;
	double t0;
	int tail_zero = 1, marker = 0;

	fx_client(fx, GEMMD_OPEN_NO_SHM);
	fx_accept(fx);
	tjobs_make(&j, &job, 1, GEMMD_FP64, 4096, 1, 1024);
	t0 = now_ms();
	async_submit(fx, &job, 1, 300);
	assert_int_equal(
	    gm_testconn_read_bytes(fx->conn, hdr, GM_HDR_SIZE, 5000), GM_OK);
	assert_int_equal(gm_proto_get_hdr(hdr, sizeof(hdr), &h, NULL, 0),
			 GM_OK);
	total = (size_t)h.length;
	a_end = total - 1024 * 8; /* B (coalesced: the library's) follows */
	/* 50 MB/s: the call times out with most of A still to go. */
	while (got < total) {
		size_t n = total - got < CHUNK ? total - got : CHUNK;

		if (at_return == 0 && fx->call.running &&
		    pthread_tryjoin_np(fx->call.thread, NULL) == 0) {
			fx->call.running = false;
			at_return = got;
			assert_int_equal(fx->call.rv, GM_ETIMEDOUT);
			assert_true(now_ms() - t0 < 300 + 1000 + 500);
			/* The caller reuses its buffer at once. */
			memset(j.a, 0x55, (size_t)4096 * 1024 * 8);
		}
		assert_int_equal(gm_testconn_read_bytes(fx->conn, buf, n, 5000),
				 GM_OK);
		marker |= has_marker(buf, n);
		for (size_t i = 0; i < n; i++)
			if (got + i >= a_end - 4096 && got + i < a_end)
				tail_zero &= buf[i] == 0;
		got += n;
		usleep(20 * 1000);
	}
	assert_true(at_return > 0 && at_return < total);
	assert_false(marker);
	assert_true(tail_zero);
	/* The connection is still framed: a ping goes through. */
	serve_ping(fx);
	free(buf);
	tjob_free(&j);
}

/* ---- options ---- */

static void test_bad_options(void **state)
{
	struct fixture *fx = *state;
	gemmd_open_opts o = {.connections = 65};
	gemmd_client *c;

	fx_peer(fx);
	assert_int_equal(gemmd_open(fx->url, &o, &c), GM_EINVAL);
	o = (gemmd_open_opts){.tls_ca_file = "/nonexistent"};
	assert_int_equal(gemmd_open(fx->url, &o, &c), GM_EINVAL);
	assert_non_null(strstr(gemmd_last_error(), "tls+tcp://"));
	o = (gemmd_open_opts){0};
	assert_int_equal(gemmd_open("tls+tcp://127.0.0.1:1", &o, &c),
			 GM_EINVAL);
	assert_non_null(strstr(gemmd_last_error(), "CA"));
	assert_int_equal(gemmd_open("http://x", NULL, &c), GM_EINVAL);
	o = (gemmd_open_opts){.tls_ca_file = "/nonexistent"};
	assert_int_equal(gemmd_open("tls+tcp://127.0.0.1:1", &o, &c),
			 GM_EINVAL);
	assert_non_null(strstr(gemmd_last_error(), "/nonexistent"));
}

/* An ipc:// socket with no daemon behind it, named as such by the
 * library, whichever way the kernel refuses: a socket file nobody
 * listens on, or none at all. */
static void test_no_daemon(void **state)
{
	struct fixture *fx = *state;
	char stale[160], none[160], url[200], want[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *paths[] = {stale, none};
	gemmd_client *c;
	int fd;

	snprintf(stale, sizeof(stale), "%s/stale.sock", fx->dir);
	snprintf(none, sizeof(none), "%s/none.sock", fx->dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memcpy(sa.sun_path, stale, strlen(stale));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd); /* the file stays; no one listens on it */
	for (int i = 0; i < 2; i++) {
		snprintf(url, sizeof(url), "ipc://%s", paths[i]);
		snprintf(want, sizeof(want),
			 "no gemmd listening at %s (is it running?)", paths[i]);
		assert_int_equal(gemmd_open(url, NULL, &c), GM_ETRANSPORT);
		assert_string_equal(gemmd_last_error(), want);
	}
	unlink(stale);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    FX_TEST(test_staging),
	    FX_TEST(test_no_shm),
	    FX_TEST(test_staging_falls_back),
	    FX_TEST(test_staging_lost_chunk),
	    FX_TEST(test_striping),
	    FX_TEST(test_two_daemons),
	    FX_TEST(test_timeout_mid_write),
	    FX_TEST(test_bad_options),
	    FX_TEST(test_no_daemon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
