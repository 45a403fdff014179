/*
 * test_cpu_piece.c - the CPU engine's large jobs in pieces
 * (gm_cpu_piece.h): how a job is cut (a table of shapes and piece
 * sizes), results of jobs cut into many pieces against the long double
 * reference for both dtypes, both layouts, every transpose pair, with
 * and without C, C updated in place, several alpha and beta, odd sizes;
 * and, through the engine the way the daemon drives it, small jobs run
 * between a large job's pieces, large jobs taking turns, cancel and
 * deadlines reaching the jobs that wait while one runs in pieces, and the
 * same job giving the same bytes each time, alone or loaded. The order of
 * events is fixed by holding the worker in the start callback, never by
 * sleeping. GM_TEST_SEED replays a run's operands.
 */
#include "gm_cpu_piece.h"
#include "gm_testengine.h"

/* Jobs, their checks and rs are the engine fixture's (gm_testengine.h). */

/* ---- the engine, its callbacks and a gate in the start callback ---- */

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int back;      /* jobs back */
	int started;   /* jobs told started */
	int hold;      /* the next start waits until released */
	int holding;   /* a start is waiting */
	gm_job *first; /* the job whose start was held */
} ev = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, NULL};

static void on_back(gm_job *job, void *arg)
{
	struct tjob *t = (struct tjob *)job;

	pthread_mutex_lock(&ev.mu);
	t->back = ++ev.back;
	pthread_cond_broadcast(&ev.cv);
	pthread_mutex_unlock(&ev.mu);
}

/* Holds the worker in its first start while ev.hold is set, so that the
 * test can submit and cancel with the worker at a known point. */
static void on_start(gm_job *job, uint32_t n, void *arg)
{
	pthread_mutex_lock(&ev.mu);
	ev.started += (int)n;
	if (ev.hold) {
		ev.first = job;
		ev.holding = 1;
		pthread_cond_broadcast(&ev.cv);
		while (ev.hold)
			pthread_cond_wait(&ev.cv, &ev.mu);
		ev.holding = 0;
	}
	pthread_mutex_unlock(&ev.mu);
}

/* Waits until *v (under ev.mu) reaches n. */
static void wait_for(const int *v, int n)
{
	pthread_mutex_lock(&ev.mu);
	while (*v < n)
		pthread_cond_wait(&ev.cv, &ev.mu);
	pthread_mutex_unlock(&ev.mu);
}

static void release(void)
{
	pthread_mutex_lock(&ev.mu);
	ev.hold = 0;
	pthread_cond_broadcast(&ev.cv);
	pthread_mutex_unlock(&ev.mu);
}

/* A CPU engine of cfg, its start held while hold is set. */
static gm_engine *open_config(gm_engine_config *cfg, int hold)
{
	gm_engine *e = NULL;
	char msg[128] = "";

	cfg->kind = GM_ENGINE_CPU;
	cfg->pool_bytes = 1u << 20;
	assert_int_equal(
	    gm_engine_open(cfg, on_back, NULL, &e, msg, sizeof(msg)), GM_OK);
	gm_engine_on_start(e, on_start);
	pthread_mutex_lock(&ev.mu);
	ev.back = ev.started = ev.holding = 0;
	ev.hold = hold;
	ev.first = NULL;
	pthread_mutex_unlock(&ev.mu);
	return e;
}

/* A CPU engine whose pieces are flops each, on threads BLAS threads. */
static gm_engine *open_pieces(uint64_t flops, unsigned threads, int hold)
{
	gm_engine_config cfg = {.cpu_threads = threads,
				.cpu_piece_flops = flops};

	return open_config(&cfg, hold);
}

static void submit(gm_engine *e, struct tjob *t)
{
	gm_job *job = &t->job;

	assert_int_equal(gm_engine_submit(e, &job, 1), GM_OK);
}

/* ---- how jobs are cut ---- */

struct plan_case {
	uint32_t m, n, k;
	double flops;
	uint32_t rows, cols;
	uint64_t count;
};

