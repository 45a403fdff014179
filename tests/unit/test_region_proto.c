/*
 * test_region_proto.c - unit tests for proto/gm_proto_region: the region
 * descriptor of GM_JOB_REGIONS jobs (round trips at odd addresses,
 * payload sizes, iteration over mixed jobs, and a table of malformed
 * descriptors with the code PROTOCOL.md assigns to each), replies whose
 * result went to a region, and the hand-off socket's records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gm_proto.h"
#include "gm_proto_region.h"

#define MSG_LEN 256
#define RID	0x1122334455667788ull /* a region id */
#define RID2	0x99aabbccddeeff01ull

static uint8_t buf[1 << 16];

static const gm_limits lim_small = {
    .max_jobs = 4, .max_dim = 64, .max_job_bytes = 4096};

static void put_u64le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* fp32 2x3x4 with C: A 32, B 48, C 24, out 24 bytes. */
static gm_job_desc job_c(void)
{
	gm_job_desc d = {.dtype = GM_FP32, .m = 2, .n = 3, .k = 4};

	d.alpha = 1.0;
	d.beta = 0.5;
	d.flags = GM_JOB_HAS_C | GM_JOB_REGIONS;
	return d;
}

/* One-job request at p: header, batch, d with refs (NULL: no regions),
 * then the inline operands filled with bytes 0xA0 + operand. */
static size_t put_one(uint8_t *p, const gm_job_desc *d,
		      const gm_region_ref *ref)
{
	gm_batch b = {.priority = 1};
	gm_job_sizes z;
	uint8_t *q = p + GM_HDR_SIZE + GM_BATCH_SIZE;

	assert_int_equal(gm_job_sizes_of(d, &z), GM_OK);
	gm_proto_put_hdr(p, GM_MSG_GEMM, 9, 1);
	gm_proto_put_batch(p + GM_HDR_SIZE, &b);
	gm_proto_put_job_refs(q, d, ref);
	q += GM_JOB_HDR_SIZE;
	if (ref != NULL && (d->flags & GM_JOB_REGIONS)) {
		gm_proto_put_refs(q, ref);
		q += GM_REGION_DESC_SIZE;
	}
	for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
		uint64_t n = gm_operand_bytes(&z, op);

		if (ref != NULL && gm_ref_in_region(ref, op))
			continue;
		memset(q, 0xA0 + op, n);
		q += n;
	}
	return (size_t)(q - p);
}

static void test_refs_round_trip(void **state)
{
	gm_region_ref in[GM_OPND_COUNT] = {
	    {RID, 0}, {0, 0}, {RID2, 1ull << 40}, {RID, 4096}};
	gm_region_ref out[GM_OPND_COUNT];

	(void)state;
	gm_proto_put_refs(buf + 3, in);
	gm_proto_get_refs(buf + 3, out);
	assert_memory_equal(in, out, sizeof(in));
	/* Little-endian on the wire: the id's low byte first. */
	assert_int_equal(buf[3], 0x88);
	assert_int_equal(buf[3 + 15], 0);
	assert_int_equal(buf[3 + 32 + 13], 1); /* 1 << 40, byte 5 */
}

static void test_payload_sizes(void **state)
{
	gm_job_desc d = job_c();
	gm_region_ref none[GM_OPND_COUNT] = {{0}};
	gm_region_ref ab[GM_OPND_COUNT] = {{RID, 0}, {RID, 32}, {0}, {0}};
	uint64_t n;

	(void)state;
	assert_int_equal(gm_proto_job_payload(&d, none, &n), GM_OK);
	assert_int_equal(n, 64 + 32 + 48 + 24);
	assert_int_equal(gm_proto_job_payload(&d, ab, &n), GM_OK);
	assert_int_equal(n, 64 + 24);
	d.flags = GM_JOB_HAS_C; /* no flag: the refs do not count */
	assert_int_equal(gm_proto_job_payload(&d, ab, &n), GM_OK);
	assert_int_equal(n, 32 + 48 + 24);
	d.dtype = 0;
	assert_int_equal(gm_proto_job_payload(&d, ab, &n), GM_EDTYPE);
}

/* A mixed job (A and OUT in a region, B and C inline) at an odd
 * address: accepted, and iterated with its operands located. */
