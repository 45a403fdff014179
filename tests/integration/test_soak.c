/*
 * test_soak.c - hostile traffic, all of it at once, for a bounded time,
 * while a well-behaved client runs jobs: malformed frames, connect and
 * close storms, clients that send and never read, control bodies at and
 * over the cap, probing for other principals' job ids, and admin
 * operations from an unprivileged uid, each from its own process. The
 * client's jobs are all answered, each right against a reference, its
 * p99 round trip within 5x of its p99 unloaded plus a scheduler's slack,
 * and its detached job is neither seen nor touched by the probes;
 * afterwards gemmd holds what it held before: connections, descriptors,
 * memory, the pool, regions.
 *
 * Run as root, the hostile processes on ipc:// become uid nobody (the
 * admin is root); otherwise they keep the test's uid, which is then not
 * in admin_uids.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest.h"

#define WAIT_MS	  10000
#define SOAK_S	  8    /* how long the hostile processes run */
#define IDLE_JOBS 2000 /* unloaded: enough for a steady p99 */
#define NOBODY	  65534
#define MAX_CTRL  65536
#define MAX_JOBS  16
/* What each hostile process waits between two of its moves (a storm
 * a quarter of it): together some 5,000 moves a second. */
#define PAUSE_US 2000
/* The client's p99 under load may reach 5x its p99 unloaded. On a host
 * of 2 cores the ipc:// connect storm weighed most: nng 1.5.2's poller
 * spun on the hang-up of each connection closed before its first read
 * (gm_stream.c), and every such connection was made, armed and torn down
 * on the loop. A stream accepted now reads ahead at once and one whose
 * peer is gone is freed where it was accepted (gm_listen.c), which took
 * the soak from 5-19x, then 5-6x, to 1.4-2.5x (0.37-0.54 ms against
 * 0.19-0.28, unloaded p99 over IDLE_JOBS).
 * Beyond that the tail is the host's, not gemmd's: six hostile
 * processes, gemmd's threads and the client share 2 cores, and a
 * wake-up queued behind them waits a scheduler slice or two whatever
 * gemmd does. Under AddressSanitizer, which slows the hostile processes
 * too, six rounds gave 3.1-5.7x (0.64-1.58 ms against 0.21-0.28), so
 * SCHED_SLACK_US is added to the bound. A client held behind a hostile
 * connection would wait out one of its deadlines (500 ms here). */
#define SCHED_SLACK_US 2000.0

/* Error codes of PROTOCOL.md 9. */
enum { W_EMAGIC = 2, W_ETOOMANY = 11, W_ETOOBIG = 13, W_EBUSY = 14 };

/* What every hostile process knows. */
typedef struct soak {
	const it_daemon *d;
	double until_us;
	bool as_nobody; /* on ipc://; else the test's own uid */
	uint64_t owned; /* the client's detached job's id */
} soak;

/* ---- the hostile processes: each returns 0, or the step that went
 * other than the protocol says; *ops counts what it did ---- */

static bool running(const soak *s)
{
	return it_now_us() < s->until_us;
}

/* Connects to ipc:// (as the hostile uid) or tcp:// by turns. */
static int connect_any(const soak *s, unsigned long i)
{
	return rc_connect(i % 2 ? s->d->tcp : s->d->ipc, NULL);
}

/* Connections refused at once (EBUSY, id 0: a cap was reached), in
 * this process. */
static unsigned long refused;

/* Reads one frame on fd: an ERROR with code want, or the refusal of
 * the connection (then *was_refused). */
static bool got_error(int fd, uint32_t want, bool *was_refused)
{
	char msg[97];
	rc_frame f;
	uint32_t code;
	bool ok;

	*was_refused = false;
	if (rc_read_frame(fd, &f, WAIT_MS) != 0)
		return false;
	code = rc_error(&f, msg);
	*was_refused = f.type == RC_ERROR_T && code == W_EBUSY && f.id == 0;
	refused += *was_refused;
	ok = f.type == RC_ERROR_T && (code == want || *was_refused);
	if (!ok)
		fprintf(stderr, "soak: type %u, code %u, not ERROR %u\n",
			f.type, code, want);
	rc_frame_free(&f);
	return ok;
}