/* Panels of whole rows while a row of blocks of GM_CPU_PIECE_EDGE rows
 * fits the piece, evened out; blocks of at least the edge across when
 * rows are too long; a job no larger than a piece, or smaller than one
 * edge-sized block, is one piece. */
static const struct plan_case plans[] = {
    {100, 100, 100, INFINITY, 100, 100, 1},
    {100, 100, 100, 2e6, 100, 100, 1},	   /* exactly one piece */
    {300, 200, 1000, 4e7, 100, 200, 3},	   /* 100 rows a piece */
    {1000, 100, 50, 640000, 63, 100, 16},  /* 64 rows, evened: 63 */
    {10, 1000, 10, 6000, 10, 63, 16},	   /* 64 across, evened */
    {67, 1031, 17, 217600, 34, 172, 12},   /* 2 x 6 blocks */
    {7, 13, 5, 1, 7, 13, 1},		   /* under one edge block */
    {3000, 3000, 3000, 1e9, 64, 1500, 94}, /* 3000^3 at 1 GFLOP */
    {1, 100000, 64, 1e6, 1, 7693, 13},	   /* one row, long */
    {100000, 1, 64, 1e6, 7693, 1, 13},	   /* one column, tall */
};

static void test_plan(void **state)
{
	for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++) {
		const struct plan_case *c = &plans[i];
		gm_job_desc d = {
		    .dtype = GM_FP64, .m = c->m, .n = c->n, .k = c->k};
		gm_cpu_operands op = {0};
		gm_cpu_piece p;

		gm_cpu_piece_plan(&p, &d, &op, 0.0, c->flops);
		print_message("case %zu: %ux%ux%u at %g: %ux%u x %llu\n", i,
			      c->m, c->n, c->k, c->flops, p.rows, p.cols,
			      (unsigned long long)gm_cpu_piece_count(&p));
		assert_int_equal(p.rows, c->rows);
		assert_int_equal(p.cols, c->cols);
		assert_int_equal(gm_cpu_piece_count(&p), c->count);
		assert_false(gm_cpu_piece_done(&p));
	}
}

/* ---- results ---- */

/* Every dtype, layout, transpose pair, C (none, apart, in place) and
 * alpha/beta pair of one shape, each job in pieces of flops, one job
 * after another; the pieces cover C once each (the NaN poison shows a
 * block left out, the reference one run twice or misplaced). */
static void run_cut(uint32_t m, uint32_t n, uint32_t k, double flops)
{
	static const double ab[][2] = {{1.5, -0.75}, {-1.0, 0.0}, {0.5, 1.0}};
	gm_engine *e = open_pieces((uint64_t)flops, 0, 0);
	int back = 0;

	for (int i = 0; i < 2 * 2 * 4 * 3; i++) {
		int dtype = i & 1 ? GM_FP32 : GM_FP64, c = (i >> 4) % 3;
		struct tjob t;
		void *c_before;
		size_t cbytes = gm_testref_esize(dtype) * m * n;

		make_job(&t, dtype, (i >> 1) & 1, (i >> 2) & 1, (i >> 3) & 1,
			 c != 0, c == 2, m, n, k);
		t.job.d.alpha = ab[i % 3][0];
		t.job.d.beta = ab[i % 3][1];
		c_before = malloc(cbytes);
		assert_non_null(c_before);
		memcpy(c_before, t.c, cbytes);
		submit(e, &t);
		wait_for(&ev.back, ++back);
		check_job(&t, c_before);
		free(c_before);
		free(t.a);
	}
	gm_engine_close(e);
}

/* Pieces of 5 panels of 52 rows; 2 x 6 blocks; rows of 3 in 11 blocks
 * of 64. */
static void test_cut(void **state)
{
	run_cut(257, 129, 65, 2.0 * 65 * 129 * 64);
	run_cut(67, 1031, 17, 2.0 * 17 * 6400);
	run_cut(3, 701, 33, 2.0 * 33 * 64);
}

/* ---- the engine between pieces ---- */

/* A large fp64 job, cut into 7 x 7 blocks of 58 x 58. */
#define BIG    400
#define BIG_PF (2.0 * BIG * 1600)

