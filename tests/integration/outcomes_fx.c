/*
 * outcomes_fx.c - what the tests in test_outcomes.c, test_outcomes_conn.c
 * share; see outcomes_fx.h.
 */
#include "outcomes_fx.h"

const char *const kind_names[KINDS] = {
    "plain",	"detached", "queued",		"queued-detached",
    "canceled", "deadline", "deadline-detached"};

int is_detached(int k)
{
	return k == DETACHED || k == QUEUED_DETACHED || k == CANCELED ||
	       k == DEADLINE_DETACHED;
}

int is_queued(int k)
{
	return k >= QUEUED;
}

struct outcomes_fx fx;

double *zeros; /* every job's operands: WIDE^2 doubles */

rc_job job_of(enum shape s)
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

uint64_t send_request(int fd, const outcome *o, int detached, uint32_t dl_ms)
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

int send_blocker(void)
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

void end_blocker(int fd)
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

cJSON *json_of(const rc_frame *f)
{
	cJSON *doc;

	assert_int_equal(f->type, RC_CTRL_REPLY);
	doc = cJSON_ParseWithLength((const char *)f->body, f->length);
	if (doc == NULL)
		fail_msg("reply is not JSON: %.*s", (int)f->length, f->body);
	return doc;
}

int code_of(const cJSON *doc)
{
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ok")))
		return OK;
	return (int)cJSON_GetNumberValue(
	    cJSON_GetObjectItemCaseSensitive(doc, "code"));
}

void ctrl(int fd, const char *json, rc_frame *f)
{
	uint64_t id = ++fx.next_id;

	assert_int_equal(rc_send_ctrl(fd, id, json), 0);
	assert_int_equal(rc_read_frame(fd, f, WAIT_MS), 0);
	assert_int_equal(f->id, id);
}

int ctrl_code(int fd, const char *json, char *state)
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

int wait_job(int fd, uint64_t id)
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

void quiet(int fd)
{
	rc_frame f;

	assert_int_equal(rc_read_frame(fd, &f, QUIET_MS), -2);
}

void quiet_or_closed(int fd)
{
	rc_frame f;
	int rv = rc_read_frame(fd, &f, QUIET_MS);

	assert_true(rv == -2 || rv == -1);
}

counts counts_now(const it_daemon *d)
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

void assert_idle(const it_daemon *d, const char *what)
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

void read_plain(int fd, uint64_t id, const outcome *o, int *got)
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

int read_ids(int fd, uint64_t id, uint32_t n, uint64_t *ids)
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

void read_detached(int fd, uint64_t id, const outcome *o, int cancel, int *got)
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

void assert_counted(const counts *before, const outcome *o, const int *want,
		    int blocker)
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

void run_case(const outcome *o, int kind)
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

uint32_t calibrate(void)
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

int setup(void **state)
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

int teardown(void **state)
{
	int rv;

	rv = fx.d.pid > 0 ? it_stop(&fx.d) : 0; /* test_stopping stopped it */
	if (rv != 0)
		fprintf(stderr, "gemmd exited %d\n", rv);
	it_cleanup(&fx.d);
	free(zeros);
	return rv == 0 ? 0 : -1;
}