/* A connection to url that gemmd admitted, retried while it is refused
 * for a cap; -1 when there is none before the end. */
static int connect_admitted(const soak *s, const char *url)
{
	int fd = -1;

	while (running(s) && (fd = rc_admitted(url, NULL, WAIT_MS)) == -2) {
		refused++;
		usleep(10000);
	}
	return fd;
}

/* One small fp64 job, answered right, on fd. */
static bool one_job(int fd, unsigned seed)
{
	double *a, *b;
	uint8_t *req;
	size_t len;
	rc_frame f;
	rc_reply r;
	rc_job j;
	bool ok = false;

	rc_job_fp64(&j, 8, 9, 10, seed, &a, &b);
	req = rc_gemm(seed, 1, 0, 0, &j, 1, &len);
	if (req != NULL && rc_write(fd, req, len) == 0 &&
	    rc_read_frame(fd, &f, WAIT_MS) == 0) {
		ok = rc_reply_of(&f, &r) == 0 && r.status == 0 &&
		     rc_check_fp64(&j, r.result);
		rc_frame_free(&f);
	}
	free(req);
	free(a);
	free(b);
	return ok;
}

/* Frames that break the protocol: a bad magic and a length over the
 * limit (answered, then the connection closes); garbage, then gone; a
 * count over max_jobs_per_request (answered, and the connection serves
 * the next request). */
static int malformed(const soak *s, unsigned long *ops)
{
	uint8_t hdr[RC_HDR], junk[200];
	unsigned seed = 1;

	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int fd = connect_any(s, i);
		uint8_t *req;
		size_t len;
		rc_job j;
		double *a, *b;
		bool no;

		if (fd < 0)
			return 1;
		switch (i % 4) {
		case 0:
			rc_put_hdr(hdr, RC_GEMM, i, 1, 64);
			hdr[0] ^= 0xff;
			if (rc_write(fd, hdr, sizeof(hdr)) != 0 ||
			    !got_error(fd, W_EMAGIC, &no) ||
			    (i % 32 == 0 && !rc_closed(fd, WAIT_MS)))
				return 2;
			break;
		case 1:
			rc_put_hdr(hdr, RC_GEMM, i, 1, 1ull << 40);
			if (rc_write(fd, hdr, sizeof(hdr)) != 0 ||
			    !got_error(fd, W_ETOOBIG, &no) ||
			    (i % 32 == 1 && !rc_closed(fd, WAIT_MS)))
				return 3;
			break;
		case 2:
			for (size_t k = 0; k < sizeof(junk); k++)
				junk[k] = (uint8_t)rand_r(&seed);
			rc_write(fd, junk, 1 + (size_t)rand_r(&seed) % 200);
			break;
		default:
			rc_job_fp64(&j, 4, 4, 4, (unsigned)i, &a, &b);
			req = rc_gemm(i, 1, 0, 0, &j, 1, &len);
			free(a);
			free(b);
			if (req == NULL)
				return 4;
			req[16] = MAX_JOBS + 1; /* the header's count */
			/* It may be refused before it is all sent. */
			rc_write(fd, req, len);
			if (!got_error(fd, W_ETOOMANY, &no) ||
			    (!no && !one_job(fd, (unsigned)i))) {
				free(req);
				return 5;
			}
			free(req);
		}
		close(fd);
		usleep(PAUSE_US);
	}
	return 0;
}

/* Connections opened and closed at once, some after half a header. */
static int storms(const soak *s, unsigned long *ops)
{
	static const uint8_t half[16] = {0x47, 0x45, 0x4d, 0x4d, 2};

	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int fd = connect_any(s, i);

		if (fd < 0)
			return 1;
		if (i % 3 == 0)
			rc_write(fd, half, sizeof(half));
		close(fd);
		usleep(PAUSE_US / 4);
	}
	return 0;
}

