/*
 * test_hostile.c - known-bad traffic through a real gemmd: a frame over
 * max_message_bytes drops only its own connection; every malformed
 * request of PROTOCOL.md's validation tables gets its own code, over
 * ipc:// and tcp://, on the connection it came on; and a thousand
 * connections stalled in the middle of a frame leave another client's
 * jobs running, while the staging pool is never over-committed. That
 * client's p99 latency with and without the stalled connections is
 * printed, not asserted: it measures the machine as much as gemmd.
 */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
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

/* Watches the stats document from its own thread while a test runs. */
typedef struct monitor {
	pthread_t thread;
	gemmd_client *c;
	int stop;
	unsigned samples;
	unsigned overcommitted; /* samples with pool.used > pool.size */
	unsigned busy_over;	/* samples with contexts.busy > total */
	double max_used, size;
} monitor;

static void *monitor_run(void *arg)
{
	monitor *m = arg;

	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		cJSON *s = it_stats(m->c);
		double used = it_num(s, "pool.used");

		if (s != NULL) {
			m->samples++;
			m->size = it_num(s, "pool.size");
			m->max_used = used > m->max_used ? used : m->max_used;
			m->overcommitted += used > m->size;
			m->busy_over += it_num(s, "contexts.busy") >
					it_num(s, "contexts.total");
		}
		cJSON_Delete(s);
		usleep(5000);
	}
	return NULL;
}

static void monitor_start(monitor *m, const char *url)
{
	memset(m, 0, sizeof(*m));
	assert_int_equal(gemmd_open(url, NULL, &m->c), GM_OK);
	assert_int_equal(pthread_create(&m->thread, NULL, monitor_run, m), 0);
}

static void monitor_stop(monitor *m)
{
	__atomic_store_n(&m->stop, 1, __ATOMIC_RELEASE);
	pthread_join(m->thread, NULL);
	gemmd_close(m->c);
	assert_true(m->samples > 0);
	assert_int_equal(m->overcommitted, 0);
	assert_int_equal(m->busy_over, 0);
}

static void test_oversize_frame(void **state)
{
	const char *args[] = {"--set", "max_message_bytes=64K", NULL};
	const char *urls[2];
	gemmd_client *good, *big;
	gemmd_job j, huge;
	it_daemon d;
	double t0;
	int rv;

	assert_int_equal(it_setup(&d), 0);
	assert_int_equal(it_start(&d, args), 0);
	urls[0] = d.ipc;
	urls[1] = d.tcp;
	assert_int_equal(gemmd_open(d.ipc, NULL, &good), GM_OK);
	for (int i = 0; i < 2; i++) {
		int ipc, fd = it_sp_connect(urls[i], &ipc);

		assert_true(fd >= 0);
		/* 1 MiB announced against a 64 KiB limit: nng drops the
		 * connection on the length alone, before any body. */
		assert_int_equal(it_sp_frame(fd, ipc, 1u << 20), 0);
		assert_true(it_closed_by_peer(fd, 2000));
		close(fd);
		t0 = it_now_us();
		assert_int_equal(gemmd_ping(good, NULL, 1000), GM_OK);
		assert_true(it_now_us() - t0 < 1e6);
	}
	/* Through the client library: the call fails, nothing runs, and
	 * the same client works again once it has redialed. */
	assert_int_equal(gemmd_open(d.tcp, NULL, &big), GM_OK);
	it_job(&huge, 100, 100, 100, 1); /* 160 KB of operands */
	rv = gemmd_submit(big, &huge, 1, NULL, 5000);
	assert_true(rv == GM_ETRANSPORT || rv == GM_ETIMEDOUT);
	assert_true(it_job_untouched(&huge));
	assert_int_equal(gemmd_ping(big, NULL, 5000), GM_OK);
	it_job(&j, 33, 17, 20, 2);
	assert_int_equal(gemmd_submit(good, &j, 1, NULL, 5000), GM_OK);
	assert_true(it_job_ok(&j));
	assert_int_equal(it_stat(good, "jobs.ok"), 1);
	assert_int_equal(it_stat(good, "requests.refused"), 0);
	it_job_free(&j);
	it_job_free(&huge);
	gemmd_close(big);
	gemmd_close(good);
	assert_int_equal(it_stop(&d), 0);
	it_cleanup(&d);
}

