/*
 * test_sched.c - unit tests of the bounded queue and scheduler in front
 * of the real CPU engine (one BLAS thread), driven the way the daemon
 * drives them: the engine's done callback only hands the job over (here
 * through a mutex and condition variable, in the order the engine
 * returned them) and the test thread, playing the loop, calls
 * gm_sched_complete. Nothing here measures time: the tests hold the
 * engine's budget by not completing a job, so queueing, back-pressure
 * and priority order are deterministic, and deadlines are passed by
 * waiting before the pump that must notice them. Every test ends with
 * the same checks: queue and engine empty, nothing reserved, every job
 * of an accepted request finished exactly once before its request was
 * done exactly once, every job that ran back from the engine exactly
 * once, every job that failed before starting (or was refused) never
 * run, its output still poisoned, and the stats agreeing with the
 * statuses the requests came back with. Inputs are fresh random numbers;
 * the seed is printed and GM_TEST_SEED replays one.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_engine.h"
#include "gm_error.h"
#include "gm_sched.h"
#include "gm_stats.h"
#include "gm_testref.h"

#define ALPHA	  1.5
#define BETA	  -0.75
#define MAXJOBS	  32   /* per request */
#define MAXREQS	  16   /* per test */
#define MAXBACK	  256  /* jobs back from the engine per test */
#define WAIT_S	  60   /* a job not back by then is lost */
#define POISON	  0xFF /* every byte: NaN in fp64 and fp32 */
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* One job's description, the short way. */
struct shape {
	uint8_t dtype, layout, ta, tb, has_c;
	uint32_t m, n, k;
};

/* A request and the buffers its jobs point at. in[i] holds the payload
 * (A, B, C back to back) followed by a pristine copy of it. */
struct treq {
	gm_sched_request *r;
	int accepted;
	unsigned done;		    /* request done callbacks seen */
	unsigned back[MAXJOBS];	    /* engine returns seen, per job */
	unsigned finished[MAXJOBS]; /* job callbacks seen, per job */
	uint64_t bytes[MAXJOBS];
	uint8_t *in[MAXJOBS], *out[MAXJOBS];
};

/* The scheduler under test, its engine, and the hand-over from the
 * engine's worker thread to the test thread. */
static struct harness {
	gm_engine *eng;
	gm_sched *sched;
	uint64_t budget; /* bytes */
	gm_stats st;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	gm_job *back[MAXBACK];	 /* under mu: in the order they came back */
	size_t nback;		 /* under mu */
	gm_job *starts[MAXBACK]; /* under mu: in the order they started */
	size_t nstarts;		 /* under mu */
	size_t ndelivered;	 /* starts told to the scheduler */
	int gate;		 /* under mu: the engine is held in its done
				    callback while set */
	pthread_cond_t gate_cv;
	size_t ntaken; /* completed by the test thread */
	uint64_t peak_inflight;
	struct treq *reqs[MAXREQS];
	size_t nreqs;
	uint64_t ok, failed, codes[GM_ERR_COUNT]; /* from finished requests */
} h;

static uint64_t rs;
static uint64_t next_id;

/* Engine thread: notes job at the end of list (*n of them so far) and
 * wakes the test thread. Under mu. */
static void note(struct harness *hs, gm_job **list, size_t *n, gm_job *job)
{
	if (*n < MAXBACK)
		list[*n] = job;
	(*n)++;
	pthread_cond_signal(&hs->cv);
}

/* Engine thread: only hand the job over; while the gate is closed the
 * engine thread waits here, so that what was handed to the engine after
 * this job waits in the engine's own queue. */
static void on_engine_done(gm_job *job, void *arg)
{
	struct harness *hs = arg;

	pthread_mutex_lock(&hs->mu);
	note(hs, hs->back, &hs->nback, job);
	while (hs->gate)
		pthread_cond_wait(&hs->gate_cv, &hs->mu);
	pthread_mutex_unlock(&hs->mu);
}

/* Engine thread: only note that the job started. */
static void on_engine_start(gm_job *job, uint32_t n, void *arg)
{
	struct harness *hs = arg;

	pthread_mutex_lock(&hs->mu);
	for (; n > 0; n--, job = job->next)
		note(hs, hs->starts, &hs->nstarts, job);
	pthread_mutex_unlock(&hs->mu);
}

static void set_gate(int closed)
{
	pthread_mutex_lock(&h.mu);
	h.gate = closed;
	pthread_cond_broadcast(&h.gate_cv);
	pthread_mutex_unlock(&h.mu);
}

/* Tells the scheduler of every start noted so far, as the loop would. */
static void deliver_starts(void)
{
	size_t n;

	pthread_mutex_lock(&h.mu);
	n = h.nstarts;
	pthread_mutex_unlock(&h.mu);
	assert_true(n <= MAXBACK);
	for (; h.ndelivered < n; h.ndelivered++)
		gm_sched_started(h.sched, h.starts[h.ndelivered]);
}

/* Test thread, from the scheduler: job j is finished. */
static void on_job_done(gm_sched_job *j, void *arg)
{
	struct treq *tr = j->req->user;

	(void)arg;
	assert_int_equal(tr->done, 0);
	assert_true(j->t.total_us >= j->t.queue_us);
	tr->finished[j->idx]++;
}

/* Test thread, from the scheduler: every job of r is back. */
static void on_request_done(gm_sched_request *r, void *arg)
{
	struct harness *hs = arg;
	struct treq *tr = r->user;

	tr->done++;
	for (uint32_t i = 0; i < r->njobs; i++)
		assert_int_equal(tr->finished[i], 1);
	for (uint32_t i = 0; i < r->njobs; i++) {
		int status = r->jobs[i].job.status;

		assert_in_range(status, 0, GM_ERR_COUNT - 1);
		hs->codes[status]++;
		if (status == GM_OK)
			hs->ok++;
		else
			hs->failed++;
	}
}

/* Checks what must hold between any two calls into the scheduler. */
static void check_books(void)
{
	uint64_t inflight = gm_sched_on_engine(h.sched);
	uint64_t over = gm_sched_oversized_bytes(h.sched);

	/* Within the budget, but for one job over all of it, or one job
	 * alone. */
	assert_true(over == 0 || over > h.budget);
	assert_true(gm_sched_inflight_bytes(h.sched) - over <= h.budget ||
		    inflight == 1);
	if (inflight > h.peak_inflight)
		h.peak_inflight = inflight;
}

