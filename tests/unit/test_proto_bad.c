/*
 * test_proto_bad.c - unit tests for proto/gm_proto: the tables of
 * malformed frames, one row per check of PROTOCOL.md §8, §5.1 and §6,
 * each with the one code the specification assigns to it and the check
 * that must give it, run through the stream readers of proto_fx.h.
 */
#include "proto_fx.h"

/* ---- tables of malformed frames ---- */

/* The frames the rows start from: id 77, each accepted as it is. */
enum base {
	/* GEMM, priority 2: job 0 fp32 2x2x3 with C (64 payload bytes),
	 * job 1 fp16 1x2x1 (6); body 182 bytes. */
	FR_GEMM,
	/* GEMM: job 0 fp32 2x3x4 with C and regions (A at RID+0, B
	 * inline, C at RID2+0, OUT at RID+65536: 48 payload bytes), job 1
	 * fp64 1x1x1 (16); body 240 bytes. */
	FR_REGIONS,
	/* CTRL {"op":"ping"}; body 13 bytes. */
	FR_CTRL,
	/* GEMM_REPLY of job 1 of 2: fp32 2x3 row-major, 24 result bytes;
	 * body 200. */
	FR_REPLY,
	/* GEMM_REPLY of job 1 of 2: failed, EUNSUPPORTED; body 176. */
	FR_FAILED,
	/* ERROR EBUSY, "queue full"; body 104. */
	FR_ERROR,
};

static size_t put_base(uint8_t *p, int base)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	gm_job_desc d[2] = {job(GM_FP32, 2, 2, 3), job(GM_FP16, 1, 2, 1)};
	const gm_region_ref ref[2][GM_OPND_COUNT] = {
	    [0] = {{RID, 0}, {0, 0}, {RID2, 0}, {RID, 65536}}};
	gm_reply_job rj = {.status = GM_OK,
			   .dtype = GM_FP32,
			   .m = 2,
			   .n = 3,
			   .t = {1, 2, 3, 4, 10},
			   .result_bytes = 24};
	const gm_batch b = {.priority = 2};

	d[0].flags = GM_JOB_HAS_C;
	d[0].beta = 0.5;
	d[1].alpha = -2;
	d[1].trans_b = 1;
	switch (base) {
	case FR_GEMM:
		return put_request(p, sizeof(buf), 77, &b, d, NULL, 2);
	case FR_REGIONS:
		d[0] = job(GM_FP32, 2, 3, 4);
		d[0].flags = GM_JOB_HAS_C | GM_JOB_REGIONS;
		d[1] = job(GM_FP64, 1, 1, 1);
		return put_request(p, sizeof(buf), 77, &b, d, ref, 2);
	case FR_CTRL:
		gm_proto_put_hdr(p, GM_MSG_CTRL, 77, 0, sizeof(ping) - 1);
		memcpy(p + GM_HDR_SIZE, ping, sizeof(ping) - 1);
		return GM_HDR_SIZE + sizeof(ping) - 1;
	case FR_REPLY:
		return put_reply(p, 77, 1, &rj);
	case FR_FAILED:
		rj = (gm_reply_job){.status = GM_EUNSUPPORTED,
				    .dtype = GM_BF16,
				    .layout = GM_COL_MAJOR,
				    .m = 9,
				    .n = 9,
				    .t = {.total_us = 5}};
		snprintf(rj.message, sizeof(rj.message), "tiled: no bf16");
		return put_reply(p, 77, 1, &rj);
	default:
		gm_proto_put_error(p, 77, GM_EBUSY, "queue full");
		return GM_HDR_SIZE + GM_ERROR_SIZE;
	}
}

/* Builds a row's frame in buf: the base, delta body bytes added (zeros)
 * or cut with the header's length following, then the patches. Returns
 * its length; *honest says whether the header's length is still the
 * bytes that follow it. */
static size_t make_frame(int base, long delta, const struct patch *p,
			 int *honest)
{
	size_t len = put_base(buf, base), n = (size_t)((long)len + delta);

	if (delta > 0)
		memset(buf + len, 0, (size_t)delta);
	put_le(buf + 24, 8, n - GM_HDR_SIZE);
	apply_patches(buf, p, 4);
	*honest = get_le(buf + 24, 8) == n - GM_HDR_SIZE;
	return n;
}

