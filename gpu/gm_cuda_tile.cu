/*
 * gm_cuda_tile.cu - a tiled job's operations (gm_ooc.h) on the runner's
 * three streams (gm_cuda_tile.h), and the host copies it spreads over
 * its crew.
 *
 * Each operation first makes its stream wait for the events it names,
 * then runs between two timing events, then records its own events. A
 * copy between DMA-able host memory and a device buffer is one
 * cudaMemcpy2DAsync, the host pitch being the operand's line stride, so
 * a tile's rows (or columns) cross straight from the job's matrix. A
 * copy from pageable memory goes through the staging buffers, a chunk of
 * whole lines at a time: the crew packs the chunk into a free buffer,
 * the DMA takes it from there, and the buffer is free again once its
 * event has passed; a copy to pageable memory lands in a buffer and is
 * unpacked when the buffer is next needed (or when the job ends), so
 * the runner issues the next tile's work before it waits for a result.
 *
 * The runner queues up to GM_CUDA_OOC_TIMED operations ahead of the
 * device: timing an operation means first waiting for the one issued
 * that many operations before it. When anything fails, nothing more is
 * issued and the runner waits for the streams to drain before the slab
 * may go back to the pool.
 */
#include "gm_cuda_tile.h"

#include <stdio.h>
#include <string.h>

#include "gm_cuda_dev.h"
#include "gm_cuda_err.h"
#include "gm_cuda_fault.h"
#include "gm_cuda_gemm.h"

/* The job under way. */
struct run {
	struct gm_cuda_ooc *o;
	gm_job *j;
	const gm_ooc_plan *p;
	char *dev;    /* the plan's buffers */
	uint32_t mid; /* the tile where test builds inject their faults */
};

/* ---- host copies ------------------------------------------------------ */

struct copy2d {
	char *dst;
	const char *src;
	uint64_t dpitch, spitch, width, lines, per;
};

static void copy_item(void *arg, uint64_t i)
{
	const struct copy2d *c = (const struct copy2d *)arg;
	uint64_t l = i * c->per, end = l + c->per;

	for (end = end < c->lines ? end : c->lines; l < end; l++)
		memcpy(c->dst + l * c->dpitch, c->src + l * c->spitch,
		       c->width);
}

void gm_cuda_tile_copy(struct gm_cuda_ooc *o, void *dst, uint64_t dpitch,
		       const void *src, uint64_t spitch, uint64_t width,
		       uint64_t lines)
{
	struct copy2d c = {
	    (char *)dst, (const char *)src, dpitch, spitch, width, lines, 1};

	if (width == 0 || lines == 0)
		return;
	if (width < GM_CUDA_COPY_ITEM)
		c.per = GM_CUDA_COPY_ITEM / width;
	gm_crew_run(o->crew, copy_item, &c, (lines + c.per - 1) / c.per);
}

/* ---- timing --------------------------------------------------------- */

/* Puts a timed operation's interval on the device's timeline. */
static void add_interval(struct gm_cuda_dev *d, const struct gm_cuda_timed *t)
{
	float a, b;

	if (cudaEventElapsedTime(&a, d->span_ev, t->start) != cudaSuccess ||
	    cudaEventElapsedTime(&b, d->span_ev, t->end) != cudaSuccess) {
		(void)cudaGetLastError(); /* left out: totals only shrink */
		return;
	}
	pthread_mutex_lock(&d->mu);
	gm_tl_add(&d->tl, t->stream == GM_OOC_MUL ? GM_TL_KERNEL : GM_TL_COPY,
		  a * 1e3, b * 1e3);
	pthread_mutex_unlock(&d->mu);
}

/* Waits for t's operation to end and counts its time. */
static int harvest(struct gm_cuda_ooc *o, struct gm_cuda_timed *t, gm_job *j)
{
	cudaError_t e;
	float ms;

	if (t->stream < 0)
		return GM_OK;
	if ((e = cudaEventSynchronize(t->end)) != cudaSuccess)
		return gm_cuda_fail(e, "waiting for a tile", __FILE__, __LINE__,
				    j->msg, sizeof(j->msg));
	if (cudaEventElapsedTime(&ms, t->start, t->end) == cudaSuccess)
		o->sum_us[t->stream] += ms * 1e3;
	else
		(void)cudaGetLastError();
	if (o->span)
		add_interval(o->dev, t);
	t->stream = -1;
	return GM_OK;
}

