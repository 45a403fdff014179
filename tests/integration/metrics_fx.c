/*
 * metrics_fx.c - what the tests in test_metrics.c, test_metrics_prom.c share;
 * see metrics_fx.h.
 */
#include "metrics_fx.h"

int http_get(const char *url, http_reply *r)
{
	nng_url *u = NULL;
	nng_http_client *cli = NULL;
	nng_http_req *req = NULL;
	nng_http_res *res = NULL;
	nng_aio *aio = NULL;
	const char *type;
	void *data;
	size_t len;
	int rv;

	memset(r, 0, sizeof(*r));
	if ((rv = nng_url_parse(&u, url)) != 0 ||
	    (rv = nng_http_client_alloc(&cli, u)) != 0 ||
	    (rv = nng_http_req_alloc(&req, u)) != 0 ||
	    (rv = nng_http_res_alloc(&res)) != 0 ||
	    (rv = nng_aio_alloc(&aio, NULL, NULL)) != 0)
		goto out;
	nng_aio_set_timeout(aio, 5000);
	nng_http_client_transact(cli, req, res, aio);
	nng_aio_wait(aio);
	if ((rv = nng_aio_result(aio)) != 0)
		goto out;
	r->status = nng_http_res_get_status(res);
	type = nng_http_res_get_header(res, "Content-Type");
	snprintf(r->type, sizeof(r->type), "%s", type ? type : "");
	nng_http_res_get_data(res, &data, &len);
	if ((r->body = malloc(len + 1)) == NULL) {
		rv = NNG_ENOMEM;
		goto out;
	}
	memcpy(r->body, data, len);
	r->body[len] = '\0';
out:
	if (aio != NULL)
		nng_aio_free(aio);
	if (res != NULL)
		nng_http_res_free(res);
	if (req != NULL)
		nng_http_req_free(req);
	if (cli != NULL)
		nng_http_client_free(cli);
	if (u != NULL)
		nng_url_free(u);
	return rv;
}

http_reply get(int port, const char *path)
{
	char url[256];
	http_reply r;
	int rv;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	if ((rv = http_get(url, &r)) != 0)
		fail_msg("GET %s: %s", url, nng_strerror(rv));
	return r;
}

void assert_has(const char *text, const char *line)
{
	assert_non_null(text);
	if (strstr(text, line) == NULL)
		fail_msg("no \"%s\" in:\n%.4000s", line, text);
}

struct metrics_fx fx;

const gemmd_open_opts socket_only = {.flags = GEMMD_OPEN_NO_SHM};

void start(const char *const *extra)
{
	if (it_start_metrics(&fx.d, &fx.port, extra) != 0)
		fail_msg("gemmd did not start; see %s", fx.d.log);
	/* Through the socket: the counts below are those of the pool. */
	assert_int_equal(gemmd_open(fx.d.ipc, &socket_only, &fx.c), GM_OK);
}

void finish(void)
{
	gemmd_close(fx.c);
	fx.c = NULL;
	assert_int_equal(it_finish(&fx.d), 0);
}

void stop_prometheus(void)
{
	if (fx.prom <= 0)
		return;
	kill(fx.prom, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(fx.prom, NULL, WNOHANG) == fx.prom) {
			fx.prom = 0;
			return;
		}
		usleep(100 * 1000);
	}
	kill(fx.prom, SIGKILL);
	waitpid(fx.prom, NULL, 0);
	fx.prom = 0;
}

int cleanup(void **state)
{
	stop_prometheus();
	if (fx.c != NULL)
		gemmd_close(fx.c);
	fx.c = NULL;
	it_cleanup(&fx.d);
	return 0;
}

void run_ok_jobs(gemmd_client *c, int n)
{
	gemmd_job j;

	for (int i = 0; i < n; i++) {
		it_job(&j, 64, 64, 64, (unsigned)i + 1);
		assert_int_equal(gemmd_submit(c, &j, 1, NULL, 10000), GM_OK);
		assert_true(it_job_ok(&j));
		it_job_free(&j);
	}
}

void run_too_big_job(gemmd_client *c)
{
	gemmd_job j;

	it_job(&j, 256, 256, 256, 7);
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, 10000), GM_ETOOBIG);
	assert_int_equal(j.status, GM_ETOOBIG);
	it_job_free(&j);
}

void start_small_pool(int ok)
{
	static const char *const small_pool[] = {
	    "--set", "pool_bytes=1M", "--set", "pageable_max_bytes=0", NULL};

	start(small_pool);
	run_ok_jobs(fx.c, ok);
	run_too_big_job(fx.c);
}
