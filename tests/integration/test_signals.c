/*
 * test_signals.c - gemmd and the signals a daemon gets: SIGHUP, SIGUSR2,
 * SIGALRM, SIGPIPE and the other signals whose default kills, sent again
 * and again while jobs are in flight (every job answered right, gemmd
 * still serving, then a clean stop); SIGHUP reloading a rewritten
 * configuration file (the log level, a request limit, a key that needs
 * a restart, a file that does not load); and the startup checks of what
 * the configuration asks for: a pool larger than the host's memory, a
 * configuration file that is a FIFO.
 */
#include <sys/stat.h>

#include "it_case.h"

#define JOBS	40
#define WAIT_MS 30000 /* the longest any wait below may take */

static const gemmd_open_opts socket_only = {.flags = GEMMD_OPEN_NO_SHM};

static struct {
	it_daemon d;
	gemmd_client *c;
} fx;

static int cleanup(void **state)
{
	if (fx.c != NULL)
		gemmd_close(fx.c);
	fx.c = NULL;
	it_cleanup(&fx.d);
	return 0;
}

static void start(const char *const *args)
{
	if (it_start(&fx.d, args) != 0)
		fail_msg("gemmd did not start; see %s", fx.d.log);
	assert_int_equal(gemmd_open(fx.d.ipc, &socket_only, &fx.c), GM_OK);
}

static void finish(void)
{
	gemmd_close(fx.c);
	fx.c = NULL;
	assert_int_equal(it_finish(&fx.d), 0);
}

/* Waits until gemmd's log has text; fails the test if it never does. */
static void wait_log(const char *text)
{
	for (int i = 0; i < WAIT_MS / 10 && !it_file_has(fx.d.log, text); i++)
		usleep(10000);
	if (!it_file_has(fx.d.log, text))
		fail_msg("no \"%s\" in %s", text, fx.d.log);
}

static int done_count;

static void on_done(void *arg, int rv)
{
	*(int *)arg = rv;
	__atomic_add_fetch(&done_count, 1, __ATOMIC_ACQ_REL);
}

/* Every signal a daemon should live through, sent over and over while
 * JOBS requests run on one BLAS thread (the first a long one, so that
 * jobs are in flight when the first signals land): every job is
 * answered right, gemmd serves on, logs what it ignored and reloaded,
 * and stops cleanly. */
static void test_signals_with_jobs_in_flight(void **state)
{
	static const int sigs[] = {SIGHUP,    SIGUSR2, SIGALRM,	 SIGPIPE,
				   SIGVTALRM, SIGPROF, SIGIO,	 SIGPWR,
				   SIGXFSZ,   SIGXCPU, SIGSTKFLT};
	static const char *const args[] = {"--set", "cpu_threads=1", NULL};
	static gemmd_job jobs[JOBS];
	static int rv[JOBS];
	int sent = 0;

	assert_int_equal(it_setup(&fx.d), 0);
	start(args);
	done_count = 0;
	for (int i = 0; i < JOBS; i++) {
		uint32_t n = i == 0 ? 600 : 96;

		it_job(&jobs[i], n, n, i == 0 ? 2400 : 96, (unsigned)i + 1);
		rv[i] = -1;
		assert_int_equal(gemmd_submit_async(fx.c, &jobs[i], 1, NULL,
						    WAIT_MS, on_done, &rv[i]),
				 GM_OK);
	}
	while (__atomic_load_n(&done_count, __ATOMIC_ACQUIRE) < JOBS ||
	       sent < 3 * (int)(sizeof(sigs) / sizeof(sigs[0]))) {
		assert_int_equal(
		    kill(fx.d.pid,
			 sigs[sent % (sizeof(sigs) / sizeof(sigs[0]))]),
		    0);
		sent++;
		usleep(2000);
	}
	for (int i = 0; i < JOBS; i++) {
		assert_int_equal(rv[i], GM_OK);
		assert_true(it_job_ok(&jobs[i]));
		it_job_free(&jobs[i]);
	}
	assert_int_equal(kill(fx.d.pid, 0), 0);
	assert_int_equal(gemmd_ping(fx.c, NULL, WAIT_MS), GM_OK);
	wait_log("SIGUSR2 ignored");
	wait_log("SIGALRM ignored");
	wait_log("SIGXFSZ ignored");
	wait_log("SIGHUP: configuration reloaded: 0 key(s) taken");
	assert_false(it_file_has(fx.d.log, "SIGPIPE"));
	finish();
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Whether gemmd's stats say it is draining. */
static int draining(void)
{
	cJSON *s = it_rstats(&fx.d);
	int on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "draining"));

	cJSON_Delete(s);
	return on;
}