static void test_mixed_job_iterates(void **state)
{
	gm_job_desc d = job_c(), got;
	gm_region_ref ref[GM_OPND_COUNT] = {{RID, 8}, {0}, {0}, {RID, 256}};
	uint8_t *p = buf + 1;
	char msg[MSG_LEN] = "";
	gm_job_operands ops;
	const uint8_t *a, *b, *c;
	gm_job_iter it;
	gm_batch bt;
	gm_hdr h;
	size_t len = put_one(p, &d, ref);

	(void)state;
	assert_int_equal(len, 24 + 16 + 48 + 64 + 48 + 24);
	assert_int_equal(
	    gm_proto_check_gemm(p, len, &lim_small, &h, &bt, msg, sizeof(msg)),
	    GM_OK);
	gm_proto_jobs_begin(p, len, &it);
	assert_int_equal(gm_proto_jobs_next_ops(&it, &got, &ops), GM_OK);
	assert_int_equal(got.flags, d.flags);
	assert_memory_equal(ops.ref, ref, sizeof(ref));
	assert_null(ops.data[GM_OPND_A]);
	assert_ptr_equal(ops.data[GM_OPND_B], p + 24 + 16 + 48 + 64);
	assert_ptr_equal(ops.data[GM_OPND_C], ops.data[GM_OPND_B] + 48);
	assert_ptr_equal(ops.inline_start, ops.data[GM_OPND_B]);
	assert_int_equal(ops.inline_bytes, 48 + 24);
	assert_int_equal(ops.data[GM_OPND_C][0], 0xA0 + GM_OPND_C);
	assert_int_equal(gm_proto_jobs_next_ops(&it, &got, &ops), GM_ENOTFOUND);
	/* The plain iterator says "not here" for region operands. */
	gm_proto_jobs_begin(p, len, &it);
	assert_int_equal(gm_proto_jobs_next(&it, &got, &a, &b, &c), GM_OK);
	assert_null(a);
	assert_ptr_equal(b, p + 24 + 16 + 48 + 64);
	assert_ptr_equal(c, b + 48);
}

/* A job whose operands are all in regions is not held to max_job_bytes:
 * its message is 152 bytes however large the operands. */
static void test_regions_lift_max_job_bytes(void **state)
{
	gm_job_desc d = job_c();
	gm_region_ref ref[GM_OPND_COUNT] = {
	    {RID, 0}, {RID, 1 << 16}, {RID, 1 << 17}, {RID2, 0}};
	char msg[MSG_LEN] = "";
	gm_batch bt;
	gm_hdr h;
	size_t len;

	(void)state;
	d.m = d.n = d.k = 64; /* 16 KiB each, over the 4 KiB limit */
	len = put_one(buf, &d, ref);
	assert_int_equal(len, 24 + 16 + 48 + 64);
	assert_int_equal(gm_proto_check_gemm(buf, len, &lim_small, &h, &bt, msg,
					     sizeof(msg)),
			 GM_OK);
	ref[GM_OPND_B].region = 0; /* B inline: 16 KiB in the message */
	ref[GM_OPND_B].offset = 0;
	len = put_one(buf, &d, ref);
	assert_int_equal(gm_proto_check_gemm(buf, len, &lim_small, &h, &bt, msg,
					     sizeof(msg)),
			 GM_ETOOBIG);
	assert_non_null(strstr(msg, "inline A+B+C=16384"));
}

/* ---- malformed descriptors ---- */

#define JOB	       (GM_HDR_SIZE + GM_BATCH_SIZE)
#define DESC	       (JOB + GM_JOB_HDR_SIZE)
#define REF(op, field) (DESC + 16 * (op) + 8 * (field)) /* 0 id, 1 offset */

struct patch {
	size_t at;
	int size; /* 1 or 8 */
	uint64_t value;
};

struct bad_case {
	const char *name;
	int code;
	long cut; /* bytes removed from the end (< 0: that many kept) */
	struct patch p[3];
};

/* Against job_c() with A at RID+0, B inline, C at RID+64, OUT at
 * RID+128: 64 + 48 payload bytes, 200 in all. */
