/*
 * test_fair.c - small jobs are not starved by large ones, through a real
 * gemmd on the CPU engine (its default threads, pieces of PIECE_US). A
 * well-behaved client runs 8^3 jobs one after another on its own
 * connection, first alone (its quiet p99), then beside each attack of
 * the table below, sent on connections of their own: one huge job at a
 * time, sized by a calibration run to take about BIG_S on this host (the
 * issue's 3000^3 job, behind which an 8^3 job waited 2.07 s); requests
 * of many jobs that fill most of the pool (4-6.5 s there); and one
 * principal's large jobs over four connections, which take the turns of
 * one principal, not four. The attackers speak for the plain tcp://
 * principal ("anonymous"), the client for its uid over ipc://: turns are
 * taken between principals, and a principal's own jobs keep their order,
 * so a client behind its own large jobs would wait for them. The
 * client's p99 beside each must stay within FACTOR times its quiet p99
 * plus one piece (see the bound below); the attackers' results are
 * right (spot-checked against a long double reference: a full check of
 * a 3000^3 job would take minutes); and afterwards gemmd holds what it
 * held before and the client's p99 is back near its quiet one.
 */
#include <math.h>
#include <pthread.h>

#include "it_case.h"

#define WAIT_MS	    120000
#define QUIET_JOBS  1000 /* alone: enough for a steady p99 */
#define BIG_S	    1.5	 /* a huge job's run, alone on the engine */
#define LOADED_MAX  200000
#define SPOT_CHECKS 64 /* elements of a large result checked */
/*
 * The bound: FACTOR times the quiet p99, plus a piece of cpu_piece_us
 * (client_case), the wait the engine's design allows a small job (its
 * side thread runs an 8^3 one at once, beside the piece under way:
 * 0.5-4 ms at p99 on a loaded 2-core host), plus SCHED_SLACK_US for
 * wake-ups queued behind the other processes of a shared host of 2 cores
 * (test_soak.c measured that tail under AddressSanitizer). Before the CPU
 * engine ran large jobs in pieces, an 8^3 job waited 2.07 s behind a 3000^3
 * one.
 */
#define PIECE_US       20000 /* cpu_piece_us, its default */
#define FACTOR	       5.0
#define SCHED_SLACK_US 2000.0

/* Each attack: square jobs of m, jobs per request, requests one after
 * another on each of conns connections, for at least secs. */
typedef struct attack {
	const char *name;
	uint32_t m; /* 0: the calibrated huge job */
	uint32_t jobs, conns;
	double secs;
} attack;

static const attack attacks[] = {
    {"one huge job at a time", 0, 1, 1, 2 * BIG_S},
    {"requests of 48 700^3 jobs, half the pool", 700, 48, 1, 2 * BIG_S},
    {"two connections of 8 1000^3 jobs", 1000, 8, 2, 2 * BIG_S},
    {"four connections of one principal, 4 1000^3 jobs each", 1000, 4, 4,
     2 * BIG_S},
};

/*
 * Which attack the client's jobs of m^3 meet, and how many pieces its
 * bound allows. Only 8^3 jobs here: the engine runs them beside a
 * piece. A job past OpenBLAS's one-thread size (96^3 say) takes its
 * turn after the piece under way instead (test_cpu_piece.c checks that
 * order), and here its own two-thread BLAS call, whose threads the other
 * processes of a loaded 2-core host hold up, took 5-53 ms at p99 where
 * it takes 0.1 ms alone: its tail would measure the host, not gemmd.
 */
typedef struct client_case {
	uint32_t m;
	size_t attack;
	double pieces;
} client_case;

static const client_case cases[] = {
    {8, 0, 1},
    {8, 1, 1},
    {8, 2, 1},
    {8, 3, 1},
};

static uint32_t big_n = 2000; /* set by calibrate() */

/* Every attacker's job through the socket and the pool. */
static const gemmd_open_opts socket_only = {.flags = GEMMD_OPEN_NO_SHM};

/* One attacking connection: its requests until until_us. */
typedef struct attacker {
	const char *url;
	const attack *a;
	double until_us;
	unsigned seed;
	int failed;	  /* a call or a result went wrong */
	unsigned sent;	  /* requests answered */
	double longest_s; /* the longest request's round trip */
} attacker;

