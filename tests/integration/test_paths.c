/*
 * test_paths.c - the client library against a real gemmd (CPU engine):
 * the same jobs give the same results, bit for bit and against the
 * reference, through every path a client has (plain pointers staged
 * through the library's region, explicit regions, the ipc:// socket,
 * tcp://, tls+tcp://, a request striped over three connections); staged
 * operands do not cross the socket; staging falls back to the socket
 * when the daemon takes no region; a tcp:// client stripes a large
 * request by default; requests spread over two daemons; a
 * daemon killed under a request fails it at once with GM_ETRANSPORT and
 * a restarted one serves the next call after the redial.
 */
#include "it_case.h"
#include "gm_testpki.h"
#include "gm_testref.h"

enum { NJOBS = 5 };

/* The jobs every path runs: shapes, dtypes, layouts, transposes, C, and
 * one of 10 MiB that staging puts in a chunk of its own (its k small
 * enough that the long double reference stays quick under ASan). */
static const struct {
	int dtype, layout, ta, tb, has_c;
	uint32_t m, n, k;
} shapes[NJOBS] = {
    {GEMMD_FP64, GEMMD_ROW_MAJOR, 0, 0, 0, 300, 200, 100},
    {GEMMD_FP32, GEMMD_COL_MAJOR, 1, 0, 1, 129, 65, 257},
    {GEMMD_FP64, GEMMD_ROW_MAJOR, 0, 1, 1, 64, 64, 64},
    {GEMMD_FP64, GEMMD_COL_MAJOR, 1, 1, 0, 1024, 1024, 128},
    {GEMMD_FP32, GEMMD_ROW_MAJOR, 0, 0, 0, 1, 1, 1},
};

struct ops {
	void *a[NJOBS], *b[NJOBS], *c[NJOBS];
	size_t na[NJOBS], nb[NJOBS], nc[NJOBS]; /* bytes */
};

static void ops_make(struct ops *o, uint64_t *seed)
{
	for (int i = 0; i < NJOBS; i++) {
		size_t es = gm_testref_esize(shapes[i].dtype);
		size_t na = (size_t)shapes[i].m * shapes[i].k,
		       nb = (size_t)shapes[i].k * shapes[i].n,
		       nc = (size_t)shapes[i].m * shapes[i].n;

		o->na[i] = na * es;
		o->nb[i] = nb * es;
		o->nc[i] = nc * es;
		o->a[i] = malloc(o->na[i]);
		o->b[i] = malloc(o->nb[i]);
		o->c[i] = shapes[i].has_c ? malloc(o->nc[i]) : NULL;
		gm_testref_fill(shapes[i].dtype, o->a[i], na, seed, NULL);
		gm_testref_fill(shapes[i].dtype, o->b[i], nb, seed, NULL);
		if (o->c[i] != NULL)
			gm_testref_fill(shapes[i].dtype, o->c[i], nc, seed,
					NULL);
	}
}

static void ops_free(struct ops *o)
{
	for (int i = 0; i < NJOBS; i++) {
		free(o->a[i]);
		free(o->b[i]);
		free(o->c[i]);
	}
}

static void jobs_make(const struct ops *o, void *out[NJOBS], gemmd_job *j)
{
	for (int i = 0; i < NJOBS; i++) {
		out[i] = malloc(o->nc[i]);
		memset(out[i], 0xA5, o->nc[i]);
		j[i] = (gemmd_job){.dtype = shapes[i].dtype,
				   .layout = shapes[i].layout,
				   .trans_a = shapes[i].ta,
				   .trans_b = shapes[i].tb,
				   .m = shapes[i].m,
				   .n = shapes[i].n,
				   .k = shapes[i].k,
				   .alpha = 0.75,
				   .beta = shapes[i].has_c ? 1.25 : 0,
				   .a = o->a[i],
				   .b = o->b[i],
				   .c = o->c[i],
				   .out = out[i]};
	}
}

static void jobs_check(const struct ops *o, void *const out[NJOBS],
		       const gemmd_job *j)
{
	for (int i = 0; i < NJOBS; i++) {
		gm_testref_gemm g = {j[i].dtype,   j[i].layout, j[i].trans_a,
				     j[i].trans_b, j[i].m,	j[i].n,
				     j[i].k,	   j[i].alpha,	j[i].beta,
				     o->a[i],	   o->b[i],	o->c[i],
				     out[i]};

		assert_int_equal(j[i].status, GM_OK);
		assert_true(gm_testref_check(&g));
	}
}

/* Runs the jobs over a client opened on url with opts (regions: put the
 * operands in one, and the results); results into out[]. */
