/*
 * gm_proto.h - gemmd wire format v1: encode, decode and validate.
 *
 * Every message starts with a 24-byte header (magic, version, type,
 * request id, count, flags); all integers and floats are little-endian.
 * proto/PROTOCOL.md is the byte-level specification; this header is the
 * C view of it. Nothing here allocates: decoders validate a whole buffer
 * in place and the caller allocates only after a check has passed, sized
 * by what the check returned. All functions are pure and may be called
 * from any thread.
 */
#ifndef GM_PROTO_H
#define GM_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "gm_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GM_PROTO_MAGIC	 0x4D4D4547u /* bytes 'G' 'E' 'M' 'M' on the wire */
#define GM_PROTO_VERSION 1

#define GM_HDR_SIZE	  24  /* common header */
#define GM_BATCH_SIZE	  16  /* batch header after a GEMM request header */
#define GM_JOB_HDR_SIZE	  48  /* per job, followed by its payload */
#define GM_REPLY_JOB_SIZE 160 /* per reply job, followed by its result */
#define GM_ERROR_SIZE	  104 /* body of an ERROR message */
#define GM_MSG_TEXT	  96  /* NUL-padded message field in replies */

/* Hard ceilings of v1; configuration may only lower them. */
#define GM_MAX_DIM  (1u << 20)
#define GM_MAX_JOBS 65536u

enum gm_msg_type {
	GM_MSG_GEMM = 1,       /* client -> daemon: a batch of jobs */
	GM_MSG_GEMM_REPLY = 2, /* daemon -> client: one result per job */
	GM_MSG_CTRL = 3,       /* client -> daemon: JSON control request */
	GM_MSG_CTRL_REPLY = 4, /* daemon -> client: JSON control reply */
	GM_MSG_ERROR = 5,      /* daemon -> client: request refused whole */
};

enum gm_dtype {
	GM_FP64 = 1,
	GM_FP32 = 2,
	GM_TF32 = 3, /* fp32 data, TF32 tensor-core compute */
	GM_FP16 = 4, /* fp16 data, fp32 accumulate */
	GM_BF16 = 5, /* bf16 data, fp32 accumulate */
};

enum gm_layout {
	GM_ROW_MAJOR = 0,
	GM_COL_MAJOR = 1,
};

enum gm_kernel {
	GM_KERNEL_DEFAULT = 0, /* the daemon's configured kernel */
	GM_KERNEL_CUBLAS = 1,
	GM_KERNEL_TILED = 2, /* shared-memory tiled kernel, fp64/fp32 */
};

#define GM_JOB_HAS_C 0x01u /* job flag: payload carries C (beta input) */
/* Job flag: the payload starts with a region descriptor naming where
 * A, B, C and the result live in shared-memory regions (see
 * gm_proto_region.h); only the inline operands follow it. */
#define GM_JOB_REGIONS 0x02u

#define GM_BATCH_PRIO_MAX     3 /* priorities 0 (lowest) .. 3 (highest) */
#define GM_BATCH_PRIO_DEFAULT 1

/* Batch flag: answer at once with job ids (a CTRL_REPLY) and keep the
 * results for "wait" instead of replying with them. */
#define GM_BATCH_DETACH 0x1u

/* The common header, decoded. */
typedef struct gm_hdr {
	uint16_t version;
	uint16_t type;
	uint64_t id;	/* request id, chosen by the client, echoed */
	uint32_t count; /* GEMM: jobs; CTRL, ERROR: body bytes */
	uint32_t flags; /* must be 0 in v1 */
} gm_hdr;

/* The batch header of a GEMM request. */
typedef struct gm_batch {
	uint8_t priority;     /* 0..GM_BATCH_PRIO_MAX */
	uint32_t deadline_ms; /* 0: none; else ms after receipt */
	uint32_t flags;	      /* GM_BATCH_DETACH; other bits 0 */
} gm_batch;

/* One job as described on the wire (payload excluded). */
typedef struct gm_job_desc {
	uint8_t dtype;	 /* enum gm_dtype */
	uint8_t trans_a; /* 0 or 1: op(A) = A or A^T */
	uint8_t trans_b;
	uint8_t layout; /* enum gm_layout, for A, B, C and the result */
	uint8_t kernel; /* enum gm_kernel */
	uint8_t flags;	/* GM_JOB_HAS_C, GM_JOB_REGIONS */
	uint32_t m, n, k;
	double alpha, beta;
} gm_job_desc;

/* Limits a decoder enforces; each at most the hard ceiling above. */
typedef struct gm_limits {
	uint32_t max_jobs;	/* per request */
	uint32_t max_dim;	/* each of m, n, k */
	uint64_t max_job_bytes; /* A + B + C of one job */
} gm_limits;

/* Byte sizes of one job's operands; c is 0 when the job has no C. */
typedef struct gm_job_sizes {
	uint64_t a, b, c, out;
} gm_job_sizes;

/* Per-job timings in microseconds, as carried by a reply. */
typedef struct gm_timings {
	double queue_us, h2d_us, kernel_us, d2h_us, total_us;
} gm_timings;