static int time_start(struct gm_cuda_ooc *o, int stream, gm_job *j,
		      struct gm_cuda_timed **out)
{
	struct gm_cuda_timed *t =
	    &o->timed[o->next_timed++ % GM_CUDA_OOC_TIMED];
	int rv;

	if ((rv = harvest(o, t, j)) != GM_OK)
		return rv;
	GM_CUDA_TRY(cudaEventRecord(t->start, o->s[stream]), j->msg,
		    sizeof(j->msg));
	*out = t;
	return GM_OK;
}

static int time_end(struct gm_cuda_ooc *o, struct gm_cuda_timed *t, int stream,
		    gm_job *j)
{
	GM_CUDA_TRY(cudaEventRecord(t->end, o->s[stream]), j->msg,
		    sizeof(j->msg));
	t->stream = stream;
	return GM_OK;
}

/* ---- staging through pinned buffers ---------------------------------- */

/* Makes b free for a new copy: its last copy is past, and what a copy
 * out left in it is unpacked. */
static int stage_free(struct gm_cuda_ooc *o, struct gm_cuda_stage_buf *b,
		      gm_job *j)
{
	cudaError_t e;

	if (b->state == GM_CUDA_STAGE_FREE)
		return GM_OK;
	if ((e = cudaEventSynchronize(b->ev)) != cudaSuccess)
		return gm_cuda_fail(e, "waiting for a staging copy", __FILE__,
				    __LINE__, j->msg, sizeof(j->msg));
	if (b->state == GM_CUDA_STAGE_OUT)
		gm_cuda_tile_copy(o, b->dst, b->hpitch, b->p, b->width,
				  b->width, b->lines);
	b->state = GM_CUDA_STAGE_FREE;
	return GM_OK;
}

/* The next staging buffer, free. */
static int stage_next(struct gm_cuda_ooc *o, gm_job *j,
		      struct gm_cuda_stage_buf **out)
{
	*out = &o->stage[o->next_stage++ % GM_CUDA_OOC_STAGES];
	return stage_free(o, *out, j);
}

/* Whole lines of b per staging buffer. */
static uint32_t chunk_lines(const gm_ooc_block *b)
{
	return (uint32_t)(GM_CUDA_OOC_STAGE_BYTES / b->width);
}

/*
 * Copies block b between host memory at host and a device slot through
 * the staging buffers, a chunk of whole lines at a time: in, each chunk
 * is packed into a buffer and sent from there; out, each chunk lands in
 * a buffer, to be unpacked when the buffer is next needed.
 */
static int stage(struct run *r, int out, char *host, const gm_ooc_block *b,
		 char *slot)
{
	struct gm_cuda_ooc *o = r->o;
	cudaStream_t s = o->s[out ? GM_OOC_OUT : GM_OOC_IN];
	uint32_t per = chunk_lines(b), n;
	struct gm_cuda_stage_buf *sb;
	int rv;

	for (uint32_t l = 0; l < b->lines; l += n) {
		char *h = host + l * b->hpitch, *dv = slot + l * b->dpitch;

		n = b->lines - l < per ? b->lines - l : per;
		if ((rv = stage_next(o, r->j, &sb)) != GM_OK)
			return rv;
		if (!out)
			gm_cuda_tile_copy(o, sb->p, b->width, h, b->hpitch,
					  b->width, n);
		GM_CUDA_TRY(out ? cudaMemcpy2DAsync(sb->p, b->width, dv,
						    b->dpitch, b->width, n,
						    cudaMemcpyDeviceToHost, s)
				: cudaMemcpy2DAsync(dv, b->dpitch, sb->p,
						    b->width, b->width, n,
						    cudaMemcpyHostToDevice, s),
			    r->j->msg, sizeof(r->j->msg));
		GM_CUDA_TRY(cudaEventRecord(sb->ev, s), r->j->msg,
			    sizeof(r->j->msg));
		sb->state = out ? GM_CUDA_STAGE_OUT : GM_CUDA_STAGE_IN;
		sb->dst = h;
		sb->hpitch = b->hpitch;
		sb->width = b->width;
		sb->lines = n;
	}
	return GM_OK;
}