/* A scheduler keeping at most budget bytes of work on the engine. */
static void h_open(uint64_t budget, unsigned depth)
{
	gm_engine_config cfg = {
	    .kind = GM_ENGINE_CPU, .pool_bytes = 1u << 20, .cpu_threads = 1};
	gm_sched_budget b = {.jobs = 1000, .bytes = budget};
	char msg[128] = "";
	int rv;

	assert_null(h.eng);
	memset(&h, 0, sizeof(h));
	pthread_mutex_init(&h.mu, NULL);
	pthread_cond_init(&h.cv, NULL);
	pthread_cond_init(&h.gate_cv, NULL);
	gm_stats_init(&h.st);
	rv = gm_engine_open(&cfg, on_engine_done, &h, &h.eng, msg, sizeof(msg));
	if (rv != GM_OK)
		print_error("gm_engine_open: %s\n", msg);
	assert_int_equal(rv, GM_OK);
	gm_engine_on_start(h.eng, on_engine_start);
	h.budget = budget;
	assert_int_equal(gm_sched_create(h.eng, depth, &b, &h.st, on_job_done,
					 on_request_done, &h, &h.sched),
			 GM_OK);
}

/* Bytes of the budget one job of shape s takes: A, B, C and result. */
static uint64_t cost_of(const struct shape *s)
{
	gm_job_desc d = {.dtype = s->dtype,
			 .m = s->m,
			 .n = s->n,
			 .k = s->k,
			 .flags = s->has_c ? GM_JOB_HAS_C : 0};
	gm_job_sizes z;

	assert_int_equal(gm_job_sizes_of(&d, &z), GM_OK);
	return z.a + z.b + z.c + z.out;
}

/* A request of njobs jobs, job i of shape sh[i % nsh], kept by the
 * harness until h_close. */
static struct treq *new_req(uint32_t njobs, uint8_t prio, uint32_t deadline_ms,
			    const struct shape *sh, size_t nsh)
{
	struct treq *tr = calloc(1, sizeof(*tr));

	assert_non_null(tr);
	assert_true(njobs <= MAXJOBS && h.nreqs < MAXREQS);
	tr->r = gm_sched_alloc_request(njobs);
	assert_non_null(tr->r);
	tr->r->id = ++next_id;
	tr->r->batch.priority = prio;
	tr->r->batch.deadline_ms = deadline_ms;
	tr->r->user = tr;
	for (uint32_t i = 0; i < njobs; i++) {
		const struct shape *s = &sh[i % nsh];
		gm_job *job = &tr->r->jobs[i].job;
		gm_job_desc *d = &job->d;
		gm_job_sizes z;

		*d = (gm_job_desc){.dtype = s->dtype,
				   .trans_a = s->ta,
				   .trans_b = s->tb,
				   .layout = s->layout,
				   .kernel = GM_KERNEL_CUBLAS,
				   .flags = s->has_c ? GM_JOB_HAS_C : 0,
				   .m = s->m,
				   .n = s->n,
				   .k = s->k,
				   .alpha = ALPHA,
				   .beta = BETA};
		assert_int_equal(gm_job_sizes_of(d, &z), GM_OK);
		tr->bytes[i] = z.a + z.b + z.c;
		tr->in[i] = malloc(2 * tr->bytes[i]);
		tr->out[i] = malloc(z.out);
		assert_non_null(tr->in[i]);
		assert_non_null(tr->out[i]);
		gm_testref_fill(s->dtype, tr->in[i],
				tr->bytes[i] / gm_testref_esize(s->dtype), &rs,
				NULL);
		memcpy(tr->in[i] + tr->bytes[i], tr->in[i], tr->bytes[i]);
		memset(tr->out[i], POISON, z.out);
		job->a = tr->in[i];
		job->b = tr->in[i] + z.a;
		job->c = z.c != 0 ? tr->in[i] + z.a + z.b : NULL;
		job->out = tr->out[i];
		job->status = -1; /* shows a job nobody touched */
	}
	h.reqs[h.nreqs++] = tr;
	return tr;
}

/* A request of n jobs all of shape s. */
static struct treq *new_req_of(uint32_t n, const struct shape *s)
{
	return new_req(n, GM_BATCH_PRIO_DEFAULT, 0, s, 1);
}

static int submit(struct treq *tr)
{
	int rv;

	tr->r->recv_us = gm_clock_now_us();
	rv = gm_sched_submit(h.sched, tr->r);
	tr->accepted = rv == GM_OK;
	check_books();
	return rv;
}

/* Waits up to WAIT_S until *count (under mu) reaches n; returns it. */
static size_t wait_count(const size_t *count, size_t n)
{
	struct timespec until;
	size_t got;
	int rv = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_S;
	pthread_mutex_lock(&h.mu);
	while (*count < n && rv == 0)
		rv = pthread_cond_timedwait(&h.cv, &h.mu, &until);
	got = *count;
	pthread_mutex_unlock(&h.mu);
	return got;
}

/* Waits until at least n jobs have come back from the engine. */
static void wait_back(size_t n)
{
	size_t got = wait_count(&h.nback, n);

	if (got < n)
		fail_msg("only %zu jobs back from the engine, waiting for %zu",
			 got, n);
}

/* Waits until at least n jobs have started on the engine, and tells the
 * scheduler. */
static void wait_started(size_t n)
{
	if (wait_count(&h.nstarts, n) < n)
		fail_msg("fewer than %zu jobs started", n);
	deliver_starts();
}

/* Completes the next job the engine returned, as the loop would, after
 * the starts that came before it. */
static void take_one(void)
{
	gm_sched_job *j;

	assert_true(gm_sched_on_engine(h.sched) > 0);
	wait_back(h.ntaken + 1);
	deliver_starts();
	assert_true(h.ntaken < MAXBACK);
	j = h.back[h.ntaken++]->user;
	((struct treq *)j->req->user)->back[j->idx]++;
	gm_sched_complete(h.sched, &j->job);
	check_books();
}

/* Completes jobs until no request is left. */
static void drain(void)
{
	while (gm_sched_requests(h.sched) > 0)
		take_one();
}

static void wait_past(double t_us)
{
	struct timespec ts = {0, 200000};

	while (gm_clock_now_us() <= t_us)
		nanosleep(&ts, NULL);
}

static int never_ran(int status)
{
	return status == GM_ETOOBIG || status == GM_EUNSUPPORTED ||
	       status == GM_ETIMEDOUT || status == GM_ECANCELED;
}

static int all_poison(const uint8_t *p, uint64_t bytes)
{
	for (uint64_t i = 0; i < bytes; i++)
		if (p[i] != POISON)
			return 0;
	return 1;
}

static uint64_t out_bytes(const gm_job_desc *d)
{
	gm_job_sizes z;

	gm_job_sizes_of(d, &z);
	return z.out;
}