static const struct bad_case bad[] = {
    {"the base: accepted", GM_OK, 0, {{0}}},
    {"descriptor cut short", GM_ETRUNC, -(DESC + 63), {{0}}},
    {"inline B with an offset", GM_EFIELD, 0, {{REF(1, 1), 8, 8}}},
    {"C named, flag clear", GM_EFIELD, 0, {{JOB + 5, 1, GM_JOB_REGIONS}}},
    {"A offset not a multiple of 4", GM_EFIELD, 0, {{REF(0, 1), 8, 2}}},
    {"OUT offset + 24 overflows",
     GM_EBOUNDS,
     0,
     {{REF(3, 1), 8, UINT64_MAX - 7}}},
    {"OUT overlaps A", GM_EFIELD, 0, {{REF(3, 1), 8, 16}}},
    {"OUT overlaps C in part", GM_EFIELD, 0, {{REF(3, 1), 8, 68}}},
    {"OUT is exactly C: accepted", GM_OK, 0, {{REF(3, 1), 8, 64}}},
    {"OUT in another region: accepted",
     GM_OK,
     0,
     {{REF(3, 0), 8, RID2}, {REF(3, 1), 8, 0}}},
    {"OUT inline: accepted", GM_OK, 0, {{REF(3, 0), 8, 0}, {REF(3, 1), 8, 0}}},
    {"payload_bytes one short", GM_EFIELD, 0, {{JOB + 40, 8, 111}}},
    {"payload_bytes as if inline", GM_EFIELD, 0, {{JOB + 40, 8, 104}}},
    {"inline bytes cut short", GM_ETRUNC, 1, {{0}}},
    {"one trailing byte", GM_ETRAILING, -201, {{0}}},
    {"unknown job flag bit 2", GM_EFIELD, 0, {{JOB + 5, 1, 0x07}}},
};

