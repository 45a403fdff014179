/*
 * gm_cuda_issue.cu - a device's issue thread: turns each queued wave into
 * work on the stream ring.
 *
 * Jobs take streams in rotation. A job gets its device slab before any of
 * its work is issued; when the pool is full, what has been gathered so
 * far is issued as a chunk and the thread sleeps until a completion frees
 * memory. A chunk's socket payloads are all staged into the arena first
 * (gm_cuda_stage.h), so no host copy sits between two of its DMAs.
 *
 * The chunk then goes out one round of the ring at a time, each round
 * breadth-first: the host-to-device copies of one job per stream, then
 * their kernels, then their device-to-host copies, so that while one
 * stream computes another copies (GM_ISSUE_DEPTH issues each job whole
 * instead, for comparison). A round is one job per stream because a
 * stream runs its work in order: with two jobs of a round on one stream,
 * that stream's first kernel would wait for its second job's copies, and
 * with a whole chunk issued breadth-first, every kernel waits for most of
 * the chunk's copies and every copy back for all of them. Round by round,
 * the next round's host-to-device copies overlap this round's kernels and
 * copies back. bench/RESULTS.md compares the orders on real batches.
 *
 * Each phase is bracketed by events on the job's stream. Jobs that fail
 * before their first copy are handed back from here; every job that
 * reached a stream goes to that stream's completion thread, even one
 * whose issue failed half-way, so that its slab is freed only after the
 * stream is past it.
 */
#include "gm_cuda_dev.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_cuda_err.h"
#include "gm_cuda_fault.h"
#include "gm_cuda_gemm.h"
#include "gm_cuda_stage.h"

#define CHUNK_MAX  256	/* jobs issued breadth-first as one group */
#define CTX_MAX	   1024 /* jobs in flight per device: bounds the events */
#define WOULD_WAIT (-1) /* take_ctx: full now, and told not to wait */

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

/* Device bytes of a job: A, B, and C (which the result overwrites)
 * unless the result goes straight to mapped host memory. */
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

/* Checks j and fills what ctx needs; on failure hands j back. */
static int check_job(struct gm_cuda_dev *d, gm_job *j, struct gm_cuda_ctx *t)
{
	int rv;

	j->status = GM_OK;
	j->msg[0] = '\0';
	j->h2d_us = j->kernel_us = j->d2h_us = 0;
	t->kernel = gm_cuda_gemm_kernel(&j->d, d->sh->cfg.kernel);
	rv = gm_cuda_gemm_supports(&j->d, t->kernel, j->msg, sizeof(j->msg));
	if (rv != GM_OK) {
		j->status = rv;
		gm_cuda_dev_finish(d, j);
		return rv;
	}
	if (gm_job_sizes_of(&j->d, &t->sz) != GM_OK) {
		fail_job(d, j, GM_EOVERFLOW, "job sizes overflow");
		return GM_EOVERFLOW;
	}
	t->has_c = (j->d.flags & GM_JOB_HAS_C) != 0;
	if (j->a == NULL || j->b == NULL || j->out == NULL ||
	    (t->has_c && j->c == NULL)) {
		fail_job(d, j, GM_EINVAL, "operand pointer missing");
		return GM_EINVAL;
	}
	t->dc = (char *)mapped_out(d, j);
	t->mapped = t->dc != NULL;
	if (slab_bytes(&t->sz, t->mapped) > gm_pool_size(d->pool)) {
		fail_job(d, j, GM_ETOOBIG,
			 "needs %llu bytes of GPU memory, pool has %llu",
			 (unsigned long long)slab_bytes(&t->sz, t->mapped),
			 (unsigned long long)gm_pool_size(d->pool));
		return GM_ETOOBIG;
	}
	return GM_OK;
}

static int make_events(struct gm_cuda_ctx *c, char *msg, size_t msglen)
{
	int i;

	/* Only the end event is waited on; blocking sync makes that wait
	 * sleep. The others only time. */
	for (i = 0; i < EV_COUNT; i++)
		GM_CUDA_TRY(cudaEventCreateWithFlags(
				&c->ev[i], i == EV_END ? cudaEventBlockingSync
						       : cudaEventDefault),
			    msg, msglen);
	return GM_OK;
}

