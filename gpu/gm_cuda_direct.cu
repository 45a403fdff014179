/*
 * gm_cuda_direct.cu - small jobs alone on mapped host memory, their
 * cuBLAS calls kept as graphs; see gm_cuda_direct.h.
 *
 * The table is a fixed array searched whole: a place is its key (the
 * job's description, its operands' addresses, the stride of its batch
 * slot and the stream), and an entry is either seen once (no graph yet)
 * or holds the executable graph of its call. A full table gives up its
 * least recently used entry; a graph still running is freed by CUDA
 * when it ends.
 */
#include "gm_cuda_direct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_batch.h"
#include "gm_cuda_dev.h"
#include "gm_cuda_err.h"
#include "gm_cuda_gemm.h"

#define PLACES 64 /* places remembered per device */

/* Built zeroed, so that memcmp sees no stray padding. */
struct key {
	gm_job_desc d;
	const void *a, *b;
	void *out;
	uint64_t stride;
	cudaStream_t s;
};

struct place {
	struct key key;
	int used;	      /* a place is in it */
	int uncaptured;	      /* its capture failed: not tried again */
	cudaGraphExec_t exec; /* NULL: seen once, or uncaptured */
	uint64_t last;	      /* the use count when last used */
};

struct gm_cuda_direct {
	uint64_t max_bytes;
	uint64_t uses;
	struct place p[PLACES];
};

