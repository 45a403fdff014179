/*
 * gm_cuda_batch.cu - a batch of small jobs on its stream: its copies in,
 * its batched calls, its copies back.
 *
 * The batch's jobs come in runs of one key (gm_batch.h), each job in its
 * slot of the batch's slab. Each phase walks the runs: gm_batch_plan
 * says how each run's operands cross, a strided copy per operand (or per
 * operands that sit together on both sides) for jobs laid out at a
 * constant stride, one piece per job otherwise; the pieces of all runs
 * go in one cudaMemcpyBatchAsync. Each run is one call of
 * gm_cuda_gemm_batch. So a batch of jobs laid out back to back costs
 * two or three copies and one kernel launch per run, whatever its size.
 */
#include "gm_cuda_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_cuda_err.h"
#include "gm_cuda_gemm.h"

/* Pieces of one phase of one batch: three per job at the most. */
#define PIECES_MAX (3 * GM_CUDA_BATCH_JOBS)

struct gm_cuda_copies {
	void *dst[PIECES_MAX];
	const void *src[PIECES_MAX];
	size_t size[PIECES_MAX];
	size_t n;
};

int gm_cuda_copies_open(struct gm_cuda_copies **out)
{
	*out = (struct gm_cuda_copies *)calloc(1, sizeof(**out));
	return *out != NULL ? GM_OK : GM_ENOMEM;
}

void gm_cuda_copies_close(struct gm_cuda_copies *c)
{
	free(c);
}

/* One run of a batch: count jobs from first, with one slot. */
struct run {
	gm_job *first;
	uint32_t count;
	gm_batch_slot slot;
	uint64_t dev; /* offset of its first slot in the slab */
};

/* The run that starts at job j with at most left jobs, whose slots start
 * at dev; returns the job after it. */
static gm_job *run_at(gm_job *j, uint32_t left, uint64_t dev, struct run *r)
{
	gm_job_sizes sz;
	gm_job *k = j;

	gm_job_sizes_of(&j->d, &sz);
	gm_batch_slot_of(&sz, &r->slot);
	r->first = j;
	r->dev = dev;
	for (r->count = 0;
	     r->count < left && k != NULL && gm_batch_same(&k->d, &j->d);
	     r->count++)
		k = k->next;
	return k;
}

/* What the copies of one phase need while they are planned. */
struct phase {
	struct gm_cuda_ctx *c;
	struct gm_cuda_copies *pieces;
	char *slab;
	int dir;
	int rv; /* the first failure */
};

static int copy_2d(struct phase *p, const gm_batch_copy *k)
{
	gm_job *j = p->c->job;
	cudaStream_t s = p->c->st->s;
	char *dev = p->slab + k->dev;
	int in = p->dir == GM_BATCH_IN;

	/* Rows back to back on both sides are one plain copy. */
	if (k->hpitch == k->width && k->dpitch == k->width) {
		GM_CUDA_TRY(cudaMemcpyAsync(in ? (void *)dev : (void *)k->host,
					    in ? (const void *)k->host
					       : (const void *)dev,
					    k->width * k->rows,
					    in ? cudaMemcpyHostToDevice
					       : cudaMemcpyDeviceToHost,
					    s),
			    j->msg, sizeof(j->msg));
		return GM_OK;
	}
	if (in)
		GM_CUDA_TRY(cudaMemcpy2DAsync(dev, k->dpitch, k->host,
					      k->hpitch, k->width, k->rows,
					      cudaMemcpyHostToDevice, s),
			    j->msg, sizeof(j->msg));
	else
		GM_CUDA_TRY(cudaMemcpy2DAsync(k->host, k->hpitch, dev,
					      k->dpitch, k->width, k->rows,
					      cudaMemcpyDeviceToHost, s),
			    j->msg, sizeof(j->msg));
	return GM_OK;
}