static void run(const char *url, const gemmd_open_opts *opts, int regions,
		const struct ops *o, void *out[NJOBS])
{
	gemmd_client *cl;
	gemmd_job j[NJOBS];
	gemmd_region *r = NULL;
	uint64_t at = 0, off[NJOBS][4];

	assert_int_equal(gemmd_open(url, opts, &cl), GM_OK);
	jobs_make(o, out, j);
	if (regions) {
		for (int i = 0; i < NJOBS; i++) {
			const size_t len[4] = {o->na[i], o->nb[i], o->nc[i],
					       o->nc[i]};

			for (int op = 0; op < 4; op++) {
				off[i][op] = at;
				at += (len[op] + 255) & ~(size_t)255;
			}
		}
		assert_int_equal(gemmd_region_create(cl, at, &r), GM_OK);
		for (int i = 0; i < NJOBS; i++) {
			char *base = gemmd_region_ptr(r);

			memcpy(base + off[i][0], o->a[i], o->na[i]);
			memcpy(base + off[i][1], o->b[i], o->nb[i]);
			if (o->c[i])
				memcpy(base + off[i][2], o->c[i], o->nc[i]);
			j[i].a = j[i].b = j[i].c = j[i].out = NULL;
			j[i].a_ref = (gemmd_region_ref){r, off[i][0]};
			j[i].b_ref = (gemmd_region_ref){r, off[i][1]};
			if (o->c[i])
				j[i].c_ref = (gemmd_region_ref){r, off[i][2]};
			j[i].out_ref = (gemmd_region_ref){r, off[i][3]};
		}
	}
	assert_int_equal(gemmd_submit(cl, j, NJOBS, NULL, 60000), GM_OK);
	for (int i = 0; regions && i < NJOBS; i++)
		memcpy(out[i], (char *)gemmd_region_ptr(r) + off[i][3],
		       o->nc[i]);
	jobs_check(o, out, j);
	if (r != NULL)
		assert_int_equal(gemmd_region_release(r), GM_OK);
	gemmd_close(cl);
}

static void outs_free(void *out[NJOBS])
{
	for (int i = 0; i < NJOBS; i++)
		free(out[i]);
}

static uint64_t seed;

/* ---- every path ---- */

static void test_same_results(void **state)
{
	enum { PATHS = 6 };
	it_daemon d;
	gm_testpki p;
	struct ops o;
	void *out[PATHS][NJOBS];
	char tls[64], cert[160], key[160], ca[160];
	/* cpu_piece_us at its default: the engine cuts a job by its shape
	 * alone, so the paths compare bit for bit (gm_cpu_piece.h). */
	const char *args[] = {"-l", tls,     "--set", cert, "--set",
			      key,  "--set", ca,      NULL};
	gemmd_open_opts tls_o,
	    stripe_o = {.flags = GEMMD_OPEN_NO_SHM, .connections = 3},
	    socket_o = {.flags = GEMMD_OPEN_NO_SHM};
	gemmd_client *mon;
	double in0;

	assert_int_equal(it_setup(&d), 0);
	if (gm_testpki_make(&p, d.dir) != 0) {
		it_cleanup(&d);
		skip();
	}
	snprintf(tls, sizeof(tls), "tls+tcp://127.0.0.1:%d", it_free_port());
	snprintf(cert, sizeof(cert), "tls_cert=%s", p.cert);
	snprintf(key, sizeof(key), "tls_key=%s", p.key);
	snprintf(ca, sizeof(ca), "tls_ca=%s", p.ca);
	assert_int_equal(it_start(&d, args), 0);
	tls_o = (gemmd_open_opts){.tls_ca_file = p.ca,
				  .tls_cert_file = p.ccert,
				  .tls_key_file = p.ckey};
	ops_make(&o, &seed);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	/* Staged: the operands do not cross the socket. */
	in0 = it_stat(mon, "bytes.in");
	run(d.ipc, NULL, 0, &o, out[0]);
	assert_true(it_stat(mon, "bytes.in") - in0 < 1 << 20);
	run(d.ipc, &socket_o, 1, &o, out[1]);
	in0 = it_stat(mon, "bytes.in");
	run(d.ipc, &socket_o, 0, &o, out[2]);
	assert_true(it_stat(mon, "bytes.in") - in0 >= 2 << 20);
	run(d.tcp, NULL, 0, &o, out[3]);
	run(tls, &tls_o, 0, &o, out[4]);
	run(d.tcp, &stripe_o, 0, &o, out[5]);
	for (int path = 1; path < PATHS; path++)
		for (int i = 0; i < NJOBS; i++)
			assert_memory_equal(out[path][i], out[0][i], o.nc[i]);
	for (int path = 0; path < PATHS; path++)
		outs_free(out[path]);
	ops_free(&o);
	gemmd_close(mon);
	assert_int_equal(it_finish(&d), 0);
}

