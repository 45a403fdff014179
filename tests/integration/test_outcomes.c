/*
 * test_outcomes.c - every way a job can end, through every kind of
 * request, against a real gemmd on the CPU engine, through raw frames
 * (gm_rawc.h) only: the client library refuses some of these requests
 * itself, and the daemon must answer them whoever sends them.
 *
 * A job ends ok; fails at once, before the engine runs it (a dtype the
 * engine cannot run, alone or beside a job that runs); or its request is
 * refused whole before any of it runs (a field the wire checks refuse,
 * a region, the queue full, no room for detached results, the pool too
 * small, the daemon draining); or it is canceled, or its deadline passes
 * in the queue. A request is plain or detached, sent to an idle engine
 * or queued behind a "blocker" (one job sized, by a calibration run, to
 * keep one BLAS thread busy for about BLOCK_S seconds), then left alone,
 * canceled, or given a deadline that passes while it waits. The daemon
 * runs each job whole (pieces of cpu_piece_flops far over any job here), and a
 * small job is 72^3, over the 64^3 that OpenBLAS runs on one thread and the CPU
 * engine runs beside a piece: so a job behind the blocker really waits
 * for all of it. The table at the bottom says what each job of each
 * case must end with, and for each case the test checks that:
 *
 *  - the request gets exactly one answer: one GEMM_REPLY per job (each
 *    index once) or one ERROR; detached, one CTRL_REPLY with an id per
 *    job, or one ERROR; and nothing more comes on its connection;
 *  - a detached job's outcome is kept: a wait gets it once (a second
 *    wait finds it taken), and its status says the same;
 *  - the stats count each job once (ok, failed, or rejected with its
 *    request), and the daemon is back where it was: nothing queued,
 *    running, held in the pool or in pageable memory, no detached job
 *    pending, no request in flight but the stats request itself.
 *
 * The daemon must live through all of it and stop cleanly. No job can
 * fail inside the CPU engine from the wire (it checks nothing a request
 * can get wrong past the scheduler's checks), so an engine failure is
 * not among the outcomes here: such a job reaches the request layer
 * through the same callback, at the same moment, as a job that ran.
 *
 * A second test pipelines requests on many connections that close
 * without reading a reply: every request gemmd accepted is counted, its
 * jobs ok or failed, once the connections are gone. The last stops
 * gemmd while jobs are queued, detached ones among them: what comes
 * after is refused, what came before is answered.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest.h"

#define WAIT_MS	    20000 /* for answers that should never take it */
#define QUIET_MS    200	  /* nothing more comes on a connection within */
#define BLOCK_S	    0.5	  /* how long a blocker keeps the engine busy */
#define DEADLINE_MS 50	  /* passes while a job waits behind a blocker */
#define QUEUE_DEPTH 3	  /* a request of 4 jobs never fits */
#define DETACH_MAX  (1u << 20)
#define SMALL	    72	 /* m = n = k of a small job (see above) */
#define WIDE	    400	 /* m = n of a job whose result passes DETACH_MAX */
#define HUGE	    4096 /* m = n = k of a job larger than the pool */

/* Error codes (PROTOCOL.md 9). */
enum {
	OK = 0,
	EUNSUPPORTED_ = 6,
	EDIM_ = 7,
	ETOOBIG_ = 13,
	EBUSY_ = 14,
	ETIMEDOUT_ = 18,
	ECANCELED_ = 26,
	ENOTFOUND_ = 27,
	EDRAINING_ = 30,
	ESHUTDOWN_ = 17,
};

/* An expectation that is an ERROR refusing the whole request, not a
 * job's status. */
#define REFUSED 0x1000

/* Kinds of request (columns of the table). */
enum kind {
	PLAIN,
	DETACHED,
	QUEUED,		  /* plain, behind a blocker */
	QUEUED_DETACHED,  /* detached, behind a blocker */
	CANCELED,	  /* detached, behind a blocker, canceled */
	DEADLINE,	  /* plain, behind a blocker, its deadline passes */
	DEADLINE_DETACHED /* the same, detached */
};
#define KINDS 7

static const char *const kind_names[KINDS] = {
    "plain",	"detached", "queued",		"queued-detached",
    "canceled", "deadline", "deadline-detached"};

static int is_detached(int k)
{
	return k == DETACHED || k == QUEUED_DETACHED || k == CANCELED ||
	       k == DEADLINE_DETACHED;
}

static int is_queued(int k)
{
	return k >= QUEUED;
}