/* ---- malformed requests, PROTOCOL.md section 8 ---- */

struct patch {
	size_t off;
	int width; /* bytes, little-endian; 0 ends the list */
	uint64_t val;
};

/* want: the ERROR's code; GM_OK: a GEMM_REPLY whose job succeeded. */
struct bad_case {
	const char *name;
	int want;
	long delta;	   /* zero bytes added or, when negative, cut */
	size_t keep;	   /* when nonzero, the message's whole length */
	struct patch p[4]; /* applied before the length changes */
};

#define H(x) (x)
#define B(x) (GM_HDR_SIZE + (x))
#define J(x) (GM_HDR_SIZE + GM_BATCH_SIZE + (x))
/* clang-format off */
#define JM(v) {J(8), 4, (v)}
#define JN(v) {J(12), 4, (v)}
#define JK(v) {J(16), 4, (v)}
/* clang-format on */
#define F64_NAN	   0x7ff8000000000000u
#define F64_NEGINF 0xfff0000000000000u
#define BODY	   (192 - GM_HDR_SIZE) /* body bytes of the base request */
#define EMPTY	   ((size_t)-1)	       /* keep: no bytes at all */

/*
 * Against one fp32 2x3x4 job with C (192 bytes, id 77) and a daemon run
 * with max_jobs_per_request=4, max_dim=64 and max_message_bytes=4K (so
 * also 4 KiB a job): the cases of tests/unit/test_proto.c, plus what
 * only the daemon decides (the message types it does not take).
 */
