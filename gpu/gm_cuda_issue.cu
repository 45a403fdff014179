/*
 * gm_cuda_issue.cu - a device's issue thread: turns each queued wave into
 * work on the stream ring.
 *
 * A wave's jobs are checked first; a job that fails its checks is handed
 * back at once and never joins a batch. A job larger than its share of
 * the device pool, or with operands in pageable memory, goes to the
 * device's runner, which tiles it (gm_cuda_ooc.h). Small jobs (at most
 * small_job_bytes of host memory, gm_engine.h) are sorted by key and cut
 * into batches (gm_batch.h): each batch is one context, with one slab,
 * one set of events and batched copies and calls (gm_cuda_batch.cu).
 * Batches of at most batch_bytes of host memory keep the copies of one
 * batch overlapping the calls and copies back of others, as whole jobs
 * do. A batch of one small enough, with its operands in mapped memory,
 * runs straight on its host memory instead (gm_cuda_direct.h): no
 * copies, its call replayed as a graph. The other jobs go one context
 * each, after the batches.
 *
 * Contexts take streams in rotation. A context gets its device slab
 * before any of its work is issued; when the pool is full, what has
 * been gathered so far is issued as a chunk and the thread sleeps until
 * a completion frees memory (or, while the runner waits for its slab,
 * until the runner has it). Jobs that have no memory yet are still
 * queued: while the thread sleeps, the loop may take back any of them
 * (the job or batch it waits with, the small jobs still in their
 * groups, the wave's jobs of their own still held), and one past its
 * deadline goes back ETIMEDOUT. A batch that cannot get its slab even with
 * nothing in flight falls back to one batch per job, and only a job
 * that still does not fit fails. A chunk's socket payloads are all
 * staged into the arena first (gm_cuda_stage.h), so no host copy sits
 * between two of its DMAs.
 *
 * The chunk then goes out one round of the ring at a time, each round
 * breadth-first: the host-to-device copies of one context per stream,
 * then their kernels, then their device-to-host copies, so that while
 * one stream computes another copies (GM_ISSUE_DEPTH issues each context
 * whole instead, for comparison). A round is one context per stream
 * because a stream runs its work in order: with two of a round on one
 * stream, that stream's first kernel would wait for its second
 * context's copies, and with a whole chunk issued breadth-first, every
 * kernel waits for most of the chunk's copies and every copy back for
 * all of them. Round by round, the next round's host-to-device copies
 * overlap this round's kernels and copies back. bench/RESULTS.md
 * compares the orders on real batches.
 *
 * Each phase is bracketed by events on the context's stream. Jobs that
 * fail before their first copy are handed back from here; every context
 * that reached a stream goes to that stream's completion thread, even
 * one whose issue failed half-way, so that its slab is freed only after
 * the stream is past it.
 */
#include "gm_cuda_issue.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_cuda_batch.h"
#include "gm_cuda_dev.h"
#include "gm_cuda_direct.h"
#include "gm_cuda_err.h"
#include "gm_cuda_fault.h"
#include "gm_cuda_gemm.h"
#include "gm_cuda_ooc.h"
#include "gm_cuda_stage.h"
#include "gm_cuda_take.h"
#include "gm_cuda_warm.h"
#include "gm_engine_impl.h"

#define CHUNK_MAX 256 /* contexts issued breadth-first as one group */

#define ALIGN_UP(x) (((x) + GM_POOL_ALIGN - 1) & ~(uint64_t)(GM_POOL_ALIGN - 1))

static void fail_job(struct gm_cuda_dev *d, gm_job *j, int code,
		     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail_job(struct gm_cuda_dev *d, gm_job *j, int code,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->msg, sizeof(j->msg), fmt, ap);
	va_end(ap);
	j->status = code;
	gm_cuda_dev_finish(d, j);
}

/* Hands back n jobs linked from j, failed with code and j's message. */
static void fail_n(struct gm_cuda_dev *d, gm_job *j, uint32_t n, int code)
{
	gm_job *k = j->next;

	j->status = code;
	for (uint32_t i = 1; i < n; i++, k = k->next) {
		k->status = code;
		memcpy(k->msg, j->msg, sizeof(k->msg));
	}
	gm_cuda_dev_finish_n(d, j, n);
}