/* The checks every test ends with. */
static void h_check(void)
{
	assert_int_equal(gm_sched_in_queue(h.sched), 0);
	assert_int_equal(gm_sched_on_engine(h.sched), 0);
	assert_int_equal(gm_sched_requests(h.sched), 0);
	assert_int_equal(gm_sched_inflight_bytes(h.sched), 0);
	assert_int_equal(gm_sched_reserved(h.sched), 0);
	assert_int_equal(h.nback, h.ntaken);
	for (size_t q = 0; q < h.nreqs; q++) {
		struct treq *tr = h.reqs[q];

		assert_int_equal(tr->done, tr->accepted ? 1 : 0);
		for (uint32_t i = 0; i < tr->r->njobs; i++) {
			const gm_job *job = &tr->r->jobs[i].job;

			assert_int_equal(tr->finished[i], tr->accepted);
			if (!tr->accepted)
				assert_int_equal(job->status, -1);
			if (!tr->accepted || never_ran(job->status)) {
				/* Taken back, or expired in the engine's
				 * queue. */
				assert_true(tr->back[i] == 0 ||
					    job->status == GM_ETIMEDOUT);
				assert_true(job->start_us == 0.0);
				assert_true(
				    all_poison(tr->out[i], out_bytes(&job->d)));
			} else {
				assert_int_equal(tr->back[i], 1);
			}
		}
	}
	assert_int_equal(h.st.jobs_ok, h.ok);
	assert_int_equal(h.st.jobs_failed, h.failed);
	for (int c = 0; c < GM_ERR_COUNT; c++)
		assert_int_equal(h.st.errors[c], h.codes[c]);
	for (int p = 0; p < GM_PHASE_COUNT; p++)
		assert_int_equal(h.st.phase[p].count, h.ok);
}

/* Frees what h_open made, whatever state a failed test left it in: the
 * engine is closed first, which waits for every job it holds. */
static int h_free(void **state)
{
	if (h.eng == NULL)
		return 0;
	set_gate(0);
	gm_engine_close(h.eng);
	gm_sched_destroy(h.sched);
	for (size_t q = 0; q < h.nreqs; q++) {
		struct treq *tr = h.reqs[q];

		for (uint32_t i = 0; i < tr->r->njobs; i++) {
			free(tr->in[i]);
			free(tr->out[i]);
		}
		gm_sched_free_request(tr->r);
		free(tr);
	}
	pthread_cond_destroy(&h.gate_cv);
	pthread_cond_destroy(&h.cv);
	pthread_mutex_destroy(&h.mu);
	h.eng = NULL;
	return 0;
}

static void h_close(void)
{
	h_check();
	h_free(NULL);
}

/*
 * Checks job i of tr against gm_testref_check's long double reference
 * (every element written, the error within the dtype's bound), the
 * payload left as it came, and timings in the order they were taken.
 */
static void check_result(const struct treq *tr, uint32_t i)
{
	const gm_sched_job *j = &tr->r->jobs[i];
	const gm_job_desc *d = &j->job.d;
	const uint8_t *a = tr->in[i];
	gm_job_sizes z;

	assert_int_equal(j->job.status, GM_OK);
	assert_int_equal(gm_job_sizes_of(d, &z), GM_OK);
	assert_true(gm_testref_check(&(gm_testref_gemm){
	    .dtype = d->dtype,
	    .layout = d->layout,
	    .trans_a = d->trans_a,
	    .trans_b = d->trans_b,
	    .m = d->m,
	    .n = d->n,
	    .k = d->k,
	    .alpha = d->alpha,
	    .beta = d->beta,
	    .a = a,
	    .b = a + z.a,
	    .c = d->flags & GM_JOB_HAS_C ? a + z.a + z.b : NULL,
	    .out = tr->out[i]}));
	assert_memory_equal(tr->in[i], tr->in[i] + tr->bytes[i], tr->bytes[i]);
	assert_true(j->t.queue_us >= 0.0);
	assert_true(j->t.total_us >= j->t.queue_us);
	assert_true(j->t.kernel_us >= 0.0);
	assert_true(j->t.h2d_us == 0.0 && j->t.d2h_us == 0.0);
}

static void check_all_ok(const struct treq *tr)
{
	assert_int_equal(tr->done, 1);
	for (uint32_t i = 0; i < tr->r->njobs; i++)
		check_result(tr, i);
}

/* Every dtype, layout, transpose pair and C choice of one size. */
static struct treq *new_req_all_kinds(uint32_t m, uint32_t n, uint32_t k)
{
	struct shape sh[MAXJOBS];

	for (unsigned i = 0; i < MAXJOBS; i++)
		sh[i] = (struct shape){.dtype = i & 1 ? GM_FP32 : GM_FP64,
				       .layout = (i >> 1) & 1,
				       .ta = (i >> 2) & 1,
				       .tb = (i >> 3) & 1,
				       .has_c = (i >> 4) & 1,
				       .m = m,
				       .n = n,
				       .k = k};
	return new_req(MAXJOBS, GM_BATCH_PRIO_DEFAULT, 0, sh, MAXJOBS);
}

static const struct shape SMALL = {GM_FP64, GM_ROW_MAJOR, 0, 0, 0, 8, 8, 8};

/* Results through the scheduler, with a budget that holds every job at
 * once and with one that holds only two of the largest. */
static void test_results(void **state)
{
	static const uint32_t dims[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 17, 40}};
	const struct shape big = {GM_FP64, 0, 0, 0, 1, 33, 17, 40};
	uint64_t budgets[] = {1u << 20, 2 * cost_of(&big)};
	struct treq *tr[NELEMS(dims)];

	for (size_t p = 0; p < NELEMS(budgets); p++) {
		h_open(budgets[p], NELEMS(dims) * MAXJOBS);
		for (size_t i = 0; i < NELEMS(dims); i++) {
			tr[i] = new_req_all_kinds(dims[i][0], dims[i][1],
						  dims[i][2]);
			assert_int_equal(submit(tr[i]), GM_OK);
		}
		drain();
		for (size_t i = 0; i < NELEMS(dims); i++)
			check_all_ok(tr[i]);
		h_close();
	}
}

/* A request enters whole or not at all. */
static void test_queue_full(void **state)
{
	enum { DEPTH = 8 };
	struct treq *over, *blocker, *a, *b, *c, *d;

	h_open(cost_of(&SMALL), DEPTH);
	over = new_req_of(DEPTH + 1, &SMALL);
	assert_int_equal(submit(over), GM_EBUSY);
	assert_int_equal(gm_sched_requests(h.sched), 0);

	/* The blocker holds the budget: what follows stays queued. Once
	 * started it is no longer queued. */
	blocker = new_req_of(1, &SMALL);
	assert_int_equal(submit(blocker), GM_OK);
	wait_started(1);
	assert_int_equal(gm_sched_on_engine(h.sched), 1);
	assert_int_equal(gm_sched_in_queue(h.sched), 0);
	a = new_req_of(5, &SMALL);
	assert_int_equal(submit(a), GM_OK);
	assert_int_equal(gm_sched_in_queue(h.sched), 5);
	b = new_req_of(4, &SMALL);
	assert_int_equal(submit(b), GM_EBUSY);
	assert_int_equal(gm_sched_in_queue(h.sched), 5);
	assert_int_equal(gm_sched_requests(h.sched), 2);
	c = new_req_of(DEPTH - 5, &SMALL);
	assert_int_equal(submit(c), GM_OK);
	assert_int_equal(gm_sched_in_queue(h.sched), DEPTH);
	d = new_req_of(1, &SMALL);
	assert_int_equal(submit(d), GM_EBUSY);
	assert_int_equal(gm_sched_requests(h.sched), 3);

	drain();
	check_all_ok(blocker);
	check_all_ok(a);
	check_all_ok(c);
	assert_int_equal(over->done + b->done + d->done, 0);
	h_close();
}

