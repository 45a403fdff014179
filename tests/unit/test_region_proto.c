/*
 * test_region_proto.c - unit tests for proto/gm_proto_region: the region
 * descriptor of GM_JOB_REGIONS jobs (round trips at odd addresses,
 * payload sizes, a table of descriptors with the code PROTOCOL.md §14.3
 * assigns to each), the job iterator over requests that mix region and
 * inline operands, with and without the payload at hand, the example of
 * §14.6 byte for byte, and the hand-off socket's records and default
 * name. The checks of whole frames that name regions (§8 steps 14-18)
 * are rows of test_proto_bad.c's request table; the scratch buffer, the
 * limits and the region ids are proto_fx.h's.
 */
#include "proto_fx.h"

#define RID_EX 0x6c1f0e2a9d3b4c57ull /* the one of §14.6 */

/* fp32 2x3x4 with C: A 32, B 48, C 24, OUT 24 bytes. */
static gm_job_desc job_c(void)
{
	gm_job_desc d = {.dtype = GM_FP32, .m = 2, .n = 3, .k = 4};

	d.alpha = 1.0;
	d.beta = 0.5;
	d.flags = GM_JOB_HAS_C | GM_JOB_REGIONS;
	return d;
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
	gm_region_ref out[GM_OPND_COUNT] = {{0}, {0}, {0}, {RID, 0}};
	const uint64_t want[GM_OPND_COUNT] = {32, 48, 24, 24};
	gm_job_sizes z;
	uint64_t n;

	(void)state;
	assert_int_equal(gm_proto_job_payload(&d, none, &n), GM_OK);
	assert_int_equal(n, 32 + 48 + 24);
	assert_int_equal(gm_proto_job_payload(&d, ab, &n), GM_OK);
	assert_int_equal(n, 24);
	/* The result is never in the payload. */
	assert_int_equal(gm_proto_job_payload(&d, out, &n), GM_OK);
	assert_int_equal(n, 32 + 48 + 24);
	assert_int_equal(gm_proto_job_payload(&d, NULL, &n), GM_OK);
	assert_int_equal(n, 32 + 48 + 24);
	d.flags = GM_JOB_HAS_C; /* no flag: the refs do not count */
	assert_int_equal(gm_proto_job_payload(&d, ab, &n), GM_OK);
	assert_int_equal(n, 32 + 48 + 24);
	gm_job_sizes_of(&d, &z);
	assert_int_equal(gm_proto_inline_bytes(&z, ab), 24);
	for (int op = 0; op < GM_OPND_COUNT; op++)
		assert_int_equal(gm_operand_bytes(&z, op), want[op]);
	assert_string_equal(gm_operand_name(GM_OPND_OUT), "OUT");
	assert_string_equal(gm_operand_name(GM_OPND_COUNT), "?");
	d.dtype = 0;
	assert_int_equal(gm_proto_job_payload(&d, ab, &n), GM_EDTYPE);
	assert_int_equal(n, 0);
}

/* ---- the iterator ---- */

/* Five jobs: inline with C; A and OUT in regions, B and C inline; all
 * four in regions; inline without C; only OUT in a region. Their
 * payload: operand op of job i is 0x10 * i + op repeated. */
static const gm_region_ref mix_refs[5][GM_OPND_COUNT] = {
    [1] = {{RID, 64}, {0, 0}, {0, 0}, {RID, 0}},
    [2] = {{RID, 0}, {RID, 32}, {RID2, 0}, {RID2, 256}},
    [4] = {{0, 0}, {0, 0}, {0, 0}, {RID2, 8}},
};

/* Where the iterator must find each job's inline operands: offsets in
 * the payload (UINT64_MAX: not inline), and the job's inline span. */
static const struct {
	uint64_t off[GM_OPND_OUT];
	uint64_t inline_off, inline_bytes;
} mix_want[5] = {
    {{0, 32, 80}, 0, 104},
    {{UINT64_MAX, 104, 152}, 104, 72},
    {{UINT64_MAX, UINT64_MAX, UINT64_MAX}, 176, 0},
    {{176, 208, UINT64_MAX}, 176, 80},
    {{256, 288, 336}, 256, 104},
};

