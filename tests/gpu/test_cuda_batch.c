/*
 * test_cuda_batch.c - small jobs coalesced by the CUDA engine
 * (cuda_batch_fx.h, gputest.h).
 *
 * A small job's result must not depend on the jobs it ran with: every
 * job here runs alone (a wave of its own) and then in a wave with many
 * others, laid out at a constant stride (strided copies) and at
 * scattered places (one piece per job, in one batched copy), and the
 * results must be the same bit for bit; each is also checked against
 * the CPU engine's fp64 result with the dtype's tolerance. Waves with
 * failures, a small device pool, a small job alone on its host memory,
 * an injected out-of-memory and the warm-up are in
 * test_cuda_batch_waves.c. Exits 77 (skipped) without a GPU.
 */
#include "cuda_batch_fx.h"

/* Moves t's operands to a, b, c and out (inputs copied), giving back the
 * slab make_job took. */
static void move_to(struct bench *b, struct tjob *t, char *a, char *bb, char *c,
		    char *out)
{
	memmove(a, t->job.a, t->sz.a);
	memmove(bb, t->job.b, t->sz.b);
	if (t->sz.c)
		memmove(c, t->job.c, t->sz.c);
	t->job.a = a;
	t->job.b = bb;
	t->job.c = t->sz.c ? c : NULL;
	t->job.out = out;
	gm_pool_free(b->pool, t->slab);
	t->slab = NULL;
}

/* One slab of the tested engine's arena that jobs are laid out in. */
struct area {
	char *base;
	uint64_t used, size;
};

static void area_open(struct bench *b, struct area *ar, uint64_t size)
{
	void *p;

	assert_int_equal(gm_pool_alloc(b->pool, size, &p), GM_OK);
	ar->base = p;
	ar->used = 0;
	ar->size = size;
}

static char *area_take(struct area *ar, uint64_t bytes)
{
	char *p = ar->base + ar->used;

	ar->used += align_up(bytes);
	assert_true(ar->used <= ar->size);
	return p;
}

/*
 * Jobs t[k * REPEATS + r] (key k, repeat r) laid out as a request's jobs
 * sit in a slab: those of one key back to back at one stride, each job
 * [A | B | C | result]; the stride of every other key has a gap.
 */
static void lay_strided(struct bench *b, struct area *ar, struct tjob *t,
			size_t keys)
{
	for (size_t k = 0; k < keys; k++) {
		struct tjob *first = &t[k * REPEATS];
		uint64_t in = first->sz.a + first->sz.b + first->sz.c;
		uint64_t stride = align_up(in + first->sz.out) + SLOT * (k & 1);
		char *base = area_take(ar, stride * REPEATS);

		for (int r = 0; r < REPEATS; r++) {
			struct tjob *x = &first[r];
			char *p = base + r * stride;

			move_to(b, x, p, p + x->sz.a, p + x->sz.a + x->sz.b,
				p + in);
		}
	}
}

/* The same jobs with their operands at scattered places, B before A,
 * with gaps that differ from job to job. Jobs that stage their inputs
 * (copy_in holds A, B and C together) stay where they are. */
static void lay_scattered(struct bench *b, struct area *ar, struct tjob *t,
			  size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tjob *x = &t[i];
		char *bb, *a, *c, *out;

		if (x->in != NULL)
			continue;
		out = area_take(ar, x->sz.out + 64 * (i % 5));
		bb = area_take(ar, x->sz.b + 32 * (i % 3));
		a = area_take(ar, x->sz.a);
		c = area_take(ar, x->sz.c + 8);
		move_to(b, x, a, bb, c, out);
	}
}

/* The jobs of each key in turn, so that the engine must sort them. */
static void interleave(struct tjob *t, size_t keys, gm_job **wave)
{
	size_t i = 0;

	for (int r = 0; r < REPEATS; r++)
		for (size_t k = 0; k < keys; k++)
			wave[i++] = &t[k * REPEATS + r].job;
}

/* Runs wave[0..n-1] together and checks every result of t against the
 * CPU and, bit for bit, against the result the job had alone. */
