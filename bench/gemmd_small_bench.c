/*
 * gemmd_small_bench.c - small jobs at the speed of the link: batches of
 * small GEMMs through the CUDA engine in process and through a real
 * gemmd, each beside the bounds of the same batch measured in the same
 * run.
 *
 * The batches are the issue's: 4096 jobs of 64^3 fp32, 65536 of 16^3,
 * and 1000 of random shapes, m, n and k each in [8, 256]. For each, the
 * bounds (gm_small_bound.c): its bytes through the link both ways at
 * once as two plain copies; the copies the engine plans for it, in,
 * back and both at once (the copy bound); all its GEMMs as one batched
 * cuBLAS call, and as one cublasGemmEx each. Then the engine in process
 * (gm_small_engine.c), coalescing and, for comparison, job by job; then,
 * with --gemmd, a gemmd started for the batch, with the jobs in a
 * shared-memory region and through the socket, one request each.
 *
 * Then: the engine's time per job for square jobs of growing size with
 * and without coalescing (--threshold alone runs only this), where
 * GM_SMALL_JOB_BYTES comes from; the first job after start, in fresh
 * processes, cold, after the engine's warm-up, and with
 * CUDA_MODULE_LOADING=EAGER, and through a fresh gemmd once it says it
 * is ready, a job of each dtype and kernel; one 64^3 job's
 * round trip; the CPU an idle engine and an idle gemmd use.
 */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gm_bench.h"
#include "gm_proto.h"
#include "gm_rawrate.h"
#include "gm_small.h"

#include <cjson/cJSON.h>

#define REPS_DEFAULT   5
#define STREAMS	       8 /* gemmd's default */
#define SUBMIT_MS      120000
#define LAT_REPS       200
#define START_READY_MS 60000 /* a fresh gemmd's warm-up, at most */
#define FIRST_S	       60    /* a first-job child, at most */
#define MIB	       (1024.0 * 1024)

struct opts {
	const char *gemmd, *self;
	int reps, threshold_only, latency_only;
	char *sets[GM_BENCH_SETS_MAX - 3]; /* --set, for every gemmd */
	int nsets;
};

struct spec {
	const char *name;
	uint32_t jobs, lo, hi;
};

static const struct spec specs[] = {
    {"4096 x 64^3", 4096, 64, 64},
    {"65536 x 16^3", 65536, 16, 16},
    {"1000 mixed 8..256", 1000, 8, 256},
};

/* ---- gemmd ----------------------------------------------------------------
 */

/* A gemmd for up to jobs jobs of at most hi^3 in one request, with the
 * setting extra (NULL: none) after --set's. */
static int start_for(const struct opts *o, uint32_t jobs, uint32_t hi,
		     char *extra, gm_daemon_proc *p, char *err, size_t errlen)
{
	gm_case c = {"small", "", GEMMD_FP32,	      hi, jobs, 1,
		     0,	      0,  GEMMD_KERNEL_CUBLAS};
	char *sets[GM_BENCH_SETS_MAX] = {"max_jobs_per_request=65536",
					 "queue_depth=1048576"};
	int n = 2;

	for (int i = 0; i < o->nsets; i++)
		sets[n++] = o->sets[i];
	if (extra != NULL)
		sets[n++] = extra;
	return gm_drive_start(o->gemmd, &c, STREAMS, sets, n, p, err, errlen);
}

/* A gemmd for batch b: pools for all of it, one request of all jobs. */
static int start(const struct opts *o, const sb_batch *b, uint32_t hi,
		 gm_daemon_proc *p, char *err, size_t errlen)
{
	return start_for(o, b->jobs, hi, NULL, p, err, errlen);
}

/* The jobs of b as a client names them: in region r at the layout's
 * offsets, or, r NULL, as pointers into base. */