static size_t put_mix(uint8_t *p, gm_job_desc d[5])
{
	const gm_batch b = {.priority = 1};
	uint8_t *job = p + GM_HDR_SIZE + GM_BATCH_SIZE;
	uint8_t *q = job + 5 * GM_JOB_HDR_SIZE + 3 * GM_REGION_DESC_SIZE;
	uint8_t *desc = job + 5 * GM_JOB_HDR_SIZE;
	gm_job_sizes z;

	for (int i = 0; i < 5; i++) {
		d[i] = job_c();
		d[i].flags = (i == 3 ? 0 : GM_JOB_HAS_C) |
			     (i == 1 || i == 2 || i == 4 ? GM_JOB_REGIONS : 0);
	}
	for (int i = 0; i < 5; i++, job += GM_JOB_HDR_SIZE) {
		gm_proto_put_job_refs(job, &d[i], mix_refs[i]);
		if (d[i].flags & GM_JOB_REGIONS) {
			gm_proto_put_refs(desc, mix_refs[i]);
			desc += GM_REGION_DESC_SIZE;
		}
		gm_job_sizes_of(&d[i], &z);
		for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
			uint64_t n = gm_operand_bytes(&z, op);

			if ((d[i].flags & GM_JOB_REGIONS) &&
			    gm_ref_in_region(mix_refs[i], op))
				continue;
			memset(q, 0x10 * i + op, n);
			q += n;
		}
	}
	gm_proto_put_hdr(p, GM_MSG_GEMM, 3, 5, (uint64_t)(q - p) - GM_HDR_SIZE);
	gm_proto_put_batch(p + GM_HDR_SIZE, &b);
	return (size_t)(q - p);
}

/* The iterator, over a frame at an odd address, with the payload at
 * hand (pointers into it) and without (offsets only). */