/* Device bytes of a job on its own: A, B, and C (which the result
 * overwrites) unless the result goes straight to mapped host memory. */
static uint64_t slab_bytes(const gm_job_sizes *sz, int mapped)
{
	return ALIGN_UP(sz->a) + ALIGN_UP(sz->b) + (mapped ? 0 : sz->out);
}

/* Where the kernel writes the result: NULL for a device buffer, else the
 * device's view of the job's out in mapped host memory. */
static void *mapped_out(struct gm_cuda_dev *d, gm_job *j)
{
	void *p;

	if (!d->sh->cfg.mapped_output)
		return NULL;
	/* out may lie in memory registered without mapping: copy then. */
	if (cudaHostGetDevicePointer(&p, j->out, 0) != cudaSuccess) {
		(void)cudaGetLastError();
		return NULL;
	}
	return p;
}

/* Host bytes of a job's operands and result. */
static uint64_t host_bytes(const gm_job_sizes *sz)
{
	return sz->a + sz->b + sz->c + sz->out;
}

/* Whether j, with t filled by describe, joins a batch. */
static int small(const struct gm_cuda_dev *d, const struct gm_cuda_ctx *t)
{
	return host_bytes(&t->sz) <= d->small_bytes;
}

/* Fills what a context needs of j, already checked. A batch runs the
 * kernel its jobs name, so it is resolved in the job. */
static void describe(struct gm_cuda_dev *d, gm_job *j, struct gm_cuda_ctx *t)
{
	t->kernel = gm_cuda_gemm_kernel(&j->d, d->sh->cfg.kernel);
	j->d.kernel = (uint8_t)t->kernel;
	gm_job_sizes_of(&j->d, &t->sz);
	t->has_c = (j->d.flags & GM_JOB_HAS_C) != 0;
	t->dc = small(d, t) ? NULL : (char *)mapped_out(d, j);
	t->mapped = t->dc != NULL;
}

/* Device bytes j needs: its slot in a batch, or a slab of its own. */
static uint64_t device_bytes(const struct gm_cuda_dev *d,
			     const struct gm_cuda_ctx *t)
{
	gm_batch_slot s;

	if (!small(d, t))
		return slab_bytes(&t->sz, t->mapped);
	gm_batch_slot_of(&t->sz, &s);
	return s.bytes;
}

/* Checks j and fills t; on failure hands j back. */
static int check_job(struct gm_cuda_dev *d, gm_job *j, struct gm_cuda_ctx *t)
{
	gm_job_sizes sz;
	int rv, kernel;

	j->status = GM_OK;
	j->msg[0] = '\0';
	j->h2d_us = j->kernel_us = j->d2h_us = j->start_us = 0;
	if (gm_engine_expired(j, gm_engine_now_us())) {
		gm_cuda_dev_finish(d, j);
		return GM_ETIMEDOUT;
	}
	kernel = gm_cuda_gemm_kernel(&j->d, d->sh->cfg.kernel);
	rv = gm_cuda_gemm_supports(&j->d, kernel, j->msg, sizeof(j->msg));
	if (rv != GM_OK) {
		j->status = rv;
		gm_cuda_dev_finish(d, j);
		return rv;
	}
	if (gm_job_sizes_of(&j->d, &sz) != GM_OK) {
		fail_job(d, j, GM_EOVERFLOW, "job sizes overflow");
		return GM_EOVERFLOW;
	}
	if (j->a == NULL || j->b == NULL || j->out == NULL ||
	    ((j->d.flags & GM_JOB_HAS_C) && j->c == NULL)) {
		fail_job(d, j, GM_EINVAL, "operand pointer missing");
		return GM_EINVAL;
	}
	describe(d, j, t);
	return GM_OK;
}

/* Test builds: the armed out-of-memory fault fails j's allocation, its
 * share of a batch's slab or a slab of its own, as cudaMalloc would. */
static int injected_oom(struct gm_cuda_dev *d, gm_job *j)
{
	if (!gm_cuda_fault_take(&d->sh->fault_armed, GM_CUDA_FAULT_OOM))
		return 0;
	j->status = gm_cuda_fail(cudaErrorMemoryAllocation,
				 "device allocation (injected)", __FILE__,
				 __LINE__, j->msg, sizeof(j->msg));
	gm_cuda_dev_finish(d, j);
	return 1;
}

