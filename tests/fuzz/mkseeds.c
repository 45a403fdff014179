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

/* Encodes a GEMM request at p for jobs d[0..n-1], the descriptors of
 * those with GM_JOB_REGIONS from ref[i], inline operands filled with
 * small numbers; returns its length. */
static size_t request(uint8_t *p, uint64_t id, const gm_batch *b,
		      const gm_job_desc *d,
		      const gm_region_ref (*ref)[GM_OPND_COUNT], uint32_t n)
{
	uint8_t *job = p + GM_HDR_SIZE + GM_BATCH_SIZE, *desc, *q;
	uint64_t payload;
	uint32_t nd = 0;

	for (uint32_t i = 0; i < n; i++)
		nd += (d[i].flags & GM_JOB_REGIONS) != 0;
	desc = job + (size_t)n * GM_JOB_HDR_SIZE;
	q = desc + (size_t)nd * GM_REGION_DESC_SIZE;
	for (uint32_t i = 0; i < n; i++, job += GM_JOB_HDR_SIZE) {
		const gm_region_ref *r =
		    (d[i].flags & GM_JOB_REGIONS) ? ref[i] : NULL;

		gm_proto_put_job_refs(job, &d[i], r);
		if (r != NULL) {
			gm_proto_put_refs(desc, r);
			desc += GM_REGION_DESC_SIZE;
		}
		gm_proto_job_payload(&d[i], r, &payload);
		for (uint64_t j = 0; j < payload; j++)
			q[j] = (uint8_t)(j % 7);
		q += payload;
	}
	gm_proto_put_hdr(p, GM_MSG_GEMM, id, n,
			 (uint64_t)(q - p) - GM_HDR_SIZE);
	gm_proto_put_batch(p + GM_HDR_SIZE, b);
	return (size_t)(q - p);
}

static void put_u64le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A job header's field of job i in a request at p. */
static uint8_t *job_field(uint8_t *p, uint32_t i, size_t off)
{
	return p + GM_HDR_SIZE + GM_BATCH_SIZE + i * GM_JOB_HDR_SIZE + off;
}

static const gm_batch plain = {.priority = GM_BATCH_PRIO_DEFAULT};

/* A job of dtype, m x n x k, alpha; every other field zero. */
static gm_job_desc job(int dtype, uint32_t m, uint32_t n, uint32_t k,
		       double alpha)
{
	gm_job_desc d = {.dtype = (uint8_t)dtype, .m = m, .n = n, .k = k};

	d.alpha = alpha;
	return d;
}

/* PROTOCOL.md §12's job, and near-misses of it that each stop at one
 * check of §8. */
static void proto_requests(void)
{
	const gm_batch urgent = {.priority = 3, .deadline_ms = 250};
	const gm_batch detach = {.priority = 1, .flags = GM_BATCH_DETACH};
	gm_job_desc one = job(GM_FP64, 1, 1, 1, 1.0);
	gm_job_desc mixed[3] = {job(GM_FP32, 3, 2, 2, 2.0),
				job(GM_FP16, 1, 1, 1, -1.0),
				job(GM_BF16, 2, 2, 1, 1.0)};
	size_t n;

	mixed[0].trans_a = 1;
	mixed[0].layout = GM_COL_MAJOR;
	mixed[0].flags = GM_JOB_HAS_C;
	mixed[0].beta = 0.5;
	mixed[1].trans_b = 1;
	mixed[1].kernel = GM_KERNEL_CUBLAS;
	mixed[2].kernel = GM_KERNEL_TILED;

	n = request(buf, 1, &plain, &one, NULL, 1);
	put("proto", "gemm-fp64", buf, n);
	put("proto", "gemm-truncated", buf, n - 1);
	buf[n] = 0;
	put_u64le(buf + 24, n + 1 - GM_HDR_SIZE);
	put("proto", "gemm-trailing", buf, n + 1);
	put_u64le(buf + 24, n - GM_HDR_SIZE);
	put_u64le(job_field(buf, 0, 40), 15); /* payload_bytes */
	put("proto", "gemm-bad-payload", buf, n);
	put_u64le(job_field(buf, 0, 40), 16);
	put_u64le(buf + 16, 4); /* count 4 and u32 flags 0: a lying count */
	put("proto", "gemm-count-lies", buf, n);
	put_u64le(buf + 16, 0);
	put("proto", "gemm-count0", buf, n);
	put_u64le(buf + 16, 1);
	put_u64le(buf + 24, 1000);
	put("proto", "gemm-length-lies", buf, n);
	put_u64le(buf + 24, 1ull << 40);
	put("proto", "gemm-over-limit", buf, n);

	n = request(buf, 2, &detach, &one, NULL, 1);
	put("proto", "gemm-detached", buf, n);

	n = request(buf, 3, &urgent, mixed, NULL, 3);
	put("proto", "gemm-mixed", buf, n);
	*job_field(buf, 1, 6) = 1; /* job 1's reserved bytes */
	put("proto", "gemm-reserved", buf, n);

	mixed[0].dtype = GM_TF32;
	mixed[0].m = 0;
	n = request(buf, 4, &plain, mixed, NULL, 1);
	put("proto", "gemm-dim0", buf, n);
}

/* Jobs with regions, their near-misses, and the records of the hand-off
 * socket that register and release a region. */