/* Sends the pieces gathered so far, as one batched copy. */
static int flush(struct phase *p)
{
	struct gm_cuda_copies *q = p->pieces;
	gm_job *j = p->c->job;
	cudaStream_t s = p->c->st->s;
	size_t n = q->n;

	q->n = 0;
	if (n == 0)
		return GM_OK;
	if (n == 1) {
		GM_CUDA_TRY(cudaMemcpyAsync(q->dst[0], q->src[0], q->size[0],
					    cudaMemcpyDefault, s),
			    j->msg, sizeof(j->msg));
		return GM_OK;
	}
#if CUDART_VERSION >= 13000
	{
		struct cudaMemcpyAttributes attr;
		size_t first = 0;

		memset(&attr, 0, sizeof(attr));
		attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
		GM_CUDA_TRY(cudaMemcpyBatchAsync(q->dst, q->src, q->size, n,
						 &attr, &first, 1, s),
			    j->msg, sizeof(j->msg));
	}
#else
	for (size_t i = 0; i < n; i++)
		GM_CUDA_TRY(cudaMemcpyAsync(q->dst[i], q->src[i], q->size[i],
					    cudaMemcpyDefault, s),
			    j->msg, sizeof(j->msg));
#endif
	return GM_OK;
}

static void emit(void *arg, const gm_batch_copy *k)
{
	struct phase *p = (struct phase *)arg;
	struct gm_cuda_copies *q = p->pieces;
	char *dev = p->slab + k->dev;

	if (p->rv != GM_OK)
		return;
	if (k->rows > 1) {
		p->rv = copy_2d(p, k);
		return;
	}
	if (q->n == PIECES_MAX && (p->rv = flush(p)) != GM_OK)
		return;
	q->dst[q->n] = p->dir == GM_BATCH_IN ? (void *)dev : (void *)k->host;
	q->src[q->n] =
	    p->dir == GM_BATCH_IN ? (const void *)k->host : (const void *)dev;
	q->size[q->n] = k->width;
	q->n++;
}

/* Plans and issues the copies of every run of c in direction dir. */
static int copies(struct gm_cuda_ctx *c, int dir)
{
	struct phase p = {c, c->st->dev->copies, (char *)c->slab, dir, GM_OK};
	uint32_t left = c->njobs;
	uint64_t dev = 0;
	struct run r;
	gm_job *j = c->job;

	p.pieces->n = 0;
	while (left > 0 && p.rv == GM_OK) {
		j = run_at(j, left, dev, &r);
		gm_batch_plan(r.first, r.count, &r.slot, r.dev, dir,
			      (r.first->d.flags & GM_JOB_HAS_C) != 0, emit, &p);
		left -= r.count;
		dev += (uint64_t)r.count * r.slot.bytes;
	}
	if (p.rv == GM_OK)
		p.rv = flush(&p);
	return p.rv;
}

int gm_cuda_batch_h2d(struct gm_cuda_ctx *c)
{
	return copies(c, GM_BATCH_IN);
}

int gm_cuda_batch_d2h(struct gm_cuda_ctx *c)
{
	return copies(c, GM_BATCH_OUT);
}

int gm_cuda_batch_kernel(struct gm_cuda_ctx *c)
{
	struct gm_cuda_stream *st = c->st;
	char *slab = (char *)c->slab;
	uint32_t left = c->njobs;
	uint64_t dev = 0;
	gm_job *j = c->job;
	struct run r;
	int rv;

	while (left > 0) {
		j = run_at(j, left, dev, &r);
		rv = gm_cuda_gemm_batch(
		    st->blas, st->dev->lt, st->ws, st->s, &r.first->d,
		    r.first->d.kernel, slab + r.dev, slab + r.dev + r.slot.b,
		    slab + r.dev + r.slot.c, r.slot.bytes, r.count, c->job->msg,
		    sizeof(c->job->msg));
		if (rv != GM_OK)
			return rv;
		left -= r.count;
		dev += (uint64_t)r.count * r.slot.bytes;
	}
	return GM_OK;
}