/* Jobs a case's request is made of. */
enum shape {
	S_SMALL,  /* fp64 SMALL^3: runs */
	S_FP16,	  /* fp16 SMALL^3: the CPU engine cannot run it */
	S_DIM0,	  /* m = 0: refused by the wire checks */
	S_REGION, /* A in a region that does not exist */
	S_WIDE,	  /* fp64 WIDE x WIDE x 8: its result passes DETACH_MAX */
	S_HUGE,	  /* fp64 HUGE^3: larger than the pool, pageable off */
};

typedef struct outcome {
	const char *name;
	enum shape jobs[4];
	uint32_t njobs;
	int drain; /* sent while the daemon drains */
	int wire;  /* refused by the wire checks (PROTOCOL.md 8 steps
		      1-18): counted as a refused request, its jobs not
		      counted (a malformed frame's count is not trusted) */
	/* Per kind, per job: its status, or REFUSED | the ERROR's code
	 * that refused the whole request. */
	int expect[KINDS][2];
} outcome;

/* The daemon and the blocker sized for it. */
static struct {
	it_daemon d;
	uint32_t blocker_n;
	char pool_arg[64];
	uint64_t next_id;
} fx;

static double *zeros; /* every job's operands: WIDE^2 doubles */

/* ---- frames ---- */

static rc_job job_of(enum shape s)
{
	rc_job j = {.dtype = 1, .m = SMALL, .n = SMALL, .k = SMALL, .alpha = 1};

	switch (s) {
	case S_SMALL:
		break;
	case S_FP16:
		j.dtype = 4;
		break;
	case S_DIM0:
		j.m = 0;
		break;
	case S_REGION:
		j.flags = 2;
		j.refs[0] = 0x7fffffff; /* no such region */
		break;
	case S_WIDE:
		j.m = j.n = WIDE;
		j.k = 8;
		break;
	case S_HUGE:
		j.m = j.n = j.k = HUGE;
		break;
	}
	j.a = j.b = zeros;
	return j;
}

/* Sends a request of o's jobs on fd: detached or not, with deadline
 * dl_ms. A request larger than the pool is sent up to its payload
 * only: the daemon refuses it from its head. Returns its id. */
static uint64_t send_request(int fd, const outcome *o, int detached,
			     uint32_t dl_ms)
{
	rc_job j[4];
	uint64_t id = ++fx.next_id;
	size_t len, send;
	uint8_t *req;

	for (uint32_t i = 0; i < o->njobs; i++)
		j[i] = job_of(o->jobs[i]);
	if (o->jobs[0] == S_HUGE) /* no operands: the frame's calloc'd */
		j[0].a = j[0].b = NULL;
	assert_non_null(
	    req = rc_gemm(id, 1, dl_ms, detached ? 1 : 0, j, o->njobs, &len));
	send = o->jobs[0] == S_HUGE ? RC_HDR + RC_BATCH + RC_JOB : len;
	assert_int_equal(rc_write(fd, req, send), 0);
	free(req);
	return id;
}

/* The blocker: one fp64 job of fx.blocker_n^3 on a connection of its
 * own, running once this returns. */
