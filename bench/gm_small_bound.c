/*
 * gm_small_bound.c - the bounds a batch of small jobs is compared with,
 * measured in this process on device 0: how fast its bytes can cross
 * the link, how fast the copies the engine plans for it (gm_batch.h) can
 * run, and how fast its GEMMs run as one batched cuBLAS call; and for
 * one job alone, how long its bare CUDA calls take, end to end.
 *
 * Nothing here can be beaten by the engine doing the same work: the
 * copies move between the same pinned layout and the same device slots,
 * in one go, without the engine's events, staging or hand-backs; the
 * GEMMs run on data already on the device. Each figure is timed with
 * events around the work, after a warm-up, the median of REPS.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_batch.h"
#include "gm_bench.h"
#include "gm_small.h"

#define REPS	  5
#define ONE_REPS  1000 /* one job alone: many, for a steady median */
#define WORKSPACE (32u << 20)

#define CUDA_OK(expr) GM_BENCH_CUDA(expr, r->err, r->errlen)
#define BLAS_OK(expr) GM_BENCH_BLAS(expr, r->err, r->errlen)

/* Pieces of one direction, sent as one batched copy. */
struct pieces {
	void **dst;
	const void **src;
	size_t *size;
	size_t n;
};

/* The grouped call's arguments: the rig's jobs sorted by shape. */
struct grouped {
	cublasOperation_t *op;
	int *m, *n, *k, *size;
	float *one, *zero;
	void **ptr; /* device: B, A and out pointers of every job */
	int groups;
};

struct rig {
	const sb_batch *b;
	gm_job *jobs;	    /* pointing into hin */
	uint64_t *slot;	    /* job i's slot in dev */
	uint64_t dev_bytes; /* all slots */
	char *hin, *dev, *ws;
	cudaStream_t s[2];
	cudaEvent_t start, joined, end;
	cublasHandle_t h;
	struct pieces p;
	struct grouped g; /* a batch of several shapes */
	int dir;	  /* of the copies being planned */
	int rv;
	char *err;
	size_t errlen;
};

/* ---- copies ---------------------------------------------------------------
 */

static int copy_2d(struct rig *r, const gm_batch_copy *c)
{
	char *dev = r->dev + c->dev;
	cudaStream_t s = r->s[r->dir == GM_BATCH_IN ? 0 : 1];

	if (r->dir == GM_BATCH_IN)
		CUDA_OK(cudaMemcpy2DAsync(dev, c->dpitch, c->host, c->hpitch,
					  c->width, c->rows,
					  cudaMemcpyHostToDevice, s));
	else
		CUDA_OK(cudaMemcpy2DAsync(c->host, c->hpitch, dev, c->dpitch,
					  c->width, c->rows,
					  cudaMemcpyDeviceToHost, s));
	return 0;
}

static void emit(void *arg, const gm_batch_copy *c)
{
	struct rig *r = arg;
	struct pieces *p = &r->p;
	char *dev = r->dev + c->dev;

	if (r->rv != 0)
		return;
	if (c->rows > 1) {
		r->rv = copy_2d(r, c);
		return;
	}
	p->dst[p->n] = r->dir == GM_BATCH_IN ? (void *)dev : (void *)c->host;
	p->src[p->n] = r->dir == GM_BATCH_IN ? (const void *)c->host : dev;
	p->size[p->n++] = c->width;
}

/* The copies of direction dir as the engine plans them, run by run. */
static int copies(struct rig *r, int dir)
{
	struct cudaMemcpyAttributes attr;
	size_t first = 0;
	uint32_t i = 0, n;

	r->dir = dir;
	r->p.n = 0;
	while (i < r->b->jobs && r->rv == 0) {
		gm_batch_slot s;
		gm_job_sizes sz;

		for (n = 1; i + n < r->b->jobs &&
			    gm_batch_same(&r->jobs[i].d, &r->jobs[i + n].d);
		     n++)
			;
		gm_job_sizes_of(&r->jobs[i].d, &sz);
		gm_batch_slot_of(&sz, &s);
		gm_batch_plan(&r->jobs[i], n, &s, r->slot[i], dir, 0, emit, r);
		i += n;
	}
	if (r->rv != 0 || r->p.n == 0)
		return r->rv;
	memset(&attr, 0, sizeof(attr));
	attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	CUDA_OK(cudaMemcpyBatchAsync(r->p.dst, r->p.src, r->p.size, r->p.n,
				     &attr, &first, 1,
				     r->s[dir == GM_BATCH_IN ? 0 : 1]));
	return 0;
}