/* SIGUSR1 (drain), waited for in the stats, then resumed. */
static void drain_and_resume(void)
{
	assert_int_equal(kill(fx.d.pid, SIGUSR1), 0);
	for (int i = 0; i < WAIT_MS / 10 && !draining(); i++)
		usleep(10000);
	assert_true(draining());
	assert_int_equal(gemmd_resume(fx.c, WAIT_MS), GM_OK);
}

/* A request of n small jobs; the call's result. */
static int submit_n(int n)
{
	gemmd_job jobs[8];
	int rv;

	for (int i = 0; i < n; i++)
		it_job(&jobs[i], 8, 8, 8, (unsigned)i + 1);
	rv = gemmd_submit(fx.c, jobs, (uint32_t)n, NULL, WAIT_MS);
	for (int i = 0; i < n; i++)
		it_job_free(&jobs[i]);
	return rv;
}

/* SIGHUP reads the rewritten file: the log level (warn hides the
 * drain's info line, info shows it) and max_jobs_per_request are taken
 * at once; streams is logged as needing a restart; a file that does not
 * load is logged and the running configuration kept. */
static void test_sighup_reload(void **state)
{
	char path[160];
	const char *args[] = {"-c", path, NULL};

	assert_int_equal(it_setup(&fx.d), 0);
	snprintf(path, sizeof(path), "%s/gemmd.json", fx.d.dir);
	write_file(path,
		   "{\"log_level\": \"warn\", \"max_jobs_per_request\": 4}");
	start(args);
	drain_and_resume();
	assert_false(it_file_has(fx.d.log, "draining ("));
	assert_int_equal(submit_n(5), GM_ETOOMANY);
	write_file(path,
		   "{\"log_level\": \"info\", \"max_jobs_per_request\": 8,"
		   " \"streams\": 3}");
	assert_int_equal(kill(fx.d.pid, SIGHUP), 0);
	wait_log("SIGHUP: configuration reloaded: 2 key(s) taken, 1 need a "
		 "restart");
	assert_true(
	    it_file_has(fx.d.log, "reload: log_level \"warn\" -> \"info\""));
	assert_true(
	    it_file_has(fx.d.log, "reload: max_jobs_per_request 4 -> 8"));
	assert_true(it_file_has(fx.d.log, "reload: streams 8 -> 3 needs a "
					  "restart; 8 stays in use"));
	assert_int_equal(submit_n(5), GM_OK);
	drain_and_resume();
	wait_log("draining (User defined signal 1)");
	/* A file that does not load changes nothing. */
	write_file(path,
		   "{\"log_level\": \"debug\", \"max_jobs_per_request\": 1");
	assert_int_equal(kill(fx.d.pid, SIGHUP), 0);
	wait_log("SIGHUP: configuration not reloaded, the running one kept: ");
	assert_int_equal(submit_n(5), GM_OK);
	assert_int_equal(gemmd_ping(fx.c, NULL, WAIT_MS), GM_OK);
	finish();
}

/* pool_bytes of 1 TiB on a host with less memory: gemmd does not start
 * and says which key asks for what, and what there is. */
static void test_pool_over_memory(void **state)
{
	static const char *const args[] = {"--set", "pool_bytes=1T", "--listen",
					   "ipc:///tmp/gemmd-it-pool.sock",
					   NULL};
	uint64_t host =
	    (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	char err[2048];

	if (host >= (UINT64_C(1) << 40))
		skip();
	assert_int_equal(it_run_gemmd(args, err, sizeof(err)), 1);
	if (strstr(err, "pool_bytes 1099511627776 (1024.0 GiB) is more than "
			"this ") == NULL ||
	    strstr(err, "memory") == NULL)
		fail_msg("unexpected: %s", err);
}

/* A FIFO as the configuration file is refused at once, not waited on. */
static void test_config_fifo(void **state)
{
	char fifo[160], err[2048];
	const char *args[] = {"-c", fifo, NULL};

	assert_int_equal(it_setup(&fx.d), 0);
	snprintf(fifo, sizeof(fifo), "%s/gemmd.json", fx.d.dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(it_run_gemmd(args, err, sizeof(err)), 1);
	if (strstr(err, "not a regular file") == NULL)
		fail_msg("unexpected: %s", err);
	it_cleanup(&fx.d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_signals_with_jobs_in_flight,
				      cleanup),
	    cmocka_unit_test_teardown(test_sighup_reload, cleanup),
	    cmocka_unit_test_teardown(test_pool_over_memory, cleanup),
	    cmocka_unit_test_teardown(test_config_fifo, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