/* The ring's next stream; but a context issued with nothing in flight
 * takes the stream given last, whose completion thread has just handed
 * its last context back and may still be polling for the next. */
static struct gm_cuda_stream *next_stream(struct gm_cuda_dev *d)
{
	if (!d->was_idle)
		d->last_stream = d->next_stream++ % d->nstreams;
	d->was_idle = 0;
	return &d->streams[d->last_stream];
}

/* Lays out ctx's operands in its slab and gives it the next stream. */
static void place(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx, gm_job *j,
		  const struct gm_cuda_ctx *t)
{
	ctx->job = j;
	ctx->njobs = 1;
	ctx->batch = 0;
	ctx->direct = 0;
	ctx->sz = t->sz;
	ctx->kernel = t->kernel;
	ctx->has_c = t->has_c;
	ctx->mapped = t->mapped;
	ctx->ended = 0;
	ctx->start = ctx->ev[EV_H2D_START];
	ctx->da = (char *)ctx->slab;
	ctx->db = ctx->da + ALIGN_UP(t->sz.a);
	ctx->dc = t->mapped ? t->dc : ctx->db + ALIGN_UP(t->sz.b);
	ctx->st = next_stream(d);
}

/* A batch's jobs sit in their slots (gm_cuda_batch.cu); a batch of one
 * that may runs on its host memory instead (gm_cuda_direct.h). */
static void place_batch(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx,
			gm_job *j, uint32_t n)
{
	ctx->job = j;
	ctx->njobs = n;
	ctx->batch = 1;
	gm_job_sizes_of(&j->d, &ctx->sz);
	ctx->direct = n == 1 && gm_cuda_direct_fits(d->direct, j, &ctx->sz);
	ctx->mapped = 0;
	ctx->ended = 0;
	ctx->start = ctx->ev[EV_H2D_START];
	ctx->st = next_stream(d);
}

/* A failed step: the job keeps its code and text, and a sticky error
 * faults the device. */
static void step(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx, int rv)
{
	if (rv == GM_OK)
		return;
	ctx->job->status = rv;
	if (rv == GM_EGPUFAULT)
		gm_cuda_dev_fault(d, ctx->job->msg);
}

/* One host-to-device copy per run of operands that lie back to back both
 * in host memory and in the slab, as A, B and C of every job the daemon
 * stages do: fewer calls on the issue thread, longer DMAs. */
static int copy_in(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;
	const char *src[3] = {(const char *)j->a, (const char *)j->b,
			      (const char *)j->c};
	char *dst[3] = {c->da, c->db, c->dc};
	uint64_t len[3] = {c->sz.a, c->sz.b,
			   c->has_c && !c->mapped ? c->sz.c : 0};
	const char *from = NULL;
	char *to = NULL;
	uint64_t run = 0;
	int i;

	for (i = 0; i <= 3; i++) {
		if (i < 3 && len[i] == 0)
			continue;
		if (i < 3 && run > 0 && from + run == src[i] &&
		    to + run == dst[i]) {
			run += len[i];
			continue;
		}
		if (run > 0)
			GM_CUDA_TRY(cudaMemcpyAsync(to, from, run,
						    cudaMemcpyHostToDevice,
						    c->st->s),
				    j->msg, sizeof(j->msg));
		if (i < 3) {
			from = src[i];
			to = dst[i];
			run = len[i];
		}
	}
	return GM_OK;
}

/* The context's jobs are committed to its stream from here on: marked
 * started, all of them at once. */
static void tell_started(struct gm_cuda_ctx *c)
{
	gm_engine_started(c->st->dev->sh->engine, c->job, c->njobs);
}