static int do_h2d(struct rig *r)
{
	return copies(r, GM_BATCH_IN);
}

static int do_d2h(struct rig *r)
{
	return copies(r, GM_BATCH_OUT);
}

static int do_copies(struct rig *r)
{
	return do_h2d(r) || do_d2h(r) ? -1 : 0;
}

/* Inputs in, results out, as two plain copies: the link both ways. */
static int do_link(struct rig *r)
{
	CUDA_OK(cudaMemcpyAsync(r->dev, r->hin, r->b->in,
				cudaMemcpyHostToDevice, r->s[0]));
	CUDA_OK(cudaMemcpyAsync(r->hin + r->b->in, r->dev + r->b->in, r->b->out,
				cudaMemcpyDeviceToHost, r->s[1]));
	return 0;
}

/* ---- GEMMs ----------------------------------------------------------------
 */

/* Row-major out = A B is column-major out^T = B^T A^T: B goes first. */
static int gemm_one(struct rig *r, uint32_t i)
{
	const sb_batch *b = r->b;
	gm_job_sizes sz;
	gm_batch_slot s;
	char *d = r->dev + r->slot[i];
	const float one = 1, zero = 0;

	gm_job_sizes_of(&r->jobs[i].d, &sz);
	gm_batch_slot_of(&sz, &s);
	BLAS_OK(cublasGemmEx(
	    r->h, CUBLAS_OP_N, CUBLAS_OP_N, (int)b->n[i], (int)b->m[i],
	    (int)b->k[i], &one, d + s.b, CUDA_R_32F, (int)b->n[i], d,
	    CUDA_R_32F, (int)b->k[i], &zero, d + s.c, CUDA_R_32F, (int)b->n[i],
	    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

static int do_loop(struct rig *r)
{
	for (uint32_t i = 0; i < r->b->jobs; i++)
		if (gemm_one(r, i) != 0)
			return -1;
	return 0;
}

/* One batched call: strided when every job has the batch's shape,
 * else grouped, one group per shape (jobs of a shape together). */
static int do_batched(struct rig *r)
{
	const sb_batch *b = r->b;
	const float one = 1, zero = 0;
	gm_job_sizes sz;
	gm_batch_slot s;

	gm_job_sizes_of(&r->jobs[0].d, &sz);
	gm_batch_slot_of(&sz, &s);
	BLAS_OK(cublasGemmStridedBatchedEx(
	    r->h, CUBLAS_OP_N, CUBLAS_OP_N, (int)b->n[0], (int)b->m[0],
	    (int)b->k[0], &one, r->dev + s.b, CUDA_R_32F, (int)b->n[0],
	    (long long)s.bytes / 4, r->dev, CUDA_R_32F, (int)b->k[0],
	    (long long)s.bytes / 4, &zero, r->dev + s.c, CUDA_R_32F,
	    (int)b->n[0], (long long)s.bytes / 4, (int)b->jobs,
	    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

static int cmp_shape(const void *x, const void *y)
{
	const gm_job *a = *(gm_job *const *)x, *b = *(gm_job *const *)y;

	if (a->d.m != b->d.m)
		return a->d.m < b->d.m ? -1 : 1;
	if (a->d.n != b->d.n)
		return a->d.n < b->d.n ? -1 : 1;
	return (a->d.k > b->d.k) - (a->d.k < b->d.k);
}

static int setup_grouped(struct rig *r)
{
	struct grouped *gr = &r->g;
	uint32_t n = r->b->jobs, i;
	gm_job **sorted = calloc(n, sizeof(*sorted));
	void **host = calloc(3 * (size_t)n, sizeof(*host));

	gr->op = calloc(n, sizeof(*gr->op));
	gr->m = calloc(n, sizeof(int));
	gr->n = calloc(n, sizeof(int));
	gr->k = calloc(n, sizeof(int));
	gr->size = calloc(n, sizeof(int));
	gr->one = calloc(n, sizeof(float));
	gr->zero = calloc(n, sizeof(float));
	if (!sorted || !host || !gr->op || !gr->m || !gr->n || !gr->k ||
	    !gr->size || !gr->one || !gr->zero) {
		snprintf(r->err, r->errlen, "out of host memory");
		return -1;
	}
	for (i = 0; i < n; i++)
		sorted[i] = &r->jobs[i];
	qsort(sorted, n, sizeof(*sorted), cmp_shape);
	for (i = 0, gr->groups = 0; i < n; i++) {
		uint32_t j = (uint32_t)(sorted[i] - r->jobs);
		gm_job_sizes sz;
		gm_batch_slot s;
		char *d = r->dev + r->slot[j];

		if (i == 0 || cmp_shape(&sorted[i - 1], &sorted[i]) != 0) {
			gr->op[gr->groups] = CUBLAS_OP_N;
			gr->m[gr->groups] = (int)sorted[i]->d.n;
			gr->n[gr->groups] = (int)sorted[i]->d.m;
			gr->k[gr->groups] = (int)sorted[i]->d.k;
			gr->one[gr->groups] = 1;
			gr->groups++;
		}
		gr->size[gr->groups - 1]++;
		gm_job_sizes_of(&sorted[i]->d, &sz);
		gm_batch_slot_of(&sz, &s);
		host[i] = d + s.b;
		host[n + i] = d;
		host[2 * n + i] = d + s.c;
	}
	CUDA_OK(cudaMalloc((void **)&gr->ptr, 3 * (size_t)n * sizeof(void *)));
	CUDA_OK(cudaMemcpy(gr->ptr, host, 3 * (size_t)n * sizeof(void *),
			   cudaMemcpyHostToDevice));
	free(sorted);
	free(host);
	return 0;
}

/* Leading dimensions: B's is n (m of the swapped problem), A's k, out's
 * n; g.m, g.k and g.m again. */
static int do_grouped(struct rig *r)
{
	struct grouped *g = &r->g;
	uint32_t n = r->b->jobs;

	BLAS_OK(cublasGemmGroupedBatchedEx(
	    r->h, g->op, g->op, g->m, g->n, g->k, g->one,
	    (const void *const *)g->ptr, CUDA_R_32F, g->m,
	    (const void *const *)(g->ptr + n), CUDA_R_32F, g->k, g->zero,
	    g->ptr + 2 * n, CUDA_R_32F, g->m, g->groups, g->size,
	    CUBLAS_COMPUTE_32F));
	return 0;
}

/* ---- timing ---------------------------------------------------------------
 */

/* fn's work between events on both streams: warm-up, then the median. */
static int timed(struct rig *r, int (*fn)(struct rig *), double *ms)
{
	double v[REPS];
	float f;

	for (int i = -1; i < REPS; i++) {
		CUDA_OK(cudaEventRecord(r->start, r->s[0]));
		CUDA_OK(cudaStreamWaitEvent(r->s[1], r->start, 0));
		r->rv = 0;
		if (fn(r) != 0)
			return -1;
		CUDA_OK(cudaEventRecord(r->joined, r->s[1]));
		CUDA_OK(cudaStreamWaitEvent(r->s[0], r->joined, 0));
		CUDA_OK(cudaEventRecord(r->end, r->s[0]));
		CUDA_OK(cudaEventSynchronize(r->end));
		CUDA_OK(cudaEventElapsedTime(&f, r->start, r->end));
		if (i >= 0)
			v[i] = f;
	}
	*ms = sb_median(v, REPS);
	return 0;
}

static int open_rig(struct rig *r)
{
	const sb_batch *b = r->b;
	uint32_t n = b->jobs;
	gm_job_sizes sz;
	gm_batch_slot s;

	r->jobs = calloc(n, sizeof(*r->jobs));
	r->slot = calloc(n, sizeof(*r->slot));
	r->p.dst = calloc(3 * (size_t)n, sizeof(void *));
	r->p.src = calloc(3 * (size_t)n, sizeof(void *));
	r->p.size = calloc(3 * (size_t)n, sizeof(size_t));
	if (!r->jobs || !r->slot || !r->p.dst || !r->p.src || !r->p.size) {
		snprintf(r->err, r->errlen, "out of host memory");
		return -1;
	}
	CUDA_OK(cudaSetDevice(0));
	CUDA_OK(
	    cudaHostAlloc((void **)&r->hin, b->bytes, cudaHostAllocDefault));
	for (uint32_t i = 0; i < n; i++) {
		sb_batch_job(b, i, r->hin, &r->jobs[i]);
		/* gm_batch_plan follows a run's jobs through next. */
		r->jobs[i].next = i + 1 < n ? &r->jobs[i + 1] : NULL;
		gm_job_sizes_of(&r->jobs[i].d, &sz);
		gm_batch_slot_of(&sz, &s);
		r->slot[i] = r->dev_bytes;
		r->dev_bytes += s.bytes;
	}
	sb_batch_fill(b, r->hin);
	CUDA_OK(cudaMalloc((void **)&r->dev, r->dev_bytes));
	CUDA_OK(cudaMalloc((void **)&r->ws, WORKSPACE));
	for (int i = 0; i < 2; i++)
		CUDA_OK(
		    cudaStreamCreateWithFlags(&r->s[i], cudaStreamNonBlocking));
	CUDA_OK(cudaEventCreate(&r->start));
	CUDA_OK(cudaEventCreate(&r->joined));
	CUDA_OK(cudaEventCreate(&r->end));
	BLAS_OK(cublasCreate(&r->h));
	BLAS_OK(cublasSetStream(r->h, r->s[0]));
	BLAS_OK(cublasSetWorkspace(r->h, r->ws, WORKSPACE));
	return 0;
}

static void close_rig(struct rig *r)
{
	if (r->h != NULL)
		cublasDestroy(r->h);
	for (int i = 0; i < 2; i++)
		if (r->s[i] != NULL)
			cudaStreamDestroy(r->s[i]);
	cudaEventDestroy(r->start);
	cudaEventDestroy(r->joined);
	cudaEventDestroy(r->end);
	cudaFree(r->g.ptr);
	cudaFree(r->ws);
	cudaFree(r->dev);
	cudaFreeHost(r->hin);
	free(r->g.op);
	free(r->g.m);
	free(r->g.n);
	free(r->g.k);
	free(r->g.size);
	free(r->g.one);
	free(r->g.zero);
	free(r->jobs);
	free(r->slot);
	free(r->p.dst);
	free(r->p.src);
	free(r->p.size);
	(void)cudaGetLastError();
}

/* The results in the slots, into buf (out bytes). */
static int results(struct rig *r, char *buf)
{
	CUDA_OK(cudaStreamSynchronize(r->s[0]));
	for (uint32_t i = 0; i < r->b->jobs; i++) {
		gm_job_sizes sz;
		gm_batch_slot s;

		gm_job_sizes_of(&r->jobs[i].d, &sz);
		gm_batch_slot_of(&sz, &s);
		CUDA_OK(cudaMemcpy(buf, r->dev + r->slot[i] + s.c, sz.out,
				   cudaMemcpyDeviceToHost));
		buf += sz.out;
	}
	return 0;
}

/* How many jobs come out of the batched call with other bits than out
 * of cublasGemmEx: cuBLAS picks kernels per call, batch count
 * included, so it promises no equality; the engine does not rely on
 * it. */
static int compare(struct rig *r, int (*batched)(struct rig *), int *differ)
{
	char *one = malloc(r->b->out), *all = malloc(r->b->out);
	int rv = -1;

	if (one != NULL && all != NULL && do_loop(r) == 0 &&
	    results(r, one) == 0 && batched(r) == 0 && results(r, all) == 0) {
		char *p = one, *q = all;

		*differ = 0;
		for (uint32_t i = 0; i < r->b->jobs; i++) {
			size_t n = (size_t)r->b->m[i] * r->b->n[i] * 4;

			*differ += memcmp(p, q, n) != 0;
			p += n;
			q += n;
		}
		rv = 0;
	}
	free(one);
	free(all);
	return rv;
}

/* Whether every job of b has its first job's shape. */
static int uniform(const sb_batch *b)
{
	for (uint32_t i = 1; i < b->jobs; i++)
		if (b->m[i] != b->m[0] || b->n[i] != b->n[0] ||
		    b->k[i] != b->k[0])
			return 0;
	return 1;
}

int sb_bound_measure(const sb_batch *b, sb_bound *out, char *err, size_t errlen)
{
	struct rig r;
	int rv;

	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	r.b = b;
	r.err = err;
	r.errlen = errlen;
	rv = open_rig(&r);
	if (rv == 0 && !uniform(b))
		rv = setup_grouped(&r);
	/* The link's copies write over inputs: they go first, then the
	 * inputs again; the copies in go last, so the GEMMs read them. */
	if (rv == 0 && (rv = timed(&r, do_link, &out->link_ms)) == 0)
		sb_batch_fill(b, r.hin);
	if (rv == 0)
		rv = timed(&r, do_d2h, &out->d2h_ms) ||
		     timed(&r, do_copies, &out->copies_ms) ||
		     timed(&r, do_h2d, &out->h2d_ms) ||
		     timed(&r, uniform(b) ? do_batched : do_grouped,
			   &out->kernel_ms) ||
		     timed(&r, do_loop, &out->loop_ms) ||
		     compare(&r, uniform(b) ? do_batched : do_grouped,
			     &out->differ);
	close_rig(&r);
	return rv ? -1 : 0;
}

/* ---- one job alone --------------------------------------------------------
 */

/* Job 0's bare CUDA calls on stream 0, as the engine issues them: its
 * inputs in (one copy where they lie together, as the engine's does),
 * its GEMM, its result out; then waits for end, polling or blocking. */
static int one_job(struct rig *r, cudaEvent_t end, int poll)
{
	gm_job *j = &r->jobs[0];
	cudaStream_t st = r->s[0];
	gm_job_sizes sz;
	gm_batch_slot s;
	cudaError_t e;

	gm_job_sizes_of(&j->d, &sz);
	gm_batch_slot_of(&sz, &s);
	if ((char *)j->b == (char *)j->a + sz.a && s.b == sz.a) {
		CUDA_OK(cudaMemcpyAsync(r->dev, j->a, sz.a + sz.b,
					cudaMemcpyHostToDevice, st));
	} else {
		CUDA_OK(cudaMemcpyAsync(r->dev, j->a, sz.a,
					cudaMemcpyHostToDevice, st));
		CUDA_OK(cudaMemcpyAsync(r->dev + s.b, j->b, sz.b,
					cudaMemcpyHostToDevice, st));
	}
	if (gemm_one(r, 0) != 0)
		return -1;
	CUDA_OK(cudaMemcpyAsync(j->out, r->dev + s.c, sz.out,
				cudaMemcpyDeviceToHost, st));
	CUDA_OK(cudaEventRecord(end, st));
	if (poll) {
		while ((e = cudaEventQuery(end)) == cudaErrorNotReady)
			;
		CUDA_OK(e);
	} else {
		CUDA_OK(cudaEventSynchronize(end));
	}
	return 0;
}

/* The median of ONE_REPS runs of one_job after a warm-up, host clock. */
static int one_timed(struct rig *r, cudaEvent_t end, int poll, double *ms)
{
	static double v[ONE_REPS];

	for (int i = -20; i < ONE_REPS; i++) {
		double t0 = sb_now_ms();

		if (one_job(r, end, poll) != 0)
			return -1;
		if (i >= 0)
			v[i] = sb_now_ms() - t0;
	}
	*ms = sb_median(v, ONE_REPS);
	return 0;
}

static int blocking_event(struct rig *r, cudaEvent_t *ev)
{
	CUDA_OK(cudaEventCreateWithFlags(ev, cudaEventBlockingSync |
						 cudaEventDisableTiming));
	return 0;
}

int sb_bound_one(const sb_batch *b, double *poll_ms, double *block_ms,
		 char *err, size_t errlen)
{
	cudaEvent_t end = NULL;
	struct rig r;
	double error;
	int rv;

	memset(&r, 0, sizeof(r));
	r.b = b;
	r.err = err;
	r.errlen = errlen;
	rv = open_rig(&r) || blocking_event(&r, &end) ||
	     one_timed(&r, end, 1, poll_ms) || one_timed(&r, end, 0, block_ms);
	if (rv == 0 && !((error = sb_batch_check(b, r.hin)) < 1e-5)) {
		snprintf(err, errlen, "one job alone: error %.2g", error);
		rv = -1;
	}
	if (end != NULL)
		cudaEventDestroy(end);
	close_rig(&r);
	return rv ? -1 : 0;
}
