/*
 * gemmd_shm_bench.c - a local client's view of gemmd, through
 * shared-memory regions and through the socket, each beside the bound of
 * the same jobs on the same GPU, measured in the same run.
 *
 * For each case the bound is measured first, in this process on device
 * 0: every job's A and B copied host-to-device alone, every GEMM alone
 * (cuBLAS, on as many streams as gemmd uses), every result copied back
 * alone, all between pinned host memory and the device; the slowest of
 * the three is the bound, since no phase can be faster inside gemmd
 * than alone. Beside it, both copies at once (no GEMM): every byte must
 * cross the link one way or the other, and the two directions slow each
 * other down, so that is a tighter bound when the copies dominate. The device
 * is then left to a gemmd started here, and this process becomes its client
 * over ipc://: the inputs are written into a region (or into ordinary buffers
 * for the socket) before the clock starts, and each run is timed from the first
 * submit to the last reply. Medians of a few runs after a warm-up; the results
 * of both ways are checked against each other and against a few dot products.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gemmd.h"

#define STREAMS_DEFAULT 8 /* gemmd's default */
#define REPS_DEFAULT	5
#define REPS_MAX	15
#define ALIGN		256

typedef struct bcase {
	const char *name;
	int dtype;
	uint32_t n; /* m = n = k */
	uint32_t jobs;
} bcase;

/* The jobs of the client-view benchmark. */
static const bcase cases[] = {
    {"fp64-1024", GEMMD_FP64, 1024, 64},
    {"fp32-512", GEMMD_FP32, 512, 256},
};

struct opts {
	const char *gemmd;
	int reps;
	unsigned streams, requests;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static size_t esize(const bcase *c)
{
	return c->dtype == GEMMD_FP64 ? 8 : 4;
}

static uint64_t mat_bytes(const bcase *c)
{
	return (uint64_t)c->n * c->n * esize(c);
}

static void fill_random(const bcase *c, void *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		double v = (double)rand_r(&seed) / RAND_MAX * 2 - 1;

		if (c->dtype == GEMMD_FP64)
			((double *)p)[i] = v;
		else
			((float *)p)[i] = (float)v;
	}
}

/* ---- the bound ---- */

#define TRY(expr)                                          \
	do {                                               \
		cudaError_t e_ = (expr);                   \
		if (e_ != cudaSuccess) {                   \
			fprintf(stderr, "%s: %s\n", #expr, \
				cudaGetErrorString(e_));   \
			return -1;                         \
		}                                          \
	} while (0)

enum { H2D, GEMM, D2H, COPIES, NPHASES };

struct rig {
	const bcase *c;
	unsigned ns;
	cudaStream_t s[64];
	cublasHandle_t h[64];
	void *ws[64];
	char *hin, *hout, *dmem;
	cudaEvent_t start, end, joined[64];
};

/* One phase for every job, jobs taking the streams in turn, timed on
 * the device from before the first operation to after the last. */
static int run_phase(struct rig *r, int phase, double *ms)
{
	uint64_t mb = mat_bytes(r->c), in = 2 * mb;
	int nn = (int)r->c->n;
	float t;

	TRY(cudaEventRecord(r->start, r->s[0]));
	for (unsigned i = 1; i < r->ns; i++)
		TRY(cudaStreamWaitEvent(r->s[i], r->start, 0));
	for (uint32_t j = 0; j < r->c->jobs; j++) {
		unsigned k = j % r->ns;
		char *d = r->dmem + j * (in + mb);

		if (phase == H2D || phase == COPIES)
			TRY(cudaMemcpyAsync(d, r->hin + j * in, in,
					    cudaMemcpyHostToDevice, r->s[k]));
		if (phase == D2H || phase == COPIES)
			TRY(cudaMemcpyAsync(r->hout + j * mb, d + in, mb,
					    cudaMemcpyDeviceToHost, r->s[k]));
		if (phase != GEMM)
			continue;
		if (r->c->dtype == GEMMD_FP64) {
			const double one = 1, zero = 0;

			cublasDgemm(r->h[k], CUBLAS_OP_N, CUBLAS_OP_N, nn, nn,
				    nn, &one, (double *)(d + mb), nn,
				    (double *)d, nn, &zero, (double *)(d + in),
				    nn);
		} else {
			const float one = 1, zero = 0;

			cublasSgemm(r->h[k], CUBLAS_OP_N, CUBLAS_OP_N, nn, nn,
				    nn, &one, (float *)(d + mb), nn, (float *)d,
				    nn, &zero, (float *)(d + in), nn);
		}
	}
	for (unsigned i = 1; i < r->ns; i++) {
		TRY(cudaEventRecord(r->joined[i], r->s[i]));
		TRY(cudaStreamWaitEvent(r->s[0], r->joined[i], 0));
	}
	TRY(cudaEventRecord(r->end, r->s[0]));
	TRY(cudaEventSynchronize(r->end));
	TRY(cudaEventElapsedTime(&t, r->start, r->end));
	*ms = t;
	return 0;
}

