/*
 * mkseeds.c - writes the binary seed corpora, corpus/proto and corpus/npy,
 * with the project's own encoders, so that the seeds stay what the code
 * sends: a few valid messages and files, and near-misses of each that
 * stop at one specific check. Built with the tests, run by hand when the
 * formats change:
 *
 *   build/tests/fuzz/mkseeds tests/fuzz/corpus
 *
 * The config seeds are plain JSON, written by hand. The .npy seeds have
 * no .npy suffix: the repository ignores *.npy files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_npy.h"
#include "gm_proto.h"
#include "gm_proto_region.h"

static const char *root;
static uint8_t buf[1 << 16];

static void put(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", root, dir, name);
	if ((f = fopen(path, "wb")) == NULL || fwrite(p, 1, n, f) != n ||
	    fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* Encodes a GEMM request for jobs d[0..n-1] into buf, operands filled
 * with small numbers; returns its length. */
static size_t request(uint64_t id, const gm_batch *b, const gm_job_desc *d,
		      uint32_t n)
{
	uint8_t *q = buf + GM_HDR_SIZE + GM_BATCH_SIZE;
	gm_job_sizes z;

	gm_proto_put_hdr(buf, GM_MSG_GEMM, id, n);
	gm_proto_put_batch(buf + GM_HDR_SIZE, b);
	for (uint32_t i = 0; i < n; i++) {
		gm_job_sizes_of(&d[i], &z);
		gm_proto_put_job(q, &d[i]);
		q += GM_JOB_HDR_SIZE;
		for (uint64_t j = 0; j < z.a + z.b + z.c; j++)
			q[j] = (uint8_t)(j % 7);
		q += z.a + z.b + z.c;
	}
	return (size_t)(q - buf);
}

static void proto_requests(void)
{
	const gm_batch plain = {.priority = GM_BATCH_PRIO_DEFAULT};
	const gm_batch urgent = {.priority = 3, .deadline_ms = 250};
	gm_job_desc one = {
	    .dtype = GM_FP64, .m = 2, .n = 3, .k = 4, .alpha = 1.0};
	gm_job_desc mixed[3] = {
	    {.dtype = GM_FP32,
	     .trans_a = 1,
	     .layout = GM_COL_MAJOR,
	     .flags = GM_JOB_HAS_C,
	     .m = 3,
	     .n = 2,
	     .k = 2,
	     .alpha = 2.0,
	     .beta = 0.5},
	    {.dtype = GM_FP16,
	     .trans_b = 1,
	     .kernel = GM_KERNEL_CUBLAS,
	     .m = 1,
	     .n = 1,
	     .k = 1,
	     .alpha = -1.0},
	    {.dtype = GM_BF16,
	     .kernel = GM_KERNEL_TILED,
	     .m = 2,
	     .n = 2,
	     .k = 1,
	     .alpha = 1.0},
	};
	size_t n;

	n = request(1, &plain, &one, 1);
	put("proto", "gemm-fp64", buf, n);
	put("proto", "gemm-truncated", buf, n - 1);
	buf[n] = 0;
	put("proto", "gemm-trailing", buf, n + 1);
	buf[GM_HDR_SIZE + GM_BATCH_SIZE + 40] ^= 8; /* payload_bytes */
	put("proto", "gemm-bad-payload", buf, n);

	n = request(2, &urgent, mixed, 3);
	put("proto", "gemm-mixed", buf, n);
	buf[GM_HDR_SIZE + GM_BATCH_SIZE + 6] = 1; /* job reserved bytes */
	put("proto", "gemm-reserved", buf, n);

	mixed[0].dtype = GM_TF32;
	mixed[0].m = 0;
	n = request(3, &plain, mixed, 1);
	put("proto", "gemm-dim0", buf, n);

	gm_proto_put_hdr(buf, GM_MSG_GEMM, 4, 0);
	memset(buf + GM_HDR_SIZE, 0, GM_BATCH_SIZE);
	put("proto", "gemm-count0", buf, GM_HDR_SIZE + GM_BATCH_SIZE);
}

/* A job with A and the result in region 1, B inline; then the records
 * of the hand-off socket that register and release such a region. */
static void proto_regions(void)
{
	const gm_job_desc d = {.dtype = GM_FP32,
			       .flags = GM_JOB_REGIONS,
			       .m = 4,
			       .n = 2,
			       .k = 3,
			       .alpha = 1.0};
	const gm_region_ref ref[GM_OPND_COUNT] = {
	    [GM_OPND_A] = {1, 0}, [GM_OPND_OUT] = {1, 64}};
	const gm_batch b = {.priority = 2, .flags = GM_BATCH_DETACH};
	const gm_handoff_req reg = {.op = GM_HANDOFF_REGISTER, .size = 1 << 20};
	const gm_handoff_req rel = {.op = GM_HANDOFF_RELEASE, .region = 1};
	gm_handoff_rep rep = {
	    .op = GM_HANDOFF_REGISTER, .region = 1, .size = 1 << 20};
	uint64_t payload;
	uint8_t *q = buf + GM_HDR_SIZE + GM_BATCH_SIZE;

	gm_proto_job_payload(&d, ref, &payload);
	gm_proto_put_hdr(buf, GM_MSG_GEMM, 8, 1);
	gm_proto_put_batch(buf + GM_HDR_SIZE, &b);
	gm_proto_put_job_refs(q, &d, ref);
	gm_proto_put_refs(q + GM_JOB_HDR_SIZE, ref);
	memset(q + GM_JOB_HDR_SIZE + GM_REGION_DESC_SIZE, 0x3f,
	       payload - GM_REGION_DESC_SIZE);
	put("proto", "gemm-regions", buf,
	    (size_t)(q + GM_JOB_HDR_SIZE + payload - buf));

	gm_handoff_put_req(buf, &reg);
	put("proto", "handoff-register", buf, GM_HANDOFF_REQ_SIZE);
	gm_handoff_put_req(buf, &rel);
	put("proto", "handoff-release", buf, GM_HANDOFF_REQ_SIZE);
	gm_handoff_put_rep(buf, &rep);
	put("proto", "handoff-reply", buf, GM_HANDOFF_REP_SIZE);
	rep.status = GM_EBOUNDS;
	snprintf(rep.message, sizeof(rep.message), "region too large");
	gm_handoff_put_rep(buf, &rep);
	put("proto", "handoff-reply-error", buf, GM_HANDOFF_REP_SIZE);
}