/* ---- operations -------------------------------------------------------- */

static char *slot_of(const struct run *r, int operand, unsigned slot)
{
	return r->dev + gm_ooc_slot_offset(r->p, operand, slot);
}

static int copy_in(struct run *r, const gm_ooc_op *op)
{
	static const unsigned bit[] = {GM_PAGEABLE_A, GM_PAGEABLE_B,
				       GM_PAGEABLE_C};
	const void *base[] = {r->j->a, r->j->b, r->j->c};
	const gm_ooc_block *b = &op->blk;
	const char *src = (const char *)base[op->operand] + b->off;
	char *slot = slot_of(r, op->operand, op->slot);

	if (r->j->host_pageable & bit[op->operand])
		return stage(r, 0, (char *)src, b, slot);
	GM_CUDA_TRY(cudaMemcpy2DAsync(slot, b->dpitch, src, b->hpitch, b->width,
				      b->lines, cudaMemcpyHostToDevice,
				      r->o->s[GM_OOC_IN]),
		    r->j->msg, sizeof(r->j->msg));
	return GM_OK;
}

static int copy_out(struct run *r, const gm_ooc_op *op)
{
	const gm_ooc_block *b = &op->blk;
	char *dst = (char *)r->j->out + b->off;
	const char *slot = slot_of(r, GM_OOC_C, op->slot);

	if (r->j->host_pageable & GM_PAGEABLE_OUT)
		return stage(r, 1, dst, b, (char *)slot);
	GM_CUDA_TRY(cudaMemcpy2DAsync(dst, b->hpitch, slot, b->dpitch, b->width,
				      b->lines, cudaMemcpyDeviceToHost,
				      r->o->s[GM_OOC_OUT]),
		    r->j->msg, sizeof(r->j->msg));
	return GM_OK;
}

static int multiply(struct run *r, const gm_ooc_op *op)
{
	const gm_ooc_plan *p = r->p;
	gm_cuda_part part;

	part.m = op->m;
	part.n = op->n;
	part.k = op->k;
	part.lda = p->ld[GM_OOC_A];
	part.ldb = p->ld[GM_OOC_B];
	part.ldc = p->ld[GM_OOC_C];
	part.beta = op->beta;
	return gm_cuda_gemm_part(
	    r->o->blas, r->o->s[GM_OOC_MUL], &r->j->d, r->j->d.kernel, &part,
	    slot_of(r, GM_OOC_A, op->a_slot), slot_of(r, GM_OOC_B, op->b_slot),
	    slot_of(r, GM_OOC_C, op->slot), r->j->msg, sizeof(r->j->msg));
}

/* Test builds: an armed fault lands at the first GEMM of the middle
 * tile, with half of the job's work issued. */
static int inject(struct run *r, const gm_ooc_op *op)
{
	int *armed = &r->o->dev->sh->fault_armed;

	if (op->kind != GM_OOC_GEMM || op->pos != r->mid || op->step != 0)
		return GM_OK;
	if (gm_cuda_fault_take(armed, GM_CUDA_FAULT_OOM))
		return gm_cuda_fail(cudaErrorMemoryAllocation,
				    "device allocation (injected)", __FILE__,
				    __LINE__, r->j->msg, sizeof(r->j->msg));
	if (gm_cuda_fault_take(armed, GM_CUDA_FAULT_STICKY) &&
	    gm_cuda_fault_launch(r->o->s[GM_OOC_MUL]) != cudaSuccess)
		(void)cudaGetLastError();
	return GM_OK;
}

