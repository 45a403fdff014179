/*
 * gpu_daemon_fx.c - what the tests in test_gpu_daemon.c,
 * test_gpu_daemon_faults.c share; see gpu_daemon_fx.h.
 */
#include "gpu_daemon_fx.h"

const struct shape shapes[SHAPES] = {
    {1, 1, 1},
    {7, 13, 5},
    {257, 129, 65},
    {1024, 1000, 999},
};

it_daemon dmn; /* the current case's gemmd */

int show_log; /* its log goes to stderr after the case */

gm_engine *cpu; /* the reference, open for the whole run */

pthread_mutex_t cpu_mu = PTHREAD_MUTEX_INITIALIZER;

pthread_cond_t cpu_cv = PTHREAD_COND_INITIALIZER;

size_t cpu_done;

uint64_t seed;

double unit_acc(int dtype)
{
	return dtype == GEMMD_FP64 ? 0x1p-53 : 0x1p-24;
}

double fixed_part(int dtype)
{
	switch (dtype) {
	case GEMMD_FP64:
		return 2 * 0x1p-53;
	case GEMMD_FP32:
		return 2 * 0x1p-24;
	case GEMMD_TF32:
	case GEMMD_FP16:
		return 0x1p-10;
	default:
		return 0x1p-7;
	}
}

double tolerance(int dtype, uint32_t k)
{
	return fixed_part(dtype) + 4 * unit_acc(dtype) * sqrt((double)k);
}

double elem_tolerance(int dtype, uint32_t k)
{
	return fixed_part(dtype) + 2.0 * (k + 2) * unit_acc(dtype);
}

double elem_slack(int dtype)
{
	return dtype == GEMMD_FP16 ? 0x1p-14 : 0;
}

double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

void start_daemon(const char *const *sets, const char *fault)
{
	const char *args[32];
	int argc = 0;

	assert_int_equal(it_setup(&dmn), 0);
	dmn.engine = "cuda";
	dmn.fault = fault;
	dmn.start_ms = START_S * 1000;
	dmn.answer_only = true;
	for (int i = 0; sets != NULL && sets[i] != NULL; i++) {
		args[argc++] = "--set";
		args[argc++] = sets[i];
	}
	args[argc] = NULL;
	show_log = 1; /* until it answers */
	assert_int_equal(it_start(&dmn, args), 0);
	show_log = 0;
}

void stop_daemon(void)
{
	int rv = it_stop(&dmn);

	show_log = rv != 0;
	assert_int_equal(rv, 0);
}

int reap_daemon(void **state)
{
	if (dmn.pid > 0)
		show_log = 1;
	if (show_log && dmn.dir[0] != '\0')
		it_tail_log(&dmn, "gemmd's log");
	it_cleanup(&dmn);
	show_log = 0;
	return 0;
}

double stat_at(const cJSON *stats, const char *path)
{
	char buf[128], *save = NULL, *part;
	const cJSON *o = stats;

	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, ".", &save); part != NULL && o != NULL;
	     part = strtok_r(NULL, ".", &save))
		o = cJSON_GetObjectItemCaseSensitive(o, part);
	return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

cJSON *fetch_stats(gemmd_client *c)
{
	char *doc = NULL;
	cJSON *root, *stats;

	assert_int_equal(gemmd_stats(c, &doc, 5000), GM_OK);
	assert_non_null(root = cJSON_Parse(doc));
	free(doc);
	stats = cJSON_DetachItemFromObject(root, "stats");
	cJSON_Delete(root);
	assert_non_null(stats);
	return stats;
}

