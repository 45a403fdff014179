/*
 * gm_ctl_benchrun.c - the run of gemmctl bench (gm_ctl_bench_drive): the
 * operands, random and made once, in one shared-memory region with
 * --regions; --concurrency requests of --batch jobs kept in flight on
 * one client with gemmd_submit_async until --duration has passed or
 * --count requests were sent; each finished one accounted for; a few
 * results kept aside by reservoir sampling and checked after the run.
 * The completion callbacks run on nng threads and only queue their
 * request for the main thread, which accounts for it and sends the
 * next one: the callbacks never block, and nothing else is shared.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gm_ctl_benchrep.h"
#include "gm_ctl_benchrun.h"
#include "gm_npy.h"
#include "gm_proto.h"
#include "gm_verify.h"

#define PROGRESS_MS 500.0
#define ALIGN	    256 /* of each operand in a region: DMA */

/* ---- the operands ---- */

/* Inputs as large as the largest shape needs, a smaller job reading
 * their start; one output per job in flight. With --regions all of it
 * is in the region, and the pointers are its view here. */
struct workload {
	size_t es; /* element size */
	uint64_t a_bytes, b_bytes;
	uint64_t stride;      /* bytes between outputs */
	void *a, *b;	      /* the inputs, here */
	uint8_t *out;	      /* outputs: slot i's job j at
				 (i * batch + j) * stride */
	void *a_mem, *b_mem;  /* malloc'd, or NULL (--regions) */
	gemmd_region *region; /* --regions */
	uint64_t a_off, b_off, out_off;
};