static int issue(struct run *r, const gm_ooc_op *op)
{
	struct gm_cuda_ooc *o = r->o;
	cudaStream_t s = o->s[op->stream];
	struct gm_cuda_timed *t = NULL;
	int rv, i;

	if ((rv = inject(r, op)) != GM_OK)
		return rv;
	for (i = 0; i < op->nwait; i++)
		GM_CUDA_TRY(cudaStreamWaitEvent(s, o->ev[op->wait[i]], 0),
			    r->j->msg, sizeof(r->j->msg));
	if ((rv = time_start(o, op->stream, r->j, &t)) != GM_OK)
		return rv;
	rv = op->kind == GM_OOC_LOAD   ? copy_in(r, op)
	     : op->kind == GM_OOC_GEMM ? multiply(r, op)
				       : copy_out(r, op);
	if (rv != GM_OK || (rv = time_end(o, t, op->stream, r->j)) != GM_OK)
		return rv;
	for (i = 0; i < op->nrecord; i++)
		GM_CUDA_TRY(cudaEventRecord(o->ev[op->record[i]], s), r->j->msg,
			    sizeof(r->j->msg));
	return GM_OK;
}

/* ---- the end of a job ---------------------------------------------------- */

/* A failure found while waiting: kept when it is the first, or when it
 * says the device is lost. */
static int waited(gm_job *j, int rv, cudaError_t e)
{
	char msg[GM_MSG_TEXT + 1];
	int w;

	if (e == cudaSuccess)
		return rv;
	w = gm_cuda_fail(e, "waiting for a tiled job", __FILE__, __LINE__, msg,
			 sizeof(msg));
	if (rv == GM_OK || w == GM_EGPUFAULT) {
		memcpy(j->msg, msg, sizeof(msg));
		return w;
	}
	return rv;
}

/*
 * Waits until the device is past everything issued: the timed
 * operations in the order they were issued, the staging copies (and
 * their unpacking), then each stream. After a failure only the streams
 * are waited for and what staging left is dropped. Returns rv or the
 * failure the waits found.
 */
static int settle(struct run *r, int rv, double *end_us)
{
	struct gm_cuda_ooc *o = r->o;
	unsigned i;
	float ms;

	for (i = 0; i < GM_CUDA_OOC_TIMED; i++) {
		struct gm_cuda_timed *t =
		    &o->timed[(o->next_timed + i) % GM_CUDA_OOC_TIMED];

		if (rv == GM_OK)
			rv = harvest(o, t, r->j);
		t->stream = -1;
	}
	for (i = 0; i < GM_CUDA_OOC_STAGES && rv == GM_OK; i++)
		rv = stage_free(
		    o, &o->stage[(o->next_stage + i) % GM_CUDA_OOC_STAGES],
		    r->j);
	for (i = 0; i < GM_OOC_STREAMS; i++)
		rv = waited(r->j, rv, cudaStreamSynchronize(o->s[i]));
	for (i = 0; i < GM_CUDA_OOC_STAGES; i++)
		o->stage[i].state = GM_CUDA_STAGE_FREE;
	if (rv == GM_OK && o->span &&
	    cudaEventElapsedTime(&ms, o->dev->span_ev, o->end) == cudaSuccess)
		*end_us = ms * 1e3;
	(void)cudaGetLastError();
	return rv;
}

int gm_cuda_tile_run(struct gm_cuda_ooc *o, gm_job *j, const gm_ooc_plan *p,
		     char *dev, double *end_us)
{
	struct run r = {o, j, p, dev, gm_ooc_tiles(p) / 2};
	gm_ooc_iter it;
	gm_ooc_op op;
	int rv = GM_OK;

	*end_us = -1;
	memset(o->sum_us, 0, sizeof(o->sum_us));
	o->span = gm_cuda_dev_open_span(o->dev, o->s[GM_OOC_IN]);
	gm_ooc_iter_init(&it, p, 0, gm_ooc_tiles(p));
	while (rv == GM_OK && gm_ooc_next(&it, &op))
		rv = issue(&r, &op);
	/* The last copy out comes after every other operation. */
	if (rv == GM_OK &&
	    cudaEventRecord(o->end, o->s[GM_OOC_OUT]) != cudaSuccess) {
		(void)cudaGetLastError();
		o->span = 0;
	}
	return settle(&r, rv, end_us);
}
