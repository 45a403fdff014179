/*
 * gm_testengine.c - the engine fixture of the in-process engine tests;
 * see gm_testengine.h.
 */
#include "gm_testengine.h"

struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

uint64_t rs;

void on_done(gm_job *job, void *arg)
{
	struct waiter *wt = arg;

	pthread_mutex_lock(&wt->mu);
	wt->done++;
	pthread_cond_signal(&wt->cv);
	pthread_mutex_unlock(&wt->mu);
}

void wait_done(size_t n)
{
	pthread_mutex_lock(&w.mu);
	while (w.done < n)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
}

double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

size_t done_count(void)
{
	size_t n;

	pthread_mutex_lock(&w.mu);
	n = w.done;
	pthread_mutex_unlock(&w.mu);
	return n;
}

gm_engine *open_engine(int kind, unsigned threads)
{
	gm_engine_config cfg = {
	    .kind = kind, .pool_bytes = 1u << 20, .cpu_threads = threads};
	gm_engine *e = NULL;
	char msg[128] = "";
	int rv = gm_engine_open(&cfg, on_done, &w, &e, msg, sizeof(msg));

	if (rv != GM_OK)
		print_error("gm_engine_open: %s\n", msg);
	assert_int_equal(rv, GM_OK);
	assert_non_null(e);
	pthread_mutex_lock(&w.mu);
	w.done = 0;
	pthread_mutex_unlock(&w.mu);
	return e;
}

void fill_nan(void *p, int dtype, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		gm_testref_put(dtype, p, i, NAN);
}

void make_job(struct tjob *t, int dtype, int layout, int ta, int tb, int has_c,
	      int in_place, uint32_t m, uint32_t n, uint32_t k)
{
	size_t mk = (size_t)m * k, kn = (size_t)k * n, mn = (size_t)m * n;
	gm_job_desc *d = &t->job.d;

	memset(t, 0, sizeof(*t));
	d->dtype = dtype;
	d->layout = layout;
	d->trans_a = ta;
	d->trans_b = tb;
	d->kernel = GM_KERNEL_CUBLAS;
	d->flags = has_c ? GM_JOB_HAS_C : 0;
	d->m = m;
	d->n = n;
	d->k = k;
	d->alpha = ALPHA;
	d->beta = BETA;
	t->es = gm_testref_esize(dtype);
	/* One block, A B C back to back as on the wire, then the result. */
	t->a = malloc(t->es * (mk + kn + 2 * mn));
	assert_non_null(t->a);
	t->b = t->a + t->es * mk;
	t->c = t->b + t->es * kn;
	t->out = t->c + t->es * mn;
	gm_testref_fill(dtype, t->a, mk + kn + mn, &rs, NULL);
	fill_nan(t->out, dtype, mn);
	t->job.a = t->a;
	t->job.b = t->b;
	t->job.c = has_c ? t->c : NULL;
	t->job.out = in_place ? t->c : t->out;
	t->job.status = -1;
}

/* Asserts that out is t's product against the long double reference,
 * with c (NULL: none) as C. */
static void check_ref(const struct tjob *t, const void *c, const void *out)
{
	const gm_job_desc *d = &t->job.d;

	assert_true(gm_testref_check(
	    &(gm_testref_gemm){.dtype = d->dtype,
			       .layout = d->layout,
			       .trans_a = d->trans_a,
			       .trans_b = d->trans_b,
			       .m = d->m,
			       .n = d->n,
			       .k = d->k,
			       .alpha = d->alpha,
			       .beta = d->beta,
			       .a = t->a,
			       .b = t->b,
			       .c = d->flags & GM_JOB_HAS_C ? c : NULL,
			       .out = out}));
}

void check_result(const struct tjob *t, const void *out)
{
	assert_int_equal(t->job.status, GM_OK);
	assert_int_equal(t->job.device, -1);
	assert_true(t->job.kernel_us >= 0.0);
	assert_true(t->job.h2d_us == 0.0 && t->job.d2h_us == 0.0);
	check_ref(t, t->c, out);
}

void check_job(const struct tjob *t, const void *c_before)
{
	assert_int_equal(t->job.status, GM_OK);
	check_ref(t, c_before, t->job.out);
}

void free_job(struct tjob *t)
{
	free(t->a);
}

void run_checked(gm_engine *e, struct tjob *t, gm_job **wave, int n,
		 gm_device_stats *s)
{
	int i;

	assert_int_equal(gm_engine_submit(e, wave, (size_t)n), GM_OK);
	wait_done((size_t)n);
	for (i = 0; i < n; i++) {
		check_result(&t[i], t[i].out);
		free_job(&t[i]);
	}
	gm_engine_device_stats(e, 0, s);
	assert_int_equal(s->jobs, n);
}

int setup_seed(void **state)
{
	rs = gm_testref_seed();
	return 0;
}