static const struct bad_case bad_requests[] = {
    {"empty message", GM_ETRUNC, 0, EMPTY, {{0}}},
    {"shorter than a header", GM_ETRUNC, 0, 10, {{0}}},
    {"header, no batch", GM_ETRUNC, 0, GM_HDR_SIZE, {{0}}},
    {"batch cut short", GM_ETRUNC, 0, B(8), {{0}}},
    {"bad magic", GM_EMAGIC, 0, 0, {{H(0), 4, 0x4d4d4548}}},
    {"big-endian magic", GM_EMAGIC, 0, 0, {{H(0), 4, 0x47454d4d}}},
    {"version 0", GM_EVERSION, 0, 0, {{H(4), 2, 0}}},
    {"version 2", GM_EVERSION, 0, 0, {{H(4), 2, 2}}},
    {"magic beats version", GM_EMAGIC, 0, 0, {{H(0), 1, 0}, {H(4), 2, 9}}},
    {"type 0", GM_EMSGTYPE, 0, 0, {{H(6), 2, 0}}},
    {"type 6", GM_EMSGTYPE, 0, 0, {{H(6), 2, 6}}},
    {"a GEMM_REPLY", GM_EMSGTYPE, 0, 0, {{H(6), 2, GM_MSG_GEMM_REPLY}}},
    {"a CTRL_REPLY",
     GM_EMSGTYPE,
     0,
     0,
     {{H(6), 2, GM_MSG_CTRL_REPLY}, {H(16), 4, BODY}}},
    {"an ERROR",
     GM_EMSGTYPE,
     0,
     0,
     {{H(6), 2, GM_MSG_ERROR}, {H(16), 4, BODY}}},
    {"a CTRL, count too small", GM_ETRAILING, 0, 0, {{H(6), 2, GM_MSG_CTRL}}},
    {"a CTRL, count too large",
     GM_ETRUNC,
     0,
     0,
     {{H(6), 2, GM_MSG_CTRL}, {H(16), 4, BODY + 1}}},
    {"header flags", GM_EFIELD, 0, 0, {{H(20), 4, 0x80000000u}}},
    {"count 0", GM_EFIELD, 0, 0, {{H(16), 4, 0}}},
    {"count over max_jobs", GM_ETOOMANY, 0, 0, {{H(16), 4, 5}}},
    {"count over the ceiling", GM_ETOOMANY, 0, 0, {{H(16), 4, UINT32_MAX}}},
    {"count lies: no room", GM_ETRUNC, 0, 0, {{H(16), 4, 4}}},
    {"count lies: job 1 missing", GM_ETRUNC, 0, 0, {{H(16), 4, 2}}},
    {"priority 4", GM_EFIELD, 0, 0, {{B(0), 1, 4}}},
    {"batch reserved byte", GM_EFIELD, 0, 0, {{B(3), 1, 1}}},
    {"batch flag bit 1", GM_EFIELD, 0, 0, {{B(8), 4, 2}}},
    {"batch reserved word", GM_EFIELD, 0, 0, {{B(12), 4, 1}}},
    {"dtype 0", GM_EDTYPE, 0, 0, {{J(0), 1, 0}}},
    {"dtype 6", GM_EDTYPE, 0, 0, {{J(0), 1, 6}}},
    {"trans_a 2", GM_EFIELD, 0, 0, {{J(1), 1, 2}}},
    {"trans_b 255", GM_EFIELD, 0, 0, {{J(2), 1, 255}}},
    {"layout 2", GM_EFIELD, 0, 0, {{J(3), 1, 2}}},
    {"kernel 3", GM_EFIELD, 0, 0, {{J(4), 1, 3}}},
    {"unknown job flag", GM_EFIELD, 0, 0, {{J(5), 1, 0x81}}},
    {"job reserved 6..7", GM_EFIELD, 0, 0, {{J(6), 2, 1}}},
    {"job reserved 20..23", GM_EFIELD, 0, 0, {{J(20), 4, 1}}},
    {"alpha NaN", GM_EFIELD, 0, 0, {{J(24), 8, F64_NAN}}},
    {"beta -inf", GM_EFIELD, 0, 0, {{J(32), 8, F64_NEGINF}}},
    {"m 0", GM_EDIM, 0, 0, {JM(0)}},
    {"n 0", GM_EDIM, 0, 0, {JN(0)}},
    {"k 0", GM_EDIM, 0, 0, {JK(0)}},
    {"m over max_dim", GM_EDIM, 0, 0, {JM(65)}},
    {"A bytes overflow", GM_EOVERFLOW, 0, 0, {JM(UINT32_MAX), JK(UINT32_MAX)}},
    {"A+B+C overflows",
     GM_EOVERFLOW,
     0,
     0,
     {JM(1u << 30), JN(1u << 30), JK(1u << 31)}},
    {"over max_job_bytes", GM_ETOOBIG, 0, 0, {JM(64), JN(64), JK(64)}},
    {"payload_bytes short", GM_EFIELD, 0, 0, {{J(40), 8, 103}}},
    {"payload_bytes huge", GM_EFIELD, 0, 0, {{J(40), 8, UINT64_MAX}}},
    {"C sent, flag clear", GM_EFIELD, 0, 0, {{J(5), 1, 0}}},
    {"payload cut short", GM_ETRUNC, -1, 0, {{0}}},
    {"job header cut short", GM_ETRUNC, 0, J(40), {{0}}},
    {"one trailing byte", GM_ETRAILING, 1, 0, {{0}}},
    {"two requests in one", GM_ETRAILING, 192, 0, {{0}}},
    {"valid: runs", GM_OK, 0, 0, {{0}}},
    {"deadline: accepted", GM_OK, 0, 0, {{B(4), 4, UINT32_MAX}}},
};

/* The base request, or a case applied to it, into p; returns its length. */
static size_t bad_message(uint8_t *p, const struct bad_case *c)
{
	gm_job_desc jd = {.dtype = GM_FP32,
			  .flags = GM_JOB_HAS_C,
			  .m = 2,
			  .n = 3,
			  .k = 4,
			  .alpha = 1.0};
	gm_batch b = {.priority = 2};
	size_t len = GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE + 104;

	gm_proto_put_hdr(p, GM_MSG_GEMM, 77, 1);
	gm_proto_put_batch(p + GM_HDR_SIZE, &b);
	gm_proto_put_job(p + J(0), &jd);
	memset(p + J(GM_JOB_HDR_SIZE), 0, 104); /* zero operands */
	for (int i = 0; i < 4 && c->p[i].width != 0; i++)
		for (int k = 0; k < c->p[i].width; k++)
			p[c->p[i].off + (size_t)k] =
			    (uint8_t)(c->p[i].val >> (8 * k));
	if (c->keep != 0)
		return c->keep == EMPTY ? 0 : c->keep;
	if (c->delta > 0)
		memset(p + len, 0, (size_t)c->delta);
	return (size_t)((long)len + c->delta);
}

