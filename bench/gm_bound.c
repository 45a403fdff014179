/*
 * gm_bound.c - the bound a gemmd run is compared with, measured in this
 * process on the same GPU and for the same jobs: every host-to-device
 * copy alone, every GEMM alone, every device-to-host copy alone, and,
 * for reference, all of them issued together the way gemmd issues them.
 *
 * The copies move exactly the bytes gemmd's jobs move (A and B in one
 * copy per job, the result back), between pinned host memory and device
 * memory, spread over as many streams as gemmd uses; the GEMMs are the
 * same cublasGemmEx calls the engine makes (or its tiled kernel). No
 * phase can be faster inside gemmd than it is here alone, so the slowest
 * of the three is a lower bound for the whole batch. Each phase runs
 * once to warm up, then a few times; the median counts. Times come from
 * events on the device, from the first operation to the last.
 *
 * Three more runs explain what lies between the bound and gemmd: both
 * copies at once (the link shared both ways), everything at once, and
 * everything at once while one host thread per stream copies each result
 * out of pinned memory into fresh memory as soon as it lands, which is
 * what the daemon's completion threads do for its replies.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_bench.h"
#include "gm_tiled.h"

#define MIB	    (1024ull * 1024)
#define WORKSPACE   (32 * MIB) /* per handle: what the engine gives cuBLAS */
#define STREAMS_MAX 64
#define REPS_MAX    5

#define CUDA_OK(expr) GM_BENCH_CUDA(expr, err, errlen)
#define BLAS_OK(expr) GM_BENCH_BLAS(expr, err, errlen)

enum { H2D = 1, GEMM = 2, D2H = 4, OUT = 8 /* host copies of results */ };

/* Everything one measurement holds on the device and in pinned memory. */
struct rig {
	const gm_case *c;
	unsigned ns;
	uint64_t in, out; /* bytes per job */
	cudaStream_t s[STREAMS_MAX];
	cublasHandle_t h[STREAMS_MAX];
	cudaEvent_t start, end, joined[STREAMS_MAX];
	cudaEvent_t *landed; /* per job: its result is in hout */
	char *hin, *hout;    /* pinned: jobs * in, jobs * out */
	char *dmem;	     /* workspaces, then per job A, B, C */
};

int gm_bound_device(char *name, size_t namelen, char *line, size_t linelen)
{
	struct cudaDeviceProp p;
	int rt = 0, drv = 0;

	if (cudaGetDeviceProperties(&p, 0) != cudaSuccess)
		return -1;
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	snprintf(name, namelen, "%s", p.name);
	snprintf(line, linelen,
		 "%s: %d SMs, %.0f GiB, compute %d.%d, PCIe %02x:%02x, "
		 "CUDA runtime %d.%d, driver %d.%d",
		 p.name, p.multiProcessorCount,
		 (double)p.totalGlobalMem / (1024.0 * MIB), p.major, p.minor,
		 p.pciBusID, p.pciDeviceID, rt / 1000, rt % 1000 / 10,
		 drv / 1000, drv % 1000 / 10);
	return 0;
}

static char *job_dev(const struct rig *r, uint32_t j)
{
	return r->dmem + r->ns * WORKSPACE + (uint64_t)j * (r->in + r->out);
}

/* One job's GEMM on stream i: row-major C = A * B, as gemmd runs a
 * row-major job without C. */
