/*
 * test_metrics.c - gemmd's HTTP endpoints (metrics_listen) from the
 * outside (metrics_fx.h): /healthz and /readyz, before and while
 * draining; /metrics counting ok and failed jobs and its histograms, the
 * queue wait by priority and the jobs by uid; the stats document's
 * by-dtype, by-status, by-uid, queue-by-priority and rate keys for the
 * same jobs; bad and busy addresses. Everything on loopback.
 */
#include "metrics_fx.h"

static void test_health_and_ready(void **state)
{
	http_reply r;

	start(NULL);
	r = get(fx.port, "/healthz");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok\n");
	free(r.body);
	r = get(fx.port, "/readyz");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ready\n");
	free(r.body);
	r = get(fx.port, "/nothing-here");
	assert_int_equal(r.status, 404);
	free(r.body);
	finish();
}

/* Waits up to WAIT_S for path to answer status; returns the body. */
static char *wait_status(const char *path, int status)
{
	for (int i = 0; i < WAIT_S * 20; i++) {
		http_reply r = get(fx.port, path);

		if (r.status == status)
			return r.body;
		free(r.body);
		usleep(50 * 1000);
	}
	fail_msg("%s never answered %d", path, status);
	return NULL;
}

/* SIGTERM with a long job running: gemmd says it is not ready, still
 * alive, and finishes the job before it exits. */
static void test_readyz_while_draining(void **state)
{
	static const char *const one_thread[] = {"--set", "cpu_threads=1",
						 NULL};
	it_waiter df = {0};
	gemmd_job j;
	http_reply r;
	char *body;
	int i;

	start(one_thread);
	/* 6 GFLOP on one core: hundreds of milliseconds at least, with a
	 * small result (2 MiB) to send back. */
	it_job(&j, 512, 512, 12288, 3);
	assert_int_equal(
	    gemmd_submit_async(fx.c, &j, 1, NULL, WAIT_S * 1000, it_done, &df),
	    GM_OK);
	for (i = 0; i < WAIT_S * 100 && it_stat(fx.c, "jobs.inflight") < 1; i++)
		usleep(10 * 1000);
	assert_true(it_stat(fx.c, "jobs.inflight") >= 1);
	kill(fx.d.pid, SIGTERM);
	body = wait_status("/readyz", 503);
	assert_string_equal(body, "not ready: draining\n");
	free(body);
	r = get(fx.port, "/healthz");
	assert_int_equal(r.status, 200);
	free(r.body);
	r = get(fx.port, "/metrics");
	assert_has(r.body, "\ngemmd_draining 1\n");
	free(r.body);
	assert_true(it_wait_done(&df, WAIT_S * 1000));
	assert_int_equal(df.rv, GM_OK);
	assert_int_equal(j.status, GM_OK);
	it_job_free(&j);
	/* It exits by itself; a second SIGTERM could land after its loop
	 * let go of the signal, while it frees the engine. */
	assert_int_equal(it_wait_exit(&fx.d, WAIT_S * 1000, NULL), 0);
}

/* {"op":"drain"} makes gemmd not ready, {"op":"resume"} ready again. */
static void test_readyz_drain_op(void **state)
{
	char *reply = NULL, *body;
	http_reply r;

	start(NULL);
	assert_int_equal(gemmd_ctrl(fx.c, "{\"op\":\"drain\"}", &reply, 5000),
			 GM_OK);
	free(reply);
	body = wait_status("/readyz", 503);
	assert_string_equal(body, "not ready: draining\n");
	free(body);
	r = get(fx.port, "/healthz");
	assert_int_equal(r.status, 200);
	free(r.body);
	assert_int_equal(gemmd_ctrl(fx.c, "{\"op\":\"resume\"}", &reply, 5000),
			 GM_OK);
	free(reply);
	free(wait_status("/readyz", 200));
	finish();
}