void check_stats_idle(gemmd_client *c, double ok, double failed)
{
	cJSON *s = fetch_stats(c);
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(s, "devices");
	const cJSON *dev,
	    *engine = cJSON_GetObjectItemCaseSensitive(s, "engine");
	double dev_jobs = 0;

	assert_true(cJSON_IsString(engine));
	assert_string_equal(engine->valuestring, "cuda");
	assert_true(stat_at(s, "jobs.ok") == ok);
	assert_true(stat_at(s, "jobs.failed") == failed);
	assert_true(stat_at(s, "jobs.queued") == 0);
	assert_true(stat_at(s, "jobs.inflight") == 0);
	assert_true(stat_at(s, "pool.used") == 0);
	assert_true(stat_at(s, "pool.slabs") == 0);
	assert_true(stat_at(s, "pool.size") > 0);
	assert_true(cJSON_GetArraySize(devs) >= 1);
	cJSON_ArrayForEach(dev, devs)
	{
		assert_true(stat_at(dev, "mem_used") == 0);
		assert_true(stat_at(dev, "mem_total") > 0);
		dev_jobs += stat_at(dev, "jobs");
	}
	if (failed == 0)
		assert_true(dev_jobs == ok);
	printf("  stats: jobs.ok %.0f, jobs.failed %.0f, pool.used %.0f, "
	       "%d device(s) idle, latency_us.total.p50 %.0f\n",
	       ok, failed, stat_at(s, "pool.used"), cJSON_GetArraySize(devs),
	       stat_at(s, "latency_us.total.p50"));
	cJSON_Delete(s);
}

double *fill(int dtype, void *p, size_t n, uint64_t *s)
{
	double *ref = malloc(n * sizeof(double));

	assert_non_null(ref);
	gm_testref_fill(dtype, p, n, s, ref);
	return ref;
}

void make_job(gemmd_job *j, struct tref *r, const struct variant *v,
	      const struct shape *sh, unsigned combo)
{
	size_t es = gm_testref_esize(v->dtype), na = (size_t)sh->m * sh->k,
	       nb = (size_t)sh->k * sh->n, nc = (size_t)sh->m * sh->n;
	int with_c = (combo >> 3) & 1;
	uint64_t s = seed++;
	void *a = malloc(na * es), *b = malloc(nb * es), *c = NULL;
	void *out = malloc(nc * es);

	assert_true(a && b && out);
	memset(r, 0, sizeof(*r));
	r->ra = fill(v->dtype, a, na, &s);
	r->rb = fill(v->dtype, b, nb, &s);
	if (with_c) {
		assert_non_null(c = malloc(nc * es));
		r->rc = fill(v->dtype, c, nc, &s);
	}
	memset(out, 0xff, nc * es); /* NaN in every dtype */
	*j = (gemmd_job){
	    .dtype = v->dtype,
	    .layout = (combo >> 2) & 1 ? GEMMD_COL_MAJOR : GEMMD_ROW_MAJOR,
	    .kernel = v->kernel,
	    .trans_a = combo & 1,
	    .trans_b = (combo >> 1) & 1,
	    .m = sh->m,
	    .n = sh->n,
	    .k = sh->k,
	    /* Exact in every dtype; without C, beta must be ignored. */
	    .alpha = 1.5,
	    .beta = with_c ? -0.75 : 2.0,
	    .a = a,
	    .b = b,
	    .c = c,
	    .out = out,
	};
}

void make_req(struct treq *q, const struct variant *v, const struct shape *sh,
	      uint32_t n)
{
	memset(q, 0, sizeof(*q));
	q->n = n;
	for (uint32_t i = 0; i < n; i++)
		make_job(&q->j[i], &q->r[i], v, sh, i);
}

void free_req(struct treq *q)
{
	for (uint32_t i = 0; i < q->n; i++) {
		free((void *)q->j[i].a);
		free((void *)q->j[i].b);
		free((void *)q->j[i].c);
		free(q->j[i].out);
		free(q->r[i].ra);
		free(q->r[i].rb);
		free(q->r[i].rc);
		free(q->r[i].ref);
		free(q->r[i].mag);
	}
}

void on_reply(void *arg, int rv)
{
	struct treq *q = arg;

	q->rv = rv;
	__atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
}

