/*
 * test_regions.c - shared-memory regions against a real gemmd
 * (regions_fx.h): results through regions equal results through the
 * socket (every dtype the engine runs, both layouts, transposes, C, mixed
 * inline and region operands, C updated in place); out-of-bounds and
 * misaligned offsets, unknown ids, tcp:// requests and another user's
 * region each refused with their code. The hand-off socket and the
 * lifetimes of regions are in test_regions_handoff.c. Every test ends
 * with the daemon's mapped and registered bytes back at zero.
 *
 * Built twice: for the integration suite with the CPU engine, and with
 * GM_TEST_CUDA for the gpu suite with the CUDA engine (then also with
 * mapped output and the fp16, bf16 and tf32 dtypes), which exits 77
 * without a device.
 */
#include "regions_fx.h"

/* Runs the n jobs t[] through the socket, then again with the operands
 * of mask[i] in region r, one request each way, and compares. */
static void compare_ways(gemmd_client *c, gemmd_region *r, tjob *t,
			 const unsigned *mask, const int *in_place, int n)
{
	gemmd_job sock[16], reg[16];
	placed p[16];

	assert_true(n <= 16);
	gemmd_region_reset(r);
	for (int i = 0; i < n; i++) {
		sock[i] = t[i].j;
		reg[i] = in_region(&t[i], r, mask[i], in_place[i], &p[i]);
	}
	assert_int_equal(gemmd_submit(c, sock, (uint32_t)n, NULL, TIMEOUT_MS),
			 GM_OK);
	assert_int_equal(gemmd_submit(c, reg, (uint32_t)n, NULL, TIMEOUT_MS),
			 GM_OK);
	for (int i = 0; i < n; i++) {
		const uint8_t *got =
		    mask[i] & 8 ? (uint8_t *)gemmd_region_ptr(r) + p[i].out
				: reg[i].out;

		if (sock[i].status != GM_OK || reg[i].status != GM_OK)
			fail_msg(
			    "job %d (%s, mask %u): socket %s, region %s: %s", i,
			    gm_dtype_name(t[i].j.dtype), mask[i],
			    gm_errname(sock[i].status),
			    gm_errname(reg[i].status), reg[i].message);
		if (!close_enough(t[i].j.dtype, sock[i].out, got, t[i].nc))
			fail_msg("job %d (%s %ux%ux%u, mask %u, in place %d): "
				 "region result differs from the socket's",
				 i, gm_dtype_name(t[i].j.dtype), t[i].j.m,
				 t[i].j.n, t[i].j.k, mask[i], in_place[i]);
		if (!(mask[i] & 8))
			free(reg[i].out);
	}
}

static const int dtypes[] = {GEMMD_FP64, GEMMD_FP32,
#if GM_TEST_CUDA
			     GEMMD_TF32, GEMMD_FP16, GEMMD_BF16
#endif
};
#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

static void results_equal(const char *const *extra)
{
	it_daemon d;
	gemmd_client *c;
	gemmd_region *r;
	tjob t[16];
	unsigned mask[16];
	int in_place[16], n = 0;

	start(&d, extra);
	c = open_ipc(&d);
	assert_int_equal(gemmd_region_create(c, 8 << 20, &r), GM_OK);
	assert_int_equal(it_stat(c, "regions.count"), 1);
	assert_int_equal(it_stat(c, "regions.mapped_bytes"), 8 << 20);
	assert_int_equal(it_stat(c, "regions.registered_bytes"), 8 << 20);
	for (size_t di = 0; di < NDTYPES; di++) {
		n = 0;
		for (int v = 0; v < 8; v++) {
			make(&t[n], dtypes[di], v & 1, (v >> 1) & 1,
			     (v >> 2) & 1, 17 + v, 33 - v, 9 + 3 * v,
			     v % 3 != 0);
			mask[n] = 15; /* everything in the region */
			in_place[n++] = 0;
		}
		/* Mixed: each operand alone in the region, the rest inline. */
		for (unsigned m = 1; m <= 8; m <<= 1) {
			make(&t[n], dtypes[di], GEMMD_ROW_MAJOR, 0, 1, 64, 48,
			     40, 1);
			mask[n] = m;
			in_place[n++] = 0;
		}
		/* C updated in place, and an inline job in the same request. */
		make(&t[n], dtypes[di], GEMMD_COL_MAJOR, 1, 0, 31, 29, 27, 1);
		mask[n] = 15;
		in_place[n++] = 1;
		make(&t[n], dtypes[di], GEMMD_ROW_MAJOR, 0, 0, 5, 6, 7, 0);
		mask[n] = 0;
		in_place[n++] = 0;
		compare_ways(c, r, t, mask, in_place, n);
		for (int i = 0; i < n; i++)
			drop(&t[i]);
	}
	assert_true(it_stat(c, "regions.jobs") >= (double)(NDTYPES * 13));
	assert_int_equal(gemmd_region_release(r), GM_OK);
	gemmd_close(c);
	stop(&d);
}