static uint64_t aligned(uint64_t n)
{
	return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

/* elements random values of the dtype in [-1, 1), malloc'd. */
static void *random_operand(uint64_t elements, int dtype, uint64_t seed)
{
	gm_npy m = {GM_FP64, 0, 1, elements, NULL};
	void *packed = NULL;

	if ((m.data = malloc(elements * sizeof(double))) == NULL)
		return NULL;
	gm_ctl_fill_random(&m, seed);
	if (gm_npy_pack(&m, dtype, &packed) != GM_OK)
		packed = NULL;
	gm_npy_free(&m);
	return packed;
}

static void largest_shape(const struct gm_ctl_bench_opts *o,
			  struct gm_ctl_bench_shape *max)
{
	if (o->mixed_max > 0) {
		*max = (struct gm_ctl_bench_shape){o->mixed_max, o->mixed_max,
						   o->mixed_max};
		return;
	}
	*max = o->shape[0];
	for (int i = 1; i < o->nshapes; i++) {
		max->m = o->shape[i].m > max->m ? o->shape[i].m : max->m;
		max->n = o->shape[i].n > max->n ? o->shape[i].n : max->n;
		max->k = o->shape[i].k > max->k ? o->shape[i].k : max->k;
	}
}

/* The region: inputs copied in once, outputs after them. */
static int region_setup(struct workload *w, gemmd_client *cl,
			uint64_t out_bytes)
{
	uint8_t *base;
	int rv;

	w->a_off = 0;
	w->b_off = aligned(w->a_bytes);
	w->out_off = w->b_off + aligned(w->b_bytes);
	rv = gemmd_region_create(cl, w->out_off + out_bytes, &w->region);
	if (rv != GM_OK)
		return gm_ctl_failed("region", 0, rv, NULL);
	base = gemmd_region_ptr(w->region);
	memcpy(base, w->a_mem, w->a_bytes);
	memcpy(base + w->b_off, w->b_mem, w->b_bytes);
	free(w->a_mem);
	free(w->b_mem);
	w->a_mem = w->b_mem = NULL;
	w->a = base;
	w->b = base + w->b_off;
	w->out = base + w->out_off;
	return 0;
}

static int workload_setup(struct workload *w, const struct gm_ctl_bench_opts *o,
			  gemmd_client *cl)
{
	struct gm_ctl_bench_shape max;
	uint64_t outs = (uint64_t)o->concurrency * o->batch, out_bytes;

	largest_shape(o, &max);
	w->es = gm_dtype_size(o->dtype);
	w->a_bytes = (uint64_t)max.m * max.k * w->es;
	w->b_bytes = (uint64_t)max.k * max.n * w->es;
	w->stride = aligned((uint64_t)max.m * max.n * w->es);
	w->a = w->a_mem =
	    random_operand((uint64_t)max.m * max.k, o->dtype, o->seed);
	w->b = w->b_mem = random_operand((uint64_t)max.k * max.n, o->dtype,
					 o->seed ^ 0x5bd1e995u);
	if (w->a == NULL || w->b == NULL) {
		gm_ctl_err("out of memory for the operands");
		return EXIT_JOB;
	}
	if (__builtin_mul_overflow(outs, w->stride, &out_bytes)) {
		gm_ctl_err("the results of %" PRIu64 " jobs in flight would "
			   "not fit in memory",
			   outs);
		return EXIT_USAGE;
	}
	if (o->regions)
		return region_setup(w, cl, out_bytes);
	if ((w->out = malloc(out_bytes)) == NULL) {
		gm_ctl_err("out of memory for the results");
		return EXIT_JOB;
	}
	return 0;
}

static void workload_free(struct workload *w)
{
	if (w->region != NULL)
		gemmd_region_release(w->region);
	else
		free(w->out);
	free(w->a_mem);
	free(w->b_mem);
}

/* ---- the run ---- */

/* One request's worth of jobs, sent again as soon as it finishes. */
struct slot {
	struct bench *b;
	gemmd_job *jobs; /* batch */
	uint32_t index;
	double sent_ms, done_ms;
	int rv;
};

/* A result kept for --verify: the job as sent, its output copied. */
struct check {
	gemmd_job job;
	void *out;
	size_t cap;
};

struct bench {
	const struct gm_ctl_bench_opts *o;
	struct gm_ctl_bench_result *r;
	gemmd_client *cl;
	struct workload w;
	struct slot *slots;
	struct check *checks; /* o->verify of them */
	uint64_t offered;     /* results that could have been checked */
	uint64_t rng, seq;    /* shapes: random, or taken in turn */
	uint32_t inflight;
	double start_ms;
	bool stop; /* no more sends: a refusal that would repeat */

	/* Shared with the callbacks. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct slot **done; /* finished, for the main thread */
	uint32_t ndone;
};

static void on_done(void *arg, int rv)
{
	struct slot *s = arg;
	struct bench *b = s->b;
	double now = gm_ctl_now_ms();

	pthread_mutex_lock(&b->mu);
	s->rv = rv;
	s->done_ms = now;
	b->done[b->ndone++] = s;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

static uint32_t random_dim(struct bench *b)
{
	uint32_t span = b->o->mixed_max - b->o->mixed_min + 1;

	return b->o->mixed_min + (uint32_t)(gm_ctl_random(&b->rng) % span);
}

static void shape_job(struct bench *b, gemmd_job *j)
{
	const struct gm_ctl_bench_shape *s;

	if (b->o->mixed_max > 0) {
		j->m = random_dim(b);
		j->n = random_dim(b);
		j->k = random_dim(b);
		return;
	}
	s = &b->o->shape[b->seq++ % (uint64_t)b->o->nshapes];
	j->m = s->m;
	j->n = s->n;
	j->k = s->k;
}

/* Where job i of slot s writes its result: bytes from the first
 * output, and that seen from here. */
static uint64_t out_offset(const struct bench *b, const struct slot *s,
			   uint32_t i)
{
	return ((uint64_t)s->index * b->o->batch + i) * b->w.stride;
}

static uint8_t *out_of(const struct bench *b, const struct slot *s, uint32_t i)
{
	return b->w.out + out_offset(b, s, i);
}

/* The jobs of slot s as every request of it sends them, but the shape. */
static void slot_jobs(struct bench *b, struct slot *s)
{
	for (uint32_t i = 0; i < b->o->batch; i++) {
		gemmd_job *j = &s->jobs[i];

		j->dtype = b->o->dtype;
		j->layout = GEMMD_ROW_MAJOR;
		j->alpha = 1.0;
		if (b->w.region == NULL) {
			j->a = b->w.a;
			j->b = b->w.b;
			j->out = out_of(b, s, i);
			continue;
		}
		j->a_ref = (gemmd_region_ref){b->w.region, b->w.a_off};
		j->b_ref = (gemmd_region_ref){b->w.region, b->w.b_off};
		j->out_ref = (gemmd_region_ref){
		    b->w.region, b->w.out_off + out_offset(b, s, i)};
	}
}

/* Keeps job j of slot s among the checks with reservoir sampling: after
 * the run each result seen is among them with the same chance. */
static void offer_check(struct bench *b, const struct slot *s, uint32_t i)
{
	const gemmd_job *j = &s->jobs[i];
	uint64_t seen = b->offered++, pick = seen;
	size_t bytes = (size_t)j->m * j->n * b->w.es;
	struct check *c;

	if (seen >= b->o->verify &&
	    (pick = gm_ctl_random(&b->rng) % (seen + 1)) >= b->o->verify)
		return;
	c = &b->checks[pick];
	if (c->cap < bytes) {
		free(c->out);
		c->cap = (c->out = malloc(bytes)) != NULL ? bytes : 0;
		if (c->out == NULL)
			return;
	}
	memcpy(c->out, out_of(b, s, i), bytes);
	c->job = *j;
	c->job.a = b->w.a;
	c->job.b = b->w.b;
	c->job.out = c->out;
}

static void account_job(struct bench *b, const struct slot *s, uint32_t i)
{
	struct gm_ctl_bench_result *r = b->r;
	const gemmd_job *j = &s->jobs[i];
	int code = s->rv != GM_OK ? s->rv : j->status;
	double mn = (double)j->m * j->n;

	if (code != GM_OK) {
		r->jobs_failed++;
		r->errors[code > 0 && code < GM_ERR_COUNT ? code
							  : GM_EINTERNAL]++;
		return;
	}
	r->jobs_ok++;
	r->flops += 2.0 * mn * j->k;
	r->bytes +=
	    ((double)j->m * j->k + (double)j->k * j->n + mn) * (double)b->w.es;
	gm_ctlhist_add(&r->phase[BENCH_QUEUE], j->t.queue_us);
	gm_ctlhist_add(&r->phase[BENCH_H2D], j->t.h2d_us);
	gm_ctlhist_add(&r->phase[BENCH_KERNEL], j->t.kernel_us);
	gm_ctlhist_add(&r->phase[BENCH_D2H], j->t.d2h_us);
	gm_ctlhist_add(&r->phase[BENCH_TOTAL], j->t.total_us);
	if (b->o->verify > 0)
		offer_check(b, s, i);
}

/* A refusal sending again would only repeat: the connection is gone,
 * or the daemon is stopping, drained or broken. A full queue (EBUSY)
 * and a request that outlived --timeout are load, and counted. */
static bool stops_run(int rv)
{
	return rv != GM_OK && rv != GM_EBUSY && rv != GM_ETIMEDOUT;
}

static void account(struct bench *b, struct slot *s)
{
	struct gm_ctl_bench_result *r = b->r;

	if (s->rv == GM_OK) {
		r->requests_ok++;
		gm_ctlhist_add(&r->latency, (s->done_ms - s->sent_ms) * 1e3);
	} else {
		r->requests_failed++;
	}
	if (stops_run(s->rv) && !b->stop) {
		b->stop = true;
		r->stop_rv = s->rv;
	}
	for (uint32_t i = 0; i < b->o->batch; i++)
		account_job(b, s, i);
	r->elapsed_s = (s->done_ms - b->start_ms) / 1e3;
}

static bool may_send(const struct bench *b)
{
	const struct gm_ctl_bench_opts *o = b->o;

	return !b->stop && (o->count == 0 || b->r->requests_sent < o->count) &&
	       (o->duration_s == 0 ||
		gm_ctl_now_ms() - b->start_ms < o->duration_s * 1e3);
}

static void send_request(struct bench *b, struct slot *s)
{
	int rv;

	for (uint32_t i = 0; i < b->o->batch; i++)
		shape_job(b, &s->jobs[i]);
	b->r->requests_sent++;
	b->r->jobs_sent += b->o->batch;
	s->sent_ms = gm_ctl_now_ms();
	rv = gemmd_submit_async(b->cl, s->jobs, b->o->batch, &b->o->sub,
				b->o->conn.timeout_ms, on_done, s);
	if (rv == GM_OK) {
		b->inflight++;
		return;
	}
	/* Not sent: every job says why, and sending again would too. */
	s->rv = rv;
	s->done_ms = gm_ctl_now_ms();
	account(b, s);
	b->stop = true;
	b->r->stop_rv = rv;
}

/* Waits for finished requests until the next progress line is due
 * (forever without one); moves them into *out, returns how many. */
static uint32_t take_done(struct bench *b, struct slot **out, double due_ms)
{
	/* gm_ctl_now_ms is CLOCK_MONOTONIC, the clock of b->cv. */
	struct timespec ts = {.tv_sec = (time_t)(due_ms / 1e3),
			      .tv_nsec = (long)(fmod(due_ms, 1e3) * 1e6)};
	uint32_t n;

	pthread_mutex_lock(&b->mu);
	while (b->ndone == 0) {
		if (due_ms <= 0)
			pthread_cond_wait(&b->cv, &b->mu);
		else if (pthread_cond_timedwait(&b->cv, &b->mu, &ts) ==
			 ETIMEDOUT)
			break;
	}
	n = b->ndone;
	memcpy(out, b->done, n * sizeof(*out));
	b->ndone = 0;
	pthread_mutex_unlock(&b->mu);
	return n;
}

static void run(struct bench *b, bool progress)
{
	struct slot **fin = calloc(b->o->concurrency, sizeof(*fin));
	double due = progress ? gm_ctl_now_ms() + PROGRESS_MS : 0;
	uint32_t i, n;

	if (fin == NULL) {
		b->stop = true;
		b->r->stop_rv = GM_ENOMEM;
		return;
	}
	b->start_ms = gm_ctl_now_ms();
	for (i = 0; i < b->o->concurrency && may_send(b); i++)
		send_request(b, &b->slots[i]);
	while (b->inflight > 0) {
		n = take_done(b, fin, due);
		for (i = 0; i < n; i++) {
			b->inflight--;
			account(b, fin[i]);
			if (may_send(b))
				send_request(b, fin[i]);
		}
		if (progress && gm_ctl_now_ms() >= due) {
			gm_ctl_bench_progress(
			    b->r, (gm_ctl_now_ms() - b->start_ms) / 1e3);
			due = gm_ctl_now_ms() + PROGRESS_MS;
		}
	}
	if (progress)
		fputs("\r\033[K", gm_ctl_out);
	free(fin);
}

/* ---- setup and the checks ---- */

/* The lock, the slots and the checks: 0, or the exit status. */
static int bench_init(struct bench *b)
{
	pthread_condattr_t ca;
	uint32_t c = b->o->concurrency;

	b->rng = b->o->seed;
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	b->slots = calloc(c, sizeof(*b->slots));
	b->done = calloc(c, sizeof(*b->done));
	b->checks = calloc(b->o->verify + 1, sizeof(*b->checks));
	if (b->slots == NULL || b->done == NULL || b->checks == NULL)
		goto nomem;
	for (uint32_t i = 0; i < c; i++) {
		b->slots[i] = (struct slot){.b = b, .index = i};
		b->slots[i].jobs = calloc(b->o->batch, sizeof(gemmd_job));
		if (b->slots[i].jobs == NULL)
			goto nomem;
		slot_jobs(b, &b->slots[i]);
	}
	return 0;
nomem:
	gm_ctl_err("out of memory");
	return EXIT_JOB;
}

static void bench_free(struct bench *b)
{
	for (uint32_t i = 0; b->slots != NULL && i < b->o->concurrency; i++)
		free(b->slots[i].jobs);
	for (uint32_t i = 0; b->checks != NULL && i < b->o->verify; i++)
		free(b->checks[i].out);
	free(b->slots);
	free(b->done);
	free(b->checks);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
}

/* Checks the results kept; the one furthest from its tolerance is the
 * one reported. */
static void verify(struct bench *b)
{
	struct gm_ctl_bench_result *r = b->r;
	uint64_t n = b->offered < b->o->verify ? b->offered : b->o->verify;
	double rel, tol;

	for (uint64_t i = 0; i < n; i++) {
		const struct check *c = &b->checks[i];

		if (c->out == NULL || gm_verify_job(&c->job, &rel, &tol) != 0)
			continue;
		r->checked++;
		r->checked_ok += rel <= tol; /* NaN fails */
		if (r->checked == 1 ||
		    !(rel / tol <= r->worst_rel / r->worst_tol)) {
			r->worst_rel = rel;
			r->worst_tol = tol;
		}
	}
}

int gm_ctl_bench_drive(const struct gm_ctl_bench_opts *o, gemmd_client *cl,
		       struct gm_ctl_bench_result *r)
{
	struct bench b = {.o = o, .r = r, .cl = cl};
	int rc;

	if ((rc = workload_setup(&b.w, o, cl)) == 0) {
		if ((rc = bench_init(&b)) == 0) {
			run(&b, isatty(fileno(gm_ctl_out)) && !gm_ctl_json);
			verify(&b);
		}
		bench_free(&b);
	}
	workload_free(&b.w);
	return rc;
}