static void run_together(struct bench *b, struct tjob *t, gm_job **wave,
			 size_t n, char **saved, const char *what)
{
	size_t i, differ = 0;

	for (i = 0; i < n; i++) {
		poison(&t[i]);
		t[i].returned = 0;
	}
	run_wave(b, wave, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(t[i].returned, 1);
		check_result(&t[i], 0);
		if (memcmp(result_of(&t[i]), saved[i], t[i].sz.out) != 0) {
			const gm_job_desc *d = &t[i].job.d;

			print_error("%s %s %ux%ux%u ta=%u tb=%u layout=%u "
				    "c=%u: coalesced result differs from the "
				    "job's result alone\n",
				    what, gm_dtype_name(d->dtype), d->m, d->n,
				    d->k, d->trans_a, d->trans_b, d->layout,
				    d->flags);
			differ++;
		}
	}
	assert_int_equal(differ, 0);
}

/* Makes REPEATS jobs of each of the 16 combinations of every small
 * shape, their references computed on the CPU; returns the keys. */
static size_t make_keys(struct bench *b, struct tjob *t, int dtype, int kernel)
{
	gm_job_desc d[16];
	gm_job *refs[JOBS_MAX];
	size_t keys = 0, n;

	for (size_t s = 0; s < sizeof(small_shapes) / sizeof(small_shapes[0]);
	     s++) {
		n = combos(d, dtype, kernel, &small_shapes[s]);
		for (size_t c = 0; c < n; c++, keys++)
			for (int r = 0; r < REPEATS; r++) {
				struct tjob *x = &t[keys * REPEATS + r];

				make_job(b, x, &d[c], (keys + r) % 5 == 0);
				make_ref(x);
				refs[keys * REPEATS + r] = &x->ref;
			}
	}
	run_wave(&cpu, refs, keys * REPEATS);
	return keys;
}

static void check_bits(int dtype, int kernel)
{
	static struct tjob t[JOBS_MAX];
	static char *saved[JOBS_MAX];
	gm_job *wave[JOBS_MAX];
	gm_engine_config cfg = cuda_config();
	struct area strided, scattered;
	size_t keys, n;

	bench_open(&gpu, &cfg);
	keys = make_keys(&gpu, t, dtype, kernel);
	n = keys * REPEATS;
	area_open(&gpu, &strided, 64ull << 20);
	area_open(&gpu, &scattered, 64ull << 20);
	lay_strided(&gpu, &strided, t, keys);
	run_alone(&gpu, t, n, saved);
	interleave(t, keys, wave);
	run_together(&gpu, t, wave, n, saved, "strided");
	report(t, n, "batched");
	lay_scattered(&gpu, &scattered, t, n);
	run_together(&gpu, t, wave, n, saved, "scattered");
	free_all(&gpu, t, n, saved);
	gm_pool_free(gpu.pool, strided.base);
	gm_pool_free(gpu.pool, scattered.base);
	bench_close(&gpu, 1);
}

static void test_bits_fp64(void **state)
{
	check_bits(GM_FP64, GM_KERNEL_CUBLAS);
	check_bits(GM_FP64, GM_KERNEL_TILED);
}

static void test_bits_fp32(void **state)
{
	check_bits(GM_FP32, GM_KERNEL_CUBLAS);
	check_bits(GM_FP32, GM_KERNEL_TILED);
}

static void test_bits_tf32(void **state)
{
	check_bits(GM_TF32, GM_KERNEL_CUBLAS);
}

static void test_bits_fp16(void **state)
{
	check_bits(GM_FP16, GM_KERNEL_CUBLAS);
}

static void test_bits_bf16(void **state)
{
	check_bits(GM_BF16, GM_KERNEL_CUBLAS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_bits_fp64, close_gpu),
	    cmocka_unit_test_teardown(test_bits_fp32, close_gpu),
	    cmocka_unit_test_teardown(test_bits_tf32, close_gpu),
	    cmocka_unit_test_teardown(test_bits_fp16, close_gpu),
	    cmocka_unit_test_teardown(test_bits_bf16, close_gpu),
	};

	return gpu_main(tests, sizeof(tests) / sizeof(tests[0]));
}