/* One job of a GEMM reply, decoded (result points into the buffer). */
typedef struct gm_reply_job {
	uint32_t status; /* gm_err */
	uint8_t dtype, layout;
	uint32_t m, n;
	gm_timings t;
	uint64_t result_bytes;
	char message[GM_MSG_TEXT + 1]; /* NUL-terminated */
	const uint8_t *result;
} gm_reply_job;

/* Iterator over the jobs of a checked GEMM request or reply. */
typedef struct gm_job_iter {
	const uint8_t *p, *end;
	uint32_t left;
} gm_job_iter;

/* Element size in bytes of dtype; 0 for an unknown code. */
size_t gm_dtype_size(int dtype);

/* "fp64", "fp32", ...; NULL for an unknown code. gm_dtype_parse returns
 * the code for a name, or 0. */
const char *gm_dtype_name(int dtype);
int gm_dtype_parse(const char *name);

/* Computes the operand sizes of d, checking every product and the sum
 * a + b + c for overflow. Returns GM_OK, GM_EDTYPE for an unknown dtype,
 * or GM_EOVERFLOW (out zeroed or partial on failure). Does not check
 * limits. */
int gm_job_sizes_of(const gm_job_desc *d, gm_job_sizes *out);

/* Validates d against lim (dtype, flags, dims, sizes). On failure returns
 * the specific code and writes a message of at most msglen bytes naming
 * the field and value. */
int gm_job_check(const gm_job_desc *d, const gm_limits *lim, char *msg,
		 size_t msglen);

/* Useful FLOPs of one job: 2*m*n*k (+ m*n for beta != 0 is not counted). */
double gm_job_flops(const gm_job_desc *d);

/* Decodes and validates the common header of any message: magic,
 * version, known type, zero flags, enough bytes; for CTRL, CTRL_REPLY and
 * ERROR also count == len - GM_HDR_SIZE (GM_ETRUNC short, GM_ETRAILING
 * long). On failure h->id is the request id when at least 16 bytes were
 * present, else 0. */
int gm_proto_get_hdr(const void *buf, size_t len, gm_hdr *h, char *msg,
		     size_t msglen);

/* Validates a whole GEMM request in place: header, batch header, every
 * job header and payload length, no trailing bytes. Limits above the hard
 * ceilings are taken as the ceilings. On success fills h and b; the job
 * count is h->count. On failure h->id is set as by gm_proto_get_hdr, so
 * the refusal can echo it. Allocates nothing. */
int gm_proto_check_gemm(const void *buf, size_t len, const gm_limits *lim,
			gm_hdr *h, gm_batch *b, char *msg, size_t msglen);

/* Starts iterating over the jobs of a buffer that gm_proto_check_gemm
 * accepted. */
void gm_proto_jobs_begin(const void *buf, size_t len, gm_job_iter *it);

/* Next job of a checked request: fills d and points a, b, c at the
 * payload (c NULL when the job has no C, each NULL when in a region:
 * gm_proto_jobs_next_ops says where). Returns 0, or GM_ENOTFOUND at
 * the end. */
int gm_proto_jobs_next(gm_job_iter *it, gm_job_desc *d, const uint8_t **a,
		       const uint8_t **b, const uint8_t **c);

/* Writers. Each writes exactly its fixed size at p, which must have room.
 */
void gm_proto_put_hdr(uint8_t *p, uint16_t type, uint64_t id, uint32_t count);
void gm_proto_put_batch(uint8_t *p, const gm_batch *b);
/* gm_proto_put_job computes payload_bytes from d (0 when d has no size:
 * unknown dtype or overflow); the caller writes the payload after it. */
void gm_proto_put_job(uint8_t *p, const gm_job_desc *d);
/* Writes the fixed part of a reply job; the result bytes follow it. */
void gm_proto_put_reply_job(uint8_t *p, const gm_reply_job *r);
/* Writes a whole ERROR message (GM_HDR_SIZE + GM_ERROR_SIZE bytes);
 * message NULL writes gm_strerror(status). Message fields keep at most
 * GM_MSG_TEXT - 1 bytes, cut at a UTF-8 boundary. */
void gm_proto_put_error(uint8_t *p, uint64_t id, uint32_t status,
			const char *message);

/* Bytes of a GEMM request for jobs d[0..n-1] (headers and payloads);
 * GM_EDTYPE for an unknown dtype, GM_EOVERFLOW if it does not fit in 64
 * bits. */
int gm_proto_gemm_size(const gm_job_desc *d, uint32_t n, uint64_t *size);

/* Validates a GEMM reply in place for a request with id and njobs jobs,
 * then iterate it with gm_proto_reply_begin / gm_proto_reply_next. */
int gm_proto_check_reply(const void *buf, size_t len, uint64_t id,
			 uint32_t njobs, char *msg, size_t msglen);
void gm_proto_reply_begin(const void *buf, size_t len, gm_job_iter *it);
int gm_proto_reply_next(gm_job_iter *it, gm_reply_job *r);

/* Decodes a whole ERROR message (header checked again): GM_EMSGTYPE for
 * another type, GM_EFIELD when count != GM_ERROR_SIZE or reserved != 0,
 * or a gm_proto_get_hdr code. */
int gm_proto_get_error(const void *buf, size_t len, uint32_t *status,
		       char message[GM_MSG_TEXT + 1]);

#ifdef __cplusplus
}
#endif
#endif