static int copies_in(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;
	cudaStream_t s = c->st->s;
	int rv;

	c->start = c->ev[EV_H2D_START];
	if (gm_cuda_dev_open_span(c->st->dev, s) == SPAN_OPENED_HERE)
		c->start = c->st->dev->span_ev;
	else
		GM_CUDA_TRY(cudaEventRecord(c->start, s), j->msg,
			    sizeof(j->msg));
	if (c->direct) /* its start is its kernel's (gm_cuda_ctx_ev) */
		return GM_OK;
	rv = c->batch ? gm_cuda_batch_h2d(c) : copy_in(c);
	if (rv != GM_OK)
		return rv;
	GM_CUDA_TRY(cudaEventRecord(c->ev[EV_H2D_END], s), j->msg,
		    sizeof(j->msg));
	return GM_OK;
}

static int issue_kernel(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;
	cudaStream_t s = c->st->s;
	int rv;

	if (c->direct)
		rv = gm_cuda_direct_run(c->st->dev->direct, c->st, j, j->msg,
					sizeof(j->msg));
	else if (c->batch)
		rv = gm_cuda_batch_kernel(c);
	else
		rv = gm_cuda_gemm(c->st->blas, s, &j->d, c->kernel, c->da,
				  c->db, c->dc, j->msg, sizeof(j->msg));
	if (rv != GM_OK)
		return rv;
	GM_CUDA_TRY(cudaEventRecord(c->ev[EV_KERNEL_END], s), j->msg,
		    sizeof(j->msg));
	return GM_OK;
}

static int issue_d2h(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;
	cudaStream_t s = c->st->s;

	if (c->direct)
		return GM_OK;
	if (c->batch)
		return gm_cuda_batch_d2h(c);
	if (c->mapped)
		return GM_OK;
	GM_CUDA_TRY(cudaMemcpyAsync(j->out, c->dc, c->sz.out,
				    cudaMemcpyDeviceToHost, s),
		    j->msg, sizeof(j->msg));
	return GM_OK;
}

/* Marks the end of ctx's work on its stream, failed or not, and queues
 * it for the stream's completion thread. */
static void hand_over(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx)
{
	struct gm_cuda_stream *st = ctx->st;

	/* A job run on its host memory that got through its kernel has its
	 * end recorded already (gm_cuda_ctx_ev). */
	if (ctx->direct && ctx->job->status == GM_OK)
		ctx->ended = 1;
	else if (!(ctx->ended = cudaEventRecord(gm_cuda_ctx_ev(ctx, EV_END),
						st->s) == cudaSuccess))
		(void)cudaGetLastError();
	pthread_mutex_lock(&d->mu);
	/* Closed only after the issue thread stopped. */
	(void)gm_handoff_push(&st->done, ctx);
	pthread_mutex_unlock(&d->mu);
}

static void phase(struct gm_cuda_dev *d, struct gm_cuda_ctx *c,
		  int (*fn)(struct gm_cuda_ctx *))
{
	if (c->job->status == GM_OK)
		step(d, c, fn(c));
}

/* Test builds: the fault lands before any of the chunk's work, and every
 * stream waits for it, so the whole chunk is in flight when it hits. */
static void inject_sticky(struct gm_cuda_dev *d)
{
	cudaEvent_t ev;
	unsigned i;

	if (gm_cuda_fault_launch(d->streams[0].s) != cudaSuccess ||
	    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) !=
		cudaSuccess)
		return;
	cudaEventRecord(ev, d->streams[0].s);
	for (i = 1; i < d->nstreams; i++)
		cudaStreamWaitEvent(d->streams[i].s, ev, 0);
	cudaEventDestroy(ev);
}

/* Every host copy the chunk needs before its DMAs: socket payloads into
 * their slabs, spread over the staging threads, and, for mapped output
 * or a job run on its host memory with C elsewhere, C into the output
 * the kernel updates in place. */
static void stage(struct gm_cuda_dev *d, struct gm_cuda_ctx **c, size_t n)
{
	struct gm_cuda_piece *p = d->pieces;
	size_t i, np = 0;

	for (i = 0; i < n; i++) {
		gm_job *j = c[i]->job;

		for (uint32_t k = 0; k < c[i]->njobs; k++, j = j->next) {
			if (j->copy_in == NULL)
				continue;
			p[np++] = {j->copy_to != NULL ? j->copy_to : j->a,
				   j->copy_in, j->copy_in_bytes};
			if (np == GM_CUDA_STAGE_PIECES) {
				gm_cuda_stager_copy(d->stager, p, np);
				np = 0;
			}
		}
	}
	if (np > 0)
		gm_cuda_stager_copy(d->stager, p, np);
	for (i = 0; i < n; i++) {
		gm_job *j = c[i]->job;

		if (((c[i]->has_c && c[i]->mapped) ||
		     (c[i]->direct && (j->d.flags & GM_JOB_HAS_C))) &&
		    j->c != j->out)
			memcpy(j->out, j->c, c[i]->sz.c);
	}
}

