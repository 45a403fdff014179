/*
 * test_hostile.c - known-bad traffic through a real gemmd, in raw frames
 * (gm_rawc.h) written from PROTOCOL.md alone: every refusal of its
 * validation tables (§8) comes back over the socket with its code and
 * the request's id, on the connection it came on when the frame could
 * be read past, and closing the connection when it could not (a bad
 * header, a length over the limit). Refusals that depend on the daemon's
 * state, lying lengths, clients going away and stalled connections are
 * in test_hostile_conn.c.
 */
#include "hostile_fx.h"

/* ---- malformed frames, PROTOCOL.md §8 ---- */

struct patch {
	size_t off;
	int width; /* bytes, little-endian; 0 ends the list */
	uint64_t val;
};

/* want: the ERROR's code; OK: a GEMM_REPLY whose job succeeded. fatal:
 * the daemon closes the connection after its ERROR. */
struct bad_case {
	const char *name;
	int want, fatal;
	long delta;	   /* body bytes added (zeros) or, negative, cut */
	uint64_t length;   /* when nonzero: the header's length, and
			      nothing of the body is sent */
	struct patch p[4]; /* applied before the length changes */
};

#define H(x) (x)
#define B(x) (RC_HDR + (x))
#define J(x) (RC_HDR + RC_BATCH + (x))
/* clang-format off */
#define JM(v) {J(8), 4, (v)}
#define JN(v) {J(12), 4, (v)}
#define JK(v) {J(16), 4, (v)}
/* clang-format on */
#define F64_NAN	   0x7ff8000000000000u
#define F64_NEGINF 0xfff0000000000000u
#define BODY	   (RC_BATCH + RC_JOB + 104) /* body bytes of the base */

/*
 * Against one fp32 2x3x4 job with C (payload 32 + 48 + 24 = 104 bytes,
 * id 77) and a daemon run with max_jobs_per_request=4, max_dim=64,
 * max_message_bytes=4K (so also 4 KiB a job) and max_ctrl_bytes=1K. The
 * header's length is the body's, unless the case says otherwise.
 */
