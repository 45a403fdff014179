/*
 * test_gpu_daemon.c - a real gemmd on the CUDA engine, driven through the
 * client library and checked against the CPU engine in this process.
 *
 * Every dtype, transpose pair, layout, kernel and with/without C runs on
 * 1x1x1, 7x13x5, 257x129x65 and 1024x1000x999, one request of 16 jobs
 * per (dtype, kernel, shape), all requests of a case in flight at once.
 * The CPU engine recomputes each job in fp64 from the very values gemmd
 * received (fp16, bf16 and tf32 inputs rounded here first), and the
 * error, measured against |alpha||op(A)||op(B)| + |beta||C|, must stay
 * under a bound scaled to the dtype and K. Each job's timings must be
 * positive phases inside its total. After each case the stats document
 * must show the host pool, the device pools and the queue empty. Further
 * cases: mapped output; depth-first issue with tiled as the default
 * kernel and a small device pool; requests larger than the host pool,
 * through the socket into pageable memory, tiled; concurrent jobs on
 * one stream whose phases add up to their totals; and, in
 * fault-injection builds, an injected cudaErrorMemoryAllocation (one job
 * fails, gemmd serves on) and a real sticky fault (every job answered
 * GM_EGPUFAULT, gemmd exits 3 within 5 s). Exits 77 (skipped) without a
 * GPU or without $GEMMD. GM_TEST_SEED=n repeats a run;
 * GM_TEST_FILTER=pattern picks cases.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gemmd.h"
#include "gm_build.h"
#include "gm_engine.h"
#include "gm_testref.h"
#include "itest.h"

#define REQ_JOBS     16 /* trans_a x trans_b x layout x C */
#define SHAPES	     4
#define TIMEOUT_MS   120000 /* one request, the largest shapes included */
#define START_S	     30.0   /* CUDA start-up and the pinned pool */
#define FAULT_EXIT_S 5.0    /* a faulted gemmd is gone within this */
#define EXIT_FAULT   3	    /* gemmd's exit status after a GPU fault */
#define MIB	     (1024ull * 1024)

/* What the CPU knows of one job: its operands as sent, in fp64 (rc NULL
 * without C), the product, and the magnitude bound of the product. */
struct tref {
	double *ra, *rb, *rc;
	double *ref; /* alpha*op(A)*op(B) + beta*C */
	double *mag; /* |alpha||op(A)||op(B)| + |beta||C| */
};

/* One request: up to 16 jobs of one dtype, kernel and shape. */
struct treq {
	gemmd_job j[REQ_JOBS];
	struct tref r[REQ_JOBS];
	uint32_t n;
	int rv, done;
	int tiled; /* its jobs run out of core: their phases overlap */
};

struct shape {
	uint32_t m, n, k;
};

/* A dtype with the kernel its jobs name. */
struct variant {
	int dtype, kernel;
};

static const struct shape shapes[SHAPES] = {
    {1, 1, 1},
    {7, 13, 5},
    {257, 129, 65},
    {1024, 1000, 999},
};

static it_daemon dmn;  /* the current case's gemmd */
static int show_log;   /* its log goes to stderr after the case */
static gm_engine *cpu; /* the reference, open for the whole run */
static pthread_mutex_t cpu_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cpu_cv = PTHREAD_COND_INITIALIZER;
static size_t cpu_done;
static uint64_t seed;

/* ---- numbers (random operands and dtypes: gm_testref) ------------------ */