static void proto_regions(void)
{
	gm_job_desc d[2] = {job(GM_FP32, 4, 2, 3, 1.0),
			    job(GM_FP64, 1, 2, 1, 1.0)};
	const gm_region_ref ref[2][GM_OPND_COUNT] = {
	    [0] = {{1, 0}, {0, 0}, {1, 64}, {1, 64}}};
	/* §14.6: A and B in the region, the result in the reply. */
	gm_job_desc ex = job(GM_FP64, 1, 1, 1, 1.0);
	const gm_region_ref ex_ref[1][GM_OPND_COUNT] = {
	    {{0x6c1f0e2a9d3b4c57u, 0}, {0x6c1f0e2a9d3b4c57u, 8}}};
	const gm_handoff_req reg = {.op = GM_HANDOFF_REGISTER, .size = 1 << 20};
	const gm_handoff_req rel = {.op = GM_HANDOFF_RELEASE, .region = 1};
	gm_handoff_rep rep = {
	    .op = GM_HANDOFF_REGISTER, .region = 1, .size = 1 << 20};
	uint8_t *desc = job_field(buf, 2, 0);
	size_t n;

	d[0].flags = GM_JOB_REGIONS | GM_JOB_HAS_C;
	d[0].beta = 1.0;
	ex.flags = GM_JOB_REGIONS;
	n = request(buf, 8, &plain, d, ref, 2);
	put("proto", "gemm-regions", buf, n);
	put_u64le(desc + 56, 60); /* OUT 4 bytes before C */
	put("proto", "gemm-regions-overlap", buf, n);
	put_u64le(desc + 56, 64);
	*job_field(buf, 1, 5) = GM_JOB_REGIONS; /* job 1: no descriptor */
	put("proto", "gemm-regions-desc-missing", buf, n);
	n = request(buf, 1, &plain, &ex, ex_ref, 1);
	put("proto", "gemm-regions-all", buf, n);

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

/* A CTRL request at p; returns its length. */
static size_t ctrl(uint8_t *p, uint16_t type, uint64_t id, const char *json)
{
	size_t n = strlen(json);

	gm_proto_put_hdr(p, type, id, 0, n);
	memcpy(p + GM_HDR_SIZE, json, n);
	return GM_HDR_SIZE + n;
}

/* A GEMM_REPLY at p for job index; returns its length. */
static size_t reply(uint8_t *p, uint64_t id, uint32_t index,
		    const gm_reply_job *r)
{
	gm_proto_put_hdr(p, GM_MSG_GEMM_REPLY, id, index,
			 GM_REPLY_JOB_SIZE + r->result_bytes);
	gm_proto_put_reply_job(p + GM_HDR_SIZE, r);
	memset(p + GM_HDR_SIZE + GM_REPLY_JOB_SIZE, 0x3f, r->result_bytes);
	return GM_HDR_SIZE + GM_REPLY_JOB_SIZE + r->result_bytes;
}

/* CTRL, replies and errors, alone and as streams of several frames. */
static void proto_others(void)
{
	static const uint8_t v1[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
	gm_reply_job ok = {.dtype = GM_FP32,
			   .layout = GM_ROW_MAJOR,
			   .m = 2,
			   .n = 2,
			   .result_bytes = 16};
	gm_reply_job bad = {
	    .status = GM_EDIM, .dtype = GM_FP64, .m = 0, .n = 5};
	gm_reply_job region = {.dtype = GM_FP64, .m = 8, .n = 8};
	gm_job_desc one = job(GM_FP64, 1, 1, 1, 1.0);
	size_t n, refused;

	ok.t = (gm_timings){1.5, 2.0, 3.25, 2.0, 9.0, 7};
	bad.t.total_us = 4.0;
	snprintf(bad.message, sizeof(bad.message), "m=0, must be 1..65536");

	n = ctrl(buf, GM_MSG_CTRL, 5, "{\"op\":\"ping\"}");
	put("proto", "ctrl-ping", buf, n);
	put("proto", "ctrl-short", buf, n - 3);
	buf[16] = 1; /* count */
	put("proto", "ctrl-count", buf, n);
	n = ctrl(buf, GM_MSG_CTRL_REPLY, 1,
		 "{\"ok\":true,\"jobs\":[1882517841903616]}");
	put("proto", "ctrl-reply-detached", buf, n);
	put("proto", "v1-handshake", v1, sizeof(v1));

	n = reply(buf, 6, 1, &ok);
	put("proto", "reply-ok", buf, n);
	n = reply(buf, 6, 0, &bad);
	put("proto", "reply-failed", buf, n);
	n = reply(buf, 6, 2, &region);
	put("proto", "reply-region", buf, n);
	/* A client's view: replies of two requests interleaved, a CTRL
	 * reply and a refusal. */
	n = reply(buf, 6, 1, &ok);
	n += reply(buf + n, 9, 0, &region);
	n += ctrl(buf + n, GM_MSG_CTRL_REPLY, 7, "{\"ok\":true}");
	n += reply(buf + n, 6, 0, &bad);
	gm_proto_put_error(buf + n, 10, GM_EBUSY, NULL);
	n += GM_HDR_SIZE + GM_ERROR_SIZE;
	put("proto", "replies-stream", buf, n);

	/* The daemon's view: requests back to back, one refused at its
	 * head, whose body is skipped. */
	n = request(buf, 11, &plain, &one, NULL, 1);
	n += ctrl(buf + n, GM_MSG_CTRL, 12, "{\"op\":\"stats\"}");
	refused = n;
	n += request(buf + n, 13, &plain, &one, NULL, 1);
	buf[refused + GM_HDR_SIZE] = 9; /* priority */
	n += request(buf + n, 14, &plain, &one, NULL, 1);
	put("proto", "requests-stream", buf, n);

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