/* Contexts gathered to be issued together. */
struct chunk {
	struct gm_cuda_ctx *c[CHUNK_MAX];
	size_t n;
};

static void issue_chunk(struct gm_cuda_dev *d, struct chunk *ch)
{
	size_t round =
	    d->sh->cfg.issue_order == GM_ISSUE_DEPTH ? 1 : d->nstreams;
	struct gm_cuda_ctx **c = ch->c;
	size_t i, k, end, n = ch->n;

	ch->n = 0;
	if (n == 0)
		return;
	if (gm_cuda_fault_take(&d->sh->fault_armed, GM_CUDA_FAULT_STICKY))
		inject_sticky(d);
	stage(d, c, n);
	for (i = 0; i < n; i = end) {
		end = n - i < round ? n : i + round;
		for (k = i; k < end; k++)
			phase(d, c[k], copies_in);
		for (k = i; k < end; k++)
			phase(d, c[k], issue_kernel);
		/* The jobs are marked started once their work is queued,
		 * the device busy with it, and before any can end: their
		 * completion thread has them after hand_over. */
		for (k = i; k < end; k++) {
			phase(d, c[k], issue_d2h);
			tell_started(c[k]);
			hand_over(d, c[k]);
		}
	}
}

/* A context for j (or the batch it starts) with bytes of the pool;
 * issues what the chunk holds when it must wait for memory. */
static int obtain(struct gm_cuda_dev *d, struct chunk *ch, gm_job **j,
		  uint32_t *n, uint64_t bytes, struct gm_cuda_ctx **ctx)
{
	int rv;

	while ((rv = gm_cuda_take_ctx(d, j, n, bytes, ch->n == 0, ctx)) ==
	       GM_CUDA_WOULD_WAIT)
		issue_chunk(d, ch);
	return rv;
}

static void add(struct gm_cuda_dev *d, struct chunk *ch, struct gm_cuda_ctx *c)
{
	ch->c[ch->n++] = c;
	if (ch->n == CHUNK_MAX)
		issue_chunk(d, ch);
}

static void issue_batch(struct gm_cuda_dev *d, struct chunk *ch, gm_job *j,
			uint32_t n, uint64_t bytes)
{
	struct gm_cuda_ctx *ctx = NULL, t;
	gm_job *next;
	int rv;

	if ((rv = obtain(d, ch, &j, &n, bytes, &ctx)) == GM_OK) {
		place_batch(d, ctx, j, n);
		add(d, ch, ctx);
		return;
	}
	if (rv == GM_CUDA_TAKEN)
		return;
	if ((rv != GM_ENOMEM && rv != GM_ETOOBIG) || n == 1) {
		fail_n(d, j, n, rv);
		return;
	}
	/* No room for the batch even with nothing in flight: each job as
	 * a batch of its own, which computes it the same way. */
	for (; n > 0; n--, j = next) {
		next = j->next;
		j->next = NULL;
		j->status = GM_OK;
		j->msg[0] = '\0';
		describe(d, j, &t);
		issue_batch(d, ch, j, 1, device_bytes(d, &t));
	}
}

/* Cuts every batch of the small jobs sorted so far and issues it. */
static void issue_batches(struct gm_cuda_dev *d, struct chunk *ch)
{
	uint64_t bytes;
	gm_job *j;
	uint32_t n;

	while ((n = gm_batch_groups_cut(d->groups, d->batch_bytes,
					GM_CUDA_BATCH_JOBS, &j, &bytes)) != 0)
		issue_batch(d, ch, j, n, bytes);
}