static int send_blocker(void)
{
	uint32_t n = fx.blocker_n;
	rc_job j = {.dtype = 1, .m = n, .n = n, .k = n, .alpha = 1};
	size_t len;
	uint8_t *req;
	int fd;

	assert_true((fd = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_non_null(req = rc_gemm(1, 1, 0, 0, &j, 1, &len));
	assert_int_equal(rc_write(fd, req, len), 0);
	free(req);
	assert_int_equal(it_wait_stat(&fx.d, "jobs.inflight", 1, WAIT_MS), 1);
	return fd;
}

/* Reads the blocker's reply: it ran, and it ran long enough to have
 * held the jobs queued behind it for their deadlines. */
static void end_blocker(int fd)
{
	rc_reply r;
	rc_frame f;

	assert_int_equal(rc_read_frame(fd, &f, 120000), 0);
	assert_int_equal(rc_reply_of(&f, &r), 0);
	assert_int_equal(r.status, OK);
	assert_true(r.kernel_us > 2 * DEADLINE_MS * 1e3);
	rc_frame_free(&f);
	close(fd);
}

/* The JSON object of a CTRL_REPLY (cJSON_Delete it). */
static cJSON *json_of(const rc_frame *f)
{
	cJSON *doc;

	assert_int_equal(f->type, RC_CTRL_REPLY);
	doc = cJSON_ParseWithLength((const char *)f->body, f->length);
	if (doc == NULL)
		fail_msg("reply is not JSON: %.*s", (int)f->length, f->body);
	return doc;
}

/* A CTRL_REPLY's code: 0 when "ok" is true. */
static int code_of(const cJSON *doc)
{
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ok")))
		return OK;
	return (int)cJSON_GetNumberValue(
	    cJSON_GetObjectItemCaseSensitive(doc, "code"));
}

/* Sends CTRL json on fd and reads its answer into f. */
static void ctrl(int fd, const char *json, rc_frame *f)
{
	uint64_t id = ++fx.next_id;

	assert_int_equal(rc_send_ctrl(fd, id, json), 0);
	assert_int_equal(rc_read_frame(fd, f, WAIT_MS), 0);
	assert_int_equal(f->id, id);
}

/* A CTRL request answered with a CTRL_REPLY: its code, its "state"
 * into state (32 bytes) when not NULL. */
static int ctrl_code(int fd, const char *json, char *state)
{
	const cJSON *s;
	rc_frame f;
	cJSON *doc;
	int code;

	ctrl(fd, json, &f);
	doc = json_of(&f);
	code = code_of(doc);
	s = cJSON_GetObjectItemCaseSensitive(doc, "state");
	if (state != NULL)
		snprintf(state, 32, "%s",
			 cJSON_IsString(s) ? s->valuestring : "");
	cJSON_Delete(doc);
	rc_frame_free(&f);
	return code;
}

/* A wait for detached job id: the status of its GEMM_REPLY, or the code
 * of a CTRL_REPLY refusing it (ECANCELED: the job's status then). */
static int wait_job(int fd, uint64_t id)
{
	char json[96];
	rc_reply r;
	rc_frame f;
	cJSON *doc;
	int rv;

	snprintf(json, sizeof(json),
		 "{\"op\":\"wait\",\"job\":%llu,\"timeout_ms\":%d}",
		 (unsigned long long)id, WAIT_MS / 2);
	ctrl(fd, json, &f);
	if (f.type == RC_GEMM_REPLY) {
		assert_int_equal(rc_reply_of(&f, &r), 0);
		assert_int_equal(f.count, 0);
		rv = (int)r.status;
	} else {
		doc = json_of(&f);
		rv = code_of(doc);
		cJSON_Delete(doc);
	}
	rc_frame_free(&f);
	return rv;
}

/* Nothing more comes on fd: every answer was one answer. */
static void quiet(int fd)
{
	rc_frame f;

	assert_int_equal(rc_read_frame(fd, &f, QUIET_MS), -2);
}

/* The same, or fd is closed: a stopping gemmd closes its connections
 * once it has answered every job. */
static void quiet_or_closed(int fd)
{
	rc_frame f;
	int rv = rc_read_frame(fd, &f, QUIET_MS);

	assert_true(rv == -2 || rv == -1);
}

/* ---- the daemon's state ---- */

typedef struct counts {
	double ok, failed, rejected, total, refused;
} counts;

static counts counts_now(const it_daemon *d)
{
	cJSON *s = it_rstats(d);
	counts c;

	assert_non_null(s);
	c = (counts){it_num(s, "jobs.ok"), it_num(s, "jobs.failed"),
		     it_num(s, "jobs.rejected"), it_num(s, "requests.total"),
		     it_num(s, "requests.refused")};
	cJSON_Delete(s);
	return c;
}

/* What must read 0 once nothing is in the daemon (requests.inflight
 * counts the stats request itself, and connections.open its
 * connection). */
static const struct {
	const char *path;
	double idle;
} idle_keys[] = {
    {"jobs.queued", 0},	     {"jobs.inflight", 0},     {"pool.used", 0},
    {"pool.slabs", 0},	     {"pool.waiting", 0},      {"pageable.bytes", 0},
    {"detached.pending", 0}, {"requests.inflight", 1}, {"connections.open", 1},
};

/* Waits (WAIT_MS at most) until d holds nothing, then says which key
 * does not read as idle. */
static void assert_idle(const it_daemon *d, const char *what)
{
	double v = 0;
	size_t i = 0;

	for (int tries = 0; tries < WAIT_MS / 10; tries++) {
		cJSON *s = it_rstats(d);

		assert_non_null(s);
		for (i = 0; i < sizeof(idle_keys) / sizeof(idle_keys[0]); i++)
			if ((v = it_num(s, idle_keys[i].path)) !=
			    idle_keys[i].idle)
				break;
		cJSON_Delete(s);
		if (i == sizeof(idle_keys) / sizeof(idle_keys[0]))
			return;
		usleep(10000);
	}
	fail_msg("%s: %s reads %g, not %g", what, idle_keys[i].path, v,
		 idle_keys[i].idle);
}

/* ---- one case ---- */

/* Reads the answer of plain request id of o: one frame per job, or one
 * ERROR; the statuses (or REFUSED | code) into got. */
static void read_plain(int fd, uint64_t id, const outcome *o, int *got)
{
	int seen[4] = {0};
	char msg[97];
	rc_reply r;
	rc_frame f;

	for (uint32_t i = 0; i < o->njobs; i++) {
		assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
		assert_int_equal(f.id, id);
		if (f.type == RC_ERROR_T) {
			for (uint32_t k = 0; k < o->njobs; k++)
				got[k] = REFUSED | (int)rc_error(&f, msg);
			rc_frame_free(&f);
			return;
		}
		assert_int_equal(rc_reply_of(&f, &r), 0);
		assert_true(f.count < o->njobs);
		assert_int_equal(seen[f.count]++, 0);
		got[f.count] = (int)r.status;
		rc_frame_free(&f);
	}
}

/* Reads the answer of detached request id of n jobs: 0 with their ids
 * in ids, or REFUSED | the code of the ERROR that refused it. */
static int read_ids(int fd, uint64_t id, uint32_t n, uint64_t *ids)
{
	const cJSON *jobs;
	char msg[97];
	rc_frame f;
	cJSON *doc;
	int rv;

	assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
	assert_int_equal(f.id, id);
	if (f.type == RC_ERROR_T) {
		rv = REFUSED | (int)rc_error(&f, msg);
		rc_frame_free(&f);
		return rv;
	}
	doc = json_of(&f);
	assert_int_equal(code_of(doc), OK);
	jobs = cJSON_GetObjectItemCaseSensitive(doc, "jobs");
	assert_int_equal(cJSON_GetArraySize(jobs), n);
	for (uint32_t k = 0; k < n; k++)
		ids[k] = (uint64_t)cJSON_GetNumberValue(
		    cJSON_GetArrayItem(jobs, (int)k));
	cJSON_Delete(doc);
	rc_frame_free(&f);
	return OK;
}

/* Reads the answer of detached request id of o: its ids, or one ERROR
 * (then REFUSED | code into got). Cancels the jobs when asked to, then
 * waits for each: its outcome into got, taken once, its status the
 * same. */
static void read_detached(int fd, uint64_t id, const outcome *o, int cancel,
			  int *got)
{
	char json[96], state[32];
	uint64_t ids[4];
	int rv;

	if ((rv = read_ids(fd, id, o->njobs, ids)) != OK) {
		for (uint32_t k = 0; k < o->njobs; k++)
			got[k] = rv;
		return;
	}
	quiet(fd);
	for (uint32_t k = 0; cancel && k < o->njobs; k++) {
		snprintf(json, sizeof(json), "{\"op\":\"cancel\",\"job\":%llu}",
			 (unsigned long long)ids[k]);
		assert_int_equal(ctrl_code(fd, json, state), OK);
		assert_string_equal(state, "canceled");
	}
	for (uint32_t k = 0; k < o->njobs; k++) {
		got[k] = wait_job(fd, ids[k]);
		/* Canceled: every wait hears it; else the first took it. */
		assert_int_equal(wait_job(fd, ids[k]), got[k] == ECANCELED_
							   ? ECANCELED_
							   : ENOTFOUND_);
		snprintf(json, sizeof(json), "{\"op\":\"status\",\"job\":%llu}",
			 (unsigned long long)ids[k]);
		assert_int_equal(ctrl_code(fd, json, state), OK);
		assert_string_equal(state, got[k] == OK		  ? "done"
					   : got[k] == ECANCELED_ ? "canceled"
								  : "failed");
	}
}

/* The stats' counts moved by what the case's jobs ended with (want),
 * and the blocker's one job ok when there was one. */
static void assert_counted(const counts *before, const outcome *o,
			   const int *want, int blocker)
{
	counts now = counts_now(&fx.d), add = {blocker, 0, 0, blocker, 0};

	for (uint32_t k = 0; k < o->njobs; k++) {
		if (want[k] & REFUSED)
			add.rejected += !o->wire;
		else if (want[k] == OK)
			add.ok++;
		else
			add.failed++;
	}
	if (want[0] & REFUSED)
		add.refused++;
	else
		add.total++;
	assert_int_equal((long)(now.ok - before->ok), (long)add.ok);
	assert_int_equal((long)(now.failed - before->failed), (long)add.failed);
	assert_int_equal((long)(now.rejected - before->rejected),
			 (long)add.rejected);
	assert_int_equal((long)(now.total - before->total), (long)add.total);
	assert_int_equal((long)(now.refused - before->refused),
			 (long)add.refused);
}

static void run_case(const outcome *o, int kind)
{
	int fd, blocker = -1, got[4], want[4];
	int detached = is_detached(kind);
	uint32_t dl =
	    kind == DEADLINE || kind == DEADLINE_DETACHED ? DEADLINE_MS : 0;
	counts before = counts_now(&fx.d);
	uint64_t id;

	print_message("%s, %s\n", o->name, kind_names[kind]);
	/* A request refused is refused whole; only those accepted have
	 * more than one job's outcome in the table. */
	for (uint32_t k = 0; k < o->njobs; k++)
		want[k] = o->expect[kind][0] & REFUSED ? o->expect[kind][0]
						       : o->expect[kind][k];
	if (is_queued(kind))
		blocker = send_blocker();
	assert_true((fd = rc_connect(fx.d.ipc, NULL)) >= 0);
	if (o->drain)
		assert_int_equal(ctrl_code(fd, "{\"op\":\"drain\"}", NULL), OK);
	id = send_request(fd, o, detached, dl);
	if (detached)
		read_detached(fd, id, o, kind == CANCELED, got);
	else
		read_plain(fd, id, o, got);
	for (uint32_t k = 0; k < o->njobs; k++)
		if (got[k] != want[k])
			fail_msg("%s, %s: job %u ended %s%d, not %s%d", o->name,
				 kind_names[kind], k,
				 got[k] & REFUSED ? "refused " : "",
				 got[k] & ~REFUSED,
				 want[k] & REFUSED ? "refused " : "",
				 want[k] & ~REFUSED);
	quiet(fd);
	if (o->drain)
		assert_int_equal(ctrl_code(fd, "{\"op\":\"resume\"}", NULL),
				 OK);
	close(fd);
	if (blocker >= 0)
		end_blocker(blocker);
	assert_idle(&fx.d, o->name);
	assert_counted(&before, o, want, blocker >= 0);
}

/* ---- the table ---- */

#define R(code) (REFUSED | (code))
#define EUNS	EUNSUPPORTED_

/* clang-format off */
/* What each job ends with, per kind of request: plain, detached, queued,
 * queued-detached, canceled, deadline, deadline-detached. A job that
 * fails in the scheduler fails before the engine runs it and before its
 * deadline or a cancel can reach it; a cancel then drops the kept
 * failure (PROTOCOL.md 7.1). Detached requests name no region: refused
 * before the lookup. */
static const outcome outcomes[] = {
    {.name = "ok", .jobs = {S_SMALL}, .njobs = 1, .expect = {
	{OK}, {OK}, {OK}, {OK}, {ECANCELED_}, {ETIMEDOUT_}, {ETIMEDOUT_}}},
    {.name = "unsupported dtype", .jobs = {S_FP16}, .njobs = 1, .expect = {
	{EUNS}, {EUNS}, {EUNS}, {EUNS}, {ECANCELED_}, {EUNS}, {EUNS}}},
    {.name = "unsupported beside ok", .jobs = {S_SMALL, S_FP16}, .njobs = 2,
     .expect = {{OK, EUNS}, {OK, EUNS}, {OK, EUNS}, {OK, EUNS},
	{ECANCELED_, ECANCELED_}, {ETIMEDOUT_, EUNS}, {ETIMEDOUT_, EUNS}}},
    {.name = "queue full", .jobs = {S_SMALL, S_SMALL, S_SMALL, S_SMALL},
     .njobs = 4, .expect = {
	{R(EBUSY_)}, {R(EBUSY_)}, {R(EBUSY_)}, {R(EBUSY_)}, {R(EBUSY_)},
	{R(EBUSY_)}, {R(EBUSY_)}}},
    {.name = "validation", .jobs = {S_DIM0}, .njobs = 1, .wire = 1,
     .expect = {{R(EDIM_)}, {R(EDIM_)}, {R(EDIM_)}, {R(EDIM_)}, {R(EDIM_)},
	{R(EDIM_)}, {R(EDIM_)}}},
    {.name = "region", .jobs = {S_REGION}, .njobs = 1, .expect = {
	{R(ENOTFOUND_)}, {R(EUNS)}, {R(ENOTFOUND_)}, {R(EUNS)}, {R(EUNS)},
	{R(ENOTFOUND_)}, {R(EUNS)}}},
    /* Detached, its result does not fit in detach_max_bytes either,
     * checked first (PROTOCOL.md 8 step 23). */
    {.name = "pool too small", .jobs = {S_HUGE}, .njobs = 1, .expect = {
	{R(ETOOBIG_)}, {R(EBUSY_)}, {R(ETOOBIG_)}, {R(EBUSY_)}, {R(EBUSY_)},
	{R(ETOOBIG_)}, {R(EBUSY_)}}},
    {.name = "no room for detached results", .jobs = {S_WIDE}, .njobs = 1,
     .expect = {{OK}, {R(EBUSY_)}, {OK}, {R(EBUSY_)}, {R(EBUSY_)},
	{ETIMEDOUT_}, {R(EBUSY_)}}},
    {.name = "draining", .jobs = {S_SMALL}, .njobs = 1, .drain = 1,
     .expect = {{R(EDRAINING_)}, {R(EDRAINING_)}, {R(EDRAINING_)},
	{R(EDRAINING_)}, {R(EDRAINING_)}, {R(EDRAINING_)},
	{R(EDRAINING_)}}},
};
/* clang-format on */

static void test_every_outcome(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
		for (int kind = 0; kind < KINDS; kind++)
			run_case(&outcomes[i], kind);
}

/* Writes the n bytes at p to fd within WAIT_MS, whether or not the
 * daemon reads them as they come: 0, or -1. */
static int write_within(int fd, const uint8_t *p, size_t n)
{
	double until = it_now_us() + WAIT_MS * 1e3;
	size_t off = 0;

	while (off < n && it_now_us() < until) {
		ssize_t k =
		    send(fd, p + off, n - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k > 0)
			off += (size_t)k;
		else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		else
			usleep(1000);
	}
	return off == n ? 0 : -1;
}

/*
 * Connections that pipeline conn_max_inflight requests and close
 * without reading a reply, the last request cut in the middle of its
 * payload: gemmd accepted it from its head, and the close abandons it
 * before it can run. Once they are gone every request accepted is
 * counted, each of its jobs once, ok or failed (the abandoned ones
 * ECANCELED), and gemmd holds nothing. Its own daemon, whose queue
 * holds every request, so that none is refused.
 */
static void test_pipelined_then_closed(void **state)
{
	enum { CONNS = 8, REQS = 256 };
	const char *args[] = {"--set", "cpu_threads=1", NULL};
	/* A 1 x 1 result: replies never fill the socket gemmd writes. */
	rc_job j = {.dtype = 1, .m = 1, .n = 1, .k = 1024, .alpha = 1};
	counts before, now;
	int fds[CONNS];
	uint8_t *req;
	char key[64];
	it_daemon d;
	size_t len;

	(void)state;
	j.a = j.b = zeros;
	assert_int_equal(it_launch(&d, args), 0);
	before = counts_now(&d);
	assert_non_null(req = rc_gemm(1, 1, 0, 0, &j, 1, &len));
	for (int c = 0; c < CONNS; c++) {
		assert_true((fds[c] = rc_connect(d.ipc, NULL)) >= 0);
		for (int r = 0; r < REQS - 1; r++)
			assert_int_equal(write_within(fds[c], req, len), 0);
		assert_int_equal(write_within(fds[c], req, len / 2), 0);
	}
	/* Every request accepted, the cut ones waiting for their
	 * payloads: */
	assert_int_equal(it_wait_stat(&d, "requests.total",
				      before.total + CONNS * REQS, WAIT_MS),
			 before.total + CONNS * REQS);
	for (int c = 0; c < CONNS; c++)
		close(fds[c]);
	free(req);
	assert_idle(&d, "pipelined connections closed");
	now = counts_now(&d);
	assert_int_equal((long)(now.total - before.total), CONNS * REQS);
	assert_int_equal((long)(now.ok - before.ok), CONNS * (REQS - 1));
	assert_int_equal((long)(now.failed - before.failed), CONNS);
	assert_int_equal((long)(now.refused - before.refused), 0);
	assert_int_equal((long)it_rstat(&d, "jobs.by_status.ECANCELED"), CONNS);
	snprintf(key, sizeof(key), "jobs.by_uid.%u.failed", (unsigned)getuid());
	assert_int_equal((long)it_rstat(&d, key), CONNS);
	assert_int_equal(it_stop(&d), 0);
	it_cleanup(&d);
}

/*
 * Room for detached results is checked when a request's head comes and
 * taken when its payload is in: a detached request whose room another
 * took while its payload came (the other's job still queued, holding
 * its room) is refused then, EBUSY, one ERROR; its jobs count as
 * rejected, and the other runs.
 */
static void test_detach_room_taken(void **state)
{
	/* Each result fits in DETACH_MAX, two do not. */
	rc_job j = {.dtype = 1, .m = 300, .n = 300, .k = 8, .alpha = 1};
	counts before = counts_now(&fx.d), now;
	int blocker, a, b;
	uint64_t ida, idb, job;
	size_t len;
	uint8_t *req;
	rc_frame f;
	char msg[97];

	(void)state;
	j.a = j.b = zeros;
	blocker = send_blocker();
	assert_true((a = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_true((b = rc_connect(fx.d.ipc, NULL)) >= 0);
	ida = ++fx.next_id;
	assert_non_null(req = rc_gemm(ida, 1, 0, 1, &j, 1, &len));
	assert_int_equal(rc_write(a, req, len - 8), 0);
	assert_int_equal(
	    it_wait_stat(&fx.d, "requests.total", before.total + 2, WAIT_MS),
	    before.total + 2); /* the blocker's and a's */
	idb = ++fx.next_id;
	rc_put_hdr(req, RC_GEMM, idb, 1, len - RC_HDR);
	assert_int_equal(rc_write(b, req, len), 0);
	assert_int_equal(read_ids(b, idb, 1, &job), OK);
	assert_int_equal(rc_write(a, req + len - 8, 8), 0);
	assert_int_equal(rc_read_frame(a, &f, WAIT_MS), 0);
	assert_int_equal(f.id, ida);
	assert_int_equal(rc_error(&f, msg), EBUSY_);
	rc_frame_free(&f);
	free(req);
	quiet(a);
	end_blocker(blocker);
	assert_int_equal(wait_job(b, job), OK);
	quiet(b);
	close(a);
	close(b);
	assert_idle(&fx.d, "detached room taken");
	now = counts_now(&fx.d);
	assert_int_equal((long)(now.total - before.total), 3);
	assert_int_equal((long)(now.refused - before.refused), 1);
	assert_int_equal((long)(now.rejected - before.rejected), 1);
	assert_int_equal((long)(now.ok - before.ok), 2);
	assert_int_equal((long)(now.failed - before.failed), 0);
}

/* Whether the stats say gemmd is stopping. */
static int stopping(void)
{
	cJSON *s = it_rstats(&fx.d);
	int on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "stopping"));

	cJSON_Delete(s);
	return on;
}

/*
 * A stop (SIGTERM) while a blocker runs, a detached job queued behind it
 * with a wait parked on it, and a detached job that failed at once:
 * requests sent after it, plain or detached, are refused whole with one
 * ERROR each, ESHUTDOWN; everything accepted before is answered, the
 * blocker and the parked wait, whose job ran; gemmd exits 0. It stops
 * the table's daemon: the last test.
 */
static void test_stopping(void **state)
{
	static const outcome ok = {.name = "ok", .jobs = {S_SMALL}, .njobs = 1};
	static const outcome fp16 = {
	    .name = "fp16", .jobs = {S_FP16}, .njobs = 1};
	const outcome *after[] = {&ok, &fp16};
	uint64_t queued, failed, wait_id = ++fx.next_id;
	int blocker, a, c;
	char json[96], msg[97];
	rc_reply r;
	rc_frame f;

	(void)state;
	blocker = send_blocker();
	assert_true((a = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_true((c = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_int_equal(read_ids(a, send_request(a, &ok, 1, 0), 1, &queued),
			 OK);
	assert_int_equal(read_ids(a, send_request(a, &fp16, 1, 0), 1, &failed),
			 OK);
	assert_int_equal(wait_job(a, failed), EUNSUPPORTED_);
	snprintf(json, sizeof(json), "{\"op\":\"wait\",\"job\":%llu}",
		 (unsigned long long)queued);
	assert_int_equal(rc_send_ctrl(a, wait_id, json), 0);
	assert_int_equal(kill(fx.d.pid, SIGTERM), 0);
	for (int i = 0; i < WAIT_MS / 10 && !stopping(); i++)
		usleep(10000);
	assert_true(stopping());
	for (size_t i = 0; i < 2; i++)
		for (int detached = 0; detached < 2; detached++) {
			uint64_t id = send_request(c, after[i], detached, 0);

			assert_int_equal(rc_read_frame(c, &f, WAIT_MS), 0);
			assert_int_equal(f.id, id);
			assert_int_equal(rc_error(&f, msg), ESHUTDOWN_);
			rc_frame_free(&f);
		}
	quiet_or_closed(c);
	end_blocker(blocker);
	assert_int_equal(rc_read_frame(a, &f, WAIT_MS), 0);
	assert_int_equal(f.id, wait_id);
	assert_int_equal(rc_reply_of(&f, &r), 0);
	assert_int_equal(r.status, OK);
	rc_frame_free(&f);
	quiet_or_closed(a);
	close(a);
	close(c);
	assert_int_equal(it_stop(&fx.d), 0);
}

/* ---- setup ---- */

/* Sizes the blocker to BLOCK_S on one BLAS thread, from a 400^3 job. */
static uint32_t calibrate(void)
{
	rc_job j = {.dtype = 1, .m = 400, .n = 400, .k = 400, .alpha = 1};
	double kernel_us = 0, n;
	size_t len;
	uint8_t *req;
	rc_reply r;
	rc_frame f;
	int fd;

	j.a = j.b = zeros;
	assert_true((fd = rc_connect(fx.d.ipc, NULL)) >= 0);
	assert_non_null(req = rc_gemm(1, 1, 0, 0, &j, 1, &len));
	for (int i = 0; i < 2; i++) { /* the first warms OpenBLAS up */
		assert_int_equal(rc_write(fd, req, len), 0);
		assert_int_equal(rc_read_frame(fd, &f, WAIT_MS), 0);
		assert_int_equal(rc_reply_of(&f, &r), 0);
		assert_int_equal(r.status, OK);
		kernel_us = r.kernel_us;
		rc_frame_free(&f);
	}
	free(req);
	close(fd);
	n = cbrt(BLOCK_S * 1e6 / kernel_us) * 400;
	return (uint32_t)(n < 600 ? 600 : n > 3000 ? 3000 : n);
}

static int setup(void **state)
{
	static char depth[32], detach[48];
	const char *args[] = {"--set", "cpu_threads=1",
			      "--set", "cpu_piece_flops=1000000000000000",
			      "--set", "pageable_max_bytes=0",
			      "--set", "principal_share_percent=25",
			      "--set", depth,
			      "--set", detach,
			      "--set", fx.pool_arg,
			      NULL};
	uint64_t pool;

	(void)state;
	if ((zeros = calloc((size_t)WIDE * WIDE, sizeof(double))) == NULL)
		return -1;
	snprintf(depth, sizeof(depth), "queue_depth=%d", QUEUE_DEPTH);
	snprintf(detach, sizeof(detach), "detach_max_bytes=%u", DETACH_MAX);
	snprintf(fx.pool_arg, sizeof(fx.pool_arg), "pool_bytes=%d", 256 << 20);
	if (it_launch(&fx.d, args) != 0)
		return -1;
	fx.blocker_n = calibrate();
	if (it_stop(&fx.d) != 0)
		return -1;
	it_cleanup(&fx.d);
	/* The blocker and small jobs fit; a HUGE job never does. The
	 * blocker's result, read last, is within a quarter of the pool, its
	 * principal's share of unsent reply bytes: past it, gemmd would
	 * read none of the test's connections until the blocker's reply is
	 * read. Its slab, three times that, is past the share: the test's
	 * other requests go in beside it as those of a principal alone. */
	pool = 4ull * fx.blocker_n * fx.blocker_n * 8 + (16u << 20);
	snprintf(fx.pool_arg, sizeof(fx.pool_arg), "pool_bytes=%llu",
		 (unsigned long long)(((pool >> 20) + 1) << 20));
	print_message("blocker %u^3, %s\n", fx.blocker_n, fx.pool_arg);
	if (it_launch(&fx.d, args) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	int rv;

	(void)state;
	rv = fx.d.pid > 0 ? it_stop(&fx.d) : 0; /* test_stopping stopped it */
	if (rv != 0)
		fprintf(stderr, "gemmd exited %d\n", rv);
	it_cleanup(&fx.d);
	free(zeros);
	return rv == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_outcome),
	    cmocka_unit_test(test_pipelined_then_closed),
	    cmocka_unit_test(test_detach_room_taken),
	    cmocka_unit_test(test_stopping),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