static void client_jobs(const sb_batch *b, gemmd_region *r, char *base,
			gemmd_job *j)
{
	for (uint32_t i = 0; i < b->jobs; i++) {
		uint64_t at[3] = {b->at[i], sb_batch_b(b, i),
				  sb_batch_out(b, i)};

		memset(&j[i], 0, sizeof(j[i]));
		j[i].dtype = GEMMD_FP32;
		j[i].kernel = GEMMD_KERNEL_CUBLAS;
		j[i].m = b->m[i];
		j[i].n = b->n[i];
		j[i].k = b->k[i];
		j[i].alpha = 1;
		if (r != NULL) {
			j[i].a_ref = (gemmd_region_ref){r, at[0]};
			j[i].b_ref = (gemmd_region_ref){r, at[1]};
			j[i].out_ref = (gemmd_region_ref){r, at[2]};
		} else {
			j[i].a = base + at[0];
			j[i].b = base + at[1];
			j[i].out = base + at[2];
		}
	}
}

/* One request of n jobs; ms, or < 0 with err. */
static double submit(gemmd_client *cl, gemmd_job *j, uint32_t n, char *err,
		     size_t errlen)
{
	double t0 = sb_now_ms();
	int rv = gemmd_submit(cl, j, n, NULL, SUBMIT_MS);

	for (uint32_t i = 0; rv == GM_OK && i < n; i++)
		rv = j[i].status;
	if (rv != GM_OK) {
		snprintf(err, errlen, "%s: %s", gemmd_strerror(rv),
			 gemmd_last_error());
		return -1;
	}
	return sb_now_ms() - t0;
}

static double timed(gemmd_client *cl, gemmd_job *j, uint32_t n, int reps,
		    char *err, size_t errlen)
{
	double v[16];

	for (int i = -1; i < reps; i++) {
		double ms = submit(cl, j, n, err, errlen);

		if (ms < 0)
			return -1;
		if (i >= 0)
			v[i] = ms;
	}
	return sb_median(v, reps);
}

/* CPU seconds per second a process used over a second. */
static double proc_cpu(int pid)
{
	char path[64];
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long t[2][2];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(path, "r");
		int ok = f != NULL &&
			 fscanf(f,
				"%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u "
				"%*u %*u %*u %lu %lu",
				&t[i][0], &t[i][1]) == 2;

		if (f != NULL)
			fclose(f);
		if (!ok)
			return -1;
		if (i == 0)
			sleep(1);
	}
	return (double)(t[1][0] + t[1][1] - t[0][0] - t[0][1]) / hz;
}

struct daemon_result {
	double region, socket; /* ms */
	double error;
};

static int drive(const struct opts *o, const sb_batch *b, uint32_t hi,
		 struct daemon_result *res, char *err, size_t errlen)
{
	gemmd_job *j = calloc(b->jobs, sizeof(*j));
	char *sock = malloc(b->bytes);
	gemmd_region *r = NULL;
	gm_daemon_proc p;
	int rv = -1;

	if (j == NULL || sock == NULL ||
	    start(o, b, hi, &p, err, errlen) != 0) {
		free(j);
		free(sock);
		return -1;
	}
	if (gemmd_region_create(p.cl, b->bytes, &r) != GM_OK) {
		snprintf(err, errlen, "region: %s", gemmd_last_error());
		goto done;
	}
	sb_batch_fill(b, gemmd_region_ptr(r));
	memcpy(sock, gemmd_region_ptr(r), b->bytes);
	client_jobs(b, r, NULL, j);
	if ((res->region = timed(p.cl, j, b->jobs, o->reps, err, errlen)) < 0)
		goto done;
	res->error = sb_batch_check(b, gemmd_region_ptr(r));
	client_jobs(b, NULL, sock, j);
	if ((res->socket = timed(p.cl, j, b->jobs, o->reps, err, errlen)) < 0)
		goto done;
	if (memcmp(sock, gemmd_region_ptr(r), b->bytes) != 0)
		printf("    (results through the region and the socket "
		       "differ)\n");
	rv = 0;
done:
	if (r != NULL)
		gemmd_region_release(r);
	if (gm_drive_stop(&p) != 0 && rv == 0) {
		snprintf(err, errlen, "gemmd exited non-zero");
		rv = -1;
	}
	free(j);
	free(sock);
	return rv;
}

/* The engine's line for one job alone (sb_engine_run's latency). */
static void engine_latency(const char *indent, const sb_engine_result *er)
{
	printf("%sone 64^3 job alone, engine in process: p50 %.1f us (%.1f "
	       "us by copies, %.1f us with spin_us 0); idle engine %.2f%% "
	       "of a CPU\n",
	       indent, er->lat_p50 * 1e3, er->lat_p50_copies * 1e3,
	       er->lat_p50_nospin * 1e3, er->idle_cpu * 100);
}