static int gemm(struct rig *r, unsigned i, uint32_t j, int kernel, char *err,
		size_t errlen)
{
	const gm_case *c = r->c;
	char *a = job_dev(r, j), *b = a + r->in / 2, *cc = a + r->in;
	int n = (int)c->n;
	cudaDataType t = c->dtype == GEMMD_FP64 ? CUDA_R_64F : CUDA_R_32F;
	cublasComputeType_t ct =
	    c->dtype == GEMMD_FP64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
	double one = 1, zero = 0;
	float onef = 1, zerof = 0;
	const void *alpha = &onef, *beta = &zerof;

	if (kernel == GEMMD_KERNEL_TILED) {
		gm_tiled_args g = {.dtype = c->dtype,
				   .m = c->n,
				   .n = c->n,
				   .k = c->n,
				   .alpha = 1,
				   .a = a,
				   .b = b,
				   .c = cc,
				   .lda = c->n,
				   .ldb = c->n,
				   .ldc = c->n};

		CUDA_OK((cudaError_t)gm_tiled_gemm(&g, r->s[i]));
		return 0;
	}
	if (c->dtype == GEMMD_FP64) {
		alpha = &one;
		beta = &zero;
	}
	/* cuBLAS is column-major: row-major C = A B is C^T = B^T A^T, so B
	 * goes first, as in the engine. */
	BLAS_OK(cublasGemmEx(r->h[i], CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, alpha,
			     b, t, n, a, t, n, beta, cc, t, n, ct,
			     CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* One copy-out thread: stream i's results, in order, as they land. */
struct out_thread {
	struct rig *r;
	unsigned i;
	char *dst;
	pthread_t t;
	int rv;
};

static void *copy_out_main(void *arg)
{
	struct out_thread *o = arg;
	struct rig *r = o->r;
	uint32_t j;

	for (j = o->i; j < r->c->jobs; j += r->ns) {
		if (cudaEventSynchronize(r->landed[j]) != cudaSuccess) {
			o->rv = -1;
			break;
		}
		memcpy(o->dst + (uint64_t)j * r->out,
		       r->hout + (uint64_t)j * r->out, r->out);
	}
	return NULL;
}

/* Copies every result out as it lands, into memory fresh from malloc as
 * a reply message is; waits until all are copied. */
static int copy_out(struct rig *r, char *err, size_t errlen)
{
	struct out_thread o[STREAMS_MAX];
	char *dst = malloc(r->c->jobs * r->out);
	unsigned i, n = 0;
	int rv = 0;

	for (i = 0; dst != NULL && i < r->ns; i++, n++) {
		o[i] = (struct out_thread){.r = r, .i = i, .dst = dst};
		if (pthread_create(&o[i].t, NULL, copy_out_main, &o[i]) != 0)
			break;
	}
	for (i = 0; i < n; i++) {
		pthread_join(o[i].t, NULL);
		rv |= o[i].rv;
	}
	free(dst);
	if (dst == NULL || n < r->ns || rv != 0) {
		snprintf(err, errlen, "copying results out failed");
		return -1;
	}
	return 0;
}

/* Issues the phases in what for every job, one job per stream per
 * round, each round breadth-first as gemmd does, and returns the time
 * from the first operation to the last in *ms. */
static int run(struct rig *r, int what, int kernel, double *ms, char *err,
	       size_t errlen)
{
	uint32_t jobs = r->c->jobs, j0, j, end;
	unsigned i;
	float f;

	CUDA_OK(cudaEventRecord(r->start, r->s[0]));
	for (i = 1; i < r->ns; i++)
		CUDA_OK(cudaStreamWaitEvent(r->s[i], r->start, 0));
	for (j0 = 0; j0 < jobs; j0 = end) {
		end = jobs - j0 < r->ns ? jobs : j0 + r->ns;
		for (j = j0; (what & H2D) && j < end; j++)
			CUDA_OK(cudaMemcpyAsync(
			    job_dev(r, j), r->hin + (uint64_t)j * r->in, r->in,
			    cudaMemcpyHostToDevice, r->s[j % r->ns]));
		for (j = j0; (what & GEMM) && j < end; j++)
			if (gemm(r, j % r->ns, j, kernel, err, errlen) != 0)
				return -1;
		for (j = j0; (what & D2H) && j < end; j++) {
			CUDA_OK(cudaMemcpyAsync(r->hout + (uint64_t)j * r->out,
						job_dev(r, j) + r->in, r->out,
						cudaMemcpyDeviceToHost,
						r->s[j % r->ns]));
			if (what & OUT)
				CUDA_OK(cudaEventRecord(r->landed[j],
							r->s[j % r->ns]));
		}
	}
	for (i = 1; i < r->ns; i++) {
		CUDA_OK(cudaEventRecord(r->joined[i], r->s[i]));
		CUDA_OK(cudaStreamWaitEvent(r->s[0], r->joined[i], 0));
	}
	CUDA_OK(cudaEventRecord(r->end, r->s[0]));
	if ((what & OUT) && copy_out(r, err, errlen) != 0)
		return -1;
	CUDA_OK(cudaEventSynchronize(r->end));
	CUDA_OK(cudaEventElapsedTime(&f, r->start, r->end));
	*ms = f;
	return 0;
}

/* Warm-up, then up to REPS_MAX timed runs (fewer for slow ones, so the
 * tiled kernel on large jobs does not take minutes); the median. */
static int measure(struct rig *r, int what, int kernel, double *ms, int *reps,
		   char *err, size_t errlen)
{
	double t[REPS_MAX], warm;
	int i, n;

	if (run(r, what, kernel, &warm, err, errlen) != 0)
		return -1;
	n = warm > 1000 ? 1 : warm > 200 ? 3 : REPS_MAX;
	for (i = 0; i < n; i++)
		if (run(r, what, kernel, &t[i], err, errlen) != 0)
			return -1;
	*ms = gm_bench_median(t, (size_t)n);
	if (n < *reps)
		*reps = n;
	return 0;
}

static int open_rig(struct rig *r, char *err, size_t errlen)
{
	const gm_case *c = r->c;
	uint64_t jobs = c->jobs, j;
	unsigned i;

	CUDA_OK(cudaHostAlloc((void **)&r->hin, jobs * r->in,
			      cudaHostAllocDefault));
	CUDA_OK(cudaHostAlloc((void **)&r->hout, jobs * r->out,
			      cudaHostAllocDefault));
	CUDA_OK(cudaMalloc((void **)&r->dmem,
			   r->ns * WORKSPACE + jobs * (r->in + r->out)));
	CUDA_OK(cudaEventCreate(&r->start));
	CUDA_OK(cudaEventCreate(&r->end));
	if ((r->landed = calloc(jobs, sizeof(*r->landed))) == NULL) {
		snprintf(err, errlen, "out of host memory");
		return -1;
	}
	for (j = 0; j < jobs; j++) /* waited on: let the waiter sleep */
		CUDA_OK(cudaEventCreateWithFlags(&r->landed[j],
						 cudaEventBlockingSync |
						     cudaEventDisableTiming));
	for (i = 0; i < r->ns; i++) {
		CUDA_OK(
		    cudaStreamCreateWithFlags(&r->s[i], cudaStreamNonBlocking));
		CUDA_OK(cudaEventCreateWithFlags(&r->joined[i],
						 cudaEventDisableTiming));
		BLAS_OK(cublasCreate(&r->h[i]));
		BLAS_OK(cublasSetStream(r->h[i], r->s[i]));
		BLAS_OK(cublasSetWorkspace(r->h[i], r->dmem + i * WORKSPACE,
					   WORKSPACE));
	}
	/* Random A and B: four distinct pairs, repeated, as the client
	 * sends them. */
	for (j = 0; j < jobs && j < 4; j++)
		gm_bench_random(c->dtype, r->hin + j * r->in,
				r->in / (c->dtype == GEMMD_FP64 ? 8 : 4),
				1000 + j);
	for (; j < jobs; j++)
		memcpy(r->hin + j * r->in, r->hin + (j % 4) * r->in, r->in);
	memset(r->hout, 0xff, jobs * r->out);
	return 0;
}

static void close_rig(struct rig *r)
{
	unsigned i;

	for (i = 0; i < r->ns; i++) {
		if (r->h[i] != NULL)
			cublasDestroy(r->h[i]);
		if (r->s[i] != NULL)
			cudaStreamDestroy(r->s[i]);
		if (r->joined[i] != NULL)
			cudaEventDestroy(r->joined[i]);
	}
	for (i = 0; r->landed != NULL && i < r->c->jobs; i++)
		if (r->landed[i] != NULL)
			cudaEventDestroy(r->landed[i]);
	free(r->landed);
	if (r->start != NULL)
		cudaEventDestroy(r->start);
	if (r->end != NULL)
		cudaEventDestroy(r->end);
	cudaFree(r->dmem);
	cudaFreeHost(r->hin);
	cudaFreeHost(r->hout);
	(void)cudaGetLastError();
}

static int measure_all(struct rig *r, int tiled, gm_bound *b, char *err,
		       size_t errlen)
{
	int k = r->c->kernel;

	b->reps = REPS_MAX;
	/* In this order: the copies in put random data on the device. */
	if (measure(r, H2D, k, &b->h2d_ms, &b->reps, err, errlen) != 0 ||
	    measure(r, GEMM, GEMMD_KERNEL_CUBLAS, &b->cublas_ms, &b->reps, err,
		    errlen) != 0 ||
	    ((tiled || k == GEMMD_KERNEL_TILED) &&
	     measure(r, GEMM, GEMMD_KERNEL_TILED, &b->tiled_ms, &b->reps, err,
		     errlen) != 0) ||
	    measure(r, D2H, k, &b->d2h_ms, &b->reps, err, errlen) != 0 ||
	    measure(r, H2D | D2H, k, &b->copies_ms, &b->reps, err, errlen) !=
		0 ||
	    measure(r, H2D | GEMM | D2H, k, &b->pipe_ms, &b->reps, err,
		    errlen) != 0 ||
	    measure(r, H2D | GEMM | D2H | OUT, k, &b->out_ms, &b->reps, err,
		    errlen) != 0)
		return -1;
	b->kernel_ms = k == GEMMD_KERNEL_TILED ? b->tiled_ms : b->cublas_ms;
	return 0;
}

int gm_bound_measure(const gm_case *c, unsigned streams, int tiled,
		     gm_bound *out, char *err, size_t errlen)
{
	struct rig r;
	int rv;

	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	r.c = c;
	r.ns = streams < STREAMS_MAX ? streams : STREAMS_MAX;
	r.in = gm_case_in_bytes(c);
	r.out = gm_case_out_bytes(c);
	if (cudaSetDevice(0) != cudaSuccess) {
		snprintf(err, errlen, "no CUDA device");
		return -1;
	}
	rv = open_rig(&r, err, errlen);
	if (rv == 0)
		rv = measure_all(&r, tiled, out, err, errlen);
	close_rig(&r);
	return rv;
}