/*
 * Error bounds, relative to M = |alpha||op(A)||op(B)| + |beta||C|, for a
 * result against the fp64 reference computed from the same inputs.
 * Against M, unlike against the result, cancellation cannot inflate the
 * ratio, and both sources of rounding below are bounded by it:
 * - accumulation: any summation order, FMA or not, errs by at most
 *   (K+2)u M per element (the gamma bound; +2 for alpha and beta). With
 *   random signs the errors add like a random walk and the Frobenius
 *   norm of the error stays near u ||M|| whatever K; 4 sqrt(K) u leaves
 *   room for blocked, split-K and tensor-core sums and for the fp64
 *   reference's own rounding. fp32, tf32, fp16 and bf16 accumulate in
 *   fp32 (u = 2^-24), fp64 in fp64 (2^-53).
 * - a fixed part: the output rounded to its dtype (fp16 2^-11, bf16
 *   2^-8, relative to the result and so to M), doubled; for tf32, the
 *   inputs (rounded here) rounded again by hardware that truncates where
 *   we rounded: 2^-11 on each of A and B.
 * So fp64 ~1e-14 and fp32 ~1e-6 (8e-6 at K = 999), tf32 and fp16 ~1e-3,
 * bf16 ~8e-3. A transposed operand or a wrong layout errs by about
 * 2/sqrt(K) of M (0.06 at K = 999), above every bound; fp32 computed
 * through TF32 errs by some 4e-4/sqrt(K), far above for K = 5 and 65.
 * Each element must also stay within the worst-case accumulation,
 * doubled for adders that truncate, plus one fp16 normal spacing of
 * absolute slack for fp16 results in the subnormal range (or flushed).
 */
static double unit_acc(int dtype)
{
	return dtype == GEMMD_FP64 ? 0x1p-53 : 0x1p-24;
}

static double fixed_part(int dtype)
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

static double tolerance(int dtype, uint32_t k)
{
	return fixed_part(dtype) + 4 * unit_acc(dtype) * sqrt((double)k);
}

static double elem_tolerance(int dtype, uint32_t k)
{
	return fixed_part(dtype) + 2.0 * (k + 2) * unit_acc(dtype);
}

static double elem_slack(int dtype)
{
	return dtype == GEMMD_FP16 ? 0x1p-14 : 0;
}

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- the daemon (the fixture of support/itest.h) ------------------------ */

/* Starts gemmd --engine=cuda with "--set" options and GEMMD_INJECT_FAULT
 * = fault (none when NULL); waits until it answers ping. */
static void start_daemon(const char *const *sets, const char *fault)
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

/* SIGTERM; gemmd must drain and exit 0. */
static void stop_daemon(void)
{
	int rv = it_stop(&dmn);

	show_log = rv != 0;
	assert_int_equal(rv, 0);
}

/* After each case: a case that failed half-way leaves gemmd running. */
static int reap_daemon(void **state)
{
	if (dmn.pid > 0)
		show_log = 1;
	if (show_log && dmn.dir[0] != '\0')
		it_tail_log(&dmn, "gemmd's log");
	it_cleanup(&dmn);
	show_log = 0;
	return 0;
}

/* ---- stats -------------------------------------------------------------- */

/* The number at a dotted path of the stats document; NAN when absent. */
static double stat_at(const cJSON *stats, const char *path)
{
	char buf[128], *save = NULL, *part;
	const cJSON *o = stats;

	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, ".", &save); part != NULL && o != NULL;
	     part = strtok_r(NULL, ".", &save))
		o = cJSON_GetObjectItemCaseSensitive(o, part);
	return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

static cJSON *fetch_stats(gemmd_client *c)
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

/* After every reply came back: job counts as expected, nothing queued
 * or running, every slab of the host pool and every device byte back. */
static void check_stats_idle(gemmd_client *c, double ok, double failed)
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

/* ---- jobs --------------------------------------------------------------- */

/* Fills n elements of dtype at p with random values; returns what was
 * stored, in fp64. */
static double *fill(int dtype, void *p, size_t n, uint64_t *s)
{
	double *ref = malloc(n * sizeof(double));

	assert_non_null(ref);
	gm_testref_fill(dtype, p, n, s, ref);
	return ref;
}