/* ---- batches --------------------------------------------------------------
 */

static void row(const char *what, double ms, const sb_batch *b,
		const sb_bound *bd)
{
	printf("    %-20s %9.2f ms  %6.2f us/job  %5.2fx copies  %5.2fx "
	       "link\n",
	       what, ms, ms * 1e3 / b->jobs, ms / bd->copies_ms,
	       ms / bd->link_ms);
}

static int run_batch(const struct opts *o, const struct spec *s, int first)
{
	sb_batch *b = sb_batch_make(s->name, s->jobs, s->lo, s->hi, 42);
	sb_engine_result er, pj;
	struct daemon_result dr;
	char err[256] = "";
	sb_bound bd;
	int rv = -1;

	if (b == NULL)
		return -1;
	if (sb_bound_measure(b, &bd, err, sizeof(err)) != 0 ||
	    sb_engine_run(b, 0, o->reps, first, &er, err, sizeof(err)) != 0 ||
	    sb_engine_run(b, 1, 1, 0, &pj, err, sizeof(err)) != 0) {
		printf("%s: %s\n", s->name, err);
		goto done;
	}
	printf("%s fp32: %.1f MiB in, %.1f MiB out, %.2f GFLOP\n", s->name,
	       b->in / MIB, b->out / MIB, b->flops / 1e9);
	printf("    bound: link %.2f ms; copies in %.2f, back %.2f, both "
	       "%.2f ms;\n"
	       "           batched GEMMs %.3f ms (%.4f us/job), one "
	       "cublasGemmEx each %.2f ms;\n"
	       "           %d of %u results of the batched call differ from "
	       "cublasGemmEx's in some bit\n",
	       bd.link_ms, bd.h2d_ms, bd.d2h_ms, bd.copies_ms, bd.kernel_ms,
	       bd.kernel_ms * 1e3 / b->jobs, bd.loop_ms, bd.differ, b->jobs);
	row("engine, coalesced", er.ms, b, &bd);
	row("engine, job by job", pj.ms, b, &bd);
	printf("    (engine: max error %.1e, %d failed)\n", er.error,
	       er.failed + pj.failed);
	if (first)
		engine_latency("    ", &er);
	if (o->gemmd != NULL) {
		if (drive(o, b, s->hi, &dr, err, sizeof(err)) != 0) {
			printf("    gemmd: %s\n", err);
			goto done;
		}
		row("gemmd, region", dr.region, b, &bd);
		row("gemmd, socket", dr.socket, b, &bd);
		printf("    (gemmd: max error %.1e)\n", dr.error);
	}
	rv = 0;
done:
	fflush(stdout);
	sb_batch_free(b);
	return rv;
}

/* ---- the size threshold ---------------------------------------------------
 */

/* Per job, coalesced and job by job, for square jobs of growing size:
 * where coalescing stops paying is GM_SMALL_JOB_BYTES. */
static int threshold(const struct opts *o)
{
	static const uint32_t sizes[] = {32,  64,  128, 192, 256,
					 320, 384, 512, 768, 1024};
	char err[256] = "";

	printf("square fp32 jobs, engine in process, us per job "
	       "(host bytes per job):\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		double bytes = 3.0 * n * n * 4;
		uint32_t jobs = (uint32_t)(256 * MIB / bytes);
		sb_batch *b;
		sb_engine_result c, p;

		jobs = jobs < 16 ? 16 : jobs > 4096 ? 4096 : jobs;
		if ((b = sb_batch_make("square", jobs, n, n, 7)) == NULL)
			return -1;
		if (sb_engine_run(b, 1ull << 40, o->reps, 0, &c, err,
				  sizeof(err)) != 0 ||
		    sb_engine_run(b, 1, o->reps, 0, &p, err, sizeof(err)) !=
			0) {
			printf("  %u: %s\n", n, err);
			sb_batch_free(b);
			return -1;
		}
		printf("  %5u^3 (%8.0f KiB) x %4u: coalesced %9.2f, job by "
		       "job %9.2f: %5.2fx\n",
		       n, bytes / 1024, jobs, c.ms * 1e3 / jobs,
		       p.ms * 1e3 / jobs, p.ms / c.ms);
		sb_batch_free(b);
		fflush(stdout);
	}
	return 0;
}