static int open_rig(struct rig *r)
{
	uint64_t mb = mat_bytes(r->c), jobs = r->c->jobs;

	TRY(cudaSetDevice(0));
	TRY(cudaHostAlloc((void **)&r->hin, jobs * 2 * mb,
			  cudaHostAllocPortable));
	TRY(cudaHostAlloc((void **)&r->hout, jobs * mb, cudaHostAllocPortable));
	TRY(cudaMalloc((void **)&r->dmem, jobs * 3 * mb));
	fill_random(r->c, r->hin, jobs * 2 * mb / esize(r->c), 7);
	TRY(cudaEventCreate(&r->start));
	TRY(cudaEventCreate(&r->end));
	for (unsigned i = 0; i < r->ns; i++) {
		TRY(cudaStreamCreateWithFlags(&r->s[i], cudaStreamNonBlocking));
		TRY(cudaEventCreateWithFlags(&r->joined[i],
					     cudaEventDisableTiming));
		TRY(cudaMalloc(&r->ws[i], 32u << 20));
		if (cublasCreate(&r->h[i]) != CUBLAS_STATUS_SUCCESS ||
		    cublasSetStream(r->h[i], r->s[i]) !=
			CUBLAS_STATUS_SUCCESS ||
		    cublasSetWorkspace(r->h[i], r->ws[i], 32u << 20) !=
			CUBLAS_STATUS_SUCCESS) {
			fprintf(stderr, "cuBLAS setup failed\n");
			return -1;
		}
	}
	return 0;
}

/* Each phase alone: a warm-up, then the median of five. */
static int measure_bound(const bcase *c, unsigned ns, double ms[NPHASES])
{
	struct rig r = {.c = c, .ns = ns};
	double v[5];
	int rv = open_rig(&r);

	for (int p = H2D; rv == 0 && p < NPHASES; p++) {
		rv = run_phase(&r, p, &v[0]);
		for (int i = 0; rv == 0 && i < 5; i++)
			rv = run_phase(&r, p, &v[i]);
		if (rv == 0)
			ms[p] = median(v, 5);
	}
	/* Everything goes, and the device is left to gemmd. */
	cudaDeviceReset();
	return rv;
}

/* ---- gemmd ---- */

static pid_t start_gemmd(const struct opts *o, const bcase *c, const char *dir,
			 char *url, size_t urllen)
{
	char pool[64], maxmsg[64], streams[32], log[256];
	uint64_t all = (uint64_t)c->jobs * 3 * mat_bytes(c);
	pid_t pid;

	snprintf(url, urllen, "ipc://%s/gemmd.sock", dir);
	snprintf(pool, sizeof(pool), "pool_bytes=%llu",
		 (unsigned long long)(all + (256u << 20)));
	snprintf(maxmsg, sizeof(maxmsg), "max_message_bytes=%llu",
		 (unsigned long long)(all + (64u << 20)));
	snprintf(streams, sizeof(streams), "streams=%u", o->streams);
	snprintf(log, sizeof(log), "%s/gemmd.log", dir);
	if ((pid = fork()) != 0)
		return pid;
	if (freopen(log, "w", stderr) == NULL)
		_exit(127);
	execl(o->gemmd, "gemmd", "--engine", "cuda", "--listen", url, "--set",
	      pool, "--set", maxmsg, "--set", streams, "--set",
	      "region_max_bytes=64G", (char *)NULL);
	_exit(127);
}