/* The bits of combo choose trans_a, trans_b, layout and C. */
static void make_job(gemmd_job *j, struct tref *r, const struct variant *v,
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

static void make_req(struct treq *q, const struct variant *v,
		     const struct shape *sh, uint32_t n)
{
	memset(q, 0, sizeof(*q));
	q->n = n;
	for (uint32_t i = 0; i < n; i++)
		make_job(&q->j[i], &q->r[i], v, sh, i);
}

static void free_req(struct treq *q)
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

static void on_reply(void *arg, int rv)
{
	struct treq *q = arg;

	q->rv = rv;
	__atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
}

static void submit_req(gemmd_client *c, struct treq *q, int timeout_ms)
{
	assert_int_equal(
	    gemmd_submit_async(c, q->j, q->n, NULL, timeout_ms, on_reply, q),
	    GM_OK);
}

static void wait_reqs(struct treq *q, size_t n, double limit_s)
{
	double until = seconds() + limit_s;

	for (size_t i = 0; i < n; i++)
		while (!__atomic_load_n(&q[i].done, __ATOMIC_ACQUIRE)) {
			assert_true(seconds() < until);
			usleep(1000);
		}
}

/* ---- the reference ------------------------------------------------------ */

static void on_cpu_done(gm_job *job, void *arg)
{
	pthread_mutex_lock(&cpu_mu);
	cpu_done++;
	pthread_cond_signal(&cpu_cv);
	pthread_mutex_unlock(&cpu_mu);
}

/* Runs g[0..n-1] on the CPU engine and waits for them. */
static void cpu_run(gm_job *g, size_t n)
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

static void absolute(double *p, size_t n)
{
	for (size_t i = 0; p != NULL && i < n; i++)
		p[i] = fabs(p[i]);
}

/* Computes ref and mag of every job of q that succeeded, in fp64; the
 * operands are left as their absolute values. */
static void compute_refs(struct treq *q)
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

/* ---- checks ------------------------------------------------------------- */

static const char *kernel_name(int kernel)
{
	return kernel == GEMMD_KERNEL_TILED    ? "tiled"
	       : kernel == GEMMD_KERNEL_CUBLAS ? "cublas"
					       : "default";
}

static void describe(const gemmd_job *j, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s %ux%ux%u ta=%d tb=%d %s %s",
		 gm_dtype_name(j->dtype), kernel_name(j->kernel), j->m, j->n,
		 j->k, j->trans_a, j->trans_b,
		 j->layout == GEMMD_COL_MAJOR ? "col" : "row",
		 j->c != NULL ? "C" : "noC");
}

/* Whether the engine coalesces j (its host bytes at most
 * GM_SMALL_JOB_BYTES): its result then comes back in its batch's copy,
 * mapped output or not. */
static uint64_t host_bytes(const gemmd_job *j)
{
	uint64_t es = gm_dtype_size(j->dtype);
	uint64_t mn = (uint64_t)j->m * j->n, k = j->k;

	return es * (j->m * k + k * j->n + mn * (j->c != NULL ? 2 : 1));
}

static int coalesced(const gemmd_job *j)
{
	return host_bytes(j) <= GM_SMALL_JOB_BYTES;
}

/* Each phase ran (d2h none with mapped output, but for small jobs) and
 * lies inside the total; so does their sum, less a little for the two
 * clocks, unless the job was tiled: its copies and GEMMs overlap, and
 * each phase is a sum over its tiles (PROTOCOL.md, Timings). */
static void check_timings(const gemmd_job *j, int mapped, int tiled)
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

/* Checks one result against its reference; returns error / tolerance. */
static double check_result(const gemmd_job *j, const struct tref *r)
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

/* Checks every job of an answered request: failed ones with code fail
 * (counted in *failed), the rest against the CPU. Prints a line. */
static void check_req(struct treq *q, int mapped, int fail, unsigned *failed)
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

/* ---- cases -------------------------------------------------------------- */

/* Every variant on every shape, one request each, all in flight at once;
 * returns the number of jobs, all of which must have succeeded. */
static unsigned sweep(const struct variant *v, size_t nv, int mapped)
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