/* Equal jobs through a budget that holds `fits` of them: never more on
 * the engine, and never fewer while any wait. */
static void test_back_pressure(void **state)
{
	static const unsigned fits[] = {1, 3};
	const struct shape s = {GM_FP64, GM_COL_MAJOR, 1, 0, 1, 24, 20, 28};
	struct treq *tr[3];

	for (size_t f = 0; f < NELEMS(fits); f++) {
		h_open(fits[f] * cost_of(&s), 16);
		for (size_t i = 0; i < NELEMS(tr); i++) {
			tr[i] = new_req_of(4, &s);
			assert_int_equal(submit(tr[i]), GM_OK);
		}
		while (gm_sched_requests(h.sched) > 0) {
			assert_true(gm_sched_on_engine(h.sched) <= fits[f]);
			if (gm_sched_in_queue(h.sched) > 0)
				assert_int_equal(gm_sched_on_engine(h.sched),
						 fits[f]);
			assert_int_equal(gm_sched_inflight_bytes(h.sched),
					 gm_sched_on_engine(h.sched) *
					     cost_of(&s));
			take_one();
		}
		assert_int_equal(h.peak_inflight, fits[f]);
		for (size_t i = 0; i < NELEMS(tr); i++)
			check_all_ok(tr[i]);
		h_close();
	}
}

/* One single-job request of connection conn. */
static struct treq *conn_req(uint32_t conn, const struct shape *s)
{
	struct treq *tr = new_req_of(1, s);

	tr->r->conn = conn;
	return tr;
}

/*
 * A job larger than the whole budget starts beside the others and takes
 * none of the bytes, so that the jobs behind it keep starting in the
 * budget; a second such job waits until the first is back, and the jobs
 * of its connection behind it wait with it (their order), while another
 * connection's still start.
 */
static void test_over_budget(void **state)
{
	const struct shape huge = {GM_FP64, 0, 0, 0, 0, 128, 128, 128};
	const struct shape mixed[] = {SMALL, huge, SMALL, huge, SMALL};
	struct treq *tr, *other;

	h_open(2 * cost_of(&SMALL), 16);
	assert_true(cost_of(&huge) > 2 * cost_of(&SMALL));
	tr = new_req(5, 1, 0, mixed, NELEMS(mixed));
	tr->r->conn = 1;
	assert_int_equal(submit(tr), GM_OK);
	/* SMALL, huge, SMALL: the second huge one waits for the first. */
	assert_int_equal(gm_sched_on_engine(h.sched), 3);
	assert_int_equal(gm_sched_in_queue(h.sched), 2);
	assert_int_equal(gm_sched_oversized_bytes(h.sched), cost_of(&huge));
	assert_int_equal(gm_sched_inflight_bytes(h.sched),
			 cost_of(&huge) + 2 * cost_of(&SMALL));
	/* The budget's bytes are full: another connection's job waits for
	 * them, not for the huge job. */
	other = conn_req(2, &SMALL);
	assert_int_equal(submit(other), GM_OK);
	assert_int_equal(gm_sched_in_queue(h.sched), 3);
	drain();
	assert_int_equal(h.peak_inflight, 3);
	check_all_ok(tr);
	check_all_ok(other);
	h_close();
}

/* Jobs that fill the budget exactly run together; one byte less and
 * they run one at a time. */
static void test_budget_edge(void **state)
{
	static const struct {
		int64_t delta;
		uint64_t peak;
	} cases[] = {
	    {0, 2},
	    {-1, 1},
	    {+1, 2},
	};
	const struct shape s = {GM_FP64, 0, 0, 0, 0, 16, 16, 16};

	assert_int_equal(cost_of(&s), 6144);
	for (size_t i = 0; i < NELEMS(cases); i++) {
		struct treq *tr;

		h_open(2 * cost_of(&s) + cases[i].delta, 4);
		tr = new_req_of(2, &s);
		assert_int_equal(submit(tr), GM_OK);
		drain();
		assert_int_equal(h.peak_inflight, cases[i].peak);
		check_all_ok(tr);
		h_close();
	}
}

/* Room reserved counts as taken; a reserved request enters even after a
 * stop, using its room; room not used is given back. */
static void test_reserve(void **state)
{
	struct treq *tr, *other;

	h_open(1u << 20, 4);
	assert_int_equal(gm_sched_reserve(h.sched, 1, 3), GM_OK);
	assert_int_equal(gm_sched_reserved(h.sched), 3);
	assert_int_equal(gm_sched_room(h.sched, 2, 2), GM_EBUSY);
	assert_int_equal(gm_sched_room(h.sched, 2, 1), GM_OK);
	assert_int_equal(gm_sched_reserve(h.sched, 0, 2), GM_EBUSY);
	other = new_req_of(2, &SMALL);
	assert_int_equal(submit(other), GM_EBUSY);
	gm_sched_stop(h.sched);
	assert_int_equal(gm_sched_reserve(h.sched, 1, 1), GM_ESHUTDOWN);
	tr = new_req_of(2, &SMALL);
	tr->r->reserved = 1;
	assert_int_equal(submit(tr), GM_OK);
	assert_int_equal(gm_sched_reserved(h.sched), 1);
	gm_sched_unreserve(h.sched, 1, 1);
	drain();
	check_all_ok(tr);
	assert_int_equal(other->done, 0);
	h_close();
}