/* Connections that send requests, results of 32 KiB each, as long as
 * the socket takes them and never read: held until gemmd gives up on
 * them (send_timeout_ms) or a second has passed. */
static int non_readers(const soak *s, unsigned long *ops)
{
	double *a, *b;
	uint8_t *req;
	size_t len;
	rc_job j;

	rc_job_fp64(&j, 64, 64, 64, 3, &a, &b);
	if ((req = rc_gemm(1, 1, 0, 0, &j, 1, &len)) == NULL)
		return 1;
	for (unsigned long i = 0; running(s); i++) {
		int fd = connect_any(s, i);
		double t0 = it_now_us();

		if (fd < 0)
			return 2;
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		/* Whole requests only: a frame cut short would be a stall,
		 * another test's matter. */
		for (int k = 0; k < 256 && running(s); k++) {
			size_t off = 0;

			while (off < len && it_now_us() < t0 + 1e6) {
				ssize_t n = send(fd, req + off, len - off,
						 MSG_NOSIGNAL);

				if (n > 0)
					off += (size_t)n;
				else if (n < 0 && errno == EAGAIN)
					usleep(1000);
				else
					break;
			}
			if (off < len)
				break;
			(*ops)++;
		}
		while (running(s) && it_now_us() < t0 + 1e6)
			usleep(10000);
		close(fd);
	}
	free(req);
	free(a);
	free(b);
	return 0;
}

/* Control bodies over max_ctrl_bytes (refused, then closed) and at it,
 * full of garbage (refused; the connection serves on). */
static int big_ctrl(const soak *s, unsigned long *ops)
{
	static char body[MAX_CTRL];
	uint8_t hdr[RC_HDR];

	memset(body, 'x', sizeof(body));
	body[0] = '{';
	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int fd = connect_any(s, i);
		char *doc = NULL, msg[97];
		rc_frame f;
		bool no;

		if (fd < 0)
			return 1;
		if (i % 2) {
			rc_put_hdr(hdr, RC_CTRL, i, 0, (uint64_t)MAX_CTRL + 1);
			if (rc_write(fd, hdr, sizeof(hdr)) != 0 ||
			    !got_error(fd, W_ETOOBIG, &no) ||
			    (i % 16 == 1 && !rc_closed(fd, WAIT_MS)))
				return 2;
		} else {
			rc_put_hdr(hdr, RC_CTRL, i, 0, MAX_CTRL);
			rc_write(fd, hdr, sizeof(hdr));
			rc_write(fd, body, sizeof(body));
			if (rc_read_frame(fd, &f, WAIT_MS) != 0)
				return 3;
			if (f.type == RC_ERROR_T && f.id == 0 &&
			    rc_error(&f, msg) == W_EBUSY) {
				refused++;
				rc_frame_free(&f);
				close(fd);
				continue;
			}
			/* Refused as a CTRL_REPLY that says why, or an
			 * ERROR; then a ping is answered. */
			if (f.type != RC_ERROR_T &&
			    (f.type != RC_CTRL_REPLY ||
			     strstr((char *)f.body, "\"ok\":false") == NULL)) {
				rc_frame_free(&f);
				return 4;
			}
			rc_frame_free(&f);
			if (rc_ctrl(fd, i + 1, "{\"op\":\"ping\"}", &doc,
				    WAIT_MS) != 0)
				return 5;
			free(doc);
		}
		close(fd);
		usleep(PAUSE_US);
	}
	return 0;
}

/* status, wait and cancel of id on fd, each answered as an id that
 * names nothing is; false otherwise. */