/* A request row: the check of PROTOCOL.md §8 (its step number; 0 when
 * the frame is accepted) and the code it must give. */
struct bad_request {
	const char *name;
	int base;
	int step;
	int code;
	long delta;
	struct patch p[4];
};

#define H(x)	   (x)
#define B(x)	   (GM_HDR_SIZE + (x))
#define J0(x)	   (GM_HDR_SIZE + GM_BATCH_SIZE + (x))
#define J1(x)	   (J0(GM_JOB_HDR_SIZE) + (x))
#define D0(op, f)  (J1(GM_JOB_HDR_SIZE) + 16 * (op) + 8 * (f)) /* f 0: id */
#define U32(x)	   4, (x)
#define U64(x)	   8, (x)
#define F64_NAN	   0x7ff8000000000000u
#define F64_INF	   0x7ff0000000000000u
#define F64_NEGINF 0xfff0000000000000u
#define U32_MAX	   UINT32_MAX
#define U64_MAX	   UINT64_MAX
#define P30	   (1u << 30)
#define P31	   (1u << 31)
#define OPA	   GM_OPND_A
#define OPB	   GM_OPND_B
#define OPC	   GM_OPND_C
#define OUT	   GM_OPND_OUT
#define GEMM_BODY  182
#define REGS_BODY  240
#define CTRL_BODY  13

/* Against lim_small: 4 jobs, dims up to 64, 4096 bytes a job, GEMM
 * bodies up to 1024 bytes, CTRL up to 64. In the order of §8. */