/* A dtype the engine cannot run fails at once; the rest still run. */
static void test_unsupported(void **state)
{
	static const struct {
		uint8_t dtype;
		const char *msg;
	} cases[] = {
	    {GM_FP16, "dtype fp16 is unsupported by the cpu engine"},
	    {GM_BF16, "dtype bf16 is unsupported by the cpu engine"},
	    {GM_TF32, "dtype tf32 is unsupported by the cpu engine"},
	};

	for (size_t i = 0; i < NELEMS(cases); i++) {
		struct shape sh[3] = {SMALL, SMALL, SMALL};
		struct treq *tr;

		sh[1].dtype = cases[i].dtype;
		sh[2].dtype = GM_FP32;
		h_open(64 * 1024, 8);
		tr = new_req(3, 1, 0, sh, NELEMS(sh));
		assert_int_equal(submit(tr), GM_OK);
		assert_int_equal(tr->r->jobs[1].job.status, GM_EUNSUPPORTED);
		assert_string_equal(tr->r->jobs[1].job.msg, cases[i].msg);
		assert_int_equal(tr->done, 0);
		drain();
		assert_int_equal(tr->done, 1);
		check_result(tr, 0);
		check_result(tr, 2);
		h_close();
	}
}

/*
 * Jobs queued behind a blocker start highest priority first, in arrival
 * order within a priority. The CPU engine runs one job at a time in the
 * order it was handed them, so the order jobs come back is the order
 * they started. Once with a budget that holds one job (one job per wave),
 * once with a blocker as large as the budget, after which all of them fit
 * in one wave.
 */
static void test_priority(void **state)
{
	static const uint8_t prios[] = {0, 0, 2, 3, 1, 0, 3, 2, 3, 0, 1, 3};
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	const struct shape *blockers[] = {&SMALL, &big};

	for (size_t c = 0; c < NELEMS(blockers); c++) {
		struct treq *tr[NELEMS(prios)];
		size_t next = 1;

		h_open(cost_of(blockers[c]), 32);
		assert_int_equal(submit(new_req_of(1, blockers[c])), GM_OK);
		for (size_t i = 0; i < NELEMS(prios); i++) {
			/* The last one has two jobs: FIFO inside it too. */
			tr[i] = new_req(i + 1 < NELEMS(prios) ? 1 : 2, prios[i],
					0, &SMALL, 1);
			assert_int_equal(submit(tr[i]), GM_OK);
		}
		assert_int_equal(gm_sched_on_engine(h.sched), 1);
		drain();
		assert_int_equal(h.peak_inflight,
				 c == 0 ? 1 : NELEMS(prios) + 1);
		for (int p = GM_BATCH_PRIO_MAX; p >= 0; p--)
			for (size_t i = 0; i < NELEMS(prios); i++)
				for (uint32_t k = 0;
				     prios[i] == p && k < tr[i]->r->njobs; k++)
					assert_ptr_equal(
					    h.back[next++],
					    &tr[i]->r->jobs[k].job);
		assert_int_equal(next, h.nback);
		for (size_t i = 0; i < NELEMS(prios); i++)
			check_all_ok(tr[i]);
		h_close();
	}
}

/*
 * A job that does not fit now keeps its place, and jobs of other
 * connections and of lower priorities that fit start past it, up to a
 * quarter of the budget's bytes until it starts; then nothing more
 * passes, and it starts once the work ahead of it is back: a large job
 * is never starved by small ones, nor do they all wait for it.
 */
static void test_head_of_line(void **state)
{
	enum { PASS = 16, MORE = 4 };
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	struct treq *blocker, *large, *small_lo, *smalls;

	h_open(cost_of(&big), 8 + PASS + MORE);
	assert_int_equal(PASS * cost_of(&SMALL), cost_of(&big) / 4);
	blocker = conn_req(1, &SMALL);
	assert_int_equal(submit(blocker), GM_OK);
	large = new_req(1, 3, 0, &big, 1);
	large->r->conn = 2;
	assert_int_equal(submit(large), GM_OK);
	small_lo = new_req(1, 0, 0, &SMALL, 1);
	small_lo->r->conn = 3;
	assert_int_equal(submit(small_lo), GM_OK);
	smalls = new_req(PASS - 1 + MORE, 3, 0, &SMALL, 1);
	smalls->r->conn = 4;
	assert_int_equal(submit(smalls), GM_OK);
	/* The low one and PASS - 1 of the high ones passed. */
	assert_int_equal(gm_sched_on_engine(h.sched), 1 + PASS);
	assert_int_equal(gm_sched_in_queue(h.sched), 1 + MORE);
	drain();
	assert_int_equal(h.nback, 2 + PASS + MORE);
	assert_int_equal(h.peak_inflight, 1 + PASS);
	assert_ptr_equal(h.back[1], &small_lo->r->jobs[0].job);
	assert_ptr_equal(h.back[1 + PASS], &large->r->jobs[0].job);
	for (int i = 0; i < MORE; i++)
		assert_ptr_equal(h.back[2 + PASS + i],
				 &smalls->r->jobs[PASS - 1 + i].job);
	check_all_ok(blocker);
	check_all_ok(large);
	check_all_ok(small_lo);
	check_all_ok(smalls);
	h_close();
}

/*
 * A request whose deadline passes while it waits behind a slow job fails
 * with GM_ETIMEDOUT and never runs; requests without a deadline or with
 * a distant one behind it run.
 */