static void test_metrics_count_jobs(void **state)
{
	char line[128];
	http_reply r;

	start_small_pool(3);
	r = get(fx.port, "/metrics");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.type, "text/plain; version=0.0.4; charset=utf-8");
	assert_has(r.body,
		   "\ngemmd_jobs_total{dtype=\"fp64\",status=\"ok\"} 3\n");
	assert_has(r.body, "\ngemmd_jobs_rejected_total 1\n");
	assert_has(r.body,
		   "\ngemmd_jobs_total{dtype=\"fp32\",status=\"ok\"} 0\n");
	assert_has(r.body, "\ngemmd_errors_total{code=\"ETOOBIG\"} 1\n");
	assert_has(r.body, "\ngemmd_requests_total{type=\"gemm\"} 3\n");
	assert_has(r.body,
		   "\ngemmd_bytes_total{direction=\"h2d\",dtype=\"fp64\"} "
		   "196608\n");
	assert_has(r.body,
		   "\ngemmd_bytes_total{direction=\"d2h\",dtype=\"fp64\"} "
		   "98304\n");
	assert_has(r.body, "\ngemmd_flops_total{dtype=\"fp64\"} 1572864\n");
	assert_has(r.body, "\n# TYPE gemmd_job_phase_seconds histogram\n");
	assert_has(r.body, "\ngemmd_job_phase_seconds_bucket{phase=\"total\","
			   "le=\"+Inf\"} 3\n");
	assert_has(r.body,
		   "\ngemmd_job_phase_seconds_count{phase=\"kernel\"} 3\n");
	/* 100 s is the last finite bound: every job is below it. */
	assert_has(r.body, "\ngemmd_job_phase_seconds_bucket{phase=\"total\","
			   "le=\"100\"} 3\n");
	assert_has(r.body, "\ngemmd_queue_depth{priority=\"3\"} 0\n");
	/* The queue phase again by priority: the jobs' default, 1. */
	assert_has(r.body, "\n# TYPE gemmd_queue_wait_seconds histogram\n");
	assert_has(r.body,
		   "\ngemmd_queue_wait_seconds_count{priority=\"1\"} 3\n");
	assert_has(r.body, "\ngemmd_queue_wait_seconds_bucket{priority=\"1\","
			   "le=\"+Inf\"} 3\n");
	assert_has(r.body,
		   "\ngemmd_queue_wait_seconds_count{priority=\"3\"} 0\n");
	/* The jobs that ran, under this process's uid (over ipc://); the
	 * refused one never ran. */
	snprintf(line, sizeof(line),
		 "\ngemmd_uid_jobs_total{uid=\"%u\",status=\"ok\"} 3\n",
		 (unsigned)getuid());
	assert_has(r.body, line);
	snprintf(line, sizeof(line),
		 "\ngemmd_uid_jobs_total{uid=\"%u\",status=\"failed\"} 0\n",
		 (unsigned)getuid());
	assert_has(r.body, line);
	assert_has(r.body,
		   "\ngemmd_uid_jobs_total{uid=\"other\",status=\"ok\"} 0\n");
	assert_has(r.body, "\ngemmd_pool_size_bytes 1048576\n");
	assert_has(r.body, "\ngemmd_device_jobs_total{device=\"0\"} 3\n");
	free(r.body);
	finish();
}

/* The same jobs through the stats document's newer keys; the rates
 * count whole seconds, so they are read after the next one began. */
/* A sample's value: the number after "\nNAME " in text. */
static double sample(const char *text, const char *name)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(text, key);
	if (p == NULL)
		fail_msg("no sample %s", name);
	return strtod(p + strlen(key), NULL);
}

static double proc_fds(pid_t pid)
{
	char path[64], cmd[128];
	FILE *f;
	double n = -1;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	snprintf(cmd, sizeof(cmd), "ls %s | wc -l", path);
	if ((f = popen(cmd, "r")) != NULL) {
		if (fscanf(f, "%lf", &n) != 1)
			n = -1;
		pclose(f);
	}
	return n;
}

/* The process_* family every exporter has, and gemmd_up. */
static void test_process_metrics(void **state)
{
	double fds, start_s, now_s = (double)time(NULL);
	double cpu, cpu_before, cpu_after;
	http_reply r;

	start(NULL);
	run_ok_jobs(fx.c, 2);
	/* CPU time is counted in ticks: a young daemon may have used none
	 * yet, so the sample is checked between two readings of its own. */
	cpu_before = it_cpu_ms(fx.d.pid) / 1e3;
	r = get(fx.port, "/metrics");
	cpu_after = it_cpu_ms(fx.d.pid) / 1e3;
	assert_int_equal(r.status, 200);
	assert_has(r.body, "\ngemmd_up 1\n");
	assert_has(r.body, "\ngemmd_build_info{version=\"" GEMMD_VERSION_STRING
			   "\",engine=\"cpu\",devices=\"1\"} 1\n");
	assert_has(r.body, "\n# TYPE process_cpu_seconds_total counter\n");
	cpu = sample(r.body, "process_cpu_seconds_total");
	assert_true(cpu >= cpu_before - 1e-6 && cpu <= cpu_after + 1e-6);
	assert_true(sample(r.body, "process_resident_memory_bytes") >
		    1024 * 1024);
	assert_true(sample(r.body, "process_virtual_memory_bytes") >=
		    sample(r.body, "process_resident_memory_bytes"));
	/* The scrape's own connection may come or go between the two. */
	fds = sample(r.body, "process_open_fds");
	assert_true(fds >= 5 && fabs(fds - proc_fds(fx.d.pid)) <= 2);
	assert_true(sample(r.body, "process_max_fds") >= fds);
	start_s = sample(r.body, "process_start_time_seconds");
	assert_true(start_s <= now_s + 1 && start_s > now_s - 120);
	free(r.body);
	finish();
}