/* A small job submitted while a large one is under way runs between two
 * of its pieces: it comes back first, and its BLAS call began before
 * the large job's last piece ended. */
static void test_small_between(void **state)
{
	gm_engine *e = open_pieces((uint64_t)BIG_PF, 0, 1);
	struct tjob big, small;

	make_job(&big, GM_FP64, GM_ROW_MAJOR, 0, 1, 1, 0, BIG, BIG, BIG);
	make_job(&small, GM_FP32, GM_COL_MAJOR, 1, 0, 0, 0, 8, 8, 8);
	submit(e, &big);
	wait_for(&ev.holding, 1); /* big is taken, its first piece not run */
	submit(e, &small);
	release();
	wait_for(&ev.back, 2);
	assert_int_equal(small.back, 1);
	assert_int_equal(big.back, 2);
	assert_true(small.job.start_us > big.job.start_us);
	assert_true(small.job.start_us + small.job.kernel_us <
		    big.job.start_us + big.job.kernel_us);
	check_job(&small, NULL);
	check_job(&big, big.c);
	free(big.a);
	free(small.a);
	gm_engine_close(e);
}

/* Two large jobs take turns: the second starts long before the first
 * ends, and both are right. */
static void test_turns(void **state)
{
	gm_engine *e = open_pieces((uint64_t)BIG_PF, 0, 0);
	struct tjob t[2];
	gm_job *wave[2] = {&t[0].job, &t[1].job};

	for (int i = 0; i < 2; i++)
		make_job(&t[i], GM_FP64, GM_COL_MAJOR, i, 0, 0, 0, BIG, BIG,
			 BIG);
	assert_int_equal(gm_engine_submit(e, wave, 2), GM_OK);
	wait_for(&ev.back, 2);
	assert_true(t[1].job.start_us < t[0].job.start_us + t[0].job.kernel_us);
	for (int i = 0; i < 2; i++) {
		check_job(&t[i], NULL);
		free(t[i].a);
	}
	gm_engine_close(e);
}

/*
 * While a large job runs in pieces, the jobs waiting behind it can still
 * be canceled (a large one, a small one) and fail GM_ETIMEDOUT when
 * their deadline passes, never started, output untouched; the job under
 * way cannot be canceled and ends right.
 */
static void test_cancel_deadline(void **state)
{
	gm_engine *e = open_pieces((uint64_t)BIG_PF, 0, 1);
	enum { N = 4 };
	struct tjob t[N];
	gm_job *wave[N];

	for (int i = 0; i < N; i++) {
		uint32_t d = i == 2 ? 8 : BIG;

		make_job(&t[i], GM_FP64, GM_ROW_MAJOR, 0, 0, 0, 0, d, d, d);
		wave[i] = &t[i].job;
	}
	t[3].job.deadline_us = now_us() + 2000.0;
	assert_int_equal(gm_engine_submit(e, &wave[0], 1), GM_OK);
	wait_for(&ev.holding, 1);
	assert_int_equal(gm_engine_submit(e, &wave[1], N - 1), GM_OK);
	assert_int_equal(gm_engine_cancel(e, &t[1].job), GM_OK);
	assert_int_equal(gm_engine_cancel(e, &t[2].job), GM_OK);
	assert_int_equal(gm_engine_cancel(e, &t[0].job), GM_ENOTFOUND);
	while (now_us() <= t[3].job.deadline_us)
		usleep(500);
	release();
	wait_for(&ev.back, 2);
	assert_int_equal(t[3].job.status, GM_ETIMEDOUT);
	assert_true(t[3].job.start_us == 0.0);
	assert_true(isnan(gm_testref_get(GM_FP64, t[3].out, 0)));
	assert_true(isnan(gm_testref_get(GM_FP64, t[1].out, 0)));
	assert_int_equal(t[1].back, 0);
	assert_int_equal(t[2].back, 0);
	check_job(&t[0], NULL);
	pthread_mutex_lock(&ev.mu);
	assert_int_equal(ev.started, 1);
	pthread_mutex_unlock(&ev.mu);
	for (int i = 0; i < N; i++)
		free(t[i].a);
	gm_engine_close(e);
}

