/*
 * test_access.c - who may talk to gemmd, and what each may do. The
 * ipc:// socket and the directory gemmd makes for it have modes 0660
 * and 0750 whatever the umask; allow_uids and allow_gids refuse other
 * peers (one EACCES ERROR, counted in stats, read over tcp://, which the
 * lists do not cover) and let the named ones in; every plain tcp://
 * listener is warned about, and allow_plain_tcp false refuses one.
 * Detached jobs are their principal's: another uid (a child that became
 * nobody, when the test runs as root) and the anonymous tcp:// client
 * probing ids around the owner's get ENOTFOUND, as for an id never
 * given, and can neither wait for nor cancel them, while the owner gets
 * its results; drain and resume are refused EACCES, naming the key, to
 * all but an admin (root by default, admin_uids, admin_subjects).
 * TLS is in test_access_tls.c.
 */
#include "access_fx.h"

static void test_socket_modes(void **state)
{
	struct stat st;
	char run[160];
	it_daemon d;
	mode_t old = umask(0077); /* gemmd inherits it */

	assert_int_equal(it_launch(&d, NULL), 0);
	umask(old);
	snprintf(run, sizeof(run), "%s/run", d.dir);
	assert_int_equal(stat(run, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(stat(d.path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(it_finish(&d), 0);
}

/* A uid (or gid) that is not id. */
static unsigned other_id(unsigned id)
{
	return id == 12345 ? 12346 : 12345;
}

static void test_allow_list_refuses(void **state)
{
	char uids[32], gids[32];
	const char *args[] = {"--set", uids, "--set", gids, NULL};
	gemmd_client *c, *mon;
	gemmd_job j;
	it_daemon d;
	rc_frame f;
	char msg[97];
	int fd;

	snprintf(uids, sizeof(uids), "allow_uids=%u", other_id(getuid()));
	snprintf(gids, sizeof(gids), "allow_gids=%u", other_id(getgid()));
	assert_int_equal(it_launch(&d, args), 0);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	/* The connection is answered EACCES and closed as soon as it is
	 * made ... */
	fd = rc_connect(d.ipc, NULL);
	assert_true(fd >= 0);
	assert_int_equal(rc_read_frame(fd, &f, 5000), 0);
	assert_int_equal(f.id, 0);
	assert_int_equal(rc_error(&f, msg), GM_EACCES);
	rc_frame_free(&f);
	assert_true(rc_closed(fd, 2000));
	close(fd);
	/* ... so a client's calls fail and run nothing. */
	assert_int_equal(
	    gemmd_open(d.ipc, &(gemmd_open_opts){.flags = GEMMD_OPEN_LAZY}, &c),
	    GM_OK);
	assert_int_not_equal(gemmd_ping(c, NULL, 1000), GM_OK);
	it_job(&j, 16, 16, 16, 1);
	assert_int_not_equal(gemmd_submit(c, &j, 1, NULL, 1000), GM_OK);
	assert_true(it_job_untouched(&j));
	gemmd_close(c);
	assert_true(it_stat(mon, "connections.refused") >= 2);
	assert_int_equal(it_stat(mon, "requests.total"), 0);
	assert_int_equal(it_stat(mon, "jobs.ok"), 0);
	/* tcp:// is not subject to the lists: the stats came over it. */
	assert_int_equal(gemmd_ping(mon, NULL, 1000), GM_OK);
	gemmd_close(mon);
	it_job_free(&j);
	assert_int_equal(it_stop(&d), 0);
	assert_true(it_file_has(d.log, "refused an ipc connection from uid"));
	it_cleanup(&d);
}

/* Runs a job over url and checks it; the refusal count must stay 0. */
static void admitted(const it_daemon *d, const char *url)
{
	gemmd_client *c;
	gemmd_job j;

	assert_int_equal(gemmd_open(url, NULL, &c), GM_OK);
	assert_int_equal(gemmd_ping(c, NULL, 2000), GM_OK);
	it_job(&j, 20, 30, 40, 2);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 5000), GM_OK);
	assert_true(it_job_ok(&j));
	assert_int_equal(it_stat(c, "connections.refused"), 0);
	it_job_free(&j);
	gemmd_close(c);
}

static void test_allow_list_admits(void **state)
{
	char uids[32], gids[32], conf[200];
	const char *by_uid[] = {"--config", conf, NULL};
	const char *by_gid[] = {"--set", uids, "--set", gids, NULL};
	it_daemon d;
	FILE *f;

	/* By uid, from a configuration file. */
	assert_int_equal(it_setup(&d), 0);
	snprintf(conf, sizeof(conf), "%s/gemmd.json", d.dir);
	assert_non_null(f = fopen(conf, "w"));
	fprintf(f, "{\"allow_uids\": [%u, %u], \"allow_gids\": []}\n",
		other_id(getuid()), (unsigned)getuid());
	fclose(f);
	assert_int_equal(it_start(&d, by_uid), 0);
	admitted(&d, d.ipc);
	assert_int_equal(it_stop(&d), 0);
	/* By gid alone: a peer is let in when either list names it. */
	snprintf(uids, sizeof(uids), "allow_uids=%u", other_id(getuid()));
	snprintf(gids, sizeof(gids), "allow_gids=%u,%u", other_id(getgid()),
		 (unsigned)getgid());
	assert_int_equal(it_start(&d, by_gid), 0);
	admitted(&d, d.ipc);
	assert_int_equal(it_stop(&d), 0);
	assert_false(it_file_has(d.log, "refused"));
	it_cleanup(&d);
}

static void test_allow_list_config_errors(void **state)
{
	const char *neg[] = {"--set", "allow_uids=-1", NULL};
	const char *twice[] = {"--set", "allow_gids=7,7", NULL};
	char err[1024];

	assert_int_equal(it_run_gemmd(neg, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "config key \"allow_uids\": -1 is out of "
				    "range 0..4294967294"));
	assert_int_equal(it_run_gemmd(twice, err, sizeof(err)), 1);
	assert_non_null(
	    strstr(err, "config key \"allow_gids\": 7 is listed twice"));
}

/* Every plain tcp:// listener is warned about, the loopback too, and
 * allow_plain_tcp false refuses to start with one, naming it. */
static void test_plain_tcp_warning(void **state)
{
	char url[64], off[160], loopback[160], err[2048];
	const char *args[] = {"--listen", url, NULL};
	const char *forbid[] = {"--listen", "tcp://127.0.0.1:1", "--set",
				"allow_plain_tcp=false", NULL};
	it_daemon d;

	snprintf(url, sizeof(url), "tcp://0.0.0.0:%d", it_free_port());
	snprintf(off, sizeof(off),
		 "%s is plain TCP off the loopback: unauthenticated", url);
	assert_int_equal(it_launch(&d, args), 0);
	assert_int_equal(it_stop(&d), 0);
	assert_true(it_file_has(d.log, off));
	it_cleanup(&d);
	assert_int_equal(it_launch(&d, NULL), 0);
	assert_int_equal(it_stop(&d), 0);
	snprintf(loopback, sizeof(loopback),
		 "%s is plain TCP on the loopback: unauthenticated", d.tcp);
	assert_true(it_file_has(d.log, loopback));
	assert_true(it_file_has(d.log, "allow_plain_tcp"));
	it_cleanup(&d);
	assert_int_equal(it_run_gemmd(forbid, err, sizeof(err)), 1);
	if (strstr(err,
		   "\"tcp://127.0.0.1:1\" is plain TCP, "
		   "unauthenticated, and \"allow_plain_tcp\" is false") == NULL)
		fail_msg("no refusal in: %s", err);
}

/* Starts gemmd with args, its ipc:// socket open to uid nobody too
 * (gemmd makes it 0660 in a directory 0750, both root's); skips the
 * test when it does not run as root, which alone can become nobody. */
static void start_for_nobody(it_daemon *d, const char *const *args)
{
	char run[160];

	if (getuid() != 0) {
		fprintf(stderr, "not root: no other uid to ask as\n");
		skip();
	}
	assert_int_equal(it_launch(d, args), 0);
	snprintf(run, sizeof(run), "%s/run", d->dir);
	assert_int_equal(chmod(d->dir, 0755), 0);
	assert_int_equal(chmod(run, 0755), 0);
	assert_int_equal(chmod(d->path, 0666), 0);
}

/* In a child: becomes uid and gid nobody and connects to url; the
 * descriptor, or -1. */
static int connect_as_nobody(const char *url)
{
	if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 ||
	    setuid(NOBODY) != 0 || getuid() != NOBODY)
		return -1;
	return rc_connect(url, NULL);
}

/* The CTRL reply an id that names nothing gets, for status, wait and
 * cancel alike: another principal's job must read exactly so. */
static void unknown_reply(char *out, size_t len, uint64_t id)
{
	snprintf(out, len,
		 "{\"ok\":false,\"code\":27,\"error\":\"ENOTFOUND\","
		 "\"message\":\"no detached job %" PRIu64 "\"}",
		 id);
}

/* On fd: status, wait (timeout 0) and cancel of id each answered as an
 * unknown id is. Returns 0, or the step that was answered otherwise. */
static int probe_one(int fd, uint64_t id, uint64_t *req)
{
	static const char *const ops[] = {"status", "wait", "cancel"};
	char json[128], want[160], *doc;
	int rv;

	unknown_reply(want, sizeof(want), id);
	for (int i = 0; i < 3; i++) {
		snprintf(json, sizeof(json),
			 "{\"op\":\"%s\",\"job\":%" PRIu64 "%s}", ops[i], id,
			 i == 1 ? ",\"timeout_ms\":0" : "");
		if (rc_ctrl(fd, ++*req, json, &doc, WAIT_MS) != 0)
			return 1 + i;
		rv = strcmp(doc, want) != 0;
		if (rv)
			fprintf(stderr, "%s of %" PRIu64 ": %s\n", ops[i], id,
				doc);
		free(doc);
		if (rv)
			return 1 + i;
	}
	return 0;
}

/* On fd: op (an admin's) refused EACCES, its message naming key. */
static int refused_admin(int fd, const char *op, const char *key, uint64_t *req)
{
	char json[64], *doc;
	int rv;

	snprintf(json, sizeof(json), "{\"op\":\"%s\"}", op);
	if (rc_ctrl(fd, ++*req, json, &doc, WAIT_MS) != 0)
		return 1;
	rv = strstr(doc, "\"error\":\"EACCES\"") == NULL ||
	     strstr(doc, key) == NULL;
	if (rv)
		fprintf(stderr, "%s: %s\n", op, doc);
	free(doc);
	return rv;
}

/* A detached 24x24x24 job of fd's principal, waited for on fd: its id
 * into *id; 0 when its result came back right. */
static int own_job(int fd, uint64_t *id, uint64_t *req)
{
	double *a, *b;
	char json[96], *doc = NULL;
	cJSON *d = NULL;
	uint8_t *m;
	rc_frame f;
	rc_job j;
	size_t len;
	int rv = -1;

	rc_job_fp64(&j, 24, 24, 24, 5, &a, &b);
	m = rc_gemm(++*req, 1, 0, 1 /* DETACH */, &j, 1, &len);
	if (m == NULL || rc_write(fd, m, len) != 0 ||
	    rc_read_frame(fd, &f, WAIT_MS) != 0)
		goto out;
	if (f.type == RC_CTRL_REPLY &&
	    (d = cJSON_Parse((const char *)f.body)) != NULL)
		*id = (uint64_t)cJSON_GetArrayItem(
			  cJSON_GetObjectItemCaseSensitive(d, "jobs"), 0)
			  ->valuedouble;
	rc_frame_free(&f);
	if (d == NULL)
		goto out;
	snprintf(json, sizeof(json), "{\"op\":\"wait\",\"job\":%" PRIu64 "}",
		 *id);
	if (rc_send_ctrl(fd, ++*req, json) != 0 ||
	    rc_read_frame(fd, &f, WAIT_MS) != 0)
		goto out;
	rv = f.type == RC_GEMM_REPLY && rc_check_fp64(&j, f.body + RC_REPLY)
		 ? 0
		 : -1;
	rc_frame_free(&f);
out:
	cJSON_Delete(d);
	free(doc);
	free(m);
	free(a);
	free(b);
	return rv;
}

/* In a child that became uid and gid nobody: connects over ipc:// and
 * probes PROBE_IDS ids on each side of each of ids[0..n-1] and the ids
 * themselves, asks for drain and resume, then runs a detached job of
 * its own, whose id it writes to out. Exit status 0, or which step
 * failed. */
static int probe_as_nobody(const it_daemon *d, const uint64_t *ids, int n,
			   int out)
{
	uint64_t req = 0, mine = 0;
	int fd;

	if ((fd = connect_as_nobody(d->ipc)) < 0)
		return 11;
	for (int i = 0; i < n; i++)
		for (int64_t k = -PROBE_IDS; k <= PROBE_IDS; k++)
			if (probe_one(fd, ids[i] + (uint64_t)k, &req) != 0)
				return 12;
	if (refused_admin(fd, "drain", "uid 65534 is not in admin_uids",
			  &req) != 0 ||
	    refused_admin(fd, "resume", "admin_uids", &req) != 0)
		return 13;
	if (own_job(fd, &mine, &req) != 0)
		return 14;
	if (write(out, &mine, sizeof(mine)) != (ssize_t)sizeof(mine))
		return 15;
	close(fd);
	return 0;
}

/* Runs probe_as_nobody in a child; returns the id of the child's own
 * job. */
static uint64_t probe_in_child(const it_daemon *d, const uint64_t *ids, int n)
{
	uint64_t mine = 0;
	int p[2], st = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(probe_as_nobody(d, ids, n, p[1]));
	}
	close(p[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the child as nobody: status %d", st);
	assert_int_equal(read(p[0], &mine, sizeof(mine)), sizeof(mine));
	close(p[0]);
	return mine;
}

/*
 * Root submits two detached jobs over ipc://, the first large enough to
 * be queued or running while others probe. The anonymous tcp:// client
 * and a child that became nobody try status, wait and cancel on 64 ids
 * on each side of each and on the ids themselves: all read as unknown,
 * and drain and resume are refused naming the key. Root then gets both
 * results; the child's own job is its own, unknown to root; root
 * drains and resumes.
 */
static void test_jobs_are_owned(void **state)
{
	const char *args[] = {"--set", "cpu_threads=1", NULL};
	const gemmd_open_opts socket = {.flags = GEMMD_OPEN_NO_SHM};
	gemmd_client *c, *anon;
	gemmd_job j[2], got;
	gemmd_job_info in;
	uint64_t ids[2], theirs;
	it_daemon d;

	start_for_nobody(&d, args);
	assert_int_equal(gemmd_open(d.ipc, &socket, &c), GM_OK);
	it_job(&j[0], 500, 500, 500, 1);
	it_job(&j[1], 30, 40, 50, 2);
	assert_int_equal(gemmd_submit_detached(c, j, 2, NULL, ids, WAIT_MS),
			 GM_OK);
	assert_int_equal(gemmd_open(d.tcp, NULL, &anon), GM_OK);
	for (int i = 0; i < 2; i++)
		for (int64_t k = -PROBE_IDS; k <= PROBE_IDS; k++)
			not_found_to(anon, ids[i] + (uint64_t)k);
	assert_int_equal(gemmd_drain(anon, WAIT_MS), GM_EACCES);
	assert_non_null(strstr(gemmd_last_error(), "anonymous"));
	assert_int_equal(gemmd_resume(anon, WAIT_MS), GM_EACCES);
	theirs = probe_in_child(&d, ids, 2);
	/* Nothing the others did touched root's jobs. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(gemmd_job_status(c, ids[i], &in, WAIT_MS),
				 GM_OK);
		assert_true(in.state != GEMMD_JOB_CANCELED);
		assert_int_equal(gemmd_wait(c, ids[i], &j[i], GEMMD_FOREVER),
				 GM_OK);
		assert_true(it_job_ok(&j[i]));
		it_job_free(&j[i]);
	}
	/* The child's job is nobody's: root, even as admin, and the
	 * anonymous client do not find it. */
	not_found_to(c, theirs);
	not_found_to(anon, theirs);
	got = (gemmd_job){0};
	assert_int_equal(gemmd_wait(c, ids[0], &got, 0), GM_ENOTFOUND);
	assert_int_equal(gemmd_drain(c, WAIT_MS), GM_OK);
	assert_int_equal(gemmd_resume(c, WAIT_MS), GM_OK);
	assert_true(it_file_has(d.log, "refused drain from anonymous"));
	assert_true(it_file_has(d.log, "draining (drain request from uid 0)"));
	gemmd_close(anon);
	gemmd_close(c);
	assert_int_equal(it_finish(&d), 0);
}

/* admin_uids names who is admin: with nobody alone in it root is
 * refused drain (EACCES naming admin_uids) and nobody may; with it
 * empty nobody is. */
static void test_admin_uids(void **state)
{
	const char *only_nobody[] = {"--set", "admin_uids=65534", NULL};
	const char *none[] = {"--set", "admin_uids=", NULL};
	char *doc;
	uint64_t req = 0;
	gemmd_client *c;
	it_daemon d;
	int st = 0, fd;
	pid_t pid;

	start_for_nobody(&d, only_nobody);
	assert_int_equal(gemmd_open(d.ipc, NULL, &c), GM_OK);
	assert_int_equal(gemmd_drain(c, WAIT_MS), GM_EACCES);
	assert_non_null(
	    strstr(gemmd_last_error(), "uid 0 is not in admin_uids"));
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		if ((fd = connect_as_nobody(d.ipc)) < 0 ||
		    rc_ctrl(fd, ++req, "{\"op\":\"drain\"}", &doc, WAIT_MS) !=
			0)
			_exit(1);
		_exit(strstr(doc, "\"draining\":true") == NULL ? 2 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(gemmd_ping(c, &doc, WAIT_MS), GM_OK);
	assert_non_null(strstr(doc, "\"draining\":true"));
	free(doc);
	gemmd_close(c);
	assert_int_equal(it_stop(&d), 0);
	assert_int_equal(it_start(&d, none), 0);
	assert_int_equal(gemmd_open(d.ipc, NULL, &c), GM_OK);
	assert_int_equal(gemmd_drain(c, WAIT_MS), GM_EACCES);
	gemmd_close(c);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_socket_modes),
	    cmocka_unit_test(test_allow_list_refuses),
	    cmocka_unit_test(test_allow_list_admits),
	    cmocka_unit_test(test_allow_list_config_errors),
	    cmocka_unit_test(test_plain_tcp_warning),
	    cmocka_unit_test(test_jobs_are_owned),
	    cmocka_unit_test(test_admin_uids),
	};

	return IT_RUN(tests);
}