/* Checks the reply to case c; returns 1 and prints why when it is not
 * the one the specification gives. */
static int check_reply(const struct bad_case *c, size_t sent, nng_msg *m)
{
	char text[GM_MSG_TEXT + 1] = "";
	uint32_t status = 0;
	gm_hdr h;
	int rv = gm_proto_get_hdr(nng_msg_body(m), nng_msg_len(m), &h, text,
				  sizeof(text));

	if (rv == 0 && h.type == GM_MSG_ERROR)
		rv = gm_proto_get_error(nng_msg_body(m), nng_msg_len(m),
					&status, text);
	else if (rv == 0 && h.type == GM_MSG_GEMM_REPLY)
		rv = gm_proto_check_reply(nng_msg_body(m), nng_msg_len(m), 77,
					  1, text, sizeof(text));
	else if (rv == 0)
		rv = GM_EMSGTYPE;
	if (rv == 0 && h.id != (sent >= 16 ? 77u : 0u))
		rv = GM_EFIELD;
	if (rv == 0 && c->want == GM_OK && h.type == GM_MSG_GEMM_REPLY)
		return 0;
	if (rv == 0 && h.type == GM_MSG_ERROR && (int)status == c->want &&
	    text[0] != '\0')
		return 0;
	print_error("case \"%s\": want %s, got %s (reply: %s, type %u)\n",
		    c->name, gm_errname(c->want), gm_errname((int)status),
		    gm_errname(rv), h.type);
	return 1;
}

static void send_bad_cases(const char *url)
{
	static uint8_t buf[1024];
	nng_socket s;
	nng_pipe first = NNG_PIPE_INITIALIZER;
	int failed = 0;

	assert_int_equal(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 5000);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	assert_int_equal(nng_dial(s, url, NULL, 0), 0);
	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]);
	     i++) {
		const struct bad_case *c = &bad_requests[i];
		size_t len = bad_message(buf, c);
		nng_msg *m;

		assert_int_equal(nng_send(s, buf, len, 0), 0);
		assert_int_equal(nng_recvmsg(s, &m, 0), 0);
		failed += check_reply(c, len, m);
		/* Every reply comes back on the connection the first one
		 * did: no case cost the client its connection. */
		if (i == 0)
			first = nng_msg_get_pipe(m);
		assert_int_equal(nng_pipe_id(nng_msg_get_pipe(m)),
				 nng_pipe_id(first));
		nng_msg_free(m);
	}
	nng_close(s);
	assert_int_equal(failed, 0);
}

static void test_malformed_requests(void **state)
{
	const char *args[] = {
	    "--set", "max_jobs_per_request=4", "--set", "max_dim=64",
	    "--set", "max_message_bytes=4K",   NULL};
	size_t ncases = sizeof(bad_requests) / sizeof(bad_requests[0]);
	gemmd_client *c;
	it_daemon d;

	assert_int_equal(it_setup(&d), 0);
	assert_int_equal(it_start(&d, args), 0);
	send_bad_cases(d.ipc);
	send_bad_cases(d.tcp);
	assert_int_equal(gemmd_open(d.ipc, NULL, &c), GM_OK);
	/* Two valid cases a transport ran; the rest were refused whole. */
	assert_int_equal(it_stat(c, "jobs.ok"), 4);
	assert_int_equal(it_stat(c, "requests.refused"), 2 * (ncases - 2));
	assert_int_equal(it_stat(c, "jobs.rejected"), 0);
	gemmd_close(c);
	assert_int_equal(it_stop(&d), 0);
	it_cleanup(&d);
}

/* ---- connections stalled mid-frame ---- */

#define STALLED_MAX 1000
#define TIMED_JOBS  600

/* Runs TIMED_JOBS small jobs one after another on c; returns the p99
 * round trip in microseconds and sets *p50. */
