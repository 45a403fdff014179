/*
 * gm_proto.h - gemmd wire format v2: frames on a byte stream; encode,
 * decode and validate.
 *
 * Every frame starts with a 32-byte header (magic, version, type,
 * request id, count, flags, body length); all integers and floats are
 * little-endian. proto/PROTOCOL.md is the byte-level specification; this
 * header is the C view of it. A GEMM request puts everything a reader
 * must check before it commits memory first (batch header, job headers,
 * region descriptors) and the operands last, so that a daemon reading
 * from a stream validates the headers, reserves the request's memory and
 * only then reads the operands, straight into that memory. Nothing here
 * allocates: decoders validate bytes in place and the caller allocates
 * only after a check has passed, sized by what the check returned. All
 * functions are pure and may be called from any thread.
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
#define GM_PROTO_VERSION 2

#define GM_HDR_SIZE	  32  /* frame header */
#define GM_BATCH_SIZE	  16  /* batch header, first in a GEMM body */
#define GM_JOB_HDR_SIZE	  48  /* per job, in the request's head */
#define GM_REPLY_JOB_SIZE 176 /* first in a GEMM_REPLY body */
#define GM_ERROR_SIZE	  104 /* body of an ERROR frame */
#define GM_MSG_TEXT	  96  /* NUL-padded message field in replies */

/* Hard ceilings of v2; configuration may only lower them. */
#define GM_MAX_DIM  (1u << 20)
#define GM_MAX_JOBS 65536u