/* ---- the first job --------------------------------------------------------
 */

/* Runs this program again as --first MODE, with CUDA_MODULE_LOADING
 * set to eager when asked; its lines go to our stdout. */
static void first_child(const struct opts *o, const char *mode, int eager)
{
	pid_t pid;
	int st;

	printf("  %s:\n", mode);
	fflush(stdout);
	if ((pid = fork()) == 0) {
		if (eager)
			setenv("CUDA_MODULE_LOADING", "EAGER", 1);
		execl(o->self, o->self, "--first",
		      strcmp(mode, "warm") == 0 ? "warm" : "cold",
		      (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		printf("    (failed)\n");
}

/* Random operand values in [0.5, 1) of dtype, n of them: never zeros,
 * and no NaN in the 16-bit types. */
static void fill_kind(void *p, int dtype, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned r = (unsigned)rand();

		if (dtype == GEMMD_FP64)
			((double *)p)[i] = 0.5 + (r % 1024) / 2048.0;
		else if (dtype == GEMMD_FP16) /* exponent 14, random mantissa */
			((uint16_t *)p)[i] = (uint16_t)(0x3800 | (r & 0x3ff));
		else if (dtype == GEMMD_BF16) /* exponent 126 */
			((uint16_t *)p)[i] = (uint16_t)(0x3f00 | (r & 0x7f));
		else
			((float *)p)[i] = 0.5f + (float)(r % 1024) / 2048.0f;
	}
}

static size_t esize(int dtype)
{
	return dtype == GEMMD_FP64			    ? 8
	       : dtype == GEMMD_FP16 || dtype == GEMMD_BF16 ? 2
							    : 4;
}

/* Polls gemmd's ping until it says ready (its warm-up done): 0, or -1
 * when it does not within START_READY_MS. */
static int wait_warm(gemmd_client *cl)
{
	double until = sb_now_ms() + START_READY_MS;

	while (sb_now_ms() < until) {
		char *reply = NULL;
		cJSON *doc;
		int ready = 0;

		if (gemmd_ping(cl, &reply, 1000) == GM_OK &&
		    (doc = cJSON_Parse(reply)) != NULL) {
			ready = cJSON_IsTrue(
			    cJSON_GetObjectItemCaseSensitive(doc, "ready"));
			cJSON_Delete(doc);
		}
		free(reply);
		if (ready)
			return 0;
		usleep(1000);
	}
	return -1;
}

/*
 * A fresh gemmd: when it answers, when it says it is ready, and then one
 * 64^3 job of each kind (every dtype with cuBLAS, fp32 and fp64 with the
 * tiled kernel), each the first of its kind, from plain pointers, beside
 * the same fp32 job once more. The slowest of these is the first-job
 * figure (bench/RESULTS.md).
 */
static void first_daemon(const struct opts *o)
{
	static const struct {
		int dtype, kernel;
		const char *name;
	} kinds[] = {
	    {GEMMD_FP32, GEMMD_KERNEL_CUBLAS, "fp32"},
	    {GEMMD_FP64, GEMMD_KERNEL_CUBLAS, "fp64"},
	    {GEMMD_TF32, GEMMD_KERNEL_CUBLAS, "tf32"},
	    {GEMMD_FP16, GEMMD_KERNEL_CUBLAS, "fp16"},
	    {GEMMD_BF16, GEMMD_KERNEL_CUBLAS, "bf16"},
	    {GEMMD_FP32, GEMMD_KERNEL_TILED, "fp32 tiled"},
	    {GEMMD_FP64, GEMMD_KERNEL_TILED, "fp64 tiled"},
	};
	enum { N = 64, KINDS = sizeof(kinds) / sizeof(kinds[0]) };
	sb_batch *b = sb_batch_make("one", 1, N, N, 1);
	char err[256] = "", *buf = malloc(3 * N * N * sizeof(double));
	double t0 = sb_now_ms(), answered, ready, ms[KINDS], worst = 0, again;
	gm_daemon_proc p;
	gemmd_job j;

	if (buf == NULL || b == NULL ||
	    start(o, b, N, &p, err, sizeof(err)) != 0) {
		printf("  gemmd: %s\n", err);
		goto done;
	}
	answered = sb_now_ms() - t0;
	if (wait_warm(p.cl) != 0) {
		printf("  gemmd: not ready %d ms after start\n",
		       START_READY_MS);
		gm_drive_stop(&p);
		goto done;
	}
	ready = sb_now_ms() - t0;
	for (int i = 0; i <= KINDS; i++) {
		int k = i < KINDS ? i : 0;

		memset(&j, 0, sizeof(j));
		j.dtype = kinds[k].dtype;
		j.kernel = kinds[k].kernel;
		j.m = j.n = j.k = N;
		j.alpha = 1;
		j.a = buf;
		j.b = buf + N * N * sizeof(double);
		j.out = buf + 2 * N * N * sizeof(double);
		/* A and B whole, whatever the element's size. */
		fill_kind(buf, j.dtype,
			  2 * N * N * sizeof(double) / esize(j.dtype));
		if (i < KINDS) {
			ms[i] = submit(p.cl, &j, 1, err, sizeof(err));
			worst = ms[i] > worst ? ms[i] : worst;
		} else {
			again = submit(p.cl, &j, 1, err, sizeof(err));
		}
	}
	printf("  gemmd: answers %.0f ms after start, ready (warmed up) at "
	       "%.0f ms; then the first 64^3 job of each kind, ms:\n   ",
	       answered, ready);
	for (int i = 0; i < KINDS; i++)
		printf(" %s %.2f%s", kinds[i].name, ms[i],
		       i + 1 < KINDS ? "," : "\n");
	printf("    slowest %.2f ms; fp32 again %.2f ms%s%s\n", worst, again,
	       err[0] ? "; " : "", err);
	gm_drive_stop(&p);
done:
	free(buf);
	sb_batch_free(b);
}

/* ---- one job's round trip --------------------------------------------------
 */

/* One 64^3 fp32 job's frames (PROTOCOL.md): a request with one region
 * descriptor, or with A and B inline; its reply, with the result inline
 * when the request had its operands inline. */
#define LAT_MAT (64 * 64 * 4)
#define LAT_REQ (GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE)
#define LAT_REP (GM_HDR_SIZE + GM_REPLY_JOB_SIZE)

enum { WAY_REGION, WAY_SOCKET, WAY_STAGED, WAYS };
static const char *const way_names[WAYS] = {"region", "socket", "staged"};

static uint64_t echo_in(int way)
{
	return way == WAY_SOCKET ? LAT_REQ + 2 * LAT_MAT : LAT_REQ + 64;
}

static uint64_t echo_out(int way)
{
	return way == WAY_SOCKET ? LAT_REP + LAT_MAT : LAT_REP;
}

/* The raw nng ipc:// echo of a way's bytes, p50 in us (< 0: failed):
 * between this process and a child (as between a client and gemmd), or
 * within this process (*inproc). */
static double echo_us(const struct opts *o, int way, double *inproc)
{
	char url[96], in[24], out[24], msg[160] = "";
	double ms = -1, until = sb_now_ms() + 5000;
	pid_t pid;
	int st;

	snprintf(url, sizeof(url), "ipc:///tmp/gemmd-bench-echo-%d.sock",
		 (int)getpid());
	*inproc = gm_rawrate(url, NULL, echo_in(way), echo_out(way), LAT_REPS,
			     &ms, msg, sizeof(msg)) == 0
		      ? ms * 1e3
		      : -1;
	snprintf(in, sizeof(in), "%llu", (unsigned long long)echo_in(way));
	snprintf(out, sizeof(out), "%llu", (unsigned long long)echo_out(way));
	unlink(url + strlen("ipc://"));
	if ((pid = fork()) == 0) {
		execl(o->self, o->self, "--echo-server", url, in, out,
		      (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	while (access(url + strlen("ipc://"), F_OK) != 0 && sb_now_ms() < until)
		usleep(1000);
	if (gm_rawecho(url, echo_in(way), echo_out(way), LAT_REPS, &ms, msg,
		       sizeof(msg)) != 0) {
		printf("  raw echo: %s\n", msg);
		ms = -1e-3;
		kill(pid, SIGKILL);
	}
	waitpid(pid, &st, 0);
	return ms * 1e3;
}

/* One job, way by way, LAT_REPS times after one untimed: p50s of the
 * client's round trip and of gemmd's total, in us. */
static int latency_ways(gm_daemon_proc *p, sb_batch *b, char *buf,
			double rt[WAYS], double total[WAYS], char *err,
			size_t errlen)
{
	const gemmd_open_opts no_shm = {.flags = GEMMD_OPEN_NO_SHM};
	double v[LAT_REPS], t[LAT_REPS];
	gemmd_client *sock = NULL;
	gemmd_region *r = NULL;
	gemmd_job j;
	int rv = -1;

	if (gemmd_region_create(p->cl, b->bytes, &r) != GM_OK ||
	    gemmd_open(p->url, &no_shm, &sock) != GM_OK) {
		snprintf(err, errlen, "%s", gemmd_last_error());
		goto done;
	}
	for (int way = 0; way < WAYS; way++) {
		gemmd_client *cl = way == WAY_SOCKET ? sock : p->cl;

		sb_batch_fill(b, way == WAY_REGION ? gemmd_region_ptr(r) : buf);
		client_jobs(b, way == WAY_REGION ? r : NULL, buf, &j);
		if (submit(cl, &j, 1, err, errlen) < 0)
			goto done;
		for (int i = 0; i < LAT_REPS; i++) {
			v[i] = submit(cl, &j, 1, err, errlen) * 1e3;
			t[i] = j.t.total_us;
		}
		rt[way] = sb_median(v, LAT_REPS);
		total[way] = sb_median(t, LAT_REPS);
	}
	rv = 0;
done:
	if (r != NULL)
		gemmd_region_release(r);
	if (sock != NULL)
		gemmd_close(sock);
	return rv;
}

/*
 * One 64^3 job through a fresh gemmd, its operands in a region, inline
 * through the socket (GEMMD_OPEN_NO_SHM) and as plain pointers the
 * library stages through its region: p50 of the client's round trip and
 * of gemmd's own total, with spin_us at its default and at 0, beside
 * the raw nng ipc:// echo of the same bytes (the socket path's floor).
 * The idle CPU of a gemmd that polls, after.
 */
static void latency_daemon(const struct opts *o)
{
	static char spin0[] = "spin_us=0";
	sb_batch *b = sb_batch_make("one", 1, 64, 64, 1);
	double echo[WAYS], rt[WAYS], total[WAYS], inproc;
	char err[256] = "", *buf = b ? malloc(b->bytes) : NULL;

	if (buf == NULL) {
		printf("  out of memory\n");
		goto done;
	}
	for (int way = WAY_REGION; way <= WAY_SOCKET; way++) {
		echo[way] = echo_us(o, way, &inproc);
		printf("  raw nng ipc echo, %5llu B in, %5llu B out: p50 %.1f "
		       "us between two processes (%.1f us within one)\n",
		       (unsigned long long)echo_in(way),
		       (unsigned long long)echo_out(way), echo[way], inproc);
	}
	echo[WAY_STAGED] = echo[WAY_REGION];
	for (int spin = 1; spin >= 0; spin--) {
		gm_daemon_proc p = {0};

		if (start_for(o, 1, 64, spin ? NULL : spin0, &p, err,
			      sizeof(err)) != 0 ||
		    latency_ways(&p, b, buf, rt, total, err, sizeof(err)) !=
			0) {
			printf("  gemmd: %s\n", err);
			gm_drive_stop(&p);
			continue;
		}
		for (int way = 0; way < WAYS; way++)
			printf("  spin_us %-7s %-6s: round trip p50 %6.1f us "
			       "(echo + %5.1f), gemmd's total p50 %5.1f us\n",
			       spin ? "default" : "0", way_names[way], rt[way],
			       rt[way] - echo[way], total[way]);
		if (spin) {
			sleep(1);
			printf("  idle gemmd (spin_us default): %.2f%% of a "
			       "CPU\n",
			       proc_cpu(p.pid) * 100);
		}
		gm_drive_stop(&p);
	}
done:
	free(buf);
	sb_batch_free(b);
}

/* One job's latency alone: in process, and through a gemmd. */
static int latency(const struct opts *o)
{
	sb_batch *b = sb_batch_make("one", 1, 64, 64, 1);
	double poll, block;
	sb_engine_result er;
	char err[256] = "";
	int rv;

	if (b == NULL)
		return -1;
	if (sb_bound_one(b, &poll, &block, err, sizeof(err)) != 0)
		printf("bare CUDA calls: %s\n", err);
	else
		printf("one 64^3 job alone, bare CUDA calls in process (one "
		       "copy in, cublasGemmEx, copy out): p50 %.1f us "
		       "polled, %.1f us on a blocking-sync event\n",
		       poll * 1e3, block * 1e3);
	rv = sb_engine_run(b, 0, 1, 1, &er, err, sizeof(err));
	if (rv != 0)
		printf("engine: %s\n", err);
	else
		engine_latency("", &er);
	sb_batch_free(b);
	if (o->gemmd != NULL) {
		printf("one 64^3 fp32 job alone:\n");
		latency_daemon(o);
	}
	return rv;
}

/* ---- main ------------------------------------------------------------------
 */

/* A crash says where, even when its stdout is a file. */
static void on_crash(int sig)
{
	void *at[32];
	int n = backtrace(at, 32);

	fprintf(stderr, "gemmd_small_bench: signal %d at\n", sig);
	backtrace_symbols_fd(at, n, 2);
	_exit(128 + sig);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: gemmd_small_bench [--gemmd PATH] [--reps N] "
		"[--set KEY=VALUE]... [--threshold | --latency]\n"
		"  --gemmd PATH  also through a gemmd started from PATH\n"
		"  --reps N      timed runs after a warm-up (default %d)\n"
		"  --set K=V     a gemmd setting, for every gemmd started\n"
		"  --threshold   only the coalescing threshold table\n"
		"  --latency     only one job's latency\n",
		REPS_DEFAULT);
	return 2;
}

int main(int argc, char **argv)
{
	struct opts o = {NULL, argv[0], REPS_DEFAULT, 0, 0, {NULL}, 0};
	char gpu[128], line[256];
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGSEGV, on_crash);
	signal(SIGABRT, on_crash);
	if (argc == 5 && strcmp(argv[1], "--echo-server") == 0) {
		char msg[160];

		alarm(FIRST_S);
		if (gm_rawecho_serve(argv[2], strtoull(argv[3], NULL, 10),
				     strtoull(argv[4], NULL, 10), msg,
				     sizeof(msg)) != 0) {
			fprintf(stderr, "echo server: %s\n", msg);
			return 1;
		}
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--first") == 0) {
		alarm(FIRST_S); /* eager module loading may take long */
		return sb_engine_first(strcmp(argv[2], "warm") == 0);
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--gemmd") == 0 && i + 1 < argc)
			o.gemmd = argv[++i];
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			o.reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--threshold") == 0)
			o.threshold_only = 1;
		else if (strcmp(argv[i], "--latency") == 0)
			o.latency_only = 1;
		else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc &&
			 o.nsets < (int)(sizeof(o.sets) / sizeof(o.sets[0])))
			o.sets[o.nsets++] = argv[++i];
		else
			return usage();
	}
	if (o.reps < 1 || o.reps > 16)
		return usage();
	if (gm_bound_device(gpu, sizeof(gpu), line, sizeof(line)) != 0) {
		fprintf(stderr, "no CUDA device\n");
		return 77;
	}
	printf("%s\n%d streams, median of %d runs after a warm-up; copies "
	       "from pinned memory\n\n",
	       line, STREAMS, o.reps);
	if (o.threshold_only)
		return threshold(&o) != 0;
	if (o.latency_only)
		return latency(&o) != 0;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		failed += run_batch(&o, &specs[i], i == 0) != 0;
	printf("\n");
	failed += threshold(&o) != 0;
	printf("\nthe first job after start, each in a fresh process:\n");
	first_child(&o, "cold", 0);
	first_child(&o, "warm", 0);
	first_child(&o, "eager", 1);
	if (o.gemmd != NULL) {
		first_daemon(&o);
		printf("\none 64^3 fp32 job alone:\n");
		latency_daemon(&o);
	}
	return failed ? 1 : 0;
}
