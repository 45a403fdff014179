/*
 * test_stage_grow.c - the staging of plain pointers grows to the job:
 * against a real gemmd (CPU engine), a job larger than the client's
 * staging region goes through shared memory (a larger region, kept
 * while the client lives), not the socket, and its result is bit for
 * bit the one through a region of the caller's own and through the
 * socket; with the daemon's region_max_bytes below what growth wants,
 * the job takes the socket and is still right, and a small job after it
 * is staged still.
 */
#include "it_case.h"
#include "gm_testref.h"

#define MIB    (1u << 20)
#define STAGE  (4u * MIB) /* the client's staging_bytes */
#define N      1024	  /* the large job: A + B + C = 24 MiB of fp64 */
#define SMALLN 256	  /* 2 MiB with its result: staged in 4 MiB */

/* One fp64 n x n x n job with C on random operands. */
struct op {
	uint32_t n;
	size_t bytes; /* of each of A, B, C and the result */
	double *a, *b, *c;
};

static uint64_t seed;

static void op_make(struct op *o, uint32_t n)
{
	o->n = n;
	o->bytes = (size_t)n * n * sizeof(double);
	o->a = malloc(o->bytes);
	o->b = malloc(o->bytes);
	o->c = malloc(o->bytes);
	assert_non_null(o->a);
	assert_non_null(o->b);
	assert_non_null(o->c);
	gm_testref_fill(GEMMD_FP64, o->a, (size_t)n * n, &seed, NULL);
	gm_testref_fill(GEMMD_FP64, o->b, (size_t)n * n, &seed, NULL);
	gm_testref_fill(GEMMD_FP64, o->c, (size_t)n * n, &seed, NULL);
}

static void op_free(struct op *o)
{
	free(o->a);
	free(o->b);
	free(o->c);
}

static gemmd_job job_of(const struct op *o, double *out)
{
	return (gemmd_job){.dtype = GEMMD_FP64,
			   .layout = GEMMD_ROW_MAJOR,
			   .m = o->n,
			   .n = o->n,
			   .k = o->n,
			   .alpha = 0.75,
			   .beta = 1.25,
			   .a = o->a,
			   .b = o->b,
			   .c = o->c,
			   .out = out};
}

/* A few entries of out against their sums, in the same order of terms
 * as no engine promises: within a relative 1e-12. */
static void spot_check(const struct op *o, const double *out)
{
	const uint32_t n = o->n,
		       at[4][2] = {
			   {0, 0}, {1, n - 1}, {n / 2, 7}, {n - 1, n - 1}};

	for (int s = 0; s < 4; s++) {
		uint32_t i = at[s][0], j = at[s][1];
		double sum = 0, want;

		for (uint32_t l = 0; l < n; l++)
			sum +=
			    o->a[(size_t)i * n + l] * o->b[(size_t)l * n + j];
		want = 0.75 * sum + 1.25 * o->c[(size_t)i * n + j];
		assert_true((out[(size_t)i * n + j] - want) *
				(out[(size_t)i * n + j] - want) <=
			    1e-24 * (want * want + 1));
	}
}

/* Runs o's job over cl into a fresh result, checks it and returns it. */
static double *run(gemmd_client *cl, const struct op *o)
{
	double *out = malloc(o->bytes);
	gemmd_job j;

	assert_non_null(out);
	memset(out, 0xA5, o->bytes);
	j = job_of(o, out);
	assert_int_equal(gemmd_submit(cl, &j, 1, NULL, 120000), GM_OK);
	assert_int_equal(j.status, GM_OK);
	spot_check(o, out);
	return out;
}

/* Runs o's job with its operands and result in a region made here. */
static double *run_region(gemmd_client *cl, const struct op *o)
{
	double *out = malloc(o->bytes);
	gemmd_region *r;
	gemmd_job j;
	char *base;

	assert_non_null(out);
	assert_int_equal(gemmd_region_create(cl, 4 * o->bytes, &r), GM_OK);
	base = gemmd_region_ptr(r);
	memcpy(base, o->a, o->bytes);
	memcpy(base + o->bytes, o->b, o->bytes);
	memcpy(base + 2 * o->bytes, o->c, o->bytes);
	j = job_of(o, NULL);
	j.a = j.b = j.c = NULL;
	j.a_ref = (gemmd_region_ref){r, 0};
	j.b_ref = (gemmd_region_ref){r, o->bytes};
	j.c_ref = (gemmd_region_ref){r, 2 * o->bytes};
	j.out_ref = (gemmd_region_ref){r, 3 * o->bytes};
	assert_int_equal(gemmd_submit(cl, &j, 1, NULL, 120000), GM_OK);
	assert_int_equal(j.status, GM_OK);
	memcpy(out, base + 3 * o->bytes, o->bytes);
	assert_int_equal(gemmd_region_release(r), GM_OK);
	spot_check(o, out);
	return out;
}