static const struct bad_case bad_cases[] = {
    /* Steps 2-7: the frame cannot be read past. */
    {"bad magic", EMAGIC, 1, 0, 0, {{H(0), 4, 0x4d4d4548}}},
    {"big-endian magic", EMAGIC, 1, 0, 0, {{H(0), 4, 0x47454d4d}}},
    {"version 0", EVERSION, 1, 0, 0, {{H(4), 2, 0}}},
    {"version 1", EVERSION, 1, 0, 0, {{H(4), 2, 1}}},
    {"version 3", EVERSION, 1, 0, 0, {{H(4), 2, 3}}},
    {"magic beats version", EMAGIC, 1, 0, 0, {{H(0), 1, 0}, {H(4), 2, 9}}},
    {"type 0", EMSGTYPE, 1, 0, 0, {{H(6), 2, 0}}},
    {"type 6", EMSGTYPE, 1, 0, 0, {{H(6), 2, 6}}},
    {"a GEMM_REPLY", EMSGTYPE, 1, 0, 0, {{H(6), 2, RC_GEMM_REPLY}}},
    {"a CTRL_REPLY", EMSGTYPE, 1, 0, 0, {{H(6), 2, RC_CTRL_REPLY}}},
    {"an ERROR", EMSGTYPE, 1, 0, 0, {{H(6), 2, RC_ERROR_T}}},
    {"header flags", EFIELD, 1, 0, 0, {{H(20), 4, 0x80000000u}}},
    {"over max_message_bytes", ETOOBIG, 1, 0, 4097, {{0}}},
    {"length 2^64-1", ETOOBIG, 1, 0, UINT64_MAX, {{0}}},
    {"over max_message_bytes beats count",
     ETOOBIG,
     1,
     0,
     4097,
     {{H(16), 4, 0}}},
    {"CTRL over max_ctrl_bytes",
     ETOOBIG,
     1,
     0,
     1025,
     {{H(6), 2, RC_CTRL}, {H(16), 4, 0}}},
    /* Steps 7-10: the header's counts. */
    {"CTRL with a count", EFIELD, 0, 0, 0, {{H(6), 2, RC_CTRL}}},
    {"count 0", EFIELD, 0, 0, 0, {{H(16), 4, 0}}},
    {"count over max_jobs", ETOOMANY, 0, 0, 0, {{H(16), 4, 5}}},
    {"count over the ceiling", ETOOMANY, 0, 0, 0, {{H(16), 4, UINT32_MAX}}},
    {"count lies: no room for the head", ETRUNC, 0, 0, 0, {{H(16), 4, 4}}},
    {"job header cut short", ETRUNC, 0, -(BODY - RC_BATCH - 40), 0, {{0}}},
    /* Steps 11-13: the batch and job headers. */
    {"priority 4", EFIELD, 0, 0, 0, {{B(0), 1, 4}}},
    {"batch reserved byte", EFIELD, 0, 0, 0, {{B(3), 1, 1}}},
    {"batch flag bit 1", EFIELD, 0, 0, 0, {{B(8), 4, 2}}},
    {"batch reserved word", EFIELD, 0, 0, 0, {{B(12), 4, 1}}},
    {"dtype 0", EDTYPE, 0, 0, 0, {{J(0), 1, 0}}},
    {"dtype 6", EDTYPE, 0, 0, 0, {{J(0), 1, 6}}},
    {"trans_a 2", EFIELD, 0, 0, 0, {{J(1), 1, 2}}},
    {"trans_b 255", EFIELD, 0, 0, 0, {{J(2), 1, 255}}},
    {"layout 2", EFIELD, 0, 0, 0, {{J(3), 1, 2}}},
    {"kernel 3", EFIELD, 0, 0, 0, {{J(4), 1, 3}}},
    {"unknown job flag", EFIELD, 0, 0, 0, {{J(5), 1, 0x81}}},
    {"job reserved 6..7", EFIELD, 0, 0, 0, {{J(6), 2, 1}}},
    {"job reserved 20..23", EFIELD, 0, 0, 0, {{J(20), 4, 1}}},
    {"alpha NaN", EFIELD, 0, 0, 0, {{J(24), 8, F64_NAN}}},
    {"beta -inf", EFIELD, 0, 0, 0, {{J(32), 8, F64_NEGINF}}},
    {"m 0", EDIM, 0, 0, 0, {JM(0)}},
    {"n 0", EDIM, 0, 0, 0, {JN(0)}},
    {"k 0", EDIM, 0, 0, 0, {JK(0)}},
    {"m over max_dim", EDIM, 0, 0, 0, {JM(65)}},
    {"A bytes overflow", EOVERFLOW, 0, 0, 0, {JM(UINT32_MAX), JK(UINT32_MAX)}},
    {"A+B+C overflows",
     EOVERFLOW,
     0,
     0,
     0,
     {JM(1u << 30), JN(1u << 30), JK(1u << 31)}},
    /* Step 14: descriptors the length has no room for. */
    {"regions flag, no descriptor", ETRUNC, 0, -104, 0, {{J(5), 1, 3}}},
    /* Steps 15-18: descriptors, payload sizes, the frame's length. */
    {"over max_job_bytes", ETOOBIG, 0, 0, 0, {JM(64), JN(64), JK(64)}},
    {"payload_bytes short", EFIELD, 0, 0, 0, {{J(40), 8, 103}}},
    {"payload_bytes huge", EFIELD, 0, 0, 0, {{J(40), 8, UINT64_MAX}}},
    {"C sent, flag clear", EFIELD, 0, 0, 0, {{J(5), 1, 0}}},
    {"payload cut short", ETRUNC, 0, -1, 0, {{0}}},
    {"one trailing byte", ETRAILING, 0, 1, 0, {{0}}},
    {"two requests in one", ETRAILING, 0, BODY + RC_HDR, 0, {{0}}},
    /* What runs. */
    {"valid: runs", OK, 0, 0, 0, {{0}}},
    {"deadline: accepted", OK, 0, 0, 0, {{B(4), 4, UINT32_MAX}}},
};

#define NCASES (sizeof(bad_cases) / sizeof(bad_cases[0]))

/* What the message of a refusal for a limit says: the limit by its
 * configuration key and value. */
static const struct {
	const char *name, *says;
} limit_texts[] = {
    {"over max_message_bytes",
     "frame of 4.001 KiB, more than max_message_bytes=4 KiB"},
    {"CTRL over max_ctrl_bytes",
     "CTRL body of 1.001 KiB, more than max_ctrl_bytes=1 KiB"},
    {"count over max_jobs", "count=5 jobs, more than max_jobs_per_request=4"},
    {"m over max_dim", "m=65, more than max_dim=64"},
    {"over max_job_bytes", "more than max_message_bytes=4 KiB"},
};

/* The text case c's message must have, or NULL. */
static const char *limit_text(const struct bad_case *c)
{
	for (size_t i = 0; i < sizeof(limit_texts) / sizeof(limit_texts[0]);
	     i++)
		if (strcmp(limit_texts[i].name, c->name) == 0)
			return limit_texts[i].says;
	return NULL;
}