static void check_idle(unsigned ok, unsigned failed)
{
	gemmd_client *c;

	assert_int_equal(gemmd_open(dmn.ipc, NULL, &c), GM_OK);
	check_stats_idle(c, ok, failed);
	gemmd_close(c);
}

/* One gemmd with the defaults runs the variants, then stops cleanly. */
static void run_case(const struct variant *v, size_t nv)
{
	unsigned jobs;

	start_daemon(NULL, NULL);
	jobs = sweep(v, nv, 0);
	check_idle(jobs, 0);
	stop_daemon();
}

static void test_fp64(void **state)
{
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP64, GEMMD_KERNEL_TILED}};

	run_case(v, 2);
}

static void test_fp32(void **state)
{
	const struct variant v[] = {{GEMMD_FP32, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP32, GEMMD_KERNEL_TILED}};

	run_case(v, 2);
}

static void test_tf32(void **state)
{
	const struct variant v[] = {{GEMMD_TF32, GEMMD_KERNEL_CUBLAS}};

	run_case(v, 1);
}

static void test_fp16(void **state)
{
	const struct variant v[] = {{GEMMD_FP16, GEMMD_KERNEL_CUBLAS}};

	run_case(v, 1);
}

static void test_bf16(void **state)
{
	const struct variant v[] = {{GEMMD_BF16, GEMMD_KERNEL_CUBLAS}};

	run_case(v, 1);
}

/* The kernels of jobs too large to coalesce write C straight into mapped
 * host memory: no D2H copy. */
static void test_mapped_output(void **state)
{
	const char *sets[] = {"mapped_output=true", NULL};
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP32, GEMMD_KERNEL_TILED},
				    {GEMMD_BF16, GEMMD_KERNEL_CUBLAS}};
	unsigned jobs;

	start_daemon(sets, NULL);
	jobs = sweep(v, 3, 1);
	check_idle(jobs, 0);
	stop_daemon();
}

/* Depth-first issue, tiled as the kernel of jobs that name none, and a
 * device pool that holds two of the largest jobs, so that most of a wave
 * waits inside the engine. */
static void test_depth_tiled_default(void **state)
{
	const char *sets[] = {"issue_order=depth", "kernel=tiled",
			      "device_pool_bytes=64M", "streams=3", NULL};
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_DEFAULT},
				    {GEMMD_FP32, GEMMD_KERNEL_DEFAULT},
				    {GEMMD_FP16, GEMMD_KERNEL_CUBLAS}};
	unsigned jobs;

	start_daemon(sets, NULL);
	jobs = sweep(v, 3, 0);
	check_idle(jobs, 0);
	stop_daemon();
}

/* The busy seconds of every device, summed. */
static double busy_s(gemmd_client *c)
{
	cJSON *s = fetch_stats(c);
	const cJSON *dev;
	double busy = 0;

	cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(s, "devices"))
	    busy += stat_at(dev, "busy_s");
	cJSON_Delete(s);
	return busy;
}

/*
 * Eight large jobs sent at once to a daemon with one stream a device:
 * each one's phases add up to its total within a millisecond and 1% (the
 * moments from its end to its reply), so the time the later ones waited
 * behind the others, in the engine and on the stream, shows as their
 * queue time and not as a gap; and the devices' busy time over the run
 * is no more than the time the run took.
 */