/* ---- the same job, the same bytes ---- */

/* A core kept busy in this process while hog_on is set, so that the
 * engine's BLAS threads run slower than when it timed them. */
static int hog_on;

static void *hog(void *arg)
{
	volatile double x = 1.0;

	while (__atomic_load_n(&hog_on, __ATOMIC_RELAXED))
		x = x * 1.0000001 + 1e-9;
	return NULL;
}

#define SAME	  640 /* fp64 640^3: 524 MFLOP, several 2 ms pieces */
#define SAME_RUNS 3

/* Runs same (its result poisoned first) once; when loaded, beside a
 * core kept busy, a second large job taking turns with it and small
 * jobs submitted during its pieces (the side thread runs them beside
 * the piece under way), and checks that a small one came back before
 * it: it ran in pieces. */
static void run_same(gm_engine *e, struct tjob *same, int loaded)
{
	enum { SMALL = 24 };
	struct tjob other, small[SMALL];
	pthread_t th;
	int back = 1;

	for (size_t i = 0; i < (size_t)SAME * SAME; i++)
		gm_testref_put(GM_FP64, same->out, i, NAN);
	same->job.status = -1;
	same->back = 0;
	pthread_mutex_lock(&ev.mu);
	ev.back = 0;
	ev.hold = loaded;
	pthread_mutex_unlock(&ev.mu);
	if (loaded) {
		__atomic_store_n(&hog_on, 1, __ATOMIC_RELAXED);
		assert_int_equal(pthread_create(&th, NULL, hog, NULL), 0);
	}
	submit(e, same);
	if (loaded) {
		wait_for(&ev.holding,
			 1); /* same is taken, its first piece not run */
		make_job(&other, GM_FP64, GM_COL_MAJOR, 1, 1, 1, 0, 300, 300,
			 300);
		submit(e, &other);
		release();
		for (int i = 0; i < SMALL; i++) {
			make_job(&small[i], GM_FP64, GM_ROW_MAJOR, 0, 0, 1, 0,
				 8, 8, 8);
			submit(e, &small[i]);
			usleep(500);
		}
		back += 1 + SMALL;
	}
	wait_for(&ev.back, back);
	assert_int_equal(same->job.status, GM_OK);
	if (!loaded)
		return;
	__atomic_store_n(&hog_on, 0, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	assert_true(small[0].back < same->back);
	check_job(&other, other.c);
	free(other.a);
	for (int i = 0; i < SMALL; i++) {
		check_job(&small[i], small[i].c);
		free(small[i].a);
	}
}

/*
 * The same large job, cut into pieces by cpu_piece_us (as the daemon
 * sizes them, by the rate the engine timed), run again and again in one
 * engine, alone and loaded (run_same), gives the same bytes each time:
 * its cut follows its shape, never the load of the moment.
 */
static void test_same_bytes(void **state)
{
	gm_engine_config cfg = {.cpu_piece_us = 2000};
	gm_engine *e = open_config(&cfg, 0);
	size_t bytes = (size_t)SAME * SAME * sizeof(double);
	struct tjob same;
	void *first;

	make_job(&same, GM_FP64, GM_ROW_MAJOR, 0, 1, 1, 0, SAME, SAME, SAME);
	assert_non_null(first = malloc(bytes));
	for (int i = 0; i < 2 * SAME_RUNS; i++) {
		run_same(e, &same, i % 2);
		if (i == 0) {
			check_job(&same, same.c);
			memcpy(first, same.out, bytes);
		}
		print_message(
		    "run %d (%s): %s\n", i, i % 2 ? "loaded" : "alone",
		    memcmp(first, same.out, bytes) ? "differs" : "same bytes");
		assert_memory_equal(first, same.out, bytes);
	}
	free(first);
	free(same.a);
	gm_engine_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan),
	    cmocka_unit_test(test_cut),
	    cmocka_unit_test(test_small_between),
	    cmocka_unit_test(test_turns),
	    cmocka_unit_test(test_cancel_deadline),
	    cmocka_unit_test(test_same_bytes),
	};

	return cmocka_run_group_tests(tests, setup_seed, NULL);
}
