/*
 * sched_fx.c - what the tests in test_sched.c, test_sched_fair.c share; see
 * sched_fx.h.
 */
#include "sched_fx.h"

struct harness h;

uint64_t rs;

uint64_t next_id;

void note(struct harness *hs, gm_job **list, size_t *n, gm_job *job)
{
	if (*n < MAXBACK)
		list[*n] = job;
	(*n)++;
	pthread_cond_signal(&hs->cv);
}

void on_engine_done(gm_job *job, void *arg)
{
	struct harness *hs = arg;

	pthread_mutex_lock(&hs->mu);
	note(hs, hs->back, &hs->nback, job);
	while (hs->gate)
		pthread_cond_wait(&hs->gate_cv, &hs->mu);
	pthread_mutex_unlock(&hs->mu);
}

void on_engine_start(gm_job *job, uint32_t n, void *arg)
{
	struct harness *hs = arg;

	pthread_mutex_lock(&hs->mu);
	for (; n > 0; n--, job = job->next)
		note(hs, hs->starts, &hs->nstarts, job);
	pthread_mutex_unlock(&hs->mu);
}

void set_gate(int closed)
{
	pthread_mutex_lock(&h.mu);
	h.gate = closed;
	pthread_cond_broadcast(&h.gate_cv);
	pthread_mutex_unlock(&h.mu);
}

void on_job_done(gm_sched_job *j, void *arg)
{
	struct treq *tr = j->req->user;

	assert_int_equal(tr->done, 0);
	assert_true(j->t.total_us >= j->t.queue_us);
	tr->finished[j->idx]++;
}

void on_request_done(gm_sched_request *r, void *arg)
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

void check_books(void)
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

void h_open(uint64_t budget, unsigned depth)
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

uint64_t cost_of(const struct shape *s)
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

struct treq *new_req(uint32_t njobs, uint8_t prio, uint32_t deadline_ms,
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

struct treq *new_req_of(uint32_t n, const struct shape *s)
{
	return new_req(n, GM_BATCH_PRIO_DEFAULT, 0, s, 1);
}

int submit(struct treq *tr)
{
	int rv;

	tr->r->recv_us = gm_clock_now_us();
	rv = gm_sched_submit(h.sched, tr->r);
	tr->accepted = rv == GM_OK;
	check_books();
	return rv;
}

struct treq *submit_ok(struct treq *tr)
{
	assert_int_equal(submit(tr), GM_OK);
	return tr;
}

size_t wait_count(const size_t *count, size_t n)
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

void wait_back(size_t n)
{
	size_t got = wait_count(&h.nback, n);

	if (got < n)
		fail_msg("only %zu jobs back from the engine, waiting for %zu",
			 got, n);
}

void wait_started(size_t n)
{
	if (wait_count(&h.nstarts, n) < n)
		fail_msg("fewer than %zu jobs started", n);
}

void take_one(void)
{
	gm_sched_job *j;

	assert_true(gm_sched_on_engine(h.sched) > 0);
	wait_back(h.ntaken + 1);
	assert_true(h.ntaken < MAXBACK);
	j = h.back[h.ntaken++]->user;
	((struct treq *)j->req->user)->back[j->idx]++;
	gm_sched_complete(h.sched, &j->job);
	check_books();
}

void drain(void)
{
	while (gm_sched_requests(h.sched) > 0)
		take_one();
}

void wait_past(double t_us)
{
	struct timespec ts = {0, 200000};

	while (gm_clock_now_us() <= t_us)
		nanosleep(&ts, NULL);
}

int never_ran(int status)
{
	return status == GM_ETOOBIG || status == GM_EUNSUPPORTED ||
	       status == GM_ETIMEDOUT || status == GM_ECANCELED;
}

int all_poison(const uint8_t *p, uint64_t bytes)
{
	for (uint64_t i = 0; i < bytes; i++)
		if (p[i] != POISON)
			return 0;
	return 1;
}

uint64_t out_bytes(const gm_job_desc *d)
{
	gm_job_sizes z;

	gm_job_sizes_of(d, &z);
	return z.out;
}

void h_check(void)
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

int h_free(void **state)
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

void h_close(void)
{
	h_check();
	h_free(NULL);
}

void check_result(const struct treq *tr, uint32_t i)
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

void check_all_ok(const struct treq *tr)
{
	assert_int_equal(tr->done, 1);
	for (uint32_t i = 0; i < tr->r->njobs; i++)
		check_result(tr, i);
}

struct treq *new_req_all_kinds(uint32_t m, uint32_t n, uint32_t k)
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

const struct shape SMALL = {GM_FP64, GM_ROW_MAJOR, 0, 0, 0, 8, 8, 8};

struct treq *conn_req(uint32_t conn, const struct shape *s)
{
	struct treq *tr = new_req_of(1, s);

	tr->r->conn = conn;
	return tr;
}

int setup_seed(void **state)
{
	rs = gm_testref_seed();
	return 0;
}