static void test_results_equal(void **state)
{
	results_equal(NULL);
}

#if GM_TEST_CUDA
/* Results written by the kernel straight into the region. */
static void test_results_equal_mapped(void **state)
{
	const char *const extra[] = {"--set", "mapped_output=true", NULL};

	results_equal(extra);
}
#endif

static void test_bad_refs(void **state)
{
	gm_job_desc d = {.dtype = GM_FP64, .m = 16, .n = 16, .k = 16};
	uint64_t id, big = 1 << 20, len = 16 * 16 * 8;
	gm_region_ref ref[GM_OPND_COUNT];
	gemmd_client *c;
	gemmd_region *r;
	it_daemon dm;
	tjob t;

	start(&dm, NULL);
	c = open_ipc(&dm);
	assert_int_equal(gemmd_region_create(c, big, &r), GM_OK);
	id = gemmd_region_id(r);
	d.alpha = 1;
	d.flags = GM_JOB_REGIONS;
#define SET(op, rid, off) (ref[op] = (gm_region_ref){(rid), (off)})
	memset(ref, 0, sizeof(ref));
	SET(GM_OPND_A, id, 0);
	SET(GM_OPND_B, id, len);
	SET(GM_OPND_OUT, id, 2 * len);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_OK);
	/* The last byte of OUT one past the end; then just inside. */
	SET(GM_OPND_OUT, id, big - len + 8);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EBOUNDS);
	SET(GM_OPND_OUT, id, big - len);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_OK);
	SET(GM_OPND_B, id, UINT64_MAX - 7); /* offset + length overflows */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EBOUNDS);
	SET(GM_OPND_B, id, 1ull << 40);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EBOUNDS);
	SET(GM_OPND_B, id, len + 4); /* not a multiple of 8 */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EFIELD);
	SET(GM_OPND_B, id, len);
	SET(GM_OPND_OUT, id, len / 2); /* over A */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EFIELD);
	SET(GM_OPND_OUT, id, 2 * len);
	SET(GM_OPND_A, id ^ 1, 0); /* unknown */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_ENOTFOUND);
	SET(GM_OPND_A, id, 0);
	/* tcp:// cannot name regions, whoever the peer is. */
	assert_int_equal(raw(dm.tcp, &d, ref), GM_EACCES);
	/* The library refuses the same before sending. */
	make(&t, GEMMD_FP64, 0, 0, 0, 16, 16, 16, 0);
	t.j.a = NULL;
	t.j.a_ref = (gemmd_region_ref){r, big - 8};
	assert_int_equal(gemmd_submit(c, &t.j, 1, NULL, TIMEOUT_MS),
			 GM_EBOUNDS);
	t.j.a_ref.offset = 4;
	assert_int_equal(gemmd_submit(c, &t.j, 1, NULL, TIMEOUT_MS), GM_EFIELD);
	t.j.a = t.a; /* both a pointer and a region */
	assert_int_equal(gemmd_submit(c, &t.j, 1, NULL, TIMEOUT_MS), GM_EINVAL);
	drop(&t);
	assert_int_equal(it_stat(c, "errors.EBOUNDS"), 3);
	assert_int_equal(gemmd_region_release(r), GM_OK);
	/* Released: its id is unknown from now on. */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_ENOTFOUND);
	gemmd_close(c);
	stop(&dm);
}

static void test_other_user(void **state)
{
	gemmd_client *c;
	gemmd_region *r;
	it_daemon d;
	int rv;

	if (geteuid() != 0) {
		fprintf(stderr, "other_user: not root, cannot become another "
				"user; skipped\n");
		return;
	}
	start(&d, NULL);
	/* nobody reaches the sockets through their group, root's. */
	assert_int_equal(chmod(d.dir, 0755), 0);
	c = open_ipc(&d);
	assert_int_equal(gemmd_region_create(c, 1 << 16, &r), GM_OK);
	rv = wait_child(spawn_self("other-user", d.ipc, gemmd_region_id(r), 1));
	if (rv == 127)
		fprintf(stderr, "other_user: nobody cannot run this test's "
				"binary here; skipped\n");
	else
		assert_int_equal(rv, 0);
	assert_int_equal(gemmd_region_release(r), GM_OK);
	gemmd_close(c);
	stop(&d);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_results_equal),
#if GM_TEST_CUDA
		cmocka_unit_test(test_results_equal_mapped),
#endif
		cmocka_unit_test(test_bad_refs),
		cmocka_unit_test(test_other_user),
	};

	return REGIONS_MAIN(argc, argv, tests);
}