static void test_jobs_iterate_mixed(void **state)
{
	uint8_t *p = buf + 1, *head = p + GM_HDR_SIZE, *desc, *payload;
	gm_job_desc d[5], got;
	gm_job_operands ops;
	gm_job_iter it;
	uint32_t ndesc;
	uint64_t bytes;
	gm_batch b;
	gm_hdr h;
	size_t len = put_mix(p, d);

	(void)state;
	desc = head + GM_BATCH_SIZE + 5 * GM_JOB_HDR_SIZE;
	payload = desc + 3 * GM_REGION_DESC_SIZE;
	assert_int_equal(len, (size_t)(payload - p) + 360);
	assert_int_equal(check_gemm(p, len, &lim_open, &h, &b), GM_OK);
	assert_int_equal(gm_proto_check_head(&h, head, &lim_open, &b, &ndesc,
					     msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(ndesc, 3);
	assert_int_equal(gm_proto_check_descs(&h, head, desc, &lim_open, &bytes,
					      msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(bytes, 360);

	for (int with = 0; with < 2; with++) {
		gm_proto_jobs_begin(&it, &h, head, desc, with ? payload : NULL);
		for (int i = 0; i < 5; i++) {
			assert_int_equal(gm_proto_jobs_next(&it, &got, &ops),
					 GM_OK);
			assert_int_equal(got.flags, d[i].flags);
			assert_memory_equal(ops.ref, mix_refs[i],
					    sizeof(ops.ref));
			assert_int_equal(ops.inline_off,
					 mix_want[i].inline_off);
			assert_int_equal(ops.inline_bytes,
					 mix_want[i].inline_bytes);
			for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
				uint64_t off = mix_want[i].off[op];

				if (off == UINT64_MAX || !with) {
					assert_null(ops.data[op]);
				} else {
					assert_ptr_equal(ops.data[op],
							 payload + off);
					assert_int_equal(ops.data[op][0],
							 0x10 * i + op);
				}
				assert_int_equal(ops.off[op],
						 off == UINT64_MAX ? 0 : off);
			}
		}
		assert_int_equal(gm_proto_jobs_next(&it, &got, &ops),
				 GM_ENOTFOUND);
		assert_int_equal(gm_proto_jobs_next(&it, &got, &ops),
				 GM_ENOTFOUND);
	}
}

/* ---- §14.6, byte for byte ---- */

/* clang-format off */
static const uint8_t example_register[32] = {
	0x47, 0x4d, 0x52, 0x47, 0x01, 0x00, 0x01, 0x00, /* GMRG v1 REGISTER */
	0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, /* size 1 MiB */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* region 0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* flags, reserved */
};

/* The reply record, up to its empty message. */
static const uint8_t example_registered[32] = {
	0x47, 0x4d, 0x52, 0x47, 0x01, 0x00, 0x01, 0x00, /* GMRG v1 REGISTER */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* status 0 */
	0x57, 0x4c, 0x3b, 0x9d, 0x2a, 0x0e, 0x1f, 0x6c, /* region id */
	0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, /* size 1 MiB */
};

/* §12's job with A and B in the region: header, head, descriptor. */
static const uint8_t example_request[160] = {
	0x47, 0x45, 0x4d, 0x4d, 0x02, 0x00, 0x01, 0x00, /* 0000 GEMM v2 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0008 id 1 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0010 count, flags */
	0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0018 length 128 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0020 priority 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0028 flags */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, /* 0030 fp64 REGIONS */
	0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* 0038 m 1, n 1 */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0040 k 1 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, /* 0048 alpha 1.0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0050 beta 0.0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0058 payload 0 */
	0x57, 0x4c, 0x3b, 0x9d, 0x2a, 0x0e, 0x1f, 0x6c, /* 0060 A region */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*      offset 0 */
	0x57, 0x4c, 0x3b, 0x9d, 0x2a, 0x0e, 0x1f, 0x6c, /* 0070 B region */
	0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*      offset 8 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0080 C: none */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0090 OUT: reply */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
/* clang-format on */

static void test_example_region(void **state)
{
	const gm_handoff_req reg = {.op = GM_HANDOFF_REGISTER, .size = 1 << 20};
	const gm_handoff_rep rep = {
	    .op = GM_HANDOFF_REGISTER, .region = RID_EX, .size = 1 << 20};
	gm_region_ref ref[GM_OPND_COUNT] = {{RID_EX, 0}, {RID_EX, 8}};
	gm_job_desc d = {.dtype = GM_FP64, .m = 1, .n = 1, .k = 1};
	const gm_batch b = {.priority = 1};
	gm_reply_job r = {.dtype = GM_FP64, .m = 1, .n = 1}, got;
	gm_job_operands ops;
	gm_job_iter it;
	gm_batch gb;
	gm_hdr h;

	(void)state;
	memset(buf, 0xee, 256);
	gm_handoff_put_req(buf, &reg);
	assert_memory_equal(buf, example_register, sizeof(example_register));
	assert_int_equal(buf[GM_HANDOFF_REQ_SIZE], 0xee);
	gm_handoff_put_rep(buf, &rep);
	assert_memory_equal(buf, example_registered,
			    sizeof(example_registered));
	for (size_t i = 32; i < GM_HANDOFF_REP_SIZE; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(buf[GM_HANDOFF_REP_SIZE], 0xee);

	d.alpha = 1.0;
	d.flags = GM_JOB_REGIONS;
	gm_proto_put_hdr(buf, GM_MSG_GEMM, 1, 1, 128);
	gm_proto_put_batch(buf + GM_HDR_SIZE, &b);
	gm_proto_put_job_refs(buf + GM_HDR_SIZE + GM_BATCH_SIZE, &d, ref);
	gm_proto_put_refs(buf + 0x60, ref);
	assert_memory_equal(buf, example_request, sizeof(example_request));
	assert_int_equal(check_gemm(example_request, sizeof(example_request),
				    &lim_open, &h, &gb),
			 GM_OK);
	gm_proto_jobs_begin(&it, &h, example_request + GM_HDR_SIZE,
			    example_request + 0x60, NULL);
	assert_int_equal(gm_proto_jobs_next(&it, &d, &ops), GM_OK);
	assert_memory_equal(ops.ref, ref, sizeof(ref));
	assert_int_equal(ops.inline_bytes, 0);

	/* With OUT at (region, 16): a 208-byte reply, no result in it. */
	gm_proto_put_hdr(buf, GM_MSG_GEMM_REPLY, 1, 0, 176);
	gm_proto_put_reply_job(buf + GM_HDR_SIZE, &r);
	assert_int_equal(gm_proto_get_hdr(buf, GM_HDR_SIZE, &h, msg, MSG_LEN),
			 GM_OK);
	assert_int_equal(gm_proto_check_reply_hdr(&h, 1, msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(gm_proto_get_reply_job(&h, buf + GM_HDR_SIZE, &got,
						msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(got.result_bytes, 0);
	assert_int_equal(GM_HDR_SIZE + h.length, 208);
}

/* ---- descriptors, as §14.3 checks them ---- */

struct ref_case {
	const char *name;
	int code;
	int dtype;
	int has_c;
	gm_region_ref ref[GM_OPND_COUNT];
};

#define E64 UINT64_MAX

/* Against a 2x3x4 job (fp32 unless said: A 32, B 48, C 24, OUT 24
 * bytes), with or without C. */
/* clang-format off */
static const struct ref_case refs[] = {
    {"all inline", GM_OK, GM_FP32, 1, {{0}}},
    {"all in one region, apart", GM_OK, GM_FP32, 1,
     {{RID, 0}, {RID, 32}, {RID, 80}, {RID, 104}}},
    /* 1: inline operands at offset 0; no C without HAS_C */
    {"1: inline A at 4", GM_EFIELD, GM_FP32, 1, {{0, 4}}},
    {"1: inline C at 8", GM_EFIELD, GM_FP32, 1, {{0}, {0}, {0, 8}}},
    {"1: inline OUT at 8", GM_EFIELD, GM_FP32, 1, {{0}, {0}, {0}, {0, 8}}},
    {"1: C in a region, no HAS_C", GM_EFIELD, GM_FP32, 0,
     {{0}, {0}, {RID, 0}}},
    {"1: no HAS_C, C inline at 0", GM_OK, GM_FP32, 0, {{RID, 0}}},
    {"1: no HAS_C, C inline at 4", GM_EFIELD, GM_FP32, 0, {{0}, {0}, {0, 4}}},
    /* 2: offsets are multiples of the element size */
    {"2: A at 2", GM_EFIELD, GM_FP32, 1, {{RID, 2}}},
    {"2: B at 6", GM_EFIELD, GM_FP32, 1, {{0}, {RID, 6}}},
    {"2: C at 1", GM_EFIELD, GM_FP32, 1, {{0}, {0}, {RID, 1}}},
    {"2: OUT at 3", GM_EFIELD, GM_FP32, 1, {{0}, {0}, {0}, {RID, 3}}},
    {"2: fp64 A at 4", GM_EFIELD, GM_FP64, 1, {{RID, 4}}},
    {"2: fp16 A at 2", GM_OK, GM_FP16, 1, {{RID, 2}}},
    {"2: bf16 OUT at 1", GM_EFIELD, GM_BF16, 1, {{0}, {0}, {0}, {RID, 1}}},
    /* 3: offset + bytes fits in 64 bits */
    {"3: A ends at 2^64", GM_EBOUNDS, GM_FP32, 1, {{RID, E64 - 31}}},
    {"3: A ends 4 bytes short of 2^64", GM_OK, GM_FP32, 1, {{RID, E64 - 35}}},
    {"3: B overflows", GM_EBOUNDS, GM_FP32, 1, {{0}, {RID, E64 - 3}}},
    {"3: OUT overflows", GM_EBOUNDS, GM_FP32, 1,
     {{0}, {0}, {0}, {RID, E64 - 7}}},
    {"2 before 3", GM_EFIELD, GM_FP32, 1, {{RID, E64}}},
    {"3 before 4", GM_EBOUNDS, GM_FP32, 1,
     {{RID, E64 - 3}, {RID, 0}, {0}, {RID, 0}}},
    /* 4: OUT overlaps no input of its region, but may be exactly C */
    {"4: OUT on A", GM_EFIELD, GM_FP32, 1, {{RID, 0}, {0}, {0}, {RID, 0}}},
    {"4: OUT's last 4 bytes on A's first", GM_EFIELD, GM_FP32, 1,
     {{RID, 20}, {0}, {0}, {RID, 0}}},
    {"4: OUT ends where A begins", GM_OK, GM_FP32, 1,
     {{RID, 24}, {0}, {0}, {RID, 0}}},
    {"4: A ends where OUT begins", GM_OK, GM_FP32, 1,
     {{RID, 0}, {0}, {0}, {RID, 32}}},
    {"4: OUT inside B", GM_EFIELD, GM_FP32, 1,
     {{0}, {RID, 32}, {0}, {RID, 40}}},
    {"4: B just after OUT", GM_OK, GM_FP32, 1,
     {{0}, {RID, 24}, {0}, {RID, 0}}},
    {"4: OUT is C", GM_OK, GM_FP32, 1, {{0}, {0}, {RID, 64}, {RID, 64}}},
    {"4: OUT is C shifted by 4", GM_EFIELD, GM_FP32, 1,
     {{0}, {0}, {RID, 64}, {RID, 68}}},
    {"4: OUT at C's offset, another region", GM_OK, GM_FP32, 1,
     {{0}, {0}, {RID2, 64}, {RID, 64}}},
    {"4: OUT is C, but on A", GM_EFIELD, GM_FP32, 1,
     {{RID, 48}, {0}, {RID, 64}, {RID, 64}}},
    {"4: inputs overlap each other", GM_OK, GM_FP32, 1,
     {{RID, 0}, {RID, 0}, {RID, 8}, {RID2, 0}}},
    {"4: OUT over an inline operand's place", GM_OK, GM_FP32, 1,
     {{0}, {0}, {0}, {RID, 0}}},
};
/* clang-format on */

static void test_check_refs(void **state)
{
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		gm_job_desc d = job_c();
		gm_job_sizes z;
		int rv;

		d.dtype = (uint8_t)refs[i].dtype;
		if (!refs[i].has_c)
			d.flags &= (uint8_t)~GM_JOB_HAS_C;
		assert_int_equal(gm_job_sizes_of(&d, &z), GM_OK);
		msg[0] = '\0';
		rv = gm_proto_check_refs(&d, &z, refs[i].ref, msg, sizeof(msg));
		if (rv != refs[i].code || (rv != GM_OK && msg[0] == '\0')) {
			print_error("\"%s\": got %s (%s), want %s\n",
				    refs[i].name, gm_errname(rv), msg,
				    gm_errname(refs[i].code));
			failed++;
		}
	}
	assert_int_equal(failed, 0);
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
	assert_int_equal(gr.op, GM_HANDOFF_REGISTER);
	assert_int_equal(gr.region, RID);
	assert_int_equal(gr.size, 1u << 20);
	assert_string_equal(gr.message, "");
	/* A refusal without a message carries the code's text. */
	r = (gm_handoff_rep){.op = GM_HANDOFF_RELEASE, .status = GM_ENOTFOUND};
	gm_handoff_put_rep(buf + 5, &r);
	assert_int_equal(gm_handoff_get_rep(buf + 5, GM_HANDOFF_REP_SIZE, &gr,
					    msg, sizeof(msg)),
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

/* Against a REGISTER of 4096 bytes; §14.1's checks 1-4. */
static const struct rec_case bad_reqs[] = {
    {"short", GM_ETRUNC, 31, {{0}}},
    {"empty", GM_ETRUNC, 0, {{0}}},
    {"long", GM_ETRAILING, 33, {{0}}},
    {"length before magic", GM_ETRUNC, 31, {{0, 1, 'X'}}},
    {"magic", GM_EMAGIC, 32, {{0, 1, 'X'}}},
    {"magic, last byte", GM_EMAGIC, 32, {{3, 1, 'M'}}},
    {"version 2", GM_EVERSION, 32, {{4, 1, 2}}},
    {"magic before version", GM_EMAGIC, 32, {{0, 1, 'X'}, {4, 1, 2}}},
    {"op 3", GM_EMSGTYPE, 32, {{6, 1, 3}}},
    {"op 0", GM_EMSGTYPE, 32, {{6, 1, 0}}},
    {"version before op", GM_EVERSION, 32, {{4, 1, 2}, {6, 1, 0}}},
    {"flags", GM_EFIELD, 32, {{24, 1, 1}}},
    {"reserved", GM_EFIELD, 32, {{31, 1, 1}}},
    {"op before flags", GM_EMSGTYPE, 32, {{6, 1, 9}, {24, 1, 1}}},
    {"register naming a region", GM_EFIELD, 32, {{16, 8, RID}}},
    {"register of 0 bytes", GM_EFIELD, 32, {{8, 8, 0}}},
    {"release with a size", GM_EFIELD, 32, {{6, 1, 2}, {16, 8, RID}}},
    {"release of region 0", GM_EFIELD, 32, {{6, 1, 2}, {8, 8, 0}}},
    {"release: accepted", GM_OK, 32, {{6, 1, 2}, {8, 8, 0}, {16, 8, RID}}},
};

/* Against a successful REGISTER reply. */
static const struct rec_case bad_reps[] = {
    {"short", GM_ETRUNC, 127, {{0}}},
    {"long", GM_ETRAILING, 129, {{0}}},
    {"magic", GM_EMAGIC, 128, {{1, 1, 'X'}}},
    {"version 0", GM_EVERSION, 128, {{4, 1, 0}}},
    {"reserved 12..15", GM_EFIELD, 128, {{15, 1, 1}}},
    {"unknown op: kept", GM_OK, 128, {{6, 1, 7}}},
    {"a refusal: accepted", GM_OK, 128, {{8, 1, GM_EBOUNDS}}},
};

static void test_handoff_bad_records(void **state)
{
	gm_handoff_req q = {.op = GM_HANDOFF_REGISTER, .size = 4096}, got;
	gm_handoff_rep r = {.op = GM_HANDOFF_REGISTER,
			    .region = RID,
			    .size = 1},
		       got_r;
	const size_t nreq = sizeof(bad_reqs) / sizeof(bad_reqs[0]);
	const size_t nrep = sizeof(bad_reps) / sizeof(bad_reps[0]);
	int failed = 0, rv;

	(void)state;
	for (size_t i = 0; i < nreq + nrep; i++) {
		int reply = i >= nreq;
		const struct rec_case *c =
		    reply ? &bad_reps[i - nreq] : &bad_reqs[i];

		memset(buf, 0, 256);
		if (reply)
			gm_handoff_put_rep(buf, &r);
		else
			gm_handoff_put_req(buf, &q);
		apply_patches(buf, c->p, 3);
		rv = reply ? gm_handoff_get_rep(buf, c->len, &got_r, msg,
						sizeof(msg))
			   : gm_handoff_get_req(buf, c->len, &got, msg,
						sizeof(msg));
		if (rv != c->code) {
			print_error("%s \"%s\": got %s, want %s\n",
				    reply ? "reply" : "request", c->name,
				    gm_errname(rv), gm_errname(c->code));
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* The hand-off socket's default name, from the ipc:// socket's path. */
static void test_handoff_path(void **state)
{
	static const struct {
		const char *ipc, *want;
	} cases[] = {
	    {"/run/gemmd/gemmd.sock", "/run/gemmd/gemmd-regions.sock"},
	    {"/tmp/a.sock", "/tmp/a-regions.sock"},
	    {"/tmp/b.sock", "/tmp/b-regions.sock"},
	    {"/tmp/gemmd", "/tmp/gemmd-regions.sock"},
	    {"/tmp/x.sock.d/y", "/tmp/x.sock.d/y-regions.sock"},
	    {"rel.sock", "rel-regions.sock"},
	    {".sock", "-regions.sock"},
	};
	char out[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(
		    gm_handoff_path(cases[i].ipc, out, sizeof(out)),
		    (int)strlen(cases[i].want));
		assert_string_equal(out, cases[i].want);
	}
	/* Too long: snprintf's count says so, the caller refuses it. */
	assert_true(gm_handoff_path("/tmp/a.sock", out, 8) >= 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refs_round_trip),
	    cmocka_unit_test(test_payload_sizes),
	    cmocka_unit_test(test_jobs_iterate_mixed),
	    cmocka_unit_test(test_example_region),
	    cmocka_unit_test(test_check_refs),
	    cmocka_unit_test(test_handoff_round_trip),
	    cmocka_unit_test(test_handoff_bad_records),
	    cmocka_unit_test(test_handoff_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