static void test_stats_document(void **state)
{
	const cJSON *prio;
	char key[64];
	cJSON *s;

	start_small_pool(3);
	usleep(1100 * 1000);
	s = it_stats(fx.c);
	assert_non_null(s);
	assert_true(it_num(s, "jobs.by_status.ok") == 3);
	assert_true(it_num(s, "jobs.rejected") == 1);
	assert_true(it_num(s, "requests.refused") == 1);
	assert_true(it_num(s, "errors.ETOOBIG") == 1);
	assert_true(it_num(s, "jobs.by_dtype.fp64") == 3);
	assert_true(it_num(s, "dtypes.fp64.jobs") == 3);
	assert_true(it_num(s, "dtypes.fp64.ok") == 3);
	assert_true(it_num(s, "dtypes.fp64.failed") == 0);
	assert_true(it_num(s, "dtypes.fp64.flops") == 3 * 2.0 * 64 * 64 * 64);
	assert_true(it_num(s, "dtypes.fp64.bytes_h2d") == 3 * 2 * 64 * 64 * 8);
	assert_true(it_num(s, "dtypes.fp64.bytes_d2h") == 3 * 64 * 64 * 8);
	assert_true(it_num(s, "dtypes.bf16.jobs") == 0);
	assert_true(it_num(s, "bytes.h2d") == 3 * 2 * 64 * 64 * 8);
	assert_true(it_num(s, "bytes.d2h") == 3 * 64 * 64 * 8);
	/* Three jobs within the last 10 or 60 s (or since the start, when
	 * that is shorter): positive rates. */
	assert_true(it_num(s, "rates.60s.jobs_per_s") > 0);
	assert_true(it_num(s, "rates.10s.jobs_per_s") > 0);
	assert_true(it_num(s, "rates.10s.gflops_per_s") > 0);
	assert_true(it_num(s, "rates.10s.h2d_gb_per_s") > 0);
	assert_true(it_num(s, "rates.10s.d2h_gb_per_s") > 0);
	assert_true(it_num(s, "rates.1s.jobs_per_s") >= 0);
	prio = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(s, "queue"), "by_priority");
	assert_int_equal(cJSON_GetArraySize(prio), 4);
	assert_true(it_num(s, "latency_us.queue_by_priority.1.count") == 3);
	assert_true(it_num(s, "latency_us.queue_by_priority.0.count") == 0);
	snprintf(key, sizeof(key), "jobs.by_uid.%u.ok", (unsigned)getuid());
	assert_true(it_num(s, key) == 3);
	snprintf(key, sizeof(key), "jobs.by_uid.%u.failed", (unsigned)getuid());
	assert_true(it_num(s, key) == 0);
	cJSON_Delete(s);
	finish();
}

static void test_bad_address(void **state)
{
	static const char *const bad[] = {"--set", "metrics_listen=9464", NULL};
	char err[2048];

	assert_int_not_equal(it_run_gemmd(bad, err, sizeof(err)), 0);
	assert_has(err, "config key \"metrics_listen\": \"9464\" is not "
			"HOST:PORT");
}

/* A port someone else listens on: gemmd says so and exits 1. */
static void test_port_in_use(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	const char *args[8];
	char set[64], err[2048], ipc[128];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(set, sizeof(set), "metrics_listen=127.0.0.1:%d",
		 ntohs(sa.sin_port));
	snprintf(ipc, sizeof(ipc), "ipc:///tmp/gemmd-it-busy.%d", getpid());
	args[0] = "--listen";
	args[1] = ipc;
	args[2] = "--set";
	args[3] = set;
	/* Without the hand-off socket beside the ipc one, in /tmp, which
	 * another gemmd listening in /tmp (a test's, the host's) may own:
	 * this test is about the metrics port. */
	args[4] = "--set";
	args[5] = "regions=false";
	args[6] = NULL;
	assert_int_equal(it_run_gemmd(args, err, sizeof(err)), 1);
	assert_has(err, "metrics_listen \"127.0.0.1:");
	close(fd);
	unlink(ipc + 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_health_and_ready, cleanup),
	    cmocka_unit_test_teardown(test_readyz_while_draining, cleanup),
	    cmocka_unit_test_teardown(test_readyz_drain_op, cleanup),
	    cmocka_unit_test_teardown(test_metrics_count_jobs, cleanup),
	    cmocka_unit_test_teardown(test_process_metrics, cleanup),
	    cmocka_unit_test_teardown(test_stats_document, cleanup),
	    cmocka_unit_test_teardown(test_bad_address, cleanup),
	    cmocka_unit_test_teardown(test_port_in_use, cleanup),
	};

	return IT_RUN(tests);
}