static void test_bad_descriptors(void **state)
{
	gm_job_desc d = job_c();
	gm_region_ref ref[GM_OPND_COUNT] = {
	    {RID, 0}, {0, 0}, {RID, 64}, {RID, 128}};
	char msg[MSG_LEN];
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = put_one(buf, &d, ref);
		gm_batch bt;
		gm_hdr h;
		int rv;

		assert_int_equal(len, 200);
		for (int k = 0; k < 3 && bad[i].p[k].size != 0; k++) {
			if (bad[i].p[k].size == 8)
				put_u64le(buf + bad[i].p[k].at,
					  bad[i].p[k].value);
			else
				buf[bad[i].p[k].at] =
				    (uint8_t)bad[i].p[k].value;
		}
		if (bad[i].cut > 0)
			len -= (size_t)bad[i].cut;
		else if (bad[i].cut < 0)
			len = (size_t)-bad[i].cut;
		msg[0] = '\0';
		rv = gm_proto_check_gemm(buf, len, &lim_small, &h, &bt, msg,
					 sizeof(msg));
		if (rv != bad[i].code) {
			fprintf(stderr, "%s: got %s (%s), want %s\n",
				bad[i].name, gm_errname(rv), msg,
				gm_errname(bad[i].code));
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* ---- replies ---- */

static void test_reply_result_in_region(void **state)
{
	gm_reply_job r = {.status = GM_OK, .dtype = GM_FP64, .m = 2, .n = 2};
	char msg[MSG_LEN] = "";
	gm_job_iter it;
	gm_reply_job got;

	(void)state;
	gm_proto_put_hdr(buf, GM_MSG_GEMM_REPLY, 5, 1);
	gm_proto_put_reply_job(buf + GM_HDR_SIZE, &r);
	assert_int_equal(gm_proto_check_reply(buf, GM_HDR_SIZE + 160, 5, 1, msg,
					      sizeof(msg)),
			 GM_OK);
	gm_proto_reply_begin(buf, GM_HDR_SIZE + 160, &it);
	assert_int_equal(gm_proto_reply_next(&it, &got), GM_OK);
	assert_int_equal(got.result_bytes, 0);
	assert_null(got.result);
	/* Anything between 0 and the whole result is still wrong. */
	r.result_bytes = 16;
	gm_proto_put_reply_job(buf + GM_HDR_SIZE, &r);
	assert_int_equal(gm_proto_check_reply(buf, GM_HDR_SIZE + 160 + 16, 5, 1,
					      msg, sizeof(msg)),
			 GM_EFIELD);
}

/* ---- hand-off records ---- */

static void test_handoff_round_trip(void **state)
{
	gm_handoff_req q = {.op = GM_HANDOFF_REGISTER, .size = 1u << 20}, gq;
	gm_handoff_rep r = {.op = GM_HANDOFF_REGISTER,
			    .status = GM_OK,
			    .region = RID,
			    .size = 1u << 20},
		       gr;
	char msg[MSG_LEN] = "";

	(void)state;
	gm_handoff_put_req(buf + 1, &q);
	assert_memory_equal(buf + 1, "GMRG\x01\x00\x01\x00", 8);
	assert_int_equal(gm_handoff_get_req(buf + 1, GM_HANDOFF_REQ_SIZE, &gq,
					    msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(gq.op, q.op);
	assert_int_equal(gq.size, q.size);
	assert_int_equal(gq.region, 0);
	gm_handoff_put_rep(buf + 3, &r);
	assert_int_equal(gm_handoff_get_rep(buf + 3, GM_HANDOFF_REP_SIZE, &gr,
					    msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(gr.region, RID);
	assert_int_equal(gr.size, 1u << 20);
	assert_string_equal(gr.message, "");
	/* A refusal without a message carries the code's text. */
	r = (gm_handoff_rep){.op = GM_HANDOFF_RELEASE, .status = GM_ENOTFOUND};
	gm_handoff_put_rep(buf, &r);
	assert_int_equal(
	    gm_handoff_get_rep(buf, GM_HANDOFF_REP_SIZE, &gr, msg, sizeof(msg)),
	    GM_OK);
	assert_int_equal(gr.status, GM_ENOTFOUND);
	assert_string_equal(gr.message, gm_strerror(GM_ENOTFOUND));
}

struct rec_case {
	const char *name;
	int code;
	size_t len;
	struct patch p[3];
};

/* Against a REGISTER of 4096 bytes. */
static const struct rec_case bad_recs[] = {
    {"short", GM_ETRUNC, 31, {{0}}},
    {"long", GM_ETRAILING, 33, {{0}}},
    {"magic", GM_EMAGIC, 32, {{0, 1, 'X'}}},
    {"version 2", GM_EVERSION, 32, {{4, 1, 2}}},
    {"op 3", GM_EMSGTYPE, 32, {{6, 1, 3}}},
    {"op 0", GM_EMSGTYPE, 32, {{6, 1, 0}}},
    {"flags", GM_EFIELD, 32, {{24, 1, 1}}},
    {"reserved", GM_EFIELD, 32, {{31, 1, 1}}},
    {"register naming a region", GM_EFIELD, 32, {{16, 8, RID}}},
    {"register of 0 bytes", GM_EFIELD, 32, {{8, 8, 0}}},
    {"release with a size", GM_EFIELD, 32, {{6, 1, 2}, {16, 8, RID}}},
    {"release of region 0", GM_EFIELD, 32, {{6, 1, 2}, {8, 8, 0}}},
    {"release: accepted", GM_OK, 32, {{6, 1, 2}, {8, 8, 0}, {16, 8, RID}}},
};

static void test_handoff_bad_records(void **state)
{
	gm_handoff_req q = {.op = GM_HANDOFF_REGISTER, .size = 4096}, got;
	char msg[MSG_LEN];
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_recs) / sizeof(bad_recs[0]); i++) {
		int rv;

		memset(buf, 0, 64);
		gm_handoff_put_req(buf, &q);
		for (int k = 0; k < 3 && bad_recs[i].p[k].size != 0; k++) {
			if (bad_recs[i].p[k].size == 8)
				put_u64le(buf + bad_recs[i].p[k].at,
					  bad_recs[i].p[k].value);
			else
				buf[bad_recs[i].p[k].at] =
				    (uint8_t)bad_recs[i].p[k].value;
		}
		rv = gm_handoff_get_req(buf, bad_recs[i].len, &got, msg,
					sizeof(msg));
		if (rv != bad_recs[i].code) {
			fprintf(stderr, "%s: got %s, want %s\n",
				bad_recs[i].name, gm_errname(rv),
				gm_errname(bad_recs[i].code));
			failed++;
		}
	}
	assert_int_equal(failed, 0);
	/* A reply with reserved bytes set is refused too. */
	gm_handoff_put_rep(buf, &(gm_handoff_rep){.op = 1});
	buf[12] = 1;
	assert_int_equal(gm_handoff_get_rep(buf, GM_HANDOFF_REP_SIZE,
					    &(gm_handoff_rep){0}, msg,
					    sizeof(msg)),
			 GM_EFIELD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refs_round_trip),
	    cmocka_unit_test(test_payload_sizes),
	    cmocka_unit_test(test_mixed_job_iterates),
	    cmocka_unit_test(test_regions_lift_max_job_bytes),
	    cmocka_unit_test(test_bad_descriptors),
	    cmocka_unit_test(test_reply_result_in_region),
	    cmocka_unit_test(test_handoff_round_trip),
	    cmocka_unit_test(test_handoff_bad_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