/* The base request with case c applied, into p; returns the bytes to
 * send. */
static size_t bad_frame(uint8_t *p, const struct bad_case *c)
{
	static const float zeros[26];
	rc_job j = {.dtype = 2,
		    .flags = 1,
		    .m = 2,
		    .n = 3,
		    .k = 4,
		    .alpha = 1.0,
		    .a = zeros,
		    .b = zeros,
		    .c = zeros};
	uint8_t *req;
	size_t len;

	assert_non_null(req = rc_gemm(77, 2, 0, 0, &j, 1, &len));
	assert_int_equal(len, RC_HDR + BODY);
	memset(p, 0, 1024);
	memcpy(p, req, len);
	free(req);
	for (int i = 0; i < 4 && c->p[i].width != 0; i++)
		for (int k = 0; k < c->p[i].width; k++)
			p[c->p[i].off + (size_t)k] =
			    (uint8_t)(c->p[i].val >> (8 * k));
	if (c->length != 0) {
		for (int k = 0; k < 8; k++)
			p[24 + k] = (uint8_t)(c->length >> (8 * k));
		return RC_HDR;
	}
	len = (size_t)((long)len + c->delta);
	for (int k = 0; k < 8; k++)
		p[24 + k] = (uint8_t)((uint64_t)(len - RC_HDR) >> (8 * k));
	return len;
}

/* Checks the answer to case c on fd: 1 and a message when it is not the
 * one the specification gives. */
static int check_answer(int fd, const struct bad_case *c)
{
	char msg[97] = "";
	uint32_t status = 0;
	rc_frame f;
	rc_reply r;
	int rv = rc_read_frame(fd, &f, WAIT_MS);

	if (rv != 0) {
		print_error("case \"%s\": no answer (%d)\n", c->name, rv);
		return 1;
	}
	if (f.type == RC_ERROR_T)
		status = rc_error(&f, msg);
	if (f.id != 77 ||
	    (c->want == OK && (f.type != RC_GEMM_REPLY ||
			       rc_reply_of(&f, &r) != 0 || r.status != 0)) ||
	    (c->want != OK && (f.type != RC_ERROR_T || (int)status != c->want ||
			       msg[0] == '\0'))) {
		print_error("case \"%s\": want %d, got type %u status %u id "
			    "%llu: %s\n",
			    c->name, c->want, f.type, status,
			    (unsigned long long)f.id, msg);
		rc_frame_free(&f);
		return 1;
	}
	rc_frame_free(&f);
	if (limit_text(c) != NULL && strstr(msg, limit_text(c)) == NULL) {
		print_error("case \"%s\": \"%s\" does not say \"%s\"\n",
			    c->name, msg, limit_text(c));
		return 1;
	}
	if (c->fatal && !rc_closed(fd, 2000)) {
		print_error("case \"%s\": connection not closed\n", c->name);
		return 1;
	}
	return 0;
}

static int send_cases(const char *url)
{
	static uint8_t buf[1024];
	int failed = 0, fd = -1;

	for (size_t i = 0; i < NCASES; i++) {
		const struct bad_case *c = &bad_cases[i];
		size_t len = bad_frame(buf, c);

		if (fd < 0)
			assert_true((fd = rc_connect(url, NULL)) >= 0);
		assert_int_equal(rc_write(fd, buf, len), 0);
		failed += check_answer(fd, c);
		/* Only a frame that cannot be read past costs its client
		 * the connection. */
		if (c->fatal) {
			close(fd);
			fd = -1;
		}
	}
	close(fd);
	return failed;
}

static void test_malformed(void **state)
{
	const char *args[] = {
	    "--set", "max_jobs_per_request=4", "--set", "max_dim=64",
	    "--set", "max_message_bytes=4K",   "--set", "max_ctrl_bytes=1K",
	    NULL};
	unsigned fatal = 0;
	it_daemon d;

	for (size_t i = 0; i < NCASES; i++)
		fatal += bad_cases[i].fatal;
	assert_int_equal(it_launch(&d, args), 0);
	assert_int_equal(send_cases(d.ipc) + send_cases(d.tcp), 0);
	/* The valid cases ran, the rest were refused whole. */
	assert_int_equal(it_rstat(&d, "jobs.ok"), 4);
	assert_int_equal(it_rstat(&d, "requests.refused"), 2 * (NCASES - 2));
	assert_int_equal(it_rstat(&d, "connections.dropped_by.protocol"),
			 2 * fatal);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_malformed),
	};

	return IT_RUN(tests);
}