static const gemmd_open_opts stage_o = {.staging_bytes = STAGE},
			     socket_o = {.flags = GEMMD_OPEN_NO_SHM};

/* ---- growth ---- */

static void test_grows(void **state)
{
	it_daemon d;
	struct op o;
	gemmd_client *mon, *cl;
	double *staged, *staged2, *region, *sock, in0;

	assert_int_equal(it_launch(&d, NULL), 0);
	op_make(&o, N);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	assert_int_equal(gemmd_open(d.ipc, &stage_o, &cl), GM_OK);
	/* Six times the staging region, through shared memory. */
	in0 = it_stat(mon, "bytes.in");
	staged = run(cl, &o);
	assert_true(it_stat(mon, "bytes.in") - in0 < MIB);
	/* The region grew to hold two such jobs, and is kept. */
	assert_true(it_stat(mon, "regions.mapped_bytes") >= 8.0 * o.bytes);
	staged2 = run(cl, &o);
	assert_true(it_stat(mon, "bytes.in") - in0 < MIB);
	assert_true(it_stat(mon, "regions.count") == 1);
	assert_memory_equal(staged2, staged, o.bytes);
	region = run_region(cl, &o);
	gemmd_close(cl);
	assert_int_equal(gemmd_open(d.ipc, &socket_o, &cl), GM_OK);
	in0 = it_stat(mon, "bytes.in");
	sock = run(cl, &o);
	assert_true(it_stat(mon, "bytes.in") - in0 >= 3.0 * o.bytes);
	gemmd_close(cl);
	assert_memory_equal(region, staged, o.bytes);
	assert_memory_equal(sock, staged, o.bytes);
	free(staged);
	free(staged2);
	free(region);
	free(sock);
	op_free(&o);
	gemmd_close(mon);
	assert_int_equal(it_finish(&d), 0);
}

/* region_max_bytes below what growth wants: the large job takes the
 * socket, right all the same; a small one is staged still. */
static void test_capped(void **state)
{
	static const char *const args[] = {"--set", "region_max_bytes=8M",
					   NULL};
	it_daemon d;
	struct op o, small;
	gemmd_client *mon, *cl;
	double *capped, *sock, *out, in0;

	assert_int_equal(it_launch(&d, args), 0);
	op_make(&o, N);
	op_make(&small, SMALLN);
	assert_int_equal(gemmd_open(d.tcp, NULL, &mon), GM_OK);
	assert_int_equal(gemmd_open(d.ipc, &stage_o, &cl), GM_OK);
	for (int i = 0; i < 2; i++) {
		in0 = it_stat(mon, "bytes.in");
		capped = run(cl, &o);
		assert_true(it_stat(mon, "bytes.in") - in0 >= 3.0 * o.bytes);
		if (i == 0) {
			sock = capped;
			continue;
		}
		assert_memory_equal(capped, sock, o.bytes);
		free(capped);
	}
	in0 = it_stat(mon, "bytes.in");
	out = run(cl, &small);
	assert_true(it_stat(mon, "bytes.in") - in0 < MIB);
	assert_true(it_stat(mon, "regions.count") == 1);
	free(out);
	gemmd_close(cl);
	/* The same job through the socket by choice. */
	assert_int_equal(gemmd_open(d.ipc, &socket_o, &cl), GM_OK);
	out = run(cl, &o);
	assert_memory_equal(out, sock, o.bytes);
	free(out);
	free(sock);
	gemmd_close(cl);
	op_free(&small);
	op_free(&o);
	gemmd_close(mon);
	assert_int_equal(it_finish(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grows),
	    cmocka_unit_test(test_capped),
	};

	seed = gm_testref_seed();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