void submit_req(gemmd_client *c, struct treq *q, int timeout_ms)
{
	assert_int_equal(
	    gemmd_submit_async(c, q->j, q->n, NULL, timeout_ms, on_reply, q),
	    GM_OK);
}

void wait_reqs(struct treq *q, size_t n, double limit_s)
{
	double until = seconds() + limit_s;

	for (size_t i = 0; i < n; i++)
		while (!__atomic_load_n(&q[i].done, __ATOMIC_ACQUIRE)) {
			assert_true(seconds() < until);
			usleep(1000);
		}
}

void on_cpu_done(gm_job *job, void *arg)
{
	pthread_mutex_lock(&cpu_mu);
	cpu_done++;
	pthread_cond_signal(&cpu_cv);
	pthread_mutex_unlock(&cpu_mu);
}

void cpu_run(gm_job *g, size_t n)
{
	gm_job *wave[REQ_JOBS];
	size_t before;

	for (size_t i = 0; i < n; i++)
		wave[i] = &g[i];
	pthread_mutex_lock(&cpu_mu);
	before = cpu_done;
	pthread_mutex_unlock(&cpu_mu);
	assert_int_equal(gm_engine_submit(cpu, wave, n), GM_OK);
	pthread_mutex_lock(&cpu_mu);
	while (cpu_done < before + n)
		pthread_cond_wait(&cpu_cv, &cpu_mu);
	pthread_mutex_unlock(&cpu_mu);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(g[i].status, GM_OK);
}

void absolute(double *p, size_t n)
{
	for (size_t i = 0; p != NULL && i < n; i++)
		p[i] = fabs(p[i]);
}

void compute_refs(struct treq *q)
{
	gm_job g[REQ_JOBS];
	uint32_t idx[REQ_JOBS];
	size_t n = 0;

	for (uint32_t i = 0; i < q->n; i++) {
		const gemmd_job *j = &q->j[i];
		struct tref *r = &q->r[i];
		size_t nc = (size_t)j->m * j->n;

		if (j->status != GM_OK)
			continue;
		assert_non_null(r->ref = malloc(nc * sizeof(double)));
		assert_non_null(r->mag = malloc(nc * sizeof(double)));
		memset(&g[n], 0, sizeof(g[n]));
		g[n].d = (gm_job_desc){
		    .dtype = GM_FP64,
		    .trans_a = (uint8_t)j->trans_a,
		    .trans_b = (uint8_t)j->trans_b,
		    .layout = (uint8_t)j->layout,
		    .kernel = GM_KERNEL_CUBLAS,
		    .flags = r->rc != NULL ? GM_JOB_HAS_C : 0,
		    .m = j->m,
		    .n = j->n,
		    .k = j->k,
		    .alpha = j->alpha,
		    .beta = j->beta,
		};
		g[n].a = r->ra;
		g[n].b = r->rb;
		g[n].c = r->rc;
		g[n].out = r->ref;
		idx[n++] = i;
	}
	cpu_run(g, n);
	for (size_t i = 0; i < n; i++) {
		gm_job_desc *d = &g[i].d;

		absolute(g[i].a, (size_t)d->m * d->k);
		absolute(g[i].b, (size_t)d->k * d->n);
		absolute(g[i].c, (size_t)d->m * d->n);
		d->alpha = fabs(d->alpha);
		d->beta = fabs(d->beta);
		g[i].out = q->r[idx[i]].mag;
	}
	cpu_run(g, n);
}

const char *kernel_name(int kernel)
{
	return kernel == GEMMD_KERNEL_TILED    ? "tiled"
	       : kernel == GEMMD_KERNEL_CUBLAS ? "cublas"
					       : "default";
}