static double timed_jobs(gemmd_client *c, double *p50)
{
	static double lat[TIMED_JOBS];
	gemmd_job j;

	it_job(&j, 64, 64, 64, 3);
	for (int i = 0; i < TIMED_JOBS; i++) {
		double t0 = it_now_us();

		assert_int_equal(gemmd_submit(c, &j, 1, NULL, 10000), GM_OK);
		lat[i] = it_now_us() - t0;
	}
	assert_true(it_job_ok(&j));
	it_job_free(&j);
	*p50 = it_quantile(lat, TIMED_JOBS, 0.50);
	return it_quantile(lat, TIMED_JOBS, 0.99);
}

/* Opens n connections, alternately ipc:// and tcp://, each stopped after
 * the SP handshake, a frame header announcing 64 KiB and 100 bytes of
 * it. Connects in batches that gemmd has accepted before the next, so
 * that no listen backlog overflows. */
static void open_stalled(const it_daemon *d, gemmd_client *mon, int *fds, int n)
{
	static const uint8_t part[100];
	double base = it_stat(mon, "connections.open");

	for (int i = 0; i < n; i++) {
		int ipc;

		fds[i] = it_sp_connect(i % 2 ? d->tcp : d->ipc, &ipc);
		assert_true(fds[i] >= 0);
		assert_int_equal(it_sp_frame(fds[i], ipc, 64 << 10), 0);
		assert_int_equal(it_write_all(fds[i], part, sizeof(part)), 0);
		if (i % 64 != 63 && i != n - 1)
			continue;
		for (int t = 0;
		     t < 500 && it_stat(mon, "connections.open") < base + i + 1;
		     t++)
			usleep(2000);
	}
	assert_true(it_stat(mon, "connections.open") >= base + n);
}

static void test_stalled_frames(void **state)
{
	static int fds[STALLED_MAX];
	long limit = it_raise_nofile();
	int n = limit - 100 < STALLED_MAX ? (int)(limit - 100) : STALLED_MAX;
	double p99_idle, p99_loaded, p50_idle, p50_loaded;
	gemmd_client *c, *mon;
	monitor m;
	it_daemon d;

	if (n < STALLED_MAX)
		fprintf(stderr,
			"stalled frames: RLIMIT_NOFILE allows %ld descriptors, "
			"so %d connections instead of %d\n",
			limit, n, STALLED_MAX);
	assert_true(n > 0);
	/* gemmd is forked after the raise, so it inherits the limit. */
	assert_int_equal(it_setup(&d), 0);
	assert_int_equal(it_start(&d, NULL), 0);
	assert_int_equal(gemmd_open(d.ipc, NULL, &c), GM_OK);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	/* The monitor polls all along, so both timed runs share its load
	 * and differ only by the stalled connections. */
	monitor_start(&m, d.tcp);
	p99_idle = timed_jobs(c, &p50_idle);
	open_stalled(&d, mon, fds, n);
	p99_loaded = timed_jobs(c, &p50_loaded);
	monitor_stop(&m);
	fprintf(stderr,
		"stalled frames: %d connections (%d ipc, %d tcp) each 100 "
		"bytes into a 64 KiB frame; %d 64x64x64 fp64 jobs in turn: "
		"p50 %.0f us, p99 %.0f us without them; p50 %.0f us, p99 "
		"%.0f us with them (p99 x%.2f)\n",
		n, (n + 1) / 2, n / 2, TIMED_JOBS, p50_idle, p99_idle,
		p50_loaded, p99_loaded, p99_loaded / p99_idle);
	fprintf(stderr,
		"stalled frames: pool.used at most %.0f of %.0f bytes over %u "
		"samples\n",
		m.max_used, m.size, m.samples);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	for (int t = 0; t < 500 && it_stat(mon, "connections.open") > 2; t++)
		usleep(10000);
	assert_int_equal(it_stat(mon, "connections.open"), 2);
	assert_int_equal(it_stat(mon, "requests.refused"), 0);
	assert_int_equal(it_stat(mon, "pool.used"), 0);
	gemmd_close(mon);
	gemmd_close(c);
	assert_int_equal(it_stop(&d), 0);
	it_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oversize_frame),
	    cmocka_unit_test(test_malformed_requests),
	    cmocka_unit_test(test_stalled_frames),
	};

	if (getenv("GEMMD") == NULL) {
		fprintf(stderr, "GEMMD is not set\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
