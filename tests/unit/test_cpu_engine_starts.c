/*
 * test_cpu_engine_starts.c - the CPU engine (gm_testengine.h): waves
 * mixing jobs OpenBLAS runs on one thread with larger ones, the start
 * callback and its clock, the warm-up, the thread count.
 */
#include "gm_testengine.h"

/* Jobs that OpenBLAS runs on one thread (m n k <= 2^18) go to the
 * crew in bursts, larger ones alone between them: a wave that mixes
 * both comes back whole, each job once and right. */
static void test_bursts(void **state)
{
	enum { N = 600 };
	static struct tjob t[N];
	static gm_job *wave[N];
	gm_engine *e = open_engine(GM_ENGINE_CPU, 2);
	gm_device_stats s;
	int i;

	for (i = 0; i < N; i++) {
		uint32_t d = i % 50 == 49 ? 80 : 8 + (uint32_t)(i % 57);

		make_job(&t[i], i & 1 ? GM_FP32 : GM_FP64, (i >> 1) & 1,
			 (i >> 2) & 1, (i >> 3) & 1, (i >> 4) & 1, 0, d, d + 1,
			 d + 2);
		wave[i] = &t[i].job;
	}
	run_checked(e, t, wave, N, &s);
	gm_engine_close(e);
	assert_int_equal(done_count(), N);
}

/* The engine's clock: monotonic, in microseconds. */
static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Starts as the engine reports them: which job, and the host clock. */
static struct {
	pthread_mutex_t mu;
	gm_job *job[8];
	double at[8];
	size_t n, calls;
} starts = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0, 0};

static void on_start(gm_job *job, uint32_t n, void *arg)
{
	assert_ptr_equal(arg, &w);
	pthread_mutex_lock(&starts.mu);
	starts.calls++;
	for (; n > 0; n--, job = job->next) {
		assert_true(starts.n < 8);
		starts.job[starts.n] = job;
		starts.at[starts.n++] = now_us();
	}
	pthread_mutex_unlock(&starts.mu);
}

/*
 * Large jobs of one wave run one after another: each is told started
 * when the worker takes it, in order, and its start_us (its BLAS call)
 * comes after the one before it ended, so the time it waited behind it
 * is its own queue time, not hidden; a job already past its deadline
 * comes back GM_ETIMEDOUT, never started, its output untouched. The
 * device's busy time never passes the wall time.
 */
static void test_starts(void **state)
{
	enum { N = 3 };
	struct tjob t[N + 1];
	gm_job *wave[N + 1];
	gm_engine *e = open_engine(GM_ENGINE_CPU, 1);
	double t0 = now_us(), t1;
	gm_device_stats s;
	size_t i;

	gm_engine_on_start(e, on_start);
	starts.n = 0;
	for (i = 0; i <= N; i++) {
		make_job(&t[i], GM_FP64, GM_ROW_MAJOR, 0, 0, 0, 0, 120, 110,
			 100);
		wave[i] = &t[i].job;
	}
	t[1].job.deadline_us = t0 - 1.0; /* passed */
	t[2].job.deadline_us = t0 + 600e6;
	assert_int_equal(gm_engine_submit(e, wave, N + 1), GM_OK);
	wait_done(N + 1);
	t1 = now_us();
	assert_int_equal(starts.n, N);
	assert_ptr_equal(starts.job[0], &t[0].job);
	assert_ptr_equal(starts.job[1], &t[2].job);
	assert_ptr_equal(starts.job[2], &t[3].job);
	assert_int_equal(t[1].job.status, GM_ETIMEDOUT);
	assert_true(t[1].job.start_us == 0.0);
	assert_true(isnan(gm_testref_get(GM_FP64, t[1].out, 0)));
	for (i = 0; i < N; i++) {
		const gm_job *j = starts.job[i];

		assert_true(j->start_us >= starts.at[i]);
		assert_true(j->start_us + j->kernel_us <= t1);
		if (i > 0)
			assert_true(j->start_us >=
				    starts.job[i - 1]->start_us +
					starts.job[i - 1]->kernel_us);
	}
	check_result(&t[0], t[0].out);
	check_result(&t[2], t[2].out);
	check_result(&t[3], t[3].out);
	gm_engine_device_stats(e, 0, &s);
	assert_true(s.busy_us > 0.0 && s.busy_us <= now_us() - t0);
	for (i = 0; i <= N; i++)
		free_job(&t[i]);
	gm_engine_close(e);
}

/* Small jobs taken together are told started together, in one call
 * (one hand-off to the daemon's loop), in the order of the wave. */
static void test_burst_starts(void **state)
{
	enum { N = 6 };
	struct tjob t[N];
	gm_job *wave[N];
	gm_engine *e = open_engine(GM_ENGINE_CPU, 1);
	size_t i;

	gm_engine_on_start(e, on_start);
	starts.n = starts.calls = 0;
	for (i = 0; i < N; i++) {
		make_job(&t[i], GM_FP32, GM_ROW_MAJOR, 0, 0, 0, 0, 9, 10, 11);
		wave[i] = &t[i].job;
	}
	assert_int_equal(gm_engine_submit(e, wave, N), GM_OK);
	wait_done(N);
	assert_int_equal(starts.calls, 1);
	assert_int_equal(starts.n, N);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(starts.job[i], &t[i].job);
		check_result(&t[i], t[i].out);
		free_job(&t[i]);
	}
	gm_engine_close(e);
}

/* Warm-up runs on the worker and calls back once; jobs submitted
 * meanwhile wait behind it. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int calls, status;
	double ms;
} warm = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, -1, -1};

static void on_warm(void *arg, int status, double ms, const char *msg)
{
	assert_ptr_equal(arg, &warm);
	pthread_mutex_lock(&warm.mu);
	warm.calls++;
	warm.status = status;
	warm.ms = ms;
	pthread_cond_signal(&warm.cv);
	pthread_mutex_unlock(&warm.mu);
}

static void test_warmup(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 0);
	struct tjob t;
	gm_job *job = &t.job;
	double ms = -1;

	assert_int_equal(gm_engine_ready(e, &ms), 1);
	assert_true(ms == 0.0);
	assert_int_equal(gm_engine_warmup(e, on_warm, &warm), GM_OK);
	make_job(&t, GM_FP64, GM_ROW_MAJOR, 0, 0, 1, 0, 5, 6, 7);
	assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
	pthread_mutex_lock(&warm.mu);
	while (warm.calls == 0)
		pthread_cond_wait(&warm.cv, &warm.mu);
	pthread_mutex_unlock(&warm.mu);
	wait_done(1);
	check_result(&t, t.out);
	assert_int_equal(warm.calls, 1);
	assert_int_equal(warm.status, GM_OK);
	assert_true(warm.ms >= 0.0);
	assert_int_equal(gm_engine_ready(e, &ms), 1);
	assert_true(ms == warm.ms);
	free_job(&t);
	gm_engine_close(e);
}

static void test_thread_count(void **state)
{
	gm_engine *e = open_engine(GM_ENGINE_CPU, 1);
	gm_device_stats s;

	gm_engine_device_stats(e, 0, &s);
	assert_string_equal(s.name, "cpu (OpenBLAS, 1 threads)");
	gm_engine_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bursts),	 cmocka_unit_test(test_starts),
	    cmocka_unit_test(test_burst_starts), cmocka_unit_test(test_warmup),
	    cmocka_unit_test(test_thread_count),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