/* clang-format off */
static const struct bad_request bad_requests[] = {
    {"GEMM: accepted", FR_GEMM, 0, GM_OK, 0, {{0}}},
    {"with regions: accepted", FR_REGIONS, 0, GM_OK, 0, {{0}}},
    {"CTRL: accepted", FR_CTRL, 0, GM_OK, 0, {{0}}},
    /* 1: a v1 client's handshake, first on a connection */
    {"v1 handshake", FR_GEMM, 1, GM_EVERSION, 0, {{H(0), U32(0x00505300)}}},
    /* 2-5: the header */
    {"bad magic", FR_GEMM, 2, GM_EMAGIC, 0, {{H(0), 1, 'g'}}},
    {"magic byte-swapped", FR_GEMM, 2, GM_EMAGIC, 0, {{H(0), U32(0x47454d4d)}}},
    {"magic before version",
     FR_GEMM, 2, GM_EMAGIC, 0, {{H(3), 1, 0}, {H(4), 2, 1}}},
    {"version 1", FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 1}}},
    {"version 3", FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 3}}},
    {"version byte-swapped", FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 0x200}}},
    {"version before type",
     FR_GEMM, 3, GM_EVERSION, 0, {{H(4), 2, 1}, {H(6), 2, 0}}},
    {"type 0", FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 0}}},
    {"type 6", FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 6}}},
    {"type 0x0100", FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 0x100}}},
    {"type before flags",
     FR_GEMM, 4, GM_EMSGTYPE, 0, {{H(6), 2, 7}, {H(20), U32(1)}}},
    {"header flags bit 0", FR_GEMM, 5, GM_EFIELD, 0, {{H(20), U32(1)}}},
    {"header flags bit 31", FR_GEMM, 5, GM_EFIELD, 0, {{H(20), U32(P31)}}},
    {"CTRL header flags", FR_CTRL, 5, GM_EFIELD, 0, {{H(20), U32(2)}}},
    {"flags before the request type",
     FR_GEMM, 5, GM_EFIELD, 0, {{H(20), U32(1)}, {H(6), 2, GM_MSG_GEMM_REPLY}}},
    /* 6: a request type */
    {"GEMM_REPLY as a request",
     FR_GEMM, 6, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_GEMM_REPLY}}},
    {"CTRL_REPLY as a request",
     FR_CTRL, 6, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_CTRL_REPLY}}},
    {"ERROR as a request",
     FR_GEMM, 6, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_ERROR}}},
    {"type before length",
     FR_GEMM, 6, GM_EMSGTYPE, 0,
     {{H(6), 2, GM_MSG_GEMM_REPLY}, {H(24), U64(U64_MAX)}}},
    /* 7: CTRL count and length; GEMM length */
    {"CTRL count 1", FR_CTRL, 7, GM_EFIELD, 0, {{H(16), U32(1)}}},
    {"CTRL count 2^32-1", FR_CTRL, 7, GM_EFIELD, 0, {{H(16), U32(U32_MAX)}}},
    {"CTRL over max_ctrl", FR_CTRL, 7, GM_ETOOBIG, 65 - CTRL_BODY, {{0}}},
    {"CTRL length lies: 2^64-1",
     FR_CTRL, 7, GM_ETOOBIG, 0, {{H(24), U64(U64_MAX)}}},
    {"CTRL length before count",
     FR_CTRL, 7, GM_ETOOBIG, 65 - CTRL_BODY, {{H(16), U32(1)}}},
    {"CTRL of max_ctrl bytes: accepted",
     FR_CTRL, 0, GM_OK, 64 - CTRL_BODY, {{0}}},
    {"CTRL, empty: accepted", FR_CTRL, 0, GM_OK, -CTRL_BODY, {{0}}},
    {"over max_frame", FR_GEMM, 7, GM_ETOOBIG, 1025 - GEMM_BODY, {{0}}},
    {"length lies: 2^64-1", FR_GEMM, 7, GM_ETOOBIG, 0, {{H(24), U64(U64_MAX)}}},
    {"max_frame before count",
     FR_GEMM, 7, GM_ETOOBIG, 1025 - GEMM_BODY, {{H(16), U32(0)}}},
    /* 8-10: count, and the head it needs */
    {"count 0", FR_GEMM, 8, GM_EFIELD, 0, {{H(16), U32(0)}}},
    {"count 0, empty body",
     FR_GEMM, 8, GM_EFIELD, -GEMM_BODY, {{H(16), U32(0)}}},
    {"count 5, over max_jobs", FR_GEMM, 9, GM_ETOOMANY, 0, {{H(16), U32(5)}}},
    {"count 2^32-1", FR_GEMM, 9, GM_ETOOMANY, 0, {{H(16), U32(U32_MAX)}}},
    {"count lies: 4 jobs need 208 bytes",
     FR_GEMM, 10, GM_ETRUNC, 0, {{H(16), U32(4)}}},
    {"length 0", FR_GEMM, 10, GM_ETRUNC, -GEMM_BODY, {{0}}},
    {"length one short of the head",
     FR_GEMM, 10, GM_ETRUNC, 111 - GEMM_BODY, {{0}}},
    {"length lies: 0", FR_GEMM, 10, GM_ETRUNC, 0, {{H(24), U64(0)}}},
    /* 11-12: the batch header */
    {"priority 4", FR_GEMM, 11, GM_EFIELD, 0, {{B(0), 1, 4}}},
    {"priority 255", FR_GEMM, 11, GM_EFIELD, 0, {{B(0), 1, 255}}},
    {"batch reserved byte 1", FR_GEMM, 11, GM_EFIELD, 0, {{B(1), 1, 1}}},
    {"batch reserved byte 3", FR_GEMM, 11, GM_EFIELD, 0, {{B(3), 1, 0x80}}},
    {"batch reserved 12..15", FR_GEMM, 11, GM_EFIELD, 0, {{B(15), 1, 1}}},
    {"batch flags bit 1", FR_GEMM, 12, GM_EFIELD, 0, {{B(8), U32(2)}}},
    {"batch flags bit 31, DETACH",
     FR_GEMM, 12, GM_EFIELD, 0, {{B(8), U32(P31 | 1)}}},
    {"DETACH: accepted", FR_GEMM, 0, GM_OK, 0, {{B(8), U32(1)}}},
    {"priority 0, no deadline: accepted", FR_GEMM, 0, GM_OK, 0, {{B(0), 1, 0}}},
    {"priority 3, deadline 2^32-1: accepted",
     FR_GEMM, 0, GM_OK, 0, {{B(0), 1, 3}, {B(4), U32(U32_MAX)}}},
    {"batch before job headers",
     FR_GEMM, 11, GM_EFIELD, 0, {{B(0), 1, 4}, {J0(0), 1, 0}}},
    /* 13: each job header */
    {"job 0 dtype 0", FR_GEMM, 13, GM_EDTYPE, 0, {{J0(0), 1, 0}}},
    {"job 0 dtype 6", FR_GEMM, 13, GM_EDTYPE, 0, {{J0(0), 1, 6}}},
    {"job 1 dtype 255", FR_GEMM, 13, GM_EDTYPE, 0, {{J1(0), 1, 255}}},
    {"job reserved byte 7", FR_GEMM, 13, GM_EFIELD, 0, {{J0(7), 1, 1}}},
    {"job reserved 20..23", FR_GEMM, 13, GM_EFIELD, 0, {{J0(23), 1, 1}}},
    {"dtype before reserved",
     FR_GEMM, 13, GM_EDTYPE, 0, {{J0(0), 1, 9}, {J0(6), 1, 1}}},
    {"trans_a 2", FR_GEMM, 13, GM_EFIELD, 0, {{J0(1), 1, 2}}},
    {"trans_b 255", FR_GEMM, 13, GM_EFIELD, 0, {{J1(2), 1, 255}}},
    {"layout 2", FR_GEMM, 13, GM_EFIELD, 0, {{J0(3), 1, 2}}},
    {"kernel 3", FR_GEMM, 13, GM_EFIELD, 0, {{J0(4), 1, 3}}},
    {"job flag bit 2", FR_GEMM, 13, GM_EFIELD, 0, {{J0(5), 1, 0x05}}},
    {"job flag bit 7", FR_GEMM, 13, GM_EFIELD, 0, {{J1(5), 1, 0x80}}},
    {"alpha NaN", FR_GEMM, 13, GM_EFIELD, 0, {{J0(24), U64(F64_NAN)}}},
    {"alpha +inf", FR_GEMM, 13, GM_EFIELD, 0, {{J0(24), U64(F64_INF)}}},
    {"beta -inf", FR_GEMM, 13, GM_EFIELD, 0, {{J0(32), U64(F64_NEGINF)}}},
    {"beta NaN on a job without C",
     FR_GEMM, 13, GM_EFIELD, 0, {{J1(32), U64(F64_NAN)}}},
    {"fields before dims",
     FR_GEMM, 13, GM_EFIELD, 0, {{J0(3), 1, 2}, {J0(8), U32(0)}}},
    {"m 0", FR_GEMM, 13, GM_EDIM, 0, {{J0(8), U32(0)}}},
    {"n 0", FR_GEMM, 13, GM_EDIM, 0, {{J0(12), U32(0)}}},
    {"job 1 k 0", FR_GEMM, 13, GM_EDIM, 0, {{J1(16), U32(0)}}},
    {"zero dim before overflow",
     FR_GEMM, 13, GM_EDIM, 0,
     {{J0(8), U32(0)}, {J0(12), U32(U32_MAX)}, {J0(16), U32(U32_MAX)}}},
    {"A bytes overflow, before max_dim",
     FR_GEMM, 13, GM_EOVERFLOW, 0,
     {{J0(8), U32(U32_MAX)}, {J0(16), U32(U32_MAX)}}},
    {"A + B + C overflows",
     FR_GEMM, 13, GM_EOVERFLOW, 0,
     {{J0(8), U32(P30)}, {J0(12), U32(P30)}, {J0(16), U32(P31)}}},
    {"m 65, over max_dim", FR_GEMM, 13, GM_EDIM, 0, {{J0(8), U32(65)}}},
    {"n over the ceiling",
     FR_GEMM, 13, GM_EDIM, 0, {{J0(12), U32(GM_MAX_DIM + 1)}}},
    {"job 1 k 65", FR_GEMM, 13, GM_EDIM, 0, {{J1(16), U32(65)}}},
    {"job 0 before job 1",
     FR_GEMM, 13, GM_EDIM, 0, {{J0(8), U32(0)}, {J1(0), 1, 0}}},
    {"count lies: 3, payload read as job 2",
     FR_GEMM, 13, GM_EDTYPE, 0, {{H(16), U32(3)}}},
    /* 14: room for the descriptors */
    {"descriptors missing",
     FR_GEMM, 14, GM_ETRUNC, 0,
     {{J0(5), 1, GM_JOB_HAS_C | GM_JOB_REGIONS}, {J1(5), 1, GM_JOB_REGIONS}}},
    {"length ends in the descriptor",
     FR_REGIONS, 14, GM_ETRUNC, 175 - REGS_BODY, {{0}}},
    {"length lies: ends in the descriptor",
     FR_REGIONS, 14, GM_ETRUNC, 0, {{H(24), U64(175)}}},
    /* 15: the descriptors, as §14.3 */
    {"14.3/1: inline B with an offset",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OPB, 1), U64(4)}}},
    {"14.3/1: inline OUT with an offset",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OUT, 0), U64(0)}}},
    {"14.3/1: C in a region, no HAS_C",
     FR_REGIONS, 15, GM_EFIELD, 0, {{J0(5), 1, GM_JOB_REGIONS}}},
    {"14.3/2: A offset 2",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OPA, 1), U64(2)}}},
    {"14.3/2: OUT offset 65538",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OUT, 1), U64(65538)}}},
    {"14.3/3: A offset + 32 overflows",
     FR_REGIONS, 15, GM_EBOUNDS, 0, {{D0(OPA, 1), U64(U64_MAX - 3)}}},
    {"14.3/3: OUT offset + 24 overflows",
     FR_REGIONS, 15, GM_EBOUNDS, 0, {{D0(OUT, 1), U64(U64_MAX - 7)}}},
    {"14.3/2 before 3",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OPA, 1), U64(U64_MAX - 1)}}},
    {"14.3/4: OUT overlaps A",
     FR_REGIONS, 15, GM_EFIELD, 0, {{D0(OUT, 1), U64(16)}}},
    {"14.3/4: OUT overlaps A by 4 bytes",
     FR_REGIONS, 15, GM_EFIELD, 0,
     {{D0(OPA, 1), U64(20)}, {D0(OUT, 1), U64(0)}}},
    {"14.3/4: OUT overlaps C in part",
     FR_REGIONS, 15, GM_EFIELD, 0,
     {{D0(OUT, 0), U64(RID2)}, {D0(OUT, 1), U64(4)}}},
    {"14.3/4: OUT is C: accepted",
     FR_REGIONS, 0, GM_OK, 0, {{D0(OUT, 0), U64(RID2)}, {D0(OUT, 1), U64(0)}}},
    {"14.3/4: OUT just after A: accepted",
     FR_REGIONS, 0, GM_OK, 0, {{D0(OUT, 1), U64(32)}}},
    {"14.3/4: OUT just before A: accepted",
     FR_REGIONS, 0, GM_OK, 0, {{D0(OPA, 1), U64(24)}, {D0(OUT, 1), U64(0)}}},
    {"14.3/4: A and B overlap: accepted",
     FR_REGIONS, 0, GM_OK, -48, {{D0(OPB, 0), U64(RID)}, {J0(40), U64(0)}}},
    /* 16: inline bytes within max_job_bytes */
    {"job 0 over max_job_bytes",
     FR_GEMM, 16, GM_ETOOBIG, 0,
     {{J0(8), U32(32)}, {J0(12), U32(32)}, {J0(16), U32(32)}}},
    {"job 1 over max_job_bytes",
     FR_GEMM, 16, GM_ETOOBIG, 0,
     {{J1(8), U32(64)}, {J1(12), U32(64)}, {J1(16), U32(64)}}},
    {"inline B over max_job_bytes",
     FR_REGIONS, 16, GM_ETOOBIG, 0, {{J0(12), U32(32)}, {J0(16), U32(33)}}},
    {"all in regions: no limit",
     FR_REGIONS, 0, GM_OK, -48,
     {{D0(OPB, 0), U64(RID)}, {J0(40), U64(0)}, {J0(12), U32(32)},
      {J0(16), U32(33)}}},
    {"descriptor before max_job_bytes",
     FR_REGIONS, 15, GM_EFIELD, 0,
     {{J0(12), U32(32)}, {J0(16), U32(33)}, {D0(OUT, 1), U64(16)}}},
    /* 17: payload_bytes */
    {"payload_bytes one short", FR_GEMM, 17, GM_EFIELD, 0, {{J0(40), U64(63)}}},
    {"payload_bytes one over", FR_GEMM, 17, GM_EFIELD, 0, {{J0(40), U64(65)}}},
    {"payload_bytes 2^64-1",
     FR_GEMM, 17, GM_EFIELD, 0, {{J0(40), U64(U64_MAX)}}},
    {"job 1 payload_bytes one over",
     FR_GEMM, 17, GM_EFIELD, 0, {{J1(40), U64(7)}}},
    {"payload_bytes and length one over",
     FR_GEMM, 17, GM_EFIELD, 1, {{J0(40), U64(65)}}},
    {"C's bytes sent, HAS_C clear", FR_GEMM, 17, GM_EFIELD, 0, {{J0(5), 1, 0}}},
    {"job 0 payload_bytes before job 1 size",
     FR_GEMM, 17, GM_EFIELD, 0,
     {{J0(40), U64(63)}, {J1(8), U32(64)}, {J1(12), U32(64)},
      {J1(16), U32(64)}}},
    {"regions: payload_bytes one short",
     FR_REGIONS, 17, GM_EFIELD, 0, {{J0(40), U64(47)}}},
    {"regions: payload_bytes one over",
     FR_REGIONS, 17, GM_EFIELD, 0, {{J0(40), U64(49)}}},
    {"regions: payload_bytes as if inline",
     FR_REGIONS, 17, GM_EFIELD, 0, {{J0(40), U64(104)}}},
    /* 18: the frame's length */
    {"length one short", FR_GEMM, 18, GM_ETRUNC, -1, {{0}}},
    {"length one over", FR_GEMM, 18, GM_ETRAILING, 1, {{0}}},
    {"length of two frames", FR_GEMM, 18, GM_ETRAILING, GEMM_BODY + 32, {{0}}},
    {"length lies: 1000", FR_GEMM, 18, GM_ETRAILING, 0, {{H(24), U64(1000)}}},
    {"regions: length one short", FR_REGIONS, 18, GM_ETRUNC, -1, {{0}}},
    {"regions: length one over", FR_REGIONS, 18, GM_ETRAILING, 1, {{0}}},
    {"regions: payload missing", FR_REGIONS, 18, GM_ETRUNC, -64, {{0}}},
};
/* clang-format on */