static bool unknown(int fd, uint64_t id, uint64_t *req)
{
	static const char *const ops[] = {"status", "wait", "cancel"};
	char json[128], want[160], *doc;

	snprintf(want, sizeof(want),
		 "{\"ok\":false,\"code\":27,\"error\":\"ENOTFOUND\","
		 "\"message\":\"no detached job %" PRIu64 "\"}",
		 id);
	for (int i = 0; i < 3; i++) {
		bool same;

		snprintf(json, sizeof(json),
			 "{\"op\":\"%s\",\"job\":%" PRIu64 "%s}", ops[i], id,
			 i == 1 ? ",\"timeout_ms\":0" : "");
		if (rc_ctrl(fd, ++*req, json, &doc, WAIT_MS) != 0)
			return false;
		same = strcmp(doc, want) == 0;
		if (!same)
			fprintf(stderr, "soak: %s of %" PRIu64 ": %s\n", ops[i],
				id, doc);
		free(doc);
		if (!same)
			return false;
	}
	return true;
}

/* Another principal's job id, those around it and random ones, from
 * tcp:// (anonymous) and, as nobody, from ipc://: never known. */
static int probes(const soak *s, unsigned long *ops)
{
	int fd[2] = {connect_admitted(s, s->d->tcp),
		     s->as_nobody ? connect_admitted(s, s->d->ipc) : -1};
	unsigned seed = 7;
	uint64_t req = 0;

	if (fd[0] < 0 || (s->as_nobody && fd[1] < 0))
		return 1;
	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		int64_t k = (int64_t)(i % 129) - 64;
		uint64_t id = i % 5 == 4 ? ((uint64_t)rand_r(&seed) << 31) ^
					       (uint64_t)rand_r(&seed)
					 : s->owned + (uint64_t)k;
		int c = fd[1] >= 0 && i % 2 ? fd[1] : fd[0];

		if (!unknown(c, id, &req))
			return 2;
		usleep(PAUSE_US);
	}
	close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	return 0;
}

/* drain and resume from a uid not in admin_uids: refused, naming the
 * key. */
static int admin(const soak *s, unsigned long *ops)
{
	int fd = connect_admitted(s, s->d->ipc);
	uint64_t req = 0;

	if (fd < 0)
		return 1;
	for (unsigned long i = 0; running(s); i++, (*ops)++) {
		char json[64], *doc;
		bool denied;

		snprintf(json, sizeof(json), "{\"op\":\"%s\"}",
			 i % 2 ? "resume" : "drain");
		if (rc_ctrl(fd, ++req, json, &doc, WAIT_MS) != 0)
			return 2;
		denied = strstr(doc, "\"error\":\"EACCES\"") != NULL &&
			 strstr(doc, "admin_uids") != NULL;
		if (!denied)
			fprintf(stderr, "soak: %s: %s\n", json, doc);
		free(doc);
		if (!denied)
			return 3;
		usleep(PAUSE_US);
	}
	close(fd);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(const soak *s, unsigned long *ops);
} hostile[] = {
    {"malformed frames", malformed},
    {"connect/close storms", storms},
    {"requests never read", non_readers},
    {"control bodies at and over the cap", big_ctrl},
    {"id probes", probes},
    {"admin attempts", admin},
};

#define NHOSTILE (sizeof(hostile) / sizeof(hostile[0]))

/* In a child: becomes nobody when asked, runs hostile[i], writes its
 * count to out and exits with its status. */
static void hostile_child(const soak *s, size_t i, int out)
{
	unsigned long ops = 0;
	int rv;

	if (s->as_nobody && (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
			     setuid(NOBODY) != 0 || getuid() != NOBODY))
		_exit(100);
	rv = hostile[i].run(s, &ops);
	if (write(out, &ops, sizeof(ops)) != (ssize_t)sizeof(ops) ||
	    write(out, &refused, sizeof(refused)) != (ssize_t)sizeof(refused))
		rv = 101;
	_exit(rv);
}

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
	assert_int_equal(it_stop(&d), 0);
	it_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_soak),
	};

	return IT_RUN(tests);
}