static void proto_others(void)
{
	static const char ping[] = "{\"op\":\"ping\"}";
	gm_reply_job ok = {.dtype = GM_FP32,
			   .layout = GM_ROW_MAJOR,
			   .m = 2,
			   .n = 2,
			   .result_bytes = 16};
	gm_reply_job bad = {
	    .status = GM_EDIM, .dtype = GM_FP64, .m = 0, .n = 5};
	size_t n;

	ok.t = (gm_timings){1.5, 2.0, 3.25, 2.0, 9.0};
	bad.t.total_us = 4.0;
	snprintf(bad.message, sizeof(bad.message), "m=0, must be 1..65536");

	gm_proto_put_hdr(buf, GM_MSG_CTRL, 5, sizeof(ping) - 1);
	memcpy(buf + GM_HDR_SIZE, ping, sizeof(ping) - 1);
	put("proto", "ctrl-ping", buf, GM_HDR_SIZE + sizeof(ping) - 1);
	put("proto", "ctrl-short", buf, GM_HDR_SIZE + 3);

	gm_proto_put_hdr(buf, GM_MSG_GEMM_REPLY, 6, 2);
	n = GM_HDR_SIZE;
	gm_proto_put_reply_job(buf + n, &ok);
	n += GM_REPLY_JOB_SIZE;
	memset(buf + n, 0x3f, ok.result_bytes);
	n += ok.result_bytes;
	gm_proto_put_reply_job(buf + n, &bad);
	n += GM_REPLY_JOB_SIZE;
	put("proto", "reply-ok-failed", buf, n);

	gm_proto_put_error(buf, 7, GM_EBUSY, NULL);
	put("proto", "error-busy", buf, GM_HDR_SIZE + GM_ERROR_SIZE);
	buf[0] = 'X';
	put("proto", "bad-magic", buf, GM_HDR_SIZE + GM_ERROR_SIZE);
	put("proto", "short-header", buf, 20);
}

static void npy_file(const char *name, int dtype, int fortran, uint64_t rows,
		     uint64_t cols)
{
	char path[4096], msg[256];
	double data[64];
	gm_npy m = {.dtype = dtype,
		    .fortran = fortran,
		    .rows = rows,
		    .cols = cols,
		    .data = data};

	for (int i = 0; i < 64; i++)
		data[i] = i * 0.25 - 3;
	snprintf(path, sizeof(path), "%s/npy/%s", root, name);
	if (gm_npy_write(path, &m, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "%s\n", msg);
		exit(1);
	}
}

/* A file with a hand-made header: format major version v (1: 2-byte
 * length, else 4), the dict text, padding and data bytes. */
static void npy_raw(const char *name, int v, const char *dict, size_t data)
{
	size_t pre = v == 1 ? 10 : 12, hlen = strlen(dict) + 1;
	size_t n = pre + hlen + data;

	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (uint8_t)v;
	buf[7] = 0;
	for (size_t i = 0; i < pre - 8; i++)
		buf[8 + i] = (uint8_t)(hlen >> (8 * i));
	memcpy(buf + pre, dict, hlen - 1);
	buf[pre + hlen - 1] = '\n';
	memset(buf + pre + hlen, 0x40, data);
	put("npy", name, buf, n);
}

static void npy_seeds(void)
{
	npy_file("c-f8-2x3", GM_FP64, 0, 2, 3);
	npy_file("f-f4-3x2", GM_FP32, 1, 3, 2);
	npy_file("c-f4-1x1", GM_FP32, 0, 1, 1);
	npy_raw("v2-f8", 2,
		"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }",
		32);
	npy_raw("v3-f4-fortran", 3,
		"{'shape': (1, 3), 'fortran_order': True, 'descr': '<f4'}", 12);
	npy_raw("int32", 1,
		"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }",
		16);
	npy_raw("big-endian", 1,
		"{'descr': '>f8', 'fortran_order': False, 'shape': (1, 1), }",
		8);
	npy_raw("1d", 1,
		"{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }",
		32);
	npy_raw("short-data", 1,
		"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }",
		64);
	npy_raw("zero-rows", 1,
		"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }",
		0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	root = argv[1];
	proto_requests();
	proto_others();
	proto_regions();
	npy_seeds();
	return 0;
}
