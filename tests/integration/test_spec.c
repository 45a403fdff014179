/*
 * test_spec.c - the points where a client written from proto/PROTOCOL.md
 * alone found the daemon and the text apart, each pinned through a real
 * gemmd in raw bytes (gm_rawc.h, and this file's own region records and
 * version-1 messages) as the text now says: a member twice, or over 256,
 * in a nested object of a CTRL body (7.3); a bad header answered from
 * its first bytes (2.1); a failed job's reply record, 176 bytes, and the
 * queue_us of a job whose deadline passed in the queue (5.1, 7.1, 11);
 * the region socket's RELEASE checks (14.1); a version-1 client's
 * exchange (2.4); and listen URLs refused at start and on reload.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "it_case.h"

#define WAIT_MS 10000

/* Error codes of PROTOCOL.md §9. */
enum {
	OK = 0,
	EINVAL = 1,
	EMAGIC = 2,
	EVERSION = 3,
	EMSGTYPE = 4,
	EFIELD = 12,
	ETIMEDOUT = 18,
	EJSON = 25,
	ENOTFOUND = 27,
	EACCES = 31,
};

/* ---- 7.3: every object of a CTRL body, however deep ---- */

static void test_nested_members(void **state)
{
	static const struct {
		const char *body, *error;
	} rows[] = {
	    {"{\"op\":\"ping\",\"x\":{\"a\":1,\"a\":2}}", "EJSON"},
	    {"{\"op\":\"ping\",\"x\":[{\"a\":{\"b\":1,\"\\u0062\":2}}]}",
	     "EJSON"},
	    {"{\"op\":\"ping\",\"x\":[{\"a\":1},{\"a\":2}]}", "EFIELD"},
	    {"{\"op\":\"ping\",\"x\":{\"a\":{\"a\":1}}}", "EFIELD"},
	};
	static char big[8192];
	char *doc;
	it_daemon d;
	int fd, n;

	assert_int_equal(it_launch(&d, NULL), 0);
	assert_true((fd = rc_connect(d.tcp, NULL)) >= 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		char want[64];

		assert_int_equal(
		    rc_ctrl(fd, 10 + i, rows[i].body, &doc, WAIT_MS), 0);
		snprintf(want, sizeof(want), "\"error\":\"%s\"", rows[i].error);
		if (strstr(doc, want) == NULL)
			fail_msg("%s: got %s, want %s", rows[i].body, doc,
				 want);
		free(doc);
	}
	/* 257 members in an object inside the body: EJSON, 256: one the
	 * op does not take. */
	for (int members = 256; members <= 257; members++) {
		n = sprintf(big, "{\"op\":\"ping\",\"x\":{");
		for (int i = 0; i < members; i++)
			n += sprintf(big + n, "%s\"m%d\":0", i ? "," : "", i);
		sprintf(big + n, "}}");
		assert_int_equal(rc_ctrl(fd, 20, big, &doc, WAIT_MS), 0);
		assert_non_null(strstr(doc, members == 256
						? "\"error\":\"EFIELD\""
						: "\"error\":\"EJSON\""));
		free(doc);
	}
	close(fd);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- 2.1: a bad header is answered from the bytes that show it ---- */

static void test_header_at_once(void **state)
{
	static const struct {
		const char *name;
		const char *bytes;
		size_t len;
		uint32_t code;
		uint64_t id; /* echoed from 16 bytes on */
	} rows[] = {
	    {"one byte that starts no magic", "X", 1, EMAGIC, 0},
	    {"an HTTP request's first line", "GET / HTTP/1.1\r\n", 16, EMAGIC,
	     0x0a0d312e312f5054ull},
	    {"the magic, then version 3", "GEMM\x03\x00", 6, EVERSION, 0},
	    {"the magic, version 2, type 9", "GEMM\x02\x00\x09\x00", 8,
	     EMSGTYPE, 0},
	};
	it_daemon d;

	assert_int_equal(it_launch(&d, NULL), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		char msg[97];
		rc_frame f;
		int fd;

		assert_true((fd = rc_connect(i % 2 ? d.ipc : d.tcp, NULL)) >=
			    0);
		assert_int_equal(rc_write(fd, rows[i].bytes, rows[i].len), 0);
		/* Well before handshake_timeout_ms (10 s), which is all the
		 * daemon waited for when it wanted 32 bytes first. */
		if (rc_read_frame(fd, &f, 3000) != 0)
			fail_msg("%s: no answer within 3 s", rows[i].name);
		assert_int_equal(f.type, RC_ERROR_T);
		assert_int_equal(rc_error(&f, msg), rows[i].code);
		if (f.id != rows[i].id)
			fail_msg("%s: id 0x%llx, want 0x%llx", rows[i].name,
				 (unsigned long long)f.id,
				 (unsigned long long)rows[i].id);
		assert_true(rc_closed(fd, 2000));
		rc_frame_free(&f);
		close(fd);
	}
	assert_int_equal(it_finish(&d), 0);
}

/* ---- 5.1, 7.1, 11: a job whose deadline passed in the queue ---- */

/* The daemon of the late job: one BLAS thread running each job whole
 * (pieces of cpu_piece_flops far over any job here), so that a job behind the
 * blocker waits for all of it. */
static const char *const late_args[] = {"--set", "cpu_threads=1", "--set",
					"cpu_piece_flops=1000000000000000",
					NULL};

/* m = n = k of the late job: over the 64^3 that OpenBLAS runs on one
 * thread, which the CPU engine runs beside the blocker instead of after
 * it. */
#define LATE 72

/* Sends a blocker (an fp64 1000^3 job that keeps the one-thread engine
 * busy) on fd as request 1, then one LATE^3 job with a deadline of 1 ms
 * as request 2, with batch flags bflags. */
static void send_late(int fd, uint32_t bflags, rc_job *blk, rc_job *late,
		      double **ops)
{
	uint8_t *req;
	size_t len;

	rc_job_fp64(blk, 1000, 1000, 1000, 1, &ops[0], &ops[1]);
	rc_job_fp64(late, LATE, LATE, LATE, 2, &ops[2], &ops[3]);
	assert_non_null(req = rc_gemm(1, 1, 0, 0, blk, 1, &len));
	assert_int_equal(rc_write(fd, req, len), 0);
	free(req);
	assert_non_null(req = rc_gemm(2, 1, 1, bflags, late, 1, &len));
	assert_int_equal(rc_write(fd, req, len), 0);
	free(req);
}

/* The failed job's record: status ETIMEDOUT, no result, queue_us the
 * wait until it failed (past its 1 ms), total_us at least that. */
static void check_late(const rc_frame *f)
{
	rc_reply r;

	assert_int_equal(f->type, RC_GEMM_REPLY);
	assert_int_equal(f->length, 176);
	assert_int_equal(rc_reply_of(f, &r), 0);
	assert_int_equal(r.status, ETIMEDOUT);
	assert_int_equal(r.result_bytes, 0);
	assert_int_equal(r.start_seq, 0);
	print_message("late job: queue_us %.1f, total_us %.1f\n", r.queue_us,
		      r.total_us);
	assert_true(r.queue_us >= 1000.0);
	assert_true(r.queue_us <= r.total_us);
	assert_true(r.h2d_us == 0 && r.kernel_us == 0 && r.d2h_us == 0);
}

static void test_late_job(void **state)
{
	double *ops[4];
	rc_job blk, late;
	rc_frame f;
	it_daemon d;
	int fd, seen = 0;

	assert_int_equal(it_launch(&d, late_args), 0);
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	send_late(fd, 0, &blk, &late, ops);
	while (seen != 3) {
		assert_int_equal(rc_read_frame(fd, &f, 60000), 0);
		assert_int_equal(f.type, RC_GEMM_REPLY);
		if (f.id == 2) {
			check_late(&f);
			assert_int_equal(seen & 1, 0); /* before the blocker */
		}
		seen |= f.id == 2 ? 2 : 1;
		rc_frame_free(&f);
	}
	close(fd);
	for (int i = 0; i < 4; i++)
		free(ops[i]);
	assert_int_equal(it_finish(&d), 0);
}

/* Detached, the same job's record is kept and a wait takes it: the
 * 176-byte record of 7.1. */
static void test_late_detached(void **state)
{
	char json[96], *ids;
	unsigned long long job;
	double *ops[4];
	rc_job blk, late;
	rc_frame f;
	it_daemon d;
	int fd;

	assert_int_equal(it_launch(&d, late_args), 0);
	assert_true((fd = rc_connect(d.ipc, NULL)) >= 0);
	send_late(fd, 1 /* DETACH */, &blk, &late, ops);
	/* Its ids come at once, before the blocker's reply. */
	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(f.type, RC_CTRL_REPLY);
	assert_int_equal(f.id, 2);
	assert_non_null(ids = strstr((char *)f.body, "\"jobs\":["));
	job = strtoull(ids + 8, NULL, 10);
	assert_true(job != 0);
	rc_frame_free(&f);
	snprintf(json, sizeof(json), "{\"op\":\"wait\",\"job\":%llu}", job);
	assert_int_equal(rc_send_ctrl(fd, 3, json), 0);
	for (int got = 0; got != 3;) {
		assert_int_equal(rc_read_frame(fd, &f, 60000), 0);
		if (f.id == 3) {
			assert_int_equal(f.count, 0);
			check_late(&f);
		}
		got |= f.id == 3 ? 2 : 1;
		rc_frame_free(&f);
	}
	close(fd);
	for (int i = 0; i < 4; i++)
		free(ops[i]);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- 14.1: the region socket's RELEASE ---- */

#define REC_REQ 32
#define REC_REP 128

static int region_dial(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return s;
}

struct rec_rep {
	uint16_t op;
	uint32_t status;
	uint64_t region, size;
	char message[97];
};

/* Sends a request record (op, size, region; with descriptor fd when it
 * is not -1) and reads the reply record. */
static struct rec_rep record(int s, uint16_t op, uint64_t size, uint64_t region,
			     int fd)
{
	uint8_t out[REC_REQ] = {0}, in[REC_REP + 1];
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {out, sizeof(out)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct rec_rep r;

	rc_put_le(out, 0x47524D47u, 4);
	rc_put_le(out + 4, 1, 2);
	rc_put_le(out + 6, op, 2);
	rc_put_le(out + 8, size, 8);
	rc_put_le(out + 16, region, 8);
	if (fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	assert_int_equal(sendmsg(s, &mh, 0), REC_REQ);
	assert_int_equal(recv(s, in, sizeof(in), 0), REC_REP);
	assert_int_equal(rc_get_le(in, 4), 0x47524D47u);
	assert_int_equal(rc_get_le(in + 12, 4), 0);
	r.op = (uint16_t)rc_get_le(in + 6, 2);
	r.status = (uint32_t)rc_get_le(in + 8, 4);
	r.region = rc_get_le(in + 16, 8);
	r.size = rc_get_le(in + 24, 8);
	memcpy(r.message, in + 32, 96);
	r.message[96] = '\0';
	return r;
}

/* The RELEASE table of 14.1, in its order: a bad record (4), a
 * descriptor with it (5, before the id is looked up), an id the daemon
 * does not hold (6), one registered on another connection (7); then
 * the release itself, which echoes id and size, and the id unknown
 * after it. */
static void test_release(void **state)
{
	char path[160], set[200];
	const char *args[] = {"--set", set, NULL};
	struct rec_rep r;
	uint64_t id;
	it_daemon d;
	int a, b, fd;

	assert_int_equal(it_setup(&d), 0);
	snprintf(path, sizeof(path), "%s/regions.sock", d.dir);
	snprintf(set, sizeof(set), "region_socket=%s", path);
	assert_int_equal(it_start(&d, args), 0);
	a = region_dial(path);
	b = region_dial(path);
	fd = memfd_create("spec", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 65536), 0);
	assert_int_equal(
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
	    0);
	r = record(a, 1, 65536, 0, fd);
	assert_int_equal(r.status, OK);
	id = r.region;
	assert_true(id != 0);

	r = record(a, 2, 8, id, -1);
	assert_int_equal(r.status, EFIELD);
	assert_int_equal(r.op, 2);
	assert_int_equal(r.region, 0);
	assert_int_equal(record(a, 2, 0, 0, -1).status, EFIELD);
	assert_int_equal(record(a, 2, 0, id ^ 1, fd).status, EINVAL);
	assert_int_equal(record(a, 2, 0, id, fd).status, EINVAL);
	assert_int_equal(record(a, 2, 0, id ^ 1, -1).status, ENOTFOUND);
	r = record(b, 2, 0, id, -1);
	assert_int_equal(r.status, EACCES);
	assert_non_null(strstr(r.message, "another connection"));
	r = record(a, 2, 0, id, -1);
	assert_int_equal(r.status, OK);
	assert_int_equal(r.op, 2);
	assert_int_equal(r.region, id);
	assert_int_equal(r.size, 65536);
	assert_int_equal(r.message[0], '\0');
	assert_int_equal(record(a, 2, 0, id, -1).status, ENOTFOUND);
	assert_int_equal(record(b, 2, 0, id, -1).status, ENOTFOUND);
	close(fd);
	close(a);
	close(b);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- 2.4: a version-1 client ---- */

/* Over ipc:// (a type byte before the length) or tcp://: the handshake,
 * one message of body bytes (REQ id, then a v1 header with id 77 cut to
 * have bytes in all), and the answer as 2.4 lays it out. */
static void v1_exchange(const char *url, int ipc, size_t have, uint64_t want_id)
{
	static const uint8_t hello[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
	static const uint8_t rep[8] = {0, 'S', 'P', 0, 0, 0x31, 0, 0};
	uint8_t msg[9 + 4 + 40] = {0}, in[9 + 4 + 24 + 104], got[8];
	size_t fs = ipc ? 9 : 8, n = 0;
	char text[97];
	int fd;

	assert_true((fd = rc_connect(url, NULL)) >= 0);
	assert_int_equal(rc_write(fd, hello, sizeof(hello)), 0);
	assert_int_equal(rc_read(fd, got, sizeof(got), 3000), 0);
	assert_memory_equal(got, rep, sizeof(rep));
	if (ipc)
		msg[n++] = 1;
	for (int i = 7; i >= 0; i--)
		msg[n++] = (uint8_t)((uint64_t)have >> (8 * i));
	memcpy(msg + n, "\x80\x00\x00\x07", 4); /* the REQ id */
	rc_put_le(msg + n + 4, 0x4D4D4547u, 4);
	rc_put_le(msg + n + 8, 1, 2);
	rc_put_le(msg + n + 10, 1, 2);
	rc_put_le(msg + n + 12, 77, 8);
	assert_int_equal(rc_write(fd, msg, n + have), 0);
	assert_int_equal(rc_read(fd, in, fs + 4 + 24 + 104, 3000), 0);
	if (ipc)
		assert_int_equal(in[0], 1);
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(in[fs - 8 + i], 0);
	assert_int_equal(in[fs - 1], 132);
	assert_memory_equal(in + fs, "\x80\x00\x00\x07", 4);
	assert_int_equal(rc_get_le(in + fs + 4, 4), 0x4D4D4547u);
	assert_int_equal(rc_get_le(in + fs + 8, 2), 1);
	assert_int_equal(rc_get_le(in + fs + 10, 2), 5);
	assert_int_equal(rc_get_le(in + fs + 12, 8), want_id);
	assert_int_equal(rc_get_le(in + fs + 20, 4), 104);
	assert_int_equal(rc_get_le(in + fs + 24, 4), 0);
	assert_int_equal(rc_get_le(in + fs + 28, 4), EVERSION);
	memcpy(text, in + fs + 36, 96);
	text[96] = '\0';
	assert_non_null(strstr(text, "protocol v2"));
	assert_true(rc_closed(fd, 3000));
	close(fd);
}

static void test_v1_client(void **state)
{
	it_daemon d;

	assert_int_equal(it_launch(&d, NULL), 0);
	v1_exchange(d.tcp, 0, 40, 77);
	v1_exchange(d.ipc, 1, 40, 77);
	/* A body that stops inside the v1 header: id 0. */
	v1_exchange(d.tcp, 0, 10, 0);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- listen URLs, at start and on reload ---- */

static void test_listen_urls(void **state)
{
	static const char *const bad[] = {
	    "tcp://127.0.0.1:99999", "tcp://127.0.0.1:-1", "tcp://127.0.0.1",
	    "tls+tcp://127.0.0.1:0"};
	char err[2048], want[256], path[160], *text;
	const char *args[] = {"-c", path, NULL};
	it_daemon d;
	FILE *f;
	int fd;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		const char *argv[] = {"--listen", bad[i], NULL};

		assert_int_equal(it_run_gemmd(argv, err, sizeof(err)), 1);
		snprintf(want, sizeof(want),
			 "config key \"listen\": \"%s\" is not", bad[i]);
		if (strstr(err, want) == NULL)
			fail_msg("%s: %s", bad[i], err);
	}
	/* A reload that brings one is refused whole, the daemon serving
	 * on as it was. */
	assert_int_equal(it_setup(&d), 0);
	snprintf(path, sizeof(path), "%s/gemmd.json", d.dir);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "{\"log_level\": \"info\"}\n");
	fclose(f);
	assert_int_equal(it_start(&d, args), 0);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "{\"listen\": [\"tcp://127.0.0.1:99999\"]}\n");
	fclose(f);
	assert_int_equal(kill(d.pid, SIGHUP), 0);
	for (int i = 0; i < 500 && !it_file_has(d.log, "not reloaded"); i++)
		usleep(10000);
	assert_true(it_file_has(d.log,
				"config key \"listen\": "
				"\"tcp://127.0.0.1:99999\" is not tcp://"));
	assert_true((fd = rc_connect(d.tcp, NULL)) >= 0);
	assert_int_equal(rc_ctrl(fd, 1, "{\"op\":\"ping\"}", &text, WAIT_MS),
			 0);
	assert_non_null(strstr(text, "\"ok\":true"));
	free(text);
	close(fd);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nested_members),
	    cmocka_unit_test(test_header_at_once),
	    cmocka_unit_test(test_late_job),
	    cmocka_unit_test(test_late_detached),
	    cmocka_unit_test(test_release),
	    cmocka_unit_test(test_v1_client),
	    cmocka_unit_test(test_listen_urls),
	};

	return IT_RUN(tests);
}