static void issue_single(struct gm_cuda_dev *d, struct chunk *ch, gm_job *j)
{
	struct gm_cuda_ctx t, *ctx = NULL;
	uint32_t n = 1;
	int rv;

	describe(d, j, &t);
	if (injected_oom(d, j))
		return;
	if ((rv = obtain(d, ch, &j, &n, device_bytes(d, &t), &ctx)) != GM_OK) {
		if (rv == GM_CUDA_TAKEN)
			return;
		j->status = rv;
		gm_cuda_dev_finish(d, j);
		return;
	}
	place(d, ctx, j, &t);
	add(d, ch, ctx);
}

/* Sorts a small job into its group; a full table is cut and issued
 * first. */
static void sort_small(struct gm_cuda_dev *d, struct chunk *ch, gm_job *j,
		       const struct gm_cuda_ctx *t)
{
	/* A batch's bound holds for its slab as well as its host bytes. */
	uint64_t slot = device_bytes(d, t), bytes = host_bytes(&t->sz);

	bytes = bytes > slot ? bytes : slot;

	if (injected_oom(d, j))
		return;
	if (gm_batch_groups_add(d->groups, j, bytes, slot) == GM_OK)
		return;
	issue_batches(d, ch);
	gm_batch_groups_add(d->groups, j, bytes, slot);
}

static void issue_wave(struct gm_cuda_dev *d, gm_job *j)
{
	struct chunk ch;
	struct gm_cuda_ctx t;
	gm_job *big = NULL, **big_tail = &big, *next;

	ch.n = 0;
	for (; j != NULL; j = next) {
		next = j->next;
		if (check_job(d, j, &t) != GM_OK)
			continue;
		if (gm_cuda_ooc_wanted(d, j, device_bytes(d, &t))) {
			gm_cuda_ooc_queue(d, j);
			continue;
		}
		if (small(d, &t)) {
			sort_small(d, &ch, j, &t);
			continue;
		}
		j->next = NULL;
		*big_tail = j;
		big_tail = &j->next;
	}
	issue_batches(d, &ch);
	/* The jobs of their own are queued until they have memory. */
	pthread_mutex_lock(&d->mu);
	d->held = big;
	for (;;) {
		if ((j = d->held) == NULL)
			break;
		d->held = j->next;
		j->next = NULL;
		pthread_mutex_unlock(&d->mu);
		issue_single(d, &ch, j);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	issue_chunk(d, &ch);
}

/* Takes the warm-up asked for, if any; under mu, which it drops while it
 * runs. */
static void warm_if_asked(struct gm_cuda_dev *d)
{
	struct gm_cuda_shared *sh = d->sh;
	char msg[GM_MSG_TEXT + 1] = "";
	int rv;

	if (!d->warm)
		return;
	d->warm = 0;
	pthread_mutex_unlock(&d->mu);
	if ((rv = gm_cuda_warm_run(d, msg, sizeof(msg))) != GM_OK) {
		pthread_mutex_lock(&sh->fault_mu);
		if (sh->warm_status == GM_OK) {
			sh->warm_status = rv;
			snprintf(sh->warm_msg, sizeof(sh->warm_msg),
				 "GPU %d: %s", d->index, msg);
		}
		pthread_mutex_unlock(&sh->fault_mu);
	}
	if (__atomic_sub_fetch(&sh->warm_left, 1, __ATOMIC_ACQ_REL) == 0)
		gm_engine_warmed(sh->engine, sh->warm_status, sh->warm_msg);
	pthread_mutex_lock(&d->mu);
}

void *gm_cuda_issue_main(void *arg)
{
	struct gm_cuda_dev *d = (struct gm_cuda_dev *)arg;
	struct gm_cuda_wave *w;

	cudaSetDevice(d->index);
	pthread_mutex_lock(&d->mu);
	for (;;) {
		/* With no wave queued, polls for one for spin_us after the
		 * last before it sleeps (gm_engine_config.spin_us). */
		gm_handoff_wait(&d->waves);
		warm_if_asked(d);
		w = (struct gm_cuda_wave *)gm_handoff_pop(&d->waves);
		if (w == NULL) {
			if (gm_handoff_closed(&d->waves))
				break;
			continue;
		}
		pthread_mutex_unlock(&d->mu);
		issue_wave(d, w->head);
		gm_cuda_dev_wave_free(d, w);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}