static void test_phases_add_up(void **state)
{
	enum { N = 8, DIM = 4096 };
	const char *sets[] = {"streams=1", "pool_bytes=2G", NULL};
	const size_t bytes = (size_t)DIM * DIM * sizeof(float);
	struct treq *q = calloc(N, sizeof(*q));
	double busy0, busy1, t0, t1, waited = 0;
	gemmd_client *c;

	assert_non_null(q);
	start_daemon(sets, NULL);
	assert_int_equal(gemmd_open(dmn.ipc, NULL, &c), GM_OK);
	busy0 = busy_s(c);
	t0 = seconds();
	for (int i = 0; i < N; i++) {
		gemmd_job *j = &q[i].j[0];

		*j = (gemmd_job){.dtype = GEMMD_FP32,
				 .layout = GEMMD_ROW_MAJOR,
				 .kernel = GEMMD_KERNEL_CUBLAS,
				 .m = DIM,
				 .n = DIM,
				 .k = DIM,
				 .alpha = 1.0,
				 .a = calloc(1, bytes),
				 .b = calloc(1, bytes),
				 .out = malloc(bytes)};
		assert_true(j->a != NULL && j->b != NULL && j->out != NULL);
		q[i].n = 1;
		submit_req(c, &q[i], TIMEOUT_MS);
	}
	wait_reqs(q, N, TIMEOUT_MS / 1000.0);
	t1 = seconds();
	busy1 = busy_s(c);
	for (int i = 0; i < N; i++) {
		const gemmd_timings *t = &q[i].j[0].t;
		double sum = t->queue_us + t->h2d_us + t->kernel_us + t->d2h_us;

		printf("  job %d: queue %.1f h2d %.1f kernel %.1f d2h %.1f "
		       "total %.1f us\n",
		       i, t->queue_us, t->h2d_us, t->kernel_us, t->d2h_us,
		       t->total_us);
		assert_int_equal(q[i].rv, GM_OK);
		assert_int_equal(q[i].j[0].status, GM_OK);
		assert_true(sum <= t->total_us + 10);
		assert_true(t->total_us - sum <= 1000 + 0.01 * t->total_us);
		waited = fmax(waited, t->queue_us - t->h2d_us - t->kernel_us);
		free((void *)q[i].j[0].a);
		free((void *)q[i].j[0].b);
		free(q[i].j[0].out);
	}
	/* One stream runs them one after another; whether a job waited for
	 * another's copies and kernels depends on how fast the requests
	 * arrived (staged one by one, they may not overlap at all), so it
	 * is shown, not asserted: what is asserted is that the phases add
	 * up to the total, and busy time stays within wall time. */
	printf("  longest wait for other jobs %.1f us; busy %.3f s over "
	       "%.3f s\n",
	       waited, busy1 - busy0, t1 - t0);
	assert_true(busy1 - busy0 <= t1 - t0);
	gemmd_close(c);
	free(q);
	check_idle(N, 0);
	stop_daemon();
}

/* One device allocation fails as cudaMalloc would: that job fails
 * GM_ENOMEM, the rest of its request and everything after succeed. */
static void test_fault_oom(void **state)
{
	const struct variant v64 = {GEMMD_FP64, GEMMD_KERNEL_CUBLAS},
			     v32 = {GEMMD_FP32, GEMMD_KERNEL_TILED};
	struct treq q[2];
	unsigned failed = 0;
	gemmd_client *c;

	if (!GEMMD_FAULT_INJECTION)
		skip();
	start_daemon(NULL, "oom");
	assert_int_equal(gemmd_open(dmn.ipc, NULL, &c), GM_OK);
	make_req(&q[0], &v64, &shapes[2], 4);
	submit_req(c, &q[0], TIMEOUT_MS);
	wait_reqs(&q[0], 1, TIMEOUT_MS / 1000.0);
	check_req(&q[0], 0, GM_ENOMEM, &failed);
	assert_int_equal(failed, 1);
	for (uint32_t i = 0; i < q[0].n; i++)
		if (q[0].j[i].status == GM_ENOMEM) {
			printf("  oom: job %u: %s\n", i, q[0].j[i].message);
			assert_non_null(strstr(q[0].j[i].message,
					       "cudaErrorMemoryAllocation"));
		}
	make_req(&q[1], &v32, &shapes[2], REQ_JOBS);
	submit_req(c, &q[1], TIMEOUT_MS);
	wait_reqs(&q[1], 1, TIMEOUT_MS / 1000.0);
	check_req(&q[1], 0, GM_OK, &failed);
	assert_int_equal(failed, 1);
	assert_int_equal(gemmd_ping(c, NULL, 5000), GM_OK);
	gemmd_close(c);
	check_idle(q[0].n + q[1].n - 1, 1);
	free_req(&q[0]);
	free_req(&q[1]);
	stop_daemon();
}

