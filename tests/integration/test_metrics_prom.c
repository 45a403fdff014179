/*
 * test_metrics_prom.c - gemmd's /metrics checked by promtool and
 * scraped every second by a real Prometheus (the Debian package), which
 * answers a query for the job counter; exits 77 (skipped) when either
 * program is missing. Everything on loopback.
 */
#include "metrics_fx.h"

/* ---- with the prometheus package ---- */

static int have(const char *prog)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* promtool's linter on a scrape with ok and failed jobs in it. */
static void test_promtool_check(void **state)
{
	char path[256], cmd[600];
	http_reply r;
	FILE *f;
	int rc;

	start_small_pool(2);
	r = get(fx.port, "/metrics");
	snprintf(path, sizeof(path), "%s/metrics.txt", fx.d.dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(r.body, f);
	fclose(f);
	free(r.body);
	snprintf(cmd, sizeof(cmd),
		 "promtool check metrics <'%s' >'%s.out' 2>&1", path, path);
	if ((rc = system(cmd)) != 0) {
		snprintf(cmd, sizeof(cmd), "cat '%s.out' >&2", path);
		(void)system(cmd);
		fail_msg("promtool check metrics: status %d", rc);
	}
	finish();
}

static void start_prometheus(int port)
{
	char yml[160], cfg[200], tsdb[200], web[64], logp[160];
	FILE *f;

	snprintf(yml, sizeof(yml), "%s/prometheus.yml", fx.d.dir);
	assert_non_null(f = fopen(yml, "w"));
	fprintf(f,
		"global:\n"
		"  scrape_interval: 1s\n"
		"  evaluation_interval: 1s\n"
		"scrape_configs:\n"
		"  - job_name: gemmd\n"
		"    static_configs:\n"
		"      - targets: ['127.0.0.1:%d']\n",
		fx.port);
	fclose(f);
	snprintf(cfg, sizeof(cfg), "--config.file=%s", yml);
	snprintf(tsdb, sizeof(tsdb), "--storage.tsdb.path=%s/tsdb", fx.d.dir);
	snprintf(web, sizeof(web), "--web.listen-address=127.0.0.1:%d", port);
	snprintf(logp, sizeof(logp), "%s/prometheus.log", fx.d.dir);
	if ((fx.prom = fork()) == 0) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* Never outlive the test, whatever kills it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execlp("prometheus", "prometheus", cfg, tsdb, web,
		       (char *)NULL);
		_exit(127);
	}
	assert_true(fx.prom > 0);
}

/* The value of a one-sample instant query, or -1 while there is none. */
static double query(int port, const char *expr)
{
	char url[512];
	http_reply r;
	cJSON *doc, *v;
	double x = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/query?query=%s",
		 port, expr);
	if (http_get(url, &r) != 0)
		return -1;
	doc = cJSON_Parse(r.body);
	v = cJSON_GetObjectItemCaseSensitive(doc, "data");
	v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "result"),
			       0);
	v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "value"), 1);
	if (r.status == 200 && cJSON_IsString(v))
		x = strtod(v->valuestring, NULL);
	cJSON_Delete(doc);
	free(r.body);
	return x;
}

/* A real Prometheus scrapes gemmd every second; the jobs run here come
 * back through its query API. */
static void test_prometheus_scrape(void **state)
{
	int port = it_free_port(), i, st;
	http_reply r;
	double n = -1;

	start(NULL);
	assert_true(port > 0);
	start_prometheus(port);
	for (i = 0; i < WAIT_S * 10; i++) {
		char url[128];

		if (waitpid(fx.prom, &st, WNOHANG) == fx.prom) {
			fx.prom = 0;
			fail_msg("prometheus exited; see %s/prometheus.log",
				 fx.d.dir);
		}
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/-/ready", port);
		if (http_get(url, &r) == 0) {
			free(r.body);
			if (r.status == 200)
				break;
		}
		usleep(100 * 1000);
	}
	assert_true(i < WAIT_S * 10);
	run_ok_jobs(fx.c, 5);
	/* sum(gemmd_jobs_total), URL-encoded */
	for (i = 0; i < WAIT_S * 4 && n != 5; i++) {
		usleep(250 * 1000);
		n = query(port, "sum%28gemmd_jobs_total%29");
	}
	if (n != 5)
		fail_msg("Prometheus says %g jobs, not 5; see %s", n, fx.d.dir);
	assert_true(query(port, "up%7Bjob%3D%22gemmd%22%7D") == 1);
	stop_prometheus();
	finish();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_promtool_check, cleanup),
	    cmocka_unit_test_teardown(test_prometheus_scrape, cleanup),
	};

	signal(SIGPIPE, SIG_IGN);
	if (!have("promtool") || !have("prometheus")) {
		fprintf(stderr, "promtool or prometheus not installed "
				"(Debian package prometheus): skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