/* The check of §8 that each step belongs to. */
static enum stage step_stage(int step)
{
	if (step == 0)
		return AT_END;
	if (step == 1)
		return AT_SP;
	if (step <= 5)
		return AT_HDR;
	if (step <= 10)
		return AT_REQUEST;
	return step <= 14 ? AT_HEAD : AT_DESCS;
}

/* What gm_proto_check_gemm says of a whole frame that a stream reader
 * refuses at step: the handshake is no GEMM header, a CTRL no GEMM. */
static int whole_code(const struct bad_request *c)
{
	if (c->step == 1)
		return GM_EMAGIC;
	if (c->base == FR_CTRL && c->step != 5)
		return GM_EMSGTYPE;
	return c->code;
}

static const char *const stage_names[] = {
    [AT_SP] = "is_sp",
    [AT_HDR] = "get_hdr",
    [AT_REQUEST] = "check_request",
    [AT_HEAD] = "check_head",
    [AT_DESCS] = "check_descs",
    [AT_REPLY_HDR] = "check_reply_hdr",
    [AT_REPLY_JOB] = "get_reply_job",
    [AT_ERROR] = "get_error",
    [AT_END] = "the end",
};

/* rv and the stage at against a row's; a refusal must leave a message
 * in msg. */
static int check_row(const char *name, int rv, int want, enum stage at,
		     enum stage want_at)
{
	if (rv != want || at != want_at) {
		print_error("\"%s\": got %s at %s (%s), want %s at %s\n", name,
			    gm_errname(rv), stage_names[at], msg,
			    gm_errname(want), stage_names[want_at]);
		return 1;
	}
	if (rv != GM_OK && msg[0] == '\0') {
		print_error("\"%s\": no message\n", name);
		return 1;
	}
	return 0;
}