int gm_cuda_direct_open(uint64_t max_bytes, struct gm_cuda_direct **out,
			char *msg, size_t msglen)
{
	*out = (struct gm_cuda_direct *)calloc(1, sizeof(**out));
	if (*out == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	(*out)->max_bytes = max_bytes;
	return GM_OK;
}

static void forget(struct place *p)
{
	if (p->exec != NULL && cudaGraphExecDestroy(p->exec) != cudaSuccess)
		(void)cudaGetLastError();
	memset(p, 0, sizeof(*p));
}

void gm_cuda_direct_close(struct gm_cuda_direct *g)
{
	if (g == NULL)
		return;
	for (int i = 0; i < PLACES; i++)
		forget(&g->p[i]);
	free(g);
}

/* Whether the device reads and writes p as the host does: mapped pinned
 * memory on a device that uses host pointers for it. */
static int mapped(const void *p)
{
	void *dev;

	if (cudaHostGetDevicePointer(&dev, (void *)p, 0) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return dev == p;
}

static int aligned(const void *p)
{
	return ((uintptr_t)p & (GM_BATCH_ALIGN - 1)) == 0;
}

int gm_cuda_direct_fits(const struct gm_cuda_direct *g, const gm_job *j,
			const gm_job_sizes *sz)
{
	int has_c = (j->d.flags & GM_JOB_HAS_C) != 0;

	if (sz->a + sz->b + sz->c + sz->out > g->max_bytes ||
	    j->host_pageable != 0)
		return 0;
	/* Socket payloads are staged into the arena before the launch: a
	 * staged operand's place is known, its bytes not yet. */
	if (!aligned(j->a) || !aligned(j->b) || !aligned(j->out) ||
	    (has_c && !aligned(j->c)))
		return 0;
	return mapped(j->a) && mapped(j->b) && mapped(j->out) &&
	       (!has_c || j->c == j->out || mapped(j->c));
}

static struct key key_of(const gm_job *j, uint64_t stride, cudaStream_t s)
{
	struct key k;

	memset(&k, 0, sizeof(k));
	k.d.dtype = j->d.dtype;
	k.d.trans_a = j->d.trans_a;
	k.d.trans_b = j->d.trans_b;
	k.d.layout = j->d.layout;
	k.d.kernel = j->d.kernel;
	k.d.flags = j->d.flags;
	k.d.m = j->d.m;
	k.d.n = j->d.n;
	k.d.k = j->d.k;
	k.d.alpha = j->d.alpha;
	k.d.beta = j->d.beta;
	k.a = j->a;
	k.b = j->b;
	k.out = j->out;
	k.stride = stride;
	k.s = s;
	return k;
}

/* The entry of k, else the one it takes: a free one, or the least
 * recently used, given up. */
static struct place *find(struct gm_cuda_direct *g, const struct key *k)
{
	struct place *lru = &g->p[0];

	for (int i = 0; i < PLACES; i++) {
		struct place *p = &g->p[i];

		if (p->used && memcmp(&p->key, k, sizeof(*k)) == 0)
			return p;
		if (!p->used ? lru->used : (lru->used && p->last < lru->last))
			lru = p;
	}
	forget(lru);
	memcpy(&lru->key, k, sizeof(*k));
	return lru;
}

/* The call a batch of one makes, on stream s. */
static int call(struct gm_cuda_stream *st, cudaStream_t s, gm_job *j,
		uint64_t stride, char *msg, size_t msglen)
{
	return gm_cuda_gemm_batch(st->blas, st->dev->lt, st->ws, s, &j->d,
				  j->d.kernel, j->a, j->b, j->out, stride, 1,
				  msg, msglen);
}

/* Records j's call on st's stream into an executable graph; NULL when
 * it cannot be captured (the job then runs uncaptured). */
static cudaGraphExec_t capture(struct gm_cuda_stream *st, gm_job *j,
			       uint64_t stride)
{
	char msg[GM_MSG_TEXT + 1];
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	int rv;

	if (cudaStreamBeginCapture(st->s, cudaStreamCaptureModeThreadLocal) !=
	    cudaSuccess) {
		(void)cudaGetLastError();
		return NULL;
	}
	rv = call(st, st->s, j, stride, msg, sizeof(msg));
	if (cudaStreamEndCapture(st->s, &graph) != cudaSuccess || rv != GM_OK ||
	    cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
		(void)cudaGetLastError();
		exec = NULL;
	}
	if (graph != NULL)
		cudaGraphDestroy(graph);
	return exec;
}

int gm_cuda_direct_run(struct gm_cuda_direct *g, struct gm_cuda_stream *st,
		       gm_job *j, char *msg, size_t msglen)
{
	gm_job_sizes sz;
	gm_batch_slot slot;
	struct key k;
	struct place *p;

	gm_job_sizes_of(&j->d, &sz);
	gm_batch_slot_of(&sz, &slot);
	/* The tiled kernel launches at the cost of a graph's launch. */
	if (j->d.kernel == GM_KERNEL_TILED)
		return call(st, st->s, j, slot.bytes, msg, msglen);
	k = key_of(j, slot.bytes, st->s);
	p = find(g, &k);
	p->last = ++g->uses;
	if (!p->used) {
		p->used = 1;
		return call(st, st->s, j, slot.bytes, msg, msglen);
	}
	if (p->exec == NULL && !p->uncaptured &&
	    (p->exec = capture(st, j, slot.bytes)) == NULL)
		p->uncaptured = 1;
	if (p->exec == NULL)
		return call(st, st->s, j, slot.bytes, msg, msglen);
	GM_CUDA_TRY(cudaGraphLaunch(p->exec, st->s), msg, msglen);
	return GM_OK;
}

int gm_cuda_direct_warm(struct gm_cuda_stream *st, char *mem, char *msg,
			size_t msglen)
{
	gm_job j;
	gm_job_sizes sz;
	gm_batch_slot slot;
	cudaGraphExec_t exec;
	cudaError_t e;

	memset(&j, 0, sizeof(j));
	j.d.dtype = GM_FP32;
	j.d.kernel = GM_KERNEL_CUBLAS;
	j.d.m = j.d.n = j.d.k = 8;
	j.d.alpha = 1;
	gm_job_sizes_of(&j.d, &sz);
	gm_batch_slot_of(&sz, &slot);
	j.a = mem;
	j.b = mem + slot.b;
	j.out = mem + slot.c;
	/* Where no graph can be made, jobs run uncaptured: no failure. */
	if ((exec = capture(st, &j, slot.bytes)) == NULL)
		return GM_OK;
	if ((e = cudaGraphLaunch(exec, st->s)) == cudaSuccess)
		e = cudaStreamSynchronize(st->s);
	cudaGraphExecDestroy(exec);
	if (e != cudaSuccess)
		return gm_cuda_fail(e, "a CUDA graph of one call", __FILE__,
				    __LINE__, msg, msglen);
	return GM_OK;
}