void describe(const gemmd_job *j, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s %ux%ux%u ta=%d tb=%d %s %s",
		 gm_dtype_name(j->dtype), kernel_name(j->kernel), j->m, j->n,
		 j->k, j->trans_a, j->trans_b,
		 j->layout == GEMMD_COL_MAJOR ? "col" : "row",
		 j->c != NULL ? "C" : "noC");
}

uint64_t host_bytes(const gemmd_job *j)
{
	uint64_t es = gm_dtype_size(j->dtype);
	uint64_t mn = (uint64_t)j->m * j->n, k = j->k;

	return es * (j->m * k + k * j->n + mn * (j->c != NULL ? 2 : 1));
}

int coalesced(const gemmd_job *j)
{
	return host_bytes(j) <= GM_SMALL_JOB_BYTES;
}

void check_timings(const gemmd_job *j, int mapped, int tiled)
{
	const gemmd_timings *t = &j->t;
	double sum =
	    t->queue_us + (tiled ? 0 : t->h2d_us + t->kernel_us + t->d2h_us);
	/* A small job alone may run on its host memory: no copies. */
	int direct = t->h2d_us == 0 && t->d2h_us == 0 &&
		     host_bytes(j) <= GM_DIRECT_JOB_BYTES;
	int ok =
	    t->queue_us >= 0 && t->kernel_us > 0 &&
	    (direct ||
	     (t->h2d_us > 0 &&
	      (mapped && !coalesced(j) ? t->d2h_us == 0 : t->d2h_us > 0))) &&
	    t->queue_us <= t->total_us && t->h2d_us <= t->total_us &&
	    t->kernel_us <= t->total_us && t->d2h_us <= t->total_us &&
	    sum <= t->total_us * 1.01 + 10;
	char what[128];

	if (!ok) {
		describe(j, what, sizeof(what));
		print_error("%s: timings queue %.1f h2d %.1f kernel %.1f d2h "
			    "%.1f total %.1f us\n",
			    what, t->queue_us, t->h2d_us, t->kernel_us,
			    t->d2h_us, t->total_us);
	}
	assert_true(ok);
}

double check_result(const gemmd_job *j, const struct tref *r)
{
	size_t n = (size_t)j->m * j->n, bad = n;
	double tol = tolerance(j->dtype, j->k),
	       etol = elem_tolerance(j->dtype, j->k),
	       slack = elem_slack(j->dtype), num = 0, den = 0, err;
	char what[128];

	for (size_t i = 0; i < n; i++) {
		double d = gm_testref_get(j->dtype, j->out, i) - r->ref[i];

		num += d * d;
		den += r->mag[i] * r->mag[i];
		if (bad == n && !(fabs(d) <= etol * r->mag[i] + slack))
			bad = i;
	}
	num = sqrt(num);
	den = sqrt(den);
	err = num / (tol * den + sqrt((double)n) * slack + 1e-300);
	if (!(err <= 1) || bad < n) {
		describe(j, what, sizeof(what));
		print_error("%s: error %.3g of |M| %.3g, tolerance %.3g\n",
			    what, num / den, den, tol);
		if (bad < n)
			print_error("  element %zu: %.17g, want %.17g, bound "
				    "%.3g\n",
				    bad, gm_testref_get(j->dtype, j->out, bad),
				    r->ref[bad], etol * r->mag[bad] + slack);
	}
	assert_true(err <= 1);
	assert_true(bad == n);
	return err;
}