static void test_bad_requests(void **state)
{
	struct request r;
	int failed = 0, honest, rv;
	uint8_t *frame;
	gm_batch b;
	gm_hdr h;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]);
	     i++) {
		const struct bad_request *c = &bad_requests[i];
		size_t len = make_frame(c->base, c->delta, c->p, &honest);

		rv = read_one(buf, len, &lim_small, &r);
		failed +=
		    check_row(c->name, rv, c->code, r.at, step_stage(c->step));
		if (r.at > AT_SP)
			assert_int_equal(r.h.id, 77);
		request_free(&r);
		if (!honest)
			continue;
		/* The same frame whole, in a buffer of its size. */
		frame = exact(buf, len);
		msg[0] = '\0';
		rv = check_gemm(frame, len, &lim_small, &h, &b);
		exact_free(frame);
		failed += check_row(c->name, rv, whole_code(c), AT_END, AT_END);
		assert_int_equal(h.id, 77);
	}
	assert_int_equal(failed, 0);
}

/* A reply-side row: the check that refuses it (enum stage; AT_END when
 * the frame is accepted) and its code. */
struct bad_reply {
	const char *name;
	int base;
	enum stage at;
	int code;
	long delta;
	struct patch p[4];
};

#define R(x) (GM_HDR_SIZE + (x))