static void test_deadline(void **state)
{
	const struct shape slow = {GM_FP64, 0, 0, 0, 0, 600, 600, 600};
	struct treq *blocker, *late, *none, *far;

	h_open(cost_of(&slow), 8);
	blocker = new_req_of(1, &slow);
	assert_int_equal(submit(blocker), GM_OK);
	late = new_req(1, 1, 1, &SMALL, 1);
	assert_int_equal(submit(late), GM_OK);
	none = new_req(1, 1, 0, &SMALL, 1);
	assert_int_equal(submit(none), GM_OK);
	far = new_req(1, 1, 600000, &SMALL, 1);
	assert_int_equal(submit(far), GM_OK);
	/* Past the deadline before the blocker's completion pumps. */
	wait_past(late->r->recv_us + 2000.0);
	take_one();
	assert_int_equal(late->done, 1);
	assert_int_equal(late->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_string_equal(late->r->jobs[0].job.msg,
			    "deadline passed before the job started");
	/* It waited in the queue until it failed, past its deadline: its
	 * queue_us says so (PROTOCOL.md 11), the phases it never reached
	 * are 0. */
	assert_true(late->r->jobs[0].t.queue_us >= 1000.0);
	assert_true(late->r->jobs[0].t.queue_us <= late->r->jobs[0].t.total_us);
	assert_true(late->r->jobs[0].t.kernel_us == 0.0);
	drain();
	assert_int_equal(blocker->r->jobs[0].job.status, GM_OK);
	check_all_ok(none);
	check_all_ok(far);
	h_close(); /* checks that late's output is still poisoned */
}

/* The deadline passes after the first job of a request started: that
 * one finishes, the second never starts. */
static void test_deadline_partial(void **state)
{
	enum { DEADLINE_MS = 300 };
	struct treq *tr;

	h_open(cost_of(&SMALL), 8);
	tr = new_req(2, 1, DEADLINE_MS, &SMALL, 1);
	assert_int_equal(submit(tr), GM_OK);
	assert_int_equal(gm_sched_on_engine(h.sched), 1);
	assert_int_equal(gm_sched_in_queue(h.sched), 1);
	wait_past(tr->r->recv_us + DEADLINE_MS * 1000.0 + 1000.0);
	take_one();
	assert_int_equal(tr->done, 1);
	check_result(tr, 0);
	assert_int_equal(tr->r->jobs[1].job.status, GM_ETIMEDOUT);
	h_close();
}

/* After gm_sched_stop nothing new enters; what was queued still runs. */
static void test_stop(void **state)
{
	struct treq *blocker, *queued, *late, *later;

	h_open(cost_of(&SMALL), 8);
	blocker = new_req_of(1, &SMALL);
	assert_int_equal(submit(blocker), GM_OK);
	queued = new_req_of(3, &SMALL);
	assert_int_equal(submit(queued), GM_OK);
	gm_sched_stop(h.sched);
	late = new_req_of(1, &SMALL);
	assert_int_equal(submit(late), GM_ESHUTDOWN);
	assert_int_equal(gm_sched_requests(h.sched), 2);
	assert_int_equal(gm_sched_in_queue(h.sched), 3);
	drain();
	check_all_ok(blocker);
	check_all_ok(queued);
	later = new_req_of(1, &SMALL);
	assert_int_equal(submit(later), GM_ESHUTDOWN);
	assert_int_equal(late->done + later->done, 0);
	h_close();
}

/*
 * Two connections queue four jobs each behind a blocker at the same
 * priority, the first all of its own before the second any: they start
 * taking turns, each in its own order. A request of several jobs takes
 * one turn per job.
 */
static void test_fairness(void **state)
{
	struct treq *blk, *a[4], *b[4], *multi;
	size_t next = 1;

	h_open(cost_of(&SMALL), 32);
	blk = conn_req(9, &SMALL);
	assert_int_equal(submit(blk), GM_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit(a[i] = conn_req(1, &SMALL)), GM_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit(b[i] = conn_req(2, &SMALL)), GM_OK);
	multi = new_req(3, GM_BATCH_PRIO_DEFAULT, 0, &SMALL, 1);
	multi->r->conn = 3;
	assert_int_equal(submit(multi), GM_OK);
	drain();
	assert_int_equal(h.nback, 12);
	assert_ptr_equal(h.back[0], &blk->r->jobs[0].job);
	for (int i = 0; i < 4; i++) {
		assert_ptr_equal(h.back[next++], &a[i]->r->jobs[0].job);
		assert_ptr_equal(h.back[next++], &b[i]->r->jobs[0].job);
		if (i < 3)
			assert_ptr_equal(h.back[next++],
					 &multi->r->jobs[i].job);
		check_all_ok(a[i]);
		check_all_ok(b[i]);
	}
	check_all_ok(multi);
	h_close();
}

/* Two principals, as the daemon keys them (any stable address). */
static const char who_a, who_b;

/* Where job j came back, of the h.nback jobs back. */
static size_t back_at(const gm_job *j)
{
	for (size_t i = 0; i < h.nback; i++)
		if (h.back[i] == j)
			return i;
	fail_msg("job never back");
	return 0;
}

/*
 * Turns are the principal's, not the connection's: behind a blocker,
 * principal A queues eight jobs over nconn connections (in turn), then
 * principal B four over one. A's jobs start in the order they came,
 * whatever their connection, and B's second job starts at b1_at: with
 * the principals named, A and B alternate however many connections A
 * has; with none named, each of A's connections takes a turn of its own.
 */
static void test_fair_principals(void **state)
{
	static const struct {
		uint32_t nconn;
		int keyed;
		size_t b1_at;
	} cases[] = {
	    {1, 1, 4},	/* blk a0 b0 a1 b1 */
	    {2, 1, 4},	/* the same over two connections */
	    {4, 1, 4},	/* and over four */
	    {2, 0, 6},	/* blk a0 a1 b0 a2 a3 b1 */
	    {4, 0, 10}, /* blk a0..a3 b0 a4..a7 b1 */
	};

	for (size_t c = 0; c < NELEMS(cases); c++) {
		struct treq *blk, *a[8], *b[4];

		h_open(cost_of(&SMALL), 32);
		blk = conn_req(9, &SMALL);
		assert_int_equal(submit(blk), GM_OK);
		for (uint32_t i = 0; i < 8; i++) {
			a[i] = conn_req(10 + i % cases[c].nconn, &SMALL);
			a[i]->r->principal = cases[c].keyed ? &who_a : NULL;
			assert_int_equal(submit(a[i]), GM_OK);
		}
		for (int i = 0; i < 4; i++) {
			b[i] = conn_req(2, &SMALL);
			b[i]->r->principal = cases[c].keyed ? &who_b : NULL;
			assert_int_equal(submit(b[i]), GM_OK);
		}
		drain();
		assert_int_equal(h.nback, 13);
		assert_ptr_equal(h.back[0], &blk->r->jobs[0].job);
		for (int i = 1; i < 8; i++)
			assert_true(back_at(&a[i - 1]->r->jobs[0].job) <
				    back_at(&a[i]->r->jobs[0].job));
		assert_int_equal(back_at(&b[1]->r->jobs[0].job),
				 cases[c].b1_at);
		for (int i = 0; i < 8; i++)
			check_all_ok(a[i]);
		for (int i = 0; i < 4; i++)
			check_all_ok(b[i]);
		check_all_ok(blk);
		h_close();
	}
}

/* A large job that does not fit keeps its connection's turn, and
 * another connection's small job that fits starts past it, although the
 * large one came first. */
static void test_fair_head_of_line(void **state)
{
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	struct treq *blk, *large, *small;

	h_open(cost_of(&big), 8);
	blk = conn_req(1, &SMALL);
	assert_int_equal(submit(blk), GM_OK);
	large = conn_req(2, &big);
	assert_int_equal(submit(large), GM_OK);
	small = conn_req(3, &SMALL);
	assert_int_equal(submit(small), GM_OK);
	assert_int_equal(gm_sched_on_engine(h.sched), 2);
	assert_int_equal(gm_sched_in_queue(h.sched), 1);
	drain();
	assert_ptr_equal(h.back[1], &small->r->jobs[0].job);
	assert_ptr_equal(h.back[2], &large->r->jobs[0].job);
	check_all_ok(large);
	check_all_ok(small);
	h_close();
}

/* A queued job canceled fails with ECANCELED at once and never runs;
 * its request finishes when its last job does; running and finished
 * jobs cannot be canceled. */
static void test_cancel(void **state)
{
	struct treq *blk, *two, *one;

	h_open(cost_of(&SMALL), 8);
	blk = new_req_of(1, &SMALL);
	assert_int_equal(submit(blk), GM_OK);
	two = new_req_of(2, &SMALL);
	assert_int_equal(submit(two), GM_OK);
	one = new_req_of(1, &SMALL);
	assert_int_equal(submit(one), GM_OK);
	wait_back(1);
	deliver_starts();
	assert_int_equal(blk->r->jobs[0].state, GM_SCHED_JOB_RUNNING);
	assert_int_equal(two->r->jobs[1].state, GM_SCHED_JOB_QUEUED);
	assert_int_equal(gm_sched_cancel(h.sched, &blk->r->jobs[0]),
			 GM_ENOTFOUND);
	assert_int_equal(gm_sched_cancel(h.sched, &two->r->jobs[1]), GM_OK);
	assert_int_equal(two->r->jobs[1].job.status, GM_ECANCELED);
	assert_int_equal(two->r->jobs[1].state, GM_SCHED_JOB_DONE);
	assert_int_equal(two->done, 0);
	assert_int_equal(gm_sched_cancel(h.sched, &two->r->jobs[0]), GM_OK);
	assert_int_equal(two->done, 1);
	assert_int_equal(gm_sched_cancel(h.sched, &two->r->jobs[0]),
			 GM_ENOTFOUND);
	assert_int_equal(gm_sched_in_queue(h.sched), 1);
	drain();
	check_all_ok(blk);
	check_all_ok(one);
	assert_int_equal(h.st.errors[GM_ECANCELED], 2);
	h_close();
}

/* gm_sched_expire fails a job whose deadline passed while the engine
 * is still busy, without waiting for the queue to move, and
 * gm_sched_next_deadline then moves on to the next deadline. */
static void test_expire(void **state)
{
	const struct shape slow = {GM_FP64, 0, 0, 0, 0, 600, 600, 600};
	struct treq *blk, *late, *none, *far;
	double far_due;

	h_open(cost_of(&slow), 8);
	blk = new_req_of(1, &slow);
	assert_int_equal(submit(blk), GM_OK);
	assert_true(gm_sched_next_deadline(h.sched) == 0.0);
	assert_int_equal(gm_sched_expire(h.sched), 0);
	far = new_req(1, 1, 600000, &SMALL, 1);
	assert_int_equal(submit(far), GM_OK);
	late = new_req(1, 1, 1, &SMALL, 1);
	assert_int_equal(submit(late), GM_OK);
	none = new_req(1, 1, 0, &SMALL, 1);
	assert_int_equal(submit(none), GM_OK);
	far_due = far->r->recv_us + 600000 * 1000.0;
	assert_true(gm_sched_next_deadline(h.sched) ==
		    late->r->recv_us + 1000.0);
	wait_past(gm_sched_next_deadline(h.sched) + 500.0);
	assert_int_equal(gm_sched_expire(h.sched), 1);
	assert_int_equal(late->done, 1);
	assert_int_equal(late->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_int_equal(gm_sched_on_engine(h.sched), 1); /* still busy */
	assert_true(gm_sched_next_deadline(h.sched) == far_due);
	drain();
	check_all_ok(far);
	check_all_ok(none);
	h_close();
}

/* Limits per priority: a request over its priority's limit is refused
 * EBUSY while other priorities, and the overall depth, still have
 * room. */
static void test_priority_limits(void **state)
{
	static const unsigned lim[GM_BATCH_PRIO_MAX + 1] = {2, 0, 0, 1};
	struct treq *blk, *p0, *over0, *p1, *p3, *over3;

	h_open(cost_of(&SMALL), 6);
	gm_sched_set_limits(h.sched, lim);
	blk = new_req_of(1, &SMALL);
	assert_int_equal(submit(blk), GM_OK);
	wait_started(1);
	p0 = new_req(2, 0, 0, &SMALL, 1);
	assert_int_equal(submit(p0), GM_OK);
	over0 = new_req(1, 0, 0, &SMALL, 1);
	assert_int_equal(submit(over0), GM_EBUSY);
	assert_int_equal(gm_sched_room(h.sched, 0, 1), GM_EBUSY);
	p3 = new_req(1, 3, 0, &SMALL, 1);
	assert_int_equal(submit(p3), GM_OK);
	over3 = new_req(1, 3, 0, &SMALL, 1);
	assert_int_equal(submit(over3), GM_EBUSY);
	/* Priority 1 has no limit of its own: only the depth, 6. */
	assert_int_equal(gm_sched_room(h.sched, 1, 4), GM_EBUSY);
	assert_int_equal(gm_sched_room(h.sched, 1, 3), GM_OK);
	assert_int_equal(gm_sched_room(h.sched, 4, 1), GM_EINVAL);
	p1 = new_req(3, 1, 0, &SMALL, 1);
	assert_int_equal(submit(p1), GM_OK);
	assert_int_equal(gm_sched_in_queue_prio(h.sched, 0), 2);
	assert_int_equal(gm_sched_in_queue_prio(h.sched, 1), 3);
	assert_int_equal(gm_sched_in_queue_prio(h.sched, 3), 1);
	drain();
	check_all_ok(p0);
	check_all_ok(p1);
	check_all_ok(p3);
	h_close();
}

/*
 * Jobs handed to the engine that have not started (the engine is held in
 * the done callback of a first job, so they wait in its own queue) still
 * count as queued, not running; one is canceled and one expires through
 * gm_sched_expire, both taken back from the engine, never run; one whose
 * deadline passes there with nobody asking is failed by the engine as
 * it reaches it (start_seq 0, as for those taken back); and the one
 * that runs has a queue time that lasts until its BLAS call, after the
 * engine was let go.
 */
static void test_engine_queue(void **state)
{
	struct treq *blk, *wait, *cancel, *late, *gone;
	double released;

	h_open(64 * cost_of(&SMALL), 8);
	set_gate(1);
	blk = new_req_of(1, &SMALL);
	assert_int_equal(submit(blk), GM_OK);
	wait_back(1); /* the engine is held from now on */
	deliver_starts();
	assert_int_equal(blk->r->jobs[0].state, GM_SCHED_JOB_RUNNING);
	wait = new_req_of(1, &SMALL);
	assert_int_equal(submit(wait), GM_OK);
	cancel = new_req_of(1, &SMALL);
	assert_int_equal(submit(cancel), GM_OK);
	late = new_req(1, 1, 1, &SMALL, 1);
	assert_int_equal(submit(late), GM_OK);
	deliver_starts();
	assert_int_equal(wait->r->jobs[0].state, GM_SCHED_JOB_HANDED);
	assert_int_equal(gm_sched_in_queue(h.sched), 0);
	assert_int_equal(gm_sched_on_engine(h.sched), 4);
	assert_int_equal(gm_sched_queued(h.sched), 3);
	assert_int_equal(gm_sched_queued_prio(h.sched, 1), 3);
	assert_int_equal(gm_sched_inflight(h.sched), 1);

	assert_int_equal(gm_sched_cancel(h.sched, &cancel->r->jobs[0]), GM_OK);
	assert_int_equal(cancel->done, 1);
	assert_int_equal(cancel->r->jobs[0].job.status, GM_ECANCELED);
	assert_int_equal(gm_sched_queued(h.sched), 2);
	assert_true(gm_sched_next_deadline(h.sched) ==
		    late->r->recv_us + 1000.0);
	wait_past(gm_sched_next_deadline(h.sched) + 500.0);
	assert_int_equal(gm_sched_expire(h.sched), 1);
	assert_int_equal(late->done, 1);
	assert_int_equal(late->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_int_equal(late->r->jobs[0].t.start_seq, 0);
	assert_int_equal(gm_sched_on_engine(h.sched), 2);
	assert_true(gm_sched_next_deadline(h.sched) == 0.0);

	gone = new_req(1, 1, 1, &SMALL, 1);
	assert_int_equal(submit(gone), GM_OK);
	wait_past(gone->r->recv_us + 1500.0);
	released = gm_clock_now_us();
	set_gate(0);
	drain();
	assert_int_equal(gone->r->jobs[0].job.status, GM_ETIMEDOUT);
	assert_int_equal(gone->back[0], 1);
	/* Failed by the engine or taken back from it, a job that never
	 * started has no place in the order of starts. */
	assert_int_equal(gone->r->jobs[0].t.start_seq, 0);
	assert_true(wait->r->jobs[0].t.start_seq != 0);
	check_all_ok(blk);
	check_all_ok(wait);
	assert_true(wait->r->recv_us + wait->r->jobs[0].t.queue_us >= released);
	assert_int_equal(h.st.errors[GM_ETIMEDOUT], 2);
	h_close();
}

/* The counters after a known mix of outcomes. */
static void test_stats(void **state)
{
	const struct shape blk = {GM_FP64, 0, 0, 0, 0, 52, 52, 52};
	const struct shape tiny = {GM_FP64, 0, 0, 0, 0, 4, 4, 4};
	const struct shape big = {GM_FP64, 0, 0, 0, 0, 64, 64, 64};
	struct shape mix[] = {SMALL, SMALL, SMALL, big};
	struct treq *late;

	mix[1].dtype = GM_FP32;
	mix[1].has_c = 1;
	mix[2].dtype = GM_FP16;
	h_open(cost_of(&blk), 16);
	assert_int_equal(submit(new_req_of(1, &blk)), GM_OK);
	late = new_req(1, 1, 1, &tiny, 1);
	assert_int_equal(submit(late), GM_OK);
	assert_int_equal(submit(new_req(4, 1, 0, mix, NELEMS(mix))), GM_OK);
	wait_past(late->r->recv_us + 2000.0);
	drain();

	assert_int_equal(h.st.jobs_ok, 4);
	assert_int_equal(h.st.jobs_failed, 2);
	assert_int_equal(h.st.jobs_by_dtype[GM_FP64], 4);
	assert_int_equal(h.st.jobs_by_dtype[GM_FP32], 1);
	assert_int_equal(h.st.jobs_by_dtype[GM_FP16], 1);
	assert_int_equal(h.st.errors[GM_OK], 4);
	assert_int_equal(h.st.errors[GM_EUNSUPPORTED], 1);
	assert_int_equal(h.st.errors[GM_ETIMEDOUT], 1);
	assert_true(h.st.flops ==
		    2.0 * (52 * 52 * 52 + 2 * 8 * 8 * 8 + 64 * 64 * 64));
	for (int p = 0; p < GM_PHASE_COUNT; p++)
		assert_int_equal(h.st.phase[p].count, 4);
	assert_true(h.st.phase[GM_PHASE_TOTAL].max >=
		    h.st.phase[GM_PHASE_QUEUE].max);
	/* All at priority 1 but the first, at the default (1 too). */
	assert_int_equal(h.st.queue_prio[1].count, 4);
	assert_int_equal(h.st.queue_prio[0].count, 0);
	h_close();
}

/* Jobs by uid: the first GM_STATS_UIDS uids seen are counted apart, in
 * the order they came; later ones, and only they, as "other". */
static void test_stats_uids(void **state)
{
	gm_stats st;

	gm_stats_init(&st);
	for (uint64_t u = 0; u < GM_STATS_UIDS + 8; u++)
		gm_stats_uid_job(&st, 1000 + u, u % 3 == 0 ? GM_EBUSY : GM_OK);
	gm_stats_uid_job(&st, 1000, GM_OK);
	gm_stats_uid_job(&st, 1000 + GM_STATS_UIDS, GM_OK);
	assert_int_equal(st.nuids, GM_STATS_UIDS);
	for (unsigned i = 0; i < GM_STATS_UIDS; i++)
		assert_int_equal(st.uids[i].uid, 1000 + i);
	assert_int_equal(st.uids[0].ok, 1);
	assert_int_equal(st.uids[0].failed, 1);
	assert_int_equal(st.uids[1].ok, 1);
	/* Uids 1032..1039, of which 1033, 1036 and 1039 failed, and 1032
	 * once more. */
	assert_int_equal(st.other_uids.ok, 6);
	assert_int_equal(st.other_uids.failed, 3);
}

static int setup_seed(void **state)
{
	rs = gm_testref_seed();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_results, h_free),
	    cmocka_unit_test_teardown(test_queue_full, h_free),
	    cmocka_unit_test_teardown(test_back_pressure, h_free),
	    cmocka_unit_test_teardown(test_over_budget, h_free),
	    cmocka_unit_test_teardown(test_budget_edge, h_free),
	    cmocka_unit_test_teardown(test_reserve, h_free),
	    cmocka_unit_test_teardown(test_unsupported, h_free),
	    cmocka_unit_test_teardown(test_priority, h_free),
	    cmocka_unit_test_teardown(test_head_of_line, h_free),
	    cmocka_unit_test_teardown(test_deadline, h_free),
	    cmocka_unit_test_teardown(test_deadline_partial, h_free),
	    cmocka_unit_test_teardown(test_stop, h_free),
	    cmocka_unit_test_teardown(test_fairness, h_free),
	    cmocka_unit_test_teardown(test_fair_head_of_line, h_free),
	    cmocka_unit_test_teardown(test_fair_principals, h_free),
	    cmocka_unit_test_teardown(test_cancel, h_free),
	    cmocka_unit_test_teardown(test_expire, h_free),
	    cmocka_unit_test_teardown(test_engine_queue, h_free),
	    cmocka_unit_test_teardown(test_priority_limits, h_free),
	    cmocka_unit_test_teardown(test_stats, h_free),
	    cmocka_unit_test(test_stats_uids),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