/* A real illegal-address fault in the first wave. Four requests are in
 * flight, and the host pool holds two of their jobs at a time, so jobs
 * are running and queued when it strikes: every one is answered
 * GM_EGPUFAULT (a request that arrives after it is refused whole with
 * that code; with several GPUs, a job another GPU ran may succeed), a
 * new request is refused or finds gemmd gone, and gemmd exits 3. */
static void test_fault_sticky(void **state)
{
	enum { NQ = 4, NJ = 4 };
	const char *sets[] = {"pool_bytes=16M", NULL};
	const struct variant v = {GEMMD_FP64, GEMMD_KERNEL_CUBLAS};
	const struct shape big = {512, 512, 512}, small = {8, 8, 8};
	struct treq q[NQ], probe;
	unsigned ran = 0, refused = 0, illegal = 0, elsewhere = 0;
	double t0, answered, took, ndev;
	cJSON *st;
	const char *text = "";
	gemmd_client *c;
	int rv;

	if (!GEMMD_FAULT_INJECTION)
		skip();
	start_daemon(sets, "sticky");
	assert_int_equal(gemmd_open(dmn.ipc, NULL, &c), GM_OK);
	st = fetch_stats(c);
	ndev = cJSON_GetArraySize(cJSON_GetObjectItem(st, "devices"));
	cJSON_Delete(st);
	for (int i = 0; i < NQ; i++)
		make_req(&q[i], &v, &big, NJ);
	t0 = seconds();
	for (int i = 0; i < NQ; i++)
		submit_req(c, &q[i], 30000);
	wait_reqs(q, NQ, 60);
	answered = seconds() - t0;
	for (int i = 0; i < NQ; i++) {
		if (q[i].rv != GM_OK) {
			assert_int_equal(q[i].rv, GM_EGPUFAULT);
			refused += q[i].n;
			continue;
		}
		for (uint32_t k = 0; k < q[i].n; k++) {
			const gemmd_job *j = &q[i].j[k];

			if (j->status == GM_OK && ndev > 1) {
				elsewhere++;
				continue;
			}
			if (j->status != GM_EGPUFAULT)
				print_error("job %d.%u: %s: %s\n", i, k,
					    gm_errname(j->status), j->message);
			assert_int_equal(j->status, GM_EGPUFAULT);
			assert_true(j->message[0] != '\0');
			if (strstr(j->message, "illegal") != NULL) {
				illegal++;
				text = j->message;
			}
			ran++;
		}
	}
	assert_true(illegal >= 1);
	make_req(&probe, &v, &small, 1);
	submit_req(c, &probe, 3000);
	rv = it_wait_exit(&dmn, 30000, NULL);
	took = seconds() - t0;
	printf("  sticky: \"%s\"\n", text);
	printf("  sticky: %u jobs answered EGPUFAULT (%u naming the illegal "
	       "address), %u in requests refused whole, %u ok on another GPU; "
	       "all answered after %.0f ms; gemmd exited %d after %.0f ms\n",
	       ran, illegal, refused, elsewhere, answered * 1e3, rv,
	       took * 1e3);
	show_log = 1;
	assert_int_equal(rv, EXIT_FAULT);
	assert_true(took <= FAULT_EXIT_S);
	wait_reqs(&probe, 1, 10);
	printf("  sticky: a request after the fault: %s\n",
	       gm_errname(probe.rv));
	assert_true(probe.rv == GM_EGPUFAULT || probe.rv == GM_ESHUTDOWN ||
		    probe.rv == GM_ETRANSPORT || probe.rv == GM_ETIMEDOUT);
	gemmd_close(c);
	for (int i = 0; i < NQ; i++)
		free_req(&q[i]);
	free_req(&probe);
}