enum gm_msg_type {
	GM_MSG_GEMM = 1,       /* client -> daemon: a batch of jobs */
	GM_MSG_GEMM_REPLY = 2, /* daemon -> client: one job's result */
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

#define GM_JOB_HAS_C 0x01u /* job flag: the job has C (beta input) */
/* Job flag: a region descriptor (gm_proto_region.h) names where A, B, C
 * and the result live in shared-memory regions; only the inline
 * operands are in the payload. */
#define GM_JOB_REGIONS 0x02u

#define GM_BATCH_PRIO_MAX     3 /* priorities 0 (lowest) .. 3 (highest) */
#define GM_BATCH_PRIO_DEFAULT 1

/* Batch flag: answer at once with job ids (a CTRL_REPLY) and keep the
 * results for "wait" instead of replying with them. */
#define GM_BATCH_DETACH 0x1u

/* The frame header, decoded. */
typedef struct gm_hdr {
	uint16_t version;
	uint16_t type;
	uint64_t id;	 /* request id, chosen by the client, echoed */
	uint32_t count;	 /* GEMM: jobs; GEMM_REPLY: the job's index; else 0 */
	uint32_t flags;	 /* must be 0 in v2 */
	uint64_t length; /* body bytes after the header */
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
	uint64_t max_job_bytes; /* inline A + B + C of one job */
	uint64_t max_frame;	/* body bytes of one GEMM frame */
	uint64_t max_ctrl;	/* body bytes of one CTRL frame */
} gm_limits;

/* Byte sizes of one job's operands; c is 0 when the job has no C. */
typedef struct gm_job_sizes {
	uint64_t a, b, c, out;
} gm_job_sizes;

/* Per-job timings in microseconds, as carried by a reply, and the job's
 * place in the order the daemon started jobs (from 1; 0: never
 * started). */
typedef struct gm_timings {
	double queue_us, h2d_us, kernel_us, d2h_us, total_us;
	uint64_t start_seq;
} gm_timings;

/* One job's reply record, decoded. */
typedef struct gm_reply_job {
	uint32_t status; /* gm_err */
	uint8_t dtype, layout;
	uint32_t m, n;
	gm_timings t;
	uint64_t result_bytes;
	char message[GM_MSG_TEXT + 1]; /* NUL-terminated */
} gm_reply_job;

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

/* ---- frames ---- */

/* Writes a frame header at p (GM_HDR_SIZE bytes). */
void gm_proto_put_hdr(uint8_t *p, uint16_t type, uint64_t id, uint32_t count,
		      uint64_t length);

/*
 * Decodes and validates the frame header at buf: magic (GM_EMAGIC),
 * version (GM_EVERSION), known type (GM_EMSGTYPE), zero flags
 * (GM_EFIELD), each judged as soon as len covers its bytes (the magic
 * from its first byte), then GM_ETRUNC when len < GM_HDR_SIZE. So a
 * reader may call it on the part of a header that has come, and refuse
 * the frame as soon as its code is not GM_ETRUNC. Whatever could be read
 * is in h even on failure, the id included (from 16 bytes), so that a
 * refusal can echo it.
 */
int gm_proto_get_hdr(const void *buf, size_t len, gm_hdr *h, char *msg,
		     size_t msglen);

/* Non-zero when the first len bytes (len >= 4) are the start of a
 * Scalability Protocols handshake ("\0SP\0"): an nng REQ/REP client of
 * protocol v1, which a v2 peer answers with GM_EVERSION. */
int gm_proto_is_sp(const void *buf, size_t len);

/*
 * Checks what a request frame's header says before any of its body is
 * read: the type is GEMM or CTRL (GM_EMSGTYPE); for CTRL, length within
 * lim->max_ctrl (GM_ETOOBIG), then count 0 (GM_EFIELD); for GEMM,
 * length within lim->max_frame (GM_ETOOBIG), count 1..max_jobs
 * (GM_EFIELD for 0, GM_ETOOMANY), and length at least the head
 * (GM_ETRUNC). On success the reader may read gm_proto_head_size(h)
 * bytes of the body.
 */
int gm_proto_check_request(const gm_hdr *h, const gm_limits *lim, char *msg,
			   size_t msglen);

/* Bytes of a GEMM request's head, its first part: the batch header and
 * the job headers (h->count of them). */
uint64_t gm_proto_head_size(const gm_hdr *h);

/*
 * Validates the head of a GEMM request whose header h passed
 * gm_proto_check_request: the batch header, then every job header
 * (without what depends on its region descriptor). Fills b and *ndesc,
 * the number of jobs with GM_JOB_REGIONS: their descriptors, 64 bytes
 * each, come next in the body (GM_ETRUNC when length has no room for
 * them).
 */
int gm_proto_check_head(const gm_hdr *h, const uint8_t *head,
			const gm_limits *lim, gm_batch *b, uint32_t *ndesc,
			char *msg, size_t msglen);

/*
 * Validates the region descriptors (desc: ndesc x 64 bytes, NULL when
 * ndesc is 0) against the head, then each job's payload_bytes, then the
 * frame length: it must be exactly head + descriptors + payloads
 * (GM_ETRUNC shorter, GM_ETRAILING longer). On success *payload is the
 * bytes of the payload section, which ends the frame.
 */
int gm_proto_check_descs(const gm_hdr *h, const uint8_t *head,
			 const uint8_t *desc, const gm_limits *lim,
			 uint64_t *payload, char *msg, size_t msglen);

/* Validates a whole GEMM request frame in one buffer (header, head,
 * descriptors, payload): the three checks above in turn. */
int gm_proto_check_gemm(const void *buf, size_t len, const gm_limits *lim,
			gm_hdr *h, gm_batch *b, char *msg, size_t msglen);

/* Writers. Each writes exactly its fixed size at p, which must have room.
 */
void gm_proto_put_batch(uint8_t *p, const gm_batch *b);
/* gm_proto_put_job writes payload_bytes as the job's A + B + C (0 when d
 * has no size: unknown dtype or overflow); a job with regions takes
 * gm_proto_put_job_refs (gm_proto_region.h). */
void gm_proto_put_job(uint8_t *p, const gm_job_desc *d);

/* Bytes of a GEMM request frame (header included) for jobs d[0..n-1]
 * with every operand inline; GM_EDTYPE for an unknown dtype,
 * GM_EOVERFLOW if it does not fit in 64 bits. */
int gm_proto_gemm_size(const gm_job_desc *d, uint32_t n, uint64_t *size);

/* ---- replies ---- */

/* Writes a reply record (GM_REPLY_JOB_SIZE bytes); the result bytes
 * follow it in the frame. */
void gm_proto_put_reply_job(uint8_t *p, const gm_reply_job *r);

/*
 * Checks a GEMM_REPLY frame header for a request of njobs jobs: count
 * (the job's index) below njobs (GM_EFIELD), length at least a reply
 * record (GM_ETRUNC).
 */
int gm_proto_check_reply_hdr(const gm_hdr *h, uint32_t njobs, char *msg,
			     size_t msglen);

/*
 * Decodes the reply record at rec of a frame with header h and validates
 * it: reserved bytes (GM_EFIELD); with status 0 a known dtype
 * (GM_EDTYPE), layout (GM_EFIELD) and m, n (GM_EDIM); result_bytes m * n
 * * element or 0 (a result written to a region) on success, 0 on
 * failure (GM_EFIELD); and the frame length exactly record + result
 * (GM_ETRUNC, GM_ETRAILING). The result bytes follow the record.
 */
int gm_proto_get_reply_job(const gm_hdr *h, const uint8_t *rec, gm_reply_job *r,
			   char *msg, size_t msglen);

/* Writes a whole ERROR frame (GM_HDR_SIZE + GM_ERROR_SIZE bytes);
 * message NULL writes gm_strerror(status). Message fields keep at most
 * GM_MSG_TEXT - 1 bytes, cut at a UTF-8 boundary. */
void gm_proto_put_error(uint8_t *p, uint64_t id, uint32_t status,
			const char *message);

/* Decodes the body of an ERROR frame with header h (GM_EMSGTYPE for
 * another type): GM_EFIELD when count is not 0, length is not
 * GM_ERROR_SIZE, status is 0 or reserved bytes are set. body is read
 * only when length is GM_ERROR_SIZE. */
int gm_proto_get_error(const gm_hdr *h, const uint8_t *body, uint32_t *status,
		       char message[GM_MSG_TEXT + 1]);

#ifdef __cplusplus
}
#endif
#endif