void check_req(struct treq *q, int mapped, int fail, unsigned *failed)
{
	double worst = 0, h = 0, k = 0, d = 0, ran = 0, flops;
	const gemmd_job *j0 = &q->j[0];

	if (q->rv != GM_OK)
		print_error("request refused: %s: %s\n", gm_errname(q->rv),
			    j0->message);
	assert_int_equal(q->rv, GM_OK);
	for (uint32_t i = 0; i < q->n; i++) {
		const gemmd_job *j = &q->j[i];

		if (j->status != GM_OK) {
			if (j->status != fail)
				print_error("job %u: %s: %s\n", i,
					    gm_errname(j->status), j->message);
			assert_int_equal(j->status, fail);
			assert_true(j->message[0] != '\0');
			(*failed)++;
			continue;
		}
		assert_string_equal(j->message, "");
		check_timings(j, mapped, q->tiled);
		h += j->t.h2d_us;
		k += j->t.kernel_us;
		d += j->t.d2h_us;
		ran++;
	}
	compute_refs(q);
	for (uint32_t i = 0; i < q->n; i++)
		if (q->j[i].status == GM_OK)
			worst = fmax(worst, check_result(&q->j[i], &q->r[i]));
	if (ran == 0)
		return;
	flops = 2.0 * j0->m * j0->n * j0->k;
	printf("  %-5s %-7s %4ux%4ux%4u: error/tol %.2g; mean h2d %7.1f us, "
	       "kernel %8.1f us (%7.1f GFLOP/s), d2h %7.1f us\n",
	       gm_dtype_name(j0->dtype), kernel_name(j0->kernel), j0->m, j0->n,
	       j0->k, worst, h / ran, k / ran,
	       k > 0 ? flops * ran / k / 1e3 : 0, d / ran);
}

unsigned sweep(const struct variant *v, size_t nv, int mapped)
{
	size_t nq = nv * SHAPES;
	struct treq *q = calloc(nq, sizeof(*q));
	unsigned jobs = 0, failed = 0;
	gemmd_client *c;

	assert_non_null(q);
	assert_int_equal(gemmd_open(dmn.ipc, NULL, &c), GM_OK);
	for (size_t i = 0; i < nq; i++) {
		make_req(&q[i], &v[i / SHAPES], &shapes[i % SHAPES], REQ_JOBS);
		submit_req(c, &q[i], TIMEOUT_MS);
	}
	wait_reqs(q, nq, TIMEOUT_MS / 1000.0);
	for (size_t i = 0; i < nq; i++) {
		check_req(&q[i], mapped, GM_OK, &failed);
		jobs += q[i].n;
		free_req(&q[i]);
	}
	gemmd_close(c);
	free(q);
	assert_int_equal(failed, 0);
	return jobs;
}

void check_idle(unsigned ok, unsigned failed)
{
	gemmd_client *c;

	assert_int_equal(gemmd_open(dmn.ipc, NULL, &c), GM_OK);
	check_stats_idle(c, ok, failed);
	gemmd_close(c);
}

void run_case(const struct variant *v, size_t nv)
{
	unsigned jobs;

	start_daemon(NULL, NULL);
	jobs = sweep(v, nv, 0);
	check_idle(jobs, 0);
	stop_daemon();
}

int open_cpu(void **state)
{
	gm_engine_config cfg = {.kind = GM_ENGINE_CPU, .pool_bytes = 64 * MIB};
	char msg[256] = "";
	int rv =
	    gm_engine_open(&cfg, on_cpu_done, NULL, &cpu, msg, sizeof(msg));

	if (rv != GM_OK)
		printf("cpu engine: %s: %s\n", gm_errname(rv), msg);
	return rv;
}

int close_cpu(void **state)
{
	gm_engine_close(cpu);
	return 0;
}

int gpu_daemon_main(const struct CMUnitTest *tests, size_t n)
{
	const char *s = getenv("GM_TEST_SEED");
	const char *filter = getenv("GM_TEST_FILTER");

	if (getenv("GEMMD") == NULL) {
		printf("GEMMD is not set: skipped\n");
		return 77;
	}
	if (gm_engine_cuda_count() == 0) {
		printf("no CUDA device: skipped\n");
		return 77;
	}
	seed = s != NULL ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
	printf("GM_TEST_SEED=%llu\n", (unsigned long long)seed);
	if (filter != NULL)
		cmocka_set_test_filter(filter);
	return _cmocka_run_group_tests("tests", tests, n, open_cpu, close_cpu);
}