/* Requests larger than the host pool, through the socket: received into
 * pageable memory (pageable_max_bytes) and their jobs tiled by the
 * engine out of core, from pageable memory; every transpose, layout and
 * C, both kernels, right. One request at a time, so that the cap holds
 * each; all of them in pageable memory, none of it held afterwards. */
static void test_pageable(void **state)
{
	const char *sets[] = {"pool_bytes=1M", "pageable_max_bytes=1G", NULL};
	const struct variant v[] = {{GEMMD_FP64, GEMMD_KERNEL_CUBLAS},
				    {GEMMD_FP32, GEMMD_KERNEL_TILED},
				    {GEMMD_FP16, GEMMD_KERNEL_CUBLAS}};
	const gemmd_open_opts socket = {.flags = GEMMD_OPEN_NO_SHM};
	unsigned jobs = 0, failed = 0, nq = 0;
	struct treq q;
	gemmd_client *c;
	cJSON *st;

	start_daemon(sets, NULL);
	assert_int_equal(gemmd_open(dmn.ipc, &socket, &c), GM_OK);
	for (size_t i = 0; i < 3; i++)
		for (int sh = 2; sh < SHAPES; sh++) {
			make_req(&q, &v[i], &shapes[sh], REQ_JOBS);
			q.tiled = 1;
			submit_req(c, &q, TIMEOUT_MS);
			wait_reqs(&q, 1, TIMEOUT_MS / 1000.0);
			check_req(&q, 0, GM_OK, &failed);
			jobs += q.n;
			nq++;
			free_req(&q);
		}
	assert_int_equal(failed, 0);
	/* A request's memory goes once its last reply is written. */
	for (int i = 0; i < 100; i++) {
		st = fetch_stats(c);
		if (stat_at(st, "pageable.bytes") == 0)
			break;
		cJSON_Delete(st);
		st = NULL;
		usleep(50000);
	}
	assert_non_null(st);
	printf("  pageable: %.0f requests, peak %.0f MiB\n",
	       stat_at(st, "pageable.requests"),
	       stat_at(st, "pageable.peak_bytes") / MIB);
	assert_true(stat_at(st, "pageable.requests") == nq);
	assert_true(stat_at(st, "pageable.held") == 0);
	cJSON_Delete(st);
	gemmd_close(c);
	check_idle(jobs, 0);
	stop_daemon();
}

/* ---- setup -------------------------------------------------------------- */

static int open_cpu(void **state)
{
	gm_engine_config cfg = {.kind = GM_ENGINE_CPU, .pool_bytes = 64 * MIB};
	char msg[256] = "";
	int rv =
	    gm_engine_open(&cfg, on_cpu_done, NULL, &cpu, msg, sizeof(msg));

	if (rv != GM_OK)
		printf("cpu engine: %s: %s\n", gm_errname(rv), msg);
	return rv;
}

static int close_cpu(void **state)
{
	gm_engine_close(cpu);
	return 0;
}

int main(void)
{
	const char *s = getenv("GM_TEST_SEED");
	const char *filter = getenv("GM_TEST_FILTER");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_fp64, reap_daemon),
	    cmocka_unit_test_teardown(test_fp32, reap_daemon),
	    cmocka_unit_test_teardown(test_tf32, reap_daemon),
	    cmocka_unit_test_teardown(test_fp16, reap_daemon),
	    cmocka_unit_test_teardown(test_bf16, reap_daemon),
	    cmocka_unit_test_teardown(test_mapped_output, reap_daemon),
	    cmocka_unit_test_teardown(test_depth_tiled_default, reap_daemon),
	    cmocka_unit_test_teardown(test_pageable, reap_daemon),
	    cmocka_unit_test_teardown(test_phases_add_up, reap_daemon),
	    cmocka_unit_test_teardown(test_fault_oom, reap_daemon),
	    cmocka_unit_test_teardown(test_fault_sticky, reap_daemon),
	};

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
	return cmocka_run_group_tests(tests, open_cpu, close_cpu);
}