static int stop_gemmd(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct waiter {
	int left, failed;
	char why[160];
};

static void on_done(void *arg, int rv)
{
	struct waiter *w = arg;

	if (rv != GM_OK)
		__atomic_fetch_add(&w->failed, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&w->left, 1, __ATOMIC_RELEASE);
}

/* Submits the jobs as o->requests requests, all in flight; returns the
 * time from the first submit to the last reply, or < 0. */
static double run_once(gemmd_client *cl, const struct opts *o, gemmd_job *jobs,
		       uint32_t n)
{
	struct waiter w = {.left = (int)o->requests};
	uint32_t per = (n + o->requests - 1) / o->requests;
	double t0 = now_ms(), t1;

	for (uint32_t i = 0; i < n; i += per) {
		uint32_t k = n - i < per ? n - i : per;

		if (gemmd_submit_async(cl, jobs + i, k, NULL, 120000, on_done,
				       &w) != GM_OK) {
			fprintf(stderr, "submit: %s\n", gemmd_last_error());
			return -1;
		}
	}
	while (__atomic_load_n(&w.left, __ATOMIC_ACQUIRE) > 0)
		usleep(20);
	t1 = now_ms();
	for (uint32_t i = 0; i < n; i++)
		if (jobs[i].status != GM_OK) {
			fprintf(stderr, "job %u: %s: %s\n", i,
				gemmd_strerror(jobs[i].status),
				jobs[i].message);
			return -1;
		}
	return w.failed ? -1 : t1 - t0;
}

static double timed(gemmd_client *cl, const struct opts *o, gemmd_job *jobs,
		    uint32_t n)
{
	double v[REPS_MAX];

	if (run_once(cl, o, jobs, n) < 0) /* warm-up */
		return -1;
	for (int i = 0; i < o->reps; i++)
		if ((v[i] = run_once(cl, o, jobs, n)) < 0)
			return -1;
	return median(v, o->reps);
}

/* Element (r, c) of job j's result, recomputed: out = A * B, row-major. */
static double dot(const bcase *c, const void *a, const void *b, uint32_t r,
		  uint32_t col)
{
	double s = 0;

	for (uint32_t p = 0; p < c->n; p++) {
		size_t ia = (size_t)r * c->n + p, ib = (size_t)p * c->n + col;

		s += c->dtype == GEMMD_FP64
			 ? ((const double *)a)[ia] * ((const double *)b)[ib]
			 : (double)((const float *)a)[ia] *
			       ((const float *)b)[ib];
	}
	return s;
}

static double at(const bcase *c, const void *p, size_t i)
{
	return c->dtype == GEMMD_FP64 ? ((const double *)p)[i]
				      : ((const float *)p)[i];
}

/* Largest error of a few elements of the first and last job, over
 * sqrt(n), about the size of an element of a product of random data. */
static double check(const bcase *c, const void *const *a, const void *const *b,
		    const void *const *out)
{
	double worst = 0;

	const uint32_t jobs[2] = {0, c->jobs - 1};

	for (int k = 0; k < 2; k++) {
		uint32_t j = jobs[k];

		for (uint32_t e = 0; e < 16; e++) {
			uint32_t r = (e * 37) % c->n, col = (e * 101) % c->n;
			double want = dot(c, a[j], b[j], r, col);
			double got = at(c, out[j], (size_t)r * c->n + col);
			double err = fabs(got - want) / sqrt((double)c->n);

			worst = err > worst ? err : worst;
		}
	}
	return worst;
}

struct result {
	double bound[NPHASES], region, socket, reg_ms, error, differ;
};

/* The case through a region, then through the socket. */
static int drive(gemmd_client *cl, const struct opts *o, const bcase *c,
		 struct result *res)
{
	uint64_t mb = mat_bytes(c), per = 3 * mb, n = c->jobs;
	gemmd_job *jr = calloc(n, sizeof(*jr)), *js = calloc(n, sizeof(*js));
	const void **a = calloc(n, sizeof(*a)), **b = calloc(n, sizeof(*b));
	const void **outr = calloc(n, sizeof(*outr));
	const void **outs = calloc(n, sizeof(*outs));
	char *sock = malloc(n * per);
	gemmd_region *r;
	uint8_t *base;
	double t0;
	int rv = -1;

	t0 = now_ms();
	if (gemmd_region_create(cl, n * per, &r) != GM_OK) {
		fprintf(stderr, "region: %s\n", gemmd_last_error());
		return -1;
	}
	res->reg_ms = now_ms() - t0;
	base = gemmd_region_ptr(r);
	for (uint64_t j = 0; j < n; j++) {
		/* A, B and the result back to back: one DMA in, one out. */
		fill_random(c, base + j * per, 2 * mb / esize(c), 11 + j);
		memcpy(sock + j * per, base + j * per, 2 * mb);
		a[j] = base + j * per;
		b[j] = base + j * per + mb;
		outr[j] = base + j * per + 2 * mb;
		outs[j] = sock + j * per + 2 * mb;
		jr[j] = (gemmd_job){.dtype = c->dtype,
				    .m = c->n,
				    .n = c->n,
				    .k = c->n,
				    .alpha = 1,
				    .kernel = GEMMD_KERNEL_CUBLAS,
				    .a_ref = {r, j * per},
				    .b_ref = {r, j * per + mb},
				    .out_ref = {r, j * per + 2 * mb}};
		js[j] = jr[j];
		js[j].a_ref = js[j].b_ref = js[j].out_ref =
		    (gemmd_region_ref){NULL, 0};
		js[j].a = sock + j * per;
		js[j].b = sock + j * per + mb;
		js[j].out = sock + j * per + 2 * mb;
	}
	if ((res->region = timed(cl, o, jr, (uint32_t)n)) >= 0 &&
	    (res->socket = timed(cl, o, js, (uint32_t)n)) >= 0) {
		res->error = check(c, a, b, outr);
		res->differ = 0;
		for (uint64_t j = 0; j < n; j++)
			res->differ += memcmp(outr[j], outs[j], mb) != 0;
		rv = 0;
	}
	gemmd_region_release(r);
	free(sock);
	free(jr);
	free(js);
	free(a);
	free(b);
	free(outr);
	free(outs);
	return rv;
}

static int run_case(const struct opts *o, const bcase *c, struct result *res)
{
	char dir[] = "/tmp/gemmd-shm-bench.XXXXXX", url[128], cmd[160];
	gemmd_client *cl = NULL;
	pid_t pid;
	int rv = -1, st;

	if (measure_bound(c, o->streams, res->bound) != 0 ||
	    mkdtemp(dir) == NULL)
		return -1;
	pid = start_gemmd(o, c, dir, url, sizeof(url));
	if (gemmd_open(url, &(gemmd_open_opts){.flags = GEMMD_OPEN_LAZY},
		       &cl) == GM_OK)
		for (int i = 0; i < 300 && rv != 0; i++)
			if ((rv = gemmd_ping(cl, NULL, 200)) != GM_OK)
				usleep(50000);
	if (rv == 0)
		rv = drive(cl, o, c, res);
	else
		fprintf(stderr, "gemmd did not answer; see %s/gemmd.log\n",
			dir);
	gemmd_close(cl);
	if ((st = stop_gemmd(pid)) != 0) {
		fprintf(stderr, "gemmd exited %d; see %s/gemmd.log\n", st, dir);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (rv == 0 && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return rv;
}

static void print(const bcase *c, const struct result *r)
{
	double bound = fmax(r->bound[H2D], fmax(r->bound[GEMM], r->bound[D2H]));
	double link = fmax(r->bound[COPIES], r->bound[GEMM]);
	double gb = (double)c->jobs * 3 * mat_bytes(c) / 1e9;

	printf("%-10s %3u x %4u^2  bound %7.2f ms (h2d %.2f, gemm %.2f, "
	       "d2h %.2f); both copies at once %.2f\n",
	       c->name, c->jobs, c->n, bound, r->bound[H2D], r->bound[GEMM],
	       r->bound[D2H], r->bound[COPIES]);
	printf("           regions %9.2f ms  %5.2fx bound  %5.2fx link  %6.1f "
	       "GB/s\n",
	       r->region, r->region / bound, r->region / link,
	       gb / r->region * 1e3);
	printf("           socket  %9.2f ms  %5.2fx bound  %5.2fx link  %6.1f "
	       "GB/s\n",
	       r->socket, r->socket / bound, r->socket / link,
	       gb / r->socket * 1e3);
	printf("           region registered in %.0f ms; max error %.1e; "
	       "%.0f results differ between the two ways\n",
	       r->reg_ms, r->error, r->differ);
}

int main(int argc, char **argv)
{
	struct opts o = {
	    .reps = REPS_DEFAULT, .streams = STREAMS_DEFAULT, .requests = 1};
	struct cudaDeviceProp prop;
	int failed = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--gemmd") == 0)
			o.gemmd = argv[i + 1];
		else if (strcmp(argv[i], "--reps") == 0)
			o.reps = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--streams") == 0)
			o.streams = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--requests") == 0)
			o.requests = (unsigned)atoi(argv[i + 1]);
	}
	if (o.gemmd == NULL || o.reps < 1 || o.reps > REPS_MAX ||
	    o.streams < 1 || o.streams > 64 || o.requests < 1) {
		fprintf(stderr, "usage: gemmd_shm_bench --gemmd PATH [--reps "
				"N] [--streams N] [--requests N]\n");
		return 2;
	}
	if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
		fprintf(stderr, "no CUDA device\n");
		return 77;
	}
	printf("%s, %u streams, %u request(s) per batch, median of %d runs; "
	       "client view: first submit to last reply\n",
	       prop.name, o.streams, o.requests, o.reps);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r;

		memset(&r, 0, sizeof(r));

		if (o.requests > cases[i].jobs) {
			failed++;
			continue;
		}
		if (run_case(&o, &cases[i], &r) != 0) {
			fprintf(stderr, "%s: failed\n", cases[i].name);
			failed++;
			continue;
		}
		print(&cases[i], &r);
		fflush(stdout);
	}
	return failed ? 1 : 0;
}