/* Against a client waiting for the replies of a request of 2 jobs. In
 * the order of §5.1, then §6. */
/* clang-format off */
static const struct bad_reply bad_replies[] = {
    {"reply: accepted", FR_REPLY, AT_END, GM_OK, 0, {{0}}},
    {"failed: accepted", FR_FAILED, AT_END, GM_OK, 0, {{0}}},
    {"bad magic", FR_REPLY, AT_HDR, GM_EMAGIC, 0, {{H(1), 1, 'e'}}},
    {"version 1", FR_REPLY, AT_HDR, GM_EVERSION, 0, {{H(4), 2, 1}}},
    {"type 9", FR_REPLY, AT_HDR, GM_EMSGTYPE, 0, {{H(6), 2, 9}}},
    {"header flags", FR_REPLY, AT_HDR, GM_EFIELD, 0, {{H(20), U32(4)}}},
    {"a GEMM request",
     FR_REPLY, AT_REPLY_HDR, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_GEMM}}},
    {"a CTRL_REPLY",
     FR_REPLY, AT_REPLY_HDR, GM_EMSGTYPE, 0, {{H(6), 2, GM_MSG_CTRL_REPLY}}},
    {"type before index",
     FR_REPLY, AT_REPLY_HDR, GM_EMSGTYPE, 0,
     {{H(6), 2, GM_MSG_CTRL}, {H(16), U32(9)}}},
    {"job index 2 of 2",
     FR_REPLY, AT_REPLY_HDR, GM_EFIELD, 0, {{H(16), U32(2)}}},
    {"job index 2^32-1",
     FR_FAILED, AT_REPLY_HDR, GM_EFIELD, 0, {{H(16), U32(U32_MAX)}}},
    {"length 159", FR_FAILED, AT_REPLY_HDR, GM_ETRUNC, -1, {{0}}},
    {"length 0", FR_REPLY, AT_REPLY_HDR, GM_ETRUNC, -184, {{0}}},
    {"index before length",
     FR_REPLY, AT_REPLY_HDR, GM_EFIELD, -184, {{H(16), U32(2)}}},
    {"reserved byte 6", FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(6), 1, 1}}},
    {"reserved byte 7, failed",
     FR_FAILED, AT_REPLY_JOB, GM_EFIELD, 0, {{R(7), 1, 0x80}}},
    {"reserved before dtype",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(6), 1, 1}, {R(4), 1, 0}}},
    {"ok, dtype 0", FR_REPLY, AT_REPLY_JOB, GM_EDTYPE, 0, {{R(4), 1, 0}}},
    {"ok, dtype 6", FR_REPLY, AT_REPLY_JOB, GM_EDTYPE, 0, {{R(4), 1, 6}}},
    {"dtype before layout",
     FR_REPLY, AT_REPLY_JOB, GM_EDTYPE, 0, {{R(4), 1, 0}, {R(5), 1, 2}}},
    {"ok, layout 2", FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(5), 1, 2}}},
    {"layout before dims",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(5), 1, 2}, {R(8), U32(0)}}},
    {"ok, m 0", FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(8), U32(0)}}},
    {"ok, n 0", FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(12), U32(0)}}},
    {"ok, m over the ceiling",
     FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(8), U32(GM_MAX_DIM + 1)}}},
    {"ok, n 2^32-1",
     FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(12), U32(U32_MAX)}}},
    {"dims before result_bytes",
     FR_REPLY, AT_REPLY_JOB, GM_EDIM, 0, {{R(8), U32(0)}, {R(56), U64(1)}}},
    {"ok, result_bytes 23",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(56), U64(23)}}},
    {"ok, result_bytes 25",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(56), U64(25)}}},
    {"ok, result_bytes 2^64-1",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 0, {{R(56), U64(U64_MAX)}}},
    {"ok, result_bytes and length one over",
     FR_REPLY, AT_REPLY_JOB, GM_EFIELD, 1, {{R(56), U64(25)}}},
    {"ok, result in a region: accepted",
     FR_REPLY, AT_END, GM_OK, -24, {{R(56), U64(0)}}},
    {"ok, result in a region and sent",
     FR_REPLY, AT_REPLY_JOB, GM_ETRAILING, 0, {{R(56), U64(0)}}},
    {"ok, fp64 of 48 bytes: accepted",
     FR_REPLY, AT_END, GM_OK, 24, {{R(4), 1, GM_FP64}, {R(56), U64(48)}}},
    {"ok, column-major: accepted",
     FR_REPLY, AT_END, GM_OK, 0, {{R(5), 1, GM_COL_MAJOR}}},
    {"ok, length one short", FR_REPLY, AT_REPLY_JOB, GM_ETRUNC, -1, {{0}}},
    {"ok, length one over", FR_REPLY, AT_REPLY_JOB, GM_ETRAILING, 1, {{0}}},
    {"ok, length lies: 2^64-1",
     FR_REPLY, AT_REPLY_JOB, GM_ETRAILING, 0, {{H(24), U64(U64_MAX)}}},
    {"failed, with a result",
     FR_FAILED, AT_REPLY_JOB, GM_EFIELD, 24, {{R(56), U64(24)}}},
    {"failed, nonsense shape: accepted",
     FR_FAILED, AT_END, GM_OK, 0,
     {{R(4), 1, 200}, {R(5), 1, 7}, {R(8), U32(0)}, {R(12), U32(U32_MAX)}}},
    {"failed, unknown status: accepted",
     FR_FAILED, AT_END, GM_OK, 0, {{R(0), U32(1000)}}},
    {"failed, length one over",
     FR_FAILED, AT_REPLY_JOB, GM_ETRAILING, 1, {{0}}},
    /* §6 */
    {"ERROR: accepted", FR_ERROR, AT_END, GM_OK, 0, {{0}}},
    {"ERROR count 1", FR_ERROR, AT_ERROR, GM_EFIELD, 0, {{H(16), U32(1)}}},
    {"ERROR length 103", FR_ERROR, AT_ERROR, GM_EFIELD, -1, {{0}}},
    {"ERROR length 105", FR_ERROR, AT_ERROR, GM_EFIELD, 1, {{0}}},
    {"ERROR length 0", FR_ERROR, AT_ERROR, GM_EFIELD, -GM_ERROR_SIZE, {{0}}},
    {"ERROR status 0", FR_ERROR, AT_ERROR, GM_EFIELD, 0, {{R(0), U32(0)}}},
    {"ERROR reserved 4..7", FR_ERROR, AT_ERROR, GM_EFIELD, 0, {{R(7), 1, 1}}},
    {"ERROR unknown status: accepted",
     FR_ERROR, AT_END, GM_OK, 0, {{R(0), U32(1000)}}},
    {"ERROR as a GEMM_REPLY",
     FR_ERROR, AT_REPLY_HDR, GM_ETRUNC, 0, {{H(6), 2, GM_MSG_GEMM_REPLY}}},
    {"GEMM_REPLY as an ERROR",
     FR_REPLY, AT_ERROR, GM_EFIELD, 0, {{H(6), 2, GM_MSG_ERROR}}},
};
/* clang-format on */

static void test_bad_replies(void **state)
{
	struct answer a;
	int failed = 0, honest, rv;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_replies) / sizeof(bad_replies[0]);
	     i++) {
		const struct bad_reply *c = &bad_replies[i];
		size_t len = make_frame(c->base, c->delta, c->p, &honest);
		struct stream s = {buf, len, 0, 0};

		rv = read_answer(&s, 2, &a);
		failed += check_row(c->name, rv, c->code, a.at, c->at);
		assert_int_equal(a.h.id, 77);
		if (rv == GM_OK)
			assert_int_equal(s.pos, len);
		exact_free(a.result);
	}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_bad_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