/* Whether element (r, c) of each of j's results is A*B to fp64
 * rounding, at SPOT_CHECKS places picked from seed. */
static int spot_ok(const gemmd_job *j, unsigned seed)
{
	const double *a = j->a, *b = j->b, *out = j->out;

	if (j->status != GM_OK)
		return 0;
	for (int s = 0; s < SPOT_CHECKS; s++) {
		size_t r = (size_t)rand_r(&seed) % j->m;
		size_t c = (size_t)rand_r(&seed) % j->n;
		long double sum = 0, mag = 0;

		for (size_t p = 0; p < j->k; p++) {
			long double x =
			    (long double)a[r * j->k + p] * b[p * j->n + c];

			sum += x;
			mag += fabsl(x);
		}
		if (fabsl(out[r * j->n + c] - sum) > 4e-16L * j->k * mag)
			return 0;
	}
	return 1;
}

static void *attacker_main(void *arg)
{
	attacker *at = arg;
	uint32_t m = at->a->m != 0 ? at->a->m : big_n, n = at->a->jobs;
	gemmd_job *jobs = calloc(n, sizeof(*jobs));
	gemmd_client *c;

	if (jobs == NULL || gemmd_open(at->url, &socket_only, &c) != GM_OK) {
		at->failed = 1;
		free(jobs);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		it_job(&jobs[i], m, m, m, at->seed + i);
	/* At least one request, however late this thread began: the
	 * client's loop runs until each attacker has had one answered. */
	do {
		double t0 = it_now_us(), s;

		if (gemmd_submit(c, jobs, n, NULL, WAIT_MS) != GM_OK)
			at->failed = 1;
		for (uint32_t i = 0; i < n && !at->failed; i++)
			at->failed = !spot_ok(&jobs[i], at->seed + i);
		s = (it_now_us() - t0) / 1e6;
		at->longest_s = s > at->longest_s ? s : at->longest_s;
		at->sent++;
	} while (!at->failed && it_now_us() < at->until_us);
	for (uint32_t i = 0; i < n; i++)
		it_job_free(&jobs[i]);
	free(jobs);
	gemmd_close(c);
	return NULL;
}

/* One m^3 job of the well-behaved client, checked; its round trip in
 * us. */
static double small_job(gemmd_client *c, uint32_t m, unsigned seed)
{
	gemmd_job j;
	double t0, us;

	it_job(&j, m, m, m, seed);
	t0 = it_now_us();
	assert_int_equal(gemmd_submit(c, &j, 1, NULL, WAIT_MS), GM_OK);
	us = it_now_us() - t0;
	assert_true(it_job_ok(&j));
	it_job_free(&j);
	return us;
}

/* The client's p99 over QUIET_JOBS jobs of m^3 alone. */
static double quiet_p99(gemmd_client *c, uint32_t m, unsigned seed)
{
	static double lat[QUIET_JOBS];

	for (int i = 0; i < QUIET_JOBS; i++)
		lat[i] = small_job(c, m, seed + (unsigned)i);
	return it_quantile(lat, QUIET_JOBS, 0.99);
}

/* What gemmd holds for clients: requests, pool, jobs, descriptors. */
typedef struct held {
	double requests, pool, queued, inflight, conns;
	int fds;
} held;

static held held_now(gemmd_client *c, pid_t pid)
{
	cJSON *st = it_stats(c);
	held h = {it_num(st, "requests.inflight"), it_num(st, "pool.used"),
		  it_num(st, "jobs.queued"),	   it_num(st, "jobs.inflight"),
		  it_num(st, "connections.open"),  it_fds(pid)};

	cJSON_Delete(st);
	return h;
}

static int back_to(const held *h, const held *base)
{
	return h->requests == base->requests && h->pool == 0 &&
	       h->queued == 0 && h->inflight == 0 && h->conns == base->conns &&
	       h->fds <= base->fds;
}

/* Runs attack a beside the client's jobs of m^3; returns the client's
 * p99 beside it and checks the attackers' results. */
static double beside(const it_daemon *d, gemmd_client *c, uint32_t m,
		     const attack *a, unsigned seed)
{
	static double lat[LOADED_MAX];
	attacker at[4];
	pthread_t th[4];
	size_t n = 0;
	int running;

	assert_true(a->conns <= 4);
	for (uint32_t i = 0; i < a->conns; i++) {
		at[i] = (attacker){.url = d->tcp,
				   .a = a,
				   .until_us = it_now_us() + a->secs * 1e6,
				   .seed = seed + 1000 * i};
		assert_int_equal(
		    pthread_create(&th[i], NULL, attacker_main, &at[i]), 0);
	}
	/* Until the last attacker's last request is back. */
	do {
		lat[n] = small_job(c, m, seed + 500000 + (unsigned)n);
		n++;
		running = 0;
		for (uint32_t i = 0; i < a->conns; i++)
			running |=
			    it_now_us() < at[i].until_us ||
			    __atomic_load_n(&at[i].sent, __ATOMIC_RELAXED) == 0;
	} while (running && n < LOADED_MAX);
	for (uint32_t i = 0; i < a->conns; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		print_message("  %s: connection %u: %u requests, the longest "
			      "%.2f s\n",
			      a->name, i, at[i].sent, at[i].longest_s);
		assert_int_equal(at[i].failed, 0);
		assert_true(at[i].sent > 0);
	}
	return it_quantile(lat, n, 0.99);
}

static void test_small_beside_large(void **state)
{
	static const char *const args[] = {"--set", "cpu_piece_us=20000", NULL};
	gemmd_client *c;
	double quiet, after;
	held base, now;
	it_daemon d;

	assert_int_equal(it_launch(&d, args), 0);
	assert_int_equal(gemmd_open(d.ipc, NULL, &c), GM_OK);
	quiet = quiet_p99(c, 8, 1);
	base = held_now(c, d.pid);
	print_message("quiet p99 of 8^3: %.0f us\n", quiet);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const client_case *k = &cases[i];
		double bound =
		    FACTOR * quiet + k->pieces * PIECE_US + SCHED_SLACK_US;
		double p99 = beside(&d, c, k->m, &attacks[k->attack],
				    100 + 10000 * (unsigned)i);

		print_message("p99 of %u^3 beside %s: %.0f us (%.1fx quiet; "
			      "bound %.0fx + %.0f pieces + %.0f us = %.0f "
			      "us)\n",
			      k->m, attacks[k->attack].name, p99, p99 / quiet,
			      FACTOR, k->pieces, SCHED_SLACK_US, bound);
		assert_true(p99 <= bound);
	}
	/* Back to what it held before, once the attackers' connections
	 * are gone; and the client as quick as before. */
	now = held_now(c, d.pid);
	for (int t = 0; t < 500 && !back_to(&now, &base); t++) {
		usleep(10000);
		now = held_now(c, d.pid);
	}
	if (!back_to(&now, &base))
		fail_msg("gemmd holds %.0f requests (%.0f before), pool %.0f, "
			 "%.0f jobs queued, %.0f running, %.0f connections "
			 "(%.0f), %d fds (%d)",
			 now.requests, base.requests, now.pool, now.queued,
			 now.inflight, now.conns, base.conns, now.fds,
			 base.fds);
	after = quiet_p99(c, 8, 7);
	print_message("quiet p99 after: %.0f us\n", after);
	assert_true(after <= 2 * quiet + SCHED_SLACK_US);
	gemmd_close(c);
	assert_int_equal(it_finish(&d), 0);
}

/*
 * Sizes the huge job from the engine's speed on this host: one 600^3
 * job gives the rate; the huge job is the cube that takes BIG_S at it
 * (at least 1500^3, within the default pool).
 */
static int calibrate(void **state)
{
	double flops_per_us;

	big_n =
	    it_cube_for(NULL, 600, WAIT_MS, BIG_S, 1500, 5000, &flops_per_us);
	if (big_n == 0)
		return -1;
	print_message("%.1f GFLOP/s: the huge job is %u^3\n",
		      flops_per_us / 1e3, big_n);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_beside_large),
	};

	return IT_RUN_SETUP(tests, calibrate);
}