static int new_ctx(struct gm_cuda_ctx **out, char *msg, size_t msglen)
{
	struct gm_cuda_ctx *c;
	int rv;

	if ((c = (struct gm_cuda_ctx *)calloc(1, sizeof(*c))) == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	if ((rv = make_events(c, msg, msglen)) != GM_OK) {
		gm_cuda_ctx_destroy(c);
		return rv;
	}
	*out = c;
	return GM_OK;
}

/* Under mu: a context and bytes of the pool, or GM_ENOMEM when either is
 * short now. *fresh: a context must still be made (outside the lock). */
static int grab(struct gm_cuda_dev *d, uint64_t bytes, void **slab,
		struct gm_cuda_ctx **ctx, int *fresh)
{
	int rv;

	if (d->free_ctx == NULL && d->nctx >= CTX_MAX)
		return GM_ENOMEM;
	if ((rv = gm_pool_alloc(d->pool, bytes, slab)) != GM_OK)
		return rv;
	*fresh = d->free_ctx == NULL;
	if (*fresh) {
		d->nctx++;
	} else {
		*ctx = d->free_ctx;
		d->free_ctx = (*ctx)->next;
	}
	if (d->inflight++ == 0)
		gm_cuda_dev_busy_begin(d);
	return GM_OK;
}

/* Undoes grab() for a context that could not be made. */
static void ungrab(struct gm_cuda_dev *d, void *slab)
{
	pthread_mutex_lock(&d->mu);
	gm_pool_free(d->pool, slab);
	d->nctx--;
	if (--d->inflight == 0)
		gm_cuda_dev_busy_end(d);
	pthread_cond_signal(&d->issue_cv);
	pthread_mutex_unlock(&d->mu);
}

/*
 * Gets j a context with its device slab. With may_wait, sleeps while the
 * device is full but has work in flight that will free memory; without,
 * returns WOULD_WAIT so the caller can first issue what it holds. Other
 * failures are j's, with the text in j->msg.
 */
static int take_ctx(struct gm_cuda_dev *d, gm_job *j, uint64_t bytes,
		    int may_wait, struct gm_cuda_ctx **out)
{
	struct gm_cuda_shared *sh = d->sh;
	struct gm_cuda_ctx *ctx = NULL;
	void *slab = NULL;
	int rv, fresh = 0;

	if (gm_cuda_fault_take(&sh->fault_armed, GM_CUDA_FAULT_OOM))
		return gm_cuda_fail(cudaErrorMemoryAllocation,
				    "device allocation (injected)", __FILE__,
				    __LINE__, j->msg, sizeof(j->msg));
	pthread_mutex_lock(&d->mu);
	for (;;) {
		if (__atomic_load_n(&sh->faulted, __ATOMIC_ACQUIRE)) {
			rv = GM_EGPUFAULT;
			break;
		}
		rv = grab(d, bytes, &slab, &ctx, &fresh);
		if (rv != GM_ENOMEM || !may_wait) {
			rv = rv == GM_ENOMEM ? WOULD_WAIT : rv;
			break;
		}
		if (d->inflight == 0) /* nothing will free memory */
			break;
		pthread_cond_wait(&d->issue_cv, &d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	if (rv == GM_EGPUFAULT) {
		pthread_mutex_lock(&sh->fault_mu);
		snprintf(j->msg, sizeof(j->msg), "%s", sh->fault_msg);
		pthread_mutex_unlock(&sh->fault_mu);
	} else if (rv == GM_ENOMEM) {
		snprintf(j->msg, sizeof(j->msg), "GPU memory pool exhausted");
	} else if (rv != GM_OK && rv != WOULD_WAIT) {
		snprintf(j->msg, sizeof(j->msg), "GPU memory pool: %s",
			 gm_strerror(rv));
	}
	if (rv != GM_OK)
		return rv;
	if (fresh && (rv = new_ctx(&ctx, j->msg, sizeof(j->msg))) != GM_OK) {
		ungrab(d, slab);
		return rv;
	}
	ctx->slab = slab;
	*out = ctx;
	return GM_OK;
}

/* Lays out ctx's operands in its slab and gives it the next stream. */
static void place(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx, gm_job *j,
		  const struct gm_cuda_ctx *t)
{
	ctx->job = j;
	ctx->sz = t->sz;
	ctx->kernel = t->kernel;
	ctx->has_c = t->has_c;
	ctx->mapped = t->mapped;
	ctx->ended = 0;
	ctx->da = (char *)ctx->slab;
	ctx->db = ctx->da + ALIGN_UP(t->sz.a);
	ctx->dc = t->mapped ? t->dc : ctx->db + ALIGN_UP(t->sz.b);
	ctx->st = &d->streams[d->next_stream++ % d->nstreams];
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

/* The first copy of a busy period starts its device-timed span. Only
 * this thread moves the state out of SPAN_PENDING, and the period cannot
 * end while c is in flight, so the unlocked read is safe. */
static void open_span(struct gm_cuda_dev *d, cudaStream_t s)
{
	if (d->span_state != SPAN_PENDING)
		return;
	if (cudaEventRecord(d->span_ev, s) != cudaSuccess) {
		(void)cudaGetLastError(); /* the period counts by the host */
		return;
	}
	pthread_mutex_lock(&d->mu);
	d->span_state = SPAN_OPEN;
	pthread_mutex_unlock(&d->mu);
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

static int issue_h2d(struct gm_cuda_ctx *c)
{
	gm_job *j = c->job;
	cudaStream_t s = c->st->s;
	int rv;

	open_span(c->st->dev, s);
	GM_CUDA_TRY(cudaEventRecord(c->ev[EV_H2D_START], s), j->msg,
		    sizeof(j->msg));
	if ((rv = copy_in(c)) != GM_OK)
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

	rv = gm_cuda_gemm(c->st->blas, s, &j->d, c->kernel, c->da, c->db, c->dc,
			  j->msg, sizeof(j->msg));
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

	ctx->ended = cudaEventRecord(ctx->ev[EV_END], st->s) == cudaSuccess;
	if (!ctx->ended)
		(void)cudaGetLastError();
	ctx->next = NULL;
	pthread_mutex_lock(&d->mu);
	if (st->tail != NULL)
		st->tail->next = ctx;
	else
		st->head = ctx;
	st->tail = ctx;
	pthread_cond_signal(&st->cv);
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
 * with C elsewhere, C into the output the kernel updates in place. */
static void stage(struct gm_cuda_dev *d, struct gm_cuda_ctx **c, size_t n)
{
	struct gm_cuda_piece p[CHUNK_MAX];
	size_t i, np = 0;

	for (i = 0; i < n; i++) {
		gm_job *j = c[i]->job;

		if (j->copy_in != NULL)
			p[np++] = {j->copy_to != NULL ? j->copy_to : j->a,
				   j->copy_in, j->copy_in_bytes};
	}
	if (np > 0)
		gm_cuda_stager_copy(d->stager, p, np);
	for (i = 0; i < n; i++) {
		gm_job *j = c[i]->job;

		if (c[i]->has_c && c[i]->mapped && j->c != j->out)
			memcpy(j->out, j->c, c[i]->sz.c);
	}
}

static void issue_chunk(struct gm_cuda_dev *d, struct gm_cuda_ctx **c, size_t n)
{
	size_t round =
	    d->sh->cfg.issue_order == GM_ISSUE_DEPTH ? 1 : d->nstreams;
	size_t i, k, end;

	if (gm_cuda_fault_take(&d->sh->fault_armed, GM_CUDA_FAULT_STICKY))
		inject_sticky(d);
	stage(d, c, n);
	for (i = 0; i < n; i = end) {
		end = n - i < round ? n : i + round;
		for (k = i; k < end; k++)
			phase(d, c[k], issue_h2d);
		for (k = i; k < end; k++)
			phase(d, c[k], issue_kernel);
		for (k = i; k < end; k++) {
			phase(d, c[k], issue_d2h);
			hand_over(d, c[k]);
		}
	}
}

static void issue_wave(struct gm_cuda_dev *d, gm_job *j)
{
	struct gm_cuda_ctx *chunk[CHUNK_MAX];
	struct gm_cuda_ctx t, *ctx = NULL;
	size_t n = 0;
	gm_job *next;
	int rv;

	while (j != NULL) {
		next = j->next;
		if (check_job(d, j, &t) != GM_OK) {
			j = next;
			continue;
		}
		rv = take_ctx(d, j, slab_bytes(&t.sz, t.mapped), n == 0, &ctx);
		if (rv == WOULD_WAIT) { /* issue what we hold, then wait */
			issue_chunk(d, chunk, n);
			n = 0;
			continue;
		}
		if (rv != GM_OK) {
			j->status = rv;
			gm_cuda_dev_finish(d, j);
		} else {
			place(d, ctx, j, &t);
			chunk[n++] = ctx;
		}
		if (n == CHUNK_MAX) {
			issue_chunk(d, chunk, n);
			n = 0;
		}
		j = next;
	}
	if (n > 0)
		issue_chunk(d, chunk, n);
}

void *gm_cuda_issue_main(void *arg)
{
	struct gm_cuda_dev *d = (struct gm_cuda_dev *)arg;
	struct gm_cuda_wave *w;

	cudaSetDevice(d->index);
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (d->waves == NULL && !d->stopping)
			pthread_cond_wait(&d->issue_cv, &d->mu);
		if ((w = d->waves) == NULL)
			break;
		if ((d->waves = w->next) == NULL)
			d->waves_tail = NULL;
		pthread_mutex_unlock(&d->mu);
		issue_wave(d, w->head);
		free(w);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}
