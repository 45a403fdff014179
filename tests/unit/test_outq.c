/*
 * test_outq.c - gm_outq, the frames waiting for one connection: frames
 * of one request that lie back to back go as one piece, whatever order
 * they were queued in; older requests' frames go first; heap frames are
 * freed and slab frames counted back to their owner when sent or
 * dropped; at most max pieces per send, none while one is in flight;
 * reserved room makes queueing a request's frames allocation-free; the
 * bytes of two queues counted into one total (a principal's, over its
 * connections), those queued before included, through sends, drops and
 * the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_outq.h"

/* Frames given back, per owner. */
static uint32_t back[4];
static int owners[4];

static void on_done(void *owner, uint32_t n, void *arg)
{
	back[(int *)owner - owners] += n;
}

static void open_q(gm_outq *q)
{
	memset(back, 0, sizeof(back));
	gm_outq_init(q, on_done, NULL);
}

static void test_join_in_any_order(void **state)
{
	static uint8_t slab[4096];
	const uint64_t f = 100; /* each frame */
	nng_iov iov[8];
	gm_outq q;

	open_q(&q);
	assert_int_equal(gm_outq_reserve(&q, 6), GM_OK);
	/* Frames 2, 0, 1, 5, 3, 4 of one request: one piece of six. */
	for (int i = 0, order[] = {2, 0, 1, 5, 3, 4}; i < 6; i++)
		gm_outq_push(&q, slab + order[i] * f, f, &owners[0], 7);
	assert_int_equal(q.bytes, 6 * f);
	assert_int_equal(gm_outq_next(&q, iov, 8), 1);
	assert_ptr_equal(iov[0].iov_buf, slab);
	assert_int_equal(iov[0].iov_len, 6 * f);
	/* Nothing more while it is in flight. */
	assert_int_equal(gm_outq_next(&q, iov, 8), 0);
	assert_int_equal(gm_outq_sent(&q), 6 * f);
	assert_int_equal(back[0], 6);
	assert_true(gm_outq_empty(&q));
	assert_int_equal(q.bytes, 0);
	gm_outq_fini(&q);
}

static void test_order_and_limit(void **state)
{
	static uint8_t a[1024], b[1024];
	nng_iov iov[8];
	uint8_t *heap;
	gm_outq q;

	open_q(&q);
	assert_int_equal(gm_outq_reserve(&q, 4), GM_OK);
	/* b's request is newer (seq 2) than a's (seq 1): a goes first. A
	 * gap in a's frames keeps them two pieces. */
	gm_outq_push(&q, b, 10, &owners[1], 2);
	gm_outq_push(&q, a + 100, 10, &owners[0], 1);
	gm_outq_push(&q, a, 10, &owners[0], 1);
	assert_non_null(heap = malloc(5));
	assert_int_equal(gm_outq_push_heap(&q, heap, 5, 3), GM_OK);
	gm_outq_push(&q, b + 10, 10, &owners[1], 2);
	assert_int_equal(gm_outq_next(&q, iov, 2), 2);
	assert_ptr_equal(iov[0].iov_buf, a);
	assert_ptr_equal(iov[1].iov_buf, a + 100);
	assert_int_equal(gm_outq_sent(&q), 20);
	assert_int_equal(back[0], 2);
	assert_int_equal(gm_outq_next(&q, iov, 8), 2);
	assert_ptr_equal(iov[0].iov_buf, b);
	assert_int_equal(iov[0].iov_len, 20);
	assert_ptr_equal(iov[1].iov_buf, heap);
	assert_int_equal(gm_outq_sent(&q), 25);
	assert_int_equal(back[1], 2);
	assert_true(gm_outq_empty(&q));
	gm_outq_fini(&q);
}

static void test_drop(void **state)
{
	static uint8_t a[1024];
	nng_iov iov[8];
	gm_outq q;

	open_q(&q);
	assert_int_equal(gm_outq_reserve(&q, 3), GM_OK);
	gm_outq_push(&q, a, 10, &owners[0], 1);
	assert_int_equal(gm_outq_next(&q, iov, 8), 1);
	/* Queued while the first is in flight; dropped with the
	 * connection, heap frames freed (ASan sees a leak otherwise). */
	gm_outq_push(&q, a + 500, 10, &owners[2], 2);
	assert_int_equal(gm_outq_push_heap(&q, malloc(7), 7, 3), GM_OK);
	gm_outq_drop(&q);
	assert_int_equal(back[2], 1);
	assert_int_equal(q.bytes, 10);
	assert_int_equal(gm_outq_sent(&q), 10);
	assert_int_equal(back[0], 1);
	assert_true(gm_outq_empty(&q));
	/* fini drops what is left, in flight or not. */
	gm_outq_unreserve(&q, 1);
	assert_int_equal(gm_outq_reserve(&q, 1), GM_OK);
	gm_outq_push(&q, a, 10, &owners[3], 4);
	gm_outq_fini(&q);
	assert_int_equal(back[3], 1);
}

static void test_many(void **state)
{
	enum { N = 5000 };
	static uint8_t slab[N * 3];
	nng_iov iov[8];
	uint64_t sent = 0;
	gm_outq q;

	open_q(&q);
	assert_int_equal(gm_outq_reserve(&q, N), GM_OK);
	/* Every other frame first: two passes, each joined when the
	 * queue is put in order. */
	for (int i = 0; i < N; i += 2)
		gm_outq_push(&q, slab + 3 * i, 3, &owners[0], 1);
	for (int i = 1; i < N; i += 2)
		gm_outq_push(&q, slab + 3 * i, 3, &owners[0], 1);
	assert_int_equal(gm_outq_next(&q, iov, 8), 1);
	assert_int_equal(iov[0].iov_len, 3 * N);
	sent += gm_outq_sent(&q);
	assert_int_equal(sent, 3 * N);
	assert_int_equal(back[0], N);
	gm_outq_fini(&q);
}

static void test_count_in(void **state)
{
	static uint8_t a[1024];
	uint64_t total = 0;
	nng_iov iov[8];
	gm_outq q, r;

	open_q(&q);
	gm_outq_init(&r, on_done, NULL);
	assert_int_equal(gm_outq_reserve(&q, 4), GM_OK);
	assert_int_equal(gm_outq_reserve(&r, 2), GM_OK);
	gm_outq_push(&q, a, 10, &owners[0], 1);
	gm_outq_count_in(&q, &total);
	assert_int_equal(total, 10);
	gm_outq_count_in(&r, &total);
	gm_outq_push(&r, a + 100, 20, &owners[1], 2);
	assert_int_equal(gm_outq_push_heap(&q, malloc(5), 5, 3), GM_OK);
	assert_int_equal(total, 35);
	assert_int_equal(total, q.bytes + r.bytes);
	assert_int_equal(gm_outq_next(&q, iov, 1), 1);
	gm_outq_push(&q, a + 200, 30, &owners[2], 4);
	assert_int_equal(gm_outq_sent(&q), 10);
	assert_int_equal(total, 55);
	gm_outq_drop(&q);
	assert_int_equal(total, 20);
	assert_int_equal(total, q.bytes + r.bytes);
	gm_outq_fini(&r);
	assert_int_equal(total, 0);
	gm_outq_fini(&q);
	assert_int_equal(total, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_join_in_any_order),
	    cmocka_unit_test(test_order_and_limit),
	    cmocka_unit_test(test_drop),
	    cmocka_unit_test(test_many),
	    cmocka_unit_test(test_count_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