/* A daemon that takes no regions: staging gives way to the socket. */
static void test_staging_falls_back(void **state)
{
	static const char *const args[] = {"--set", "regions=false", NULL};
	it_daemon d;
	struct ops o;
	void *out[NJOBS];

	assert_int_equal(it_launch(&d, args), 0);
	ops_make(&o, &seed);
	/* Twice: the second finds staging off for a while. */
	for (int i = 0; i < 2; i++) {
		run(d.ipc, NULL, 0, &o, out);
		outs_free(out);
	}
	ops_free(&o);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- striping over TCP by default ---- */

/* A tcp:// client opened with no options holds one connection while its
 * requests are small; a request of 64 MiB or more is striped over
 * GEMMD_TCP_CONNECTIONS_DEFAULT connections, the others dialed for it,
 * one request each, and its results are right. */
static void test_tcp_stripes_by_default(void **state)
{
	/* 4 x 1024 x 4096 fp64 operands: 128 MiB, little arithmetic. */
	enum { BIG = 4 };
	it_daemon d;
	gemmd_client *mon, *cl;
	gemmd_job big[BIG], small;
	double req0;

	assert_int_equal(it_launch(&d, NULL), 0);
	assert_int_equal(gemmd_open(d.ipc, NULL, &mon), GM_OK);
	assert_int_equal(gemmd_open(d.tcp, NULL, &cl), GM_OK);
	it_job(&small, 40, 30, 20, 1);
	assert_int_equal(gemmd_submit(cl, &small, 1, NULL, 10000), GM_OK);
	assert_true(it_job_ok(&small));
	assert_int_equal(it_stat(mon, "connections.open"), 2);
	req0 = it_stat(mon, "requests.total");
	for (int i = 0; i < BIG; i++)
		it_job(&big[i], 1024, 1, 4096, (unsigned)i + 2);
	assert_int_equal(gemmd_submit(cl, big, BIG, NULL, 60000), GM_OK);
	for (int i = 0; i < BIG; i++)
		assert_true(it_job_ok(&big[i]));
	/* One GEMM request per connection. */
	assert_int_equal(it_stat(mon, "requests.total") - req0,
			 GEMMD_TCP_CONNECTIONS_DEFAULT);
	assert_int_equal(it_stat(mon, "connections.open"),
			 1 + GEMMD_TCP_CONNECTIONS_DEFAULT);
	for (int i = 0; i < BIG; i++)
		it_job_free(&big[i]);
	it_job_free(&small);
	gemmd_close(cl);
	gemmd_close(mon);
	assert_int_equal(it_finish(&d), 0);
}

/* ---- several daemons, and one that dies ---- */

static void test_two_daemons(void **state)
{
	enum { CALLS = 8 };
	it_daemon d[2];
	gemmd_client *cl;
	gemmd_job j[CALLS];
	it_waiter done[CALLS] = {{0}};

	for (int i = 0; i < 2; i++) {
		assert_int_equal(it_launch(&d[i], NULL), 0);
	}
	assert_int_equal(gemmd_open(d[0].ipc, NULL, &cl), GM_OK);
	assert_int_equal(gemmd_dial(cl, d[1].tcp, NULL), GM_OK);
	for (int i = 0; i < CALLS; i++) {
		it_job(&j[i], 256, 256, 256, (unsigned)i + 1);
		assert_int_equal(gemmd_submit_async(cl, &j[i], 1, NULL, 30000,
						    it_done, &done[i]),
				 GM_OK);
	}
	for (int i = 0; i < CALLS; i++) {
		it_wait_done(&done[i], -1);
		assert_int_equal(done[i].rv, GM_OK);
		assert_true(it_job_ok(&j[i]));
		it_job_free(&j[i]);
	}
	gemmd_close(cl);
	/* Each daemon got some of them. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(gemmd_open(d[i].tcp, NULL, &cl), GM_OK);
		assert_true(it_stat(cl, "requests.total") >= 1);
		gemmd_close(cl);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(it_finish(&d[i]), 0);
	}
}

static void test_daemon_dies(void **state)
{
	enum { BIG = 8 }; /* about a second of the CPU engine's work */
	it_daemon d;
	gemmd_client *cl;
	gemmd_job big[BIG], small;
	it_waiter done = {0};
	double t0;

	assert_int_equal(it_launch(&d, NULL), 0);
	assert_int_equal(gemmd_open(d.tcp, NULL, &cl), GM_OK);
	for (int i = 0; i < BIG; i++)
		it_job(&big[i], 2048, 2048, 2048, (unsigned)i + 1);
	assert_int_equal(
	    gemmd_submit_async(cl, big, BIG, NULL, 60000, it_done, &done),
	    GM_OK);
	usleep(300 * 1000);
	it_kill(&d);
	t0 = it_now_us();
	it_wait_done(&done, -1);
	assert_int_equal(done.rv, GM_ETRANSPORT);
	assert_true(it_now_us() - t0 < 5e6);
	assert_int_equal(big[BIG - 1].status, GM_ETRANSPORT);
	/* A daemon again on the same address: the next call waits for the
	 * redial within its timeout, and runs once. */
	assert_int_equal(it_start(&d, NULL), 0);
	it_job(&small, 40, 30, 20, 2);
	assert_int_equal(gemmd_submit(cl, &small, 1, NULL, 10000), GM_OK);
	assert_true(it_job_ok(&small));
	assert_int_equal(it_stat(cl, "jobs.ok"), 1);
	it_job_free(&small);
	for (int i = 0; i < BIG; i++)
		it_job_free(&big[i]);
	gemmd_close(cl);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_results),
	    cmocka_unit_test(test_staging_falls_back),
	    cmocka_unit_test(test_tcp_stripes_by_default),
	    cmocka_unit_test(test_two_daemons),
	    cmocka_unit_test(test_daemon_dies),
	};

	seed = gm_testref_seed();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
