/*
 * gm_rawc.h - a client of gemmd's wire written from proto/PROTOCOL.md
 * alone, on plain sockets: it connects (ipc:// as a UNIX stream socket,
 * tcp:// over IPv4, from a chosen local address if asked), writes frames
 * byte by byte as the specification lays them out, and reads frames
 * back. It shares no code with proto/ (its own little-endian helpers,
 * its own encoders), so that a test through it checks the daemon
 * against the specification rather than against the daemon's own
 * decoder; and it can misbehave on purpose: write part of a frame, lie
 * about lengths, stall, close at any byte. Blocking calls with
 * timeouts; nothing here calls cmocka or allocates beyond what it
 * returns, so forked children may use it.
 */
#ifndef GM_RAWC_H
#define GM_RAWC_H

#include <stddef.h>
#include <stdint.h>

/* Wire constants (PROTOCOL.md 3-6). */
#define RC_HDR	      32
#define RC_BATCH      16
#define RC_JOB	      48
#define RC_DESC	      64
#define RC_REPLY      176
#define RC_ERROR      104
#define RC_GEMM	      1
#define RC_GEMM_REPLY 2
#define RC_CTRL	      3
#define RC_CTRL_REPLY 4
#define RC_ERROR_T    5

/* Connects to url: ipc:///path or tcp://A.B.C.D:PORT; from local
 * address src (tcp only; NULL: any), within 20 s. Returns the
 * descriptor (blocking) or -1. */
int rc_connect(const char *url, const char *src);

/* rc_connect, then a ping answered within ms: gemmd admitted the
 * connection (a connect returns once the kernel took it; gemmd counts
 * it a moment later, or refuses it). The descriptor; -2 when gemmd
 * refused it (its first frame was an ERROR); -1 otherwise. */
int rc_admitted(const char *url, const char *src, int ms);

/* Writes all n bytes; 0, or -1 when the peer is gone. */
int rc_write(int fd, const void *p, size_t n);

/* Reads exactly n bytes within ms: 0; -1 when the peer closed or the
 * connection failed first; -2 on timeout. */
int rc_read(int fd, void *p, size_t n, int ms);

/* Whether the peer closes fd within ms (reading past what it sends). */
int rc_closed(int fd, int ms);

/* A frame as read. */
typedef struct rc_frame {
	uint32_t magic;
	uint16_t version, type;
	uint64_t id;
	uint32_t count, flags;
	uint64_t length;
	uint8_t *body; /* length bytes, malloc'd */
} rc_frame;

/* Reads one frame within ms: 0, -1 closed, -2 timeout, -3 a body over
 * 1 GiB. */
int rc_read_frame(int fd, rc_frame *f, int ms);
void rc_frame_free(rc_frame *f);

/* The n low bytes of v at p, little-endian; and back. */
void rc_put_le(uint8_t *p, uint64_t v, int n);
uint64_t rc_get_le(const uint8_t *p, int n);

/* Writes a frame header at p. */
void rc_put_hdr(uint8_t *p, uint16_t type, uint64_t id, uint32_t count,
		uint64_t length);

/* An ERROR frame's status and message; 0 for another type. */
uint32_t rc_error(const rc_frame *f, char msg[97]);

/* A GEMM_REPLY frame's record. */
typedef struct rc_reply {
	uint32_t status;
	uint8_t dtype, layout;
	uint32_t m, n;
	double queue_us, h2d_us, kernel_us, d2h_us, total_us;
	uint64_t result_bytes;
	uint64_t start_seq;
	char message[97];
	const uint8_t *result; /* into the frame's body */
} rc_reply;

/* Decodes f's record; -1 when f is no GEMM_REPLY or its lengths do not
 * agree. */
int rc_reply_of(const rc_frame *f, rc_reply *r);

/* One job of a request. Operands are inline unless refs names regions
 * (then flags must have bit 1, and payload holds only the inline
 * ones). */
typedef struct rc_job {
	uint8_t dtype, trans_a, trans_b, layout, kernel, flags;
	uint32_t m, n, k;
	double alpha, beta;
	const void *a, *b, *c; /* inline operands (c with flag bit 0) */
	uint64_t refs[8];      /* flag bit 1: the region descriptor */
	int64_t payload_delta; /* added to payload_bytes: to lie */
} rc_job;

/* Element size of a dtype code, 0 for an unknown one. */
size_t rc_esize(int dtype);

/* Bytes of A, B, C (0 without C) and of the result of j. */
void rc_sizes(const rc_job *j, uint64_t *a, uint64_t *b, uint64_t *c,
	      uint64_t *out);

/* A whole GEMM frame for jobs j[0..n-1] (malloc'd, *len bytes):
 * priority, deadline and batch flags as given. */
uint8_t *rc_gemm(uint64_t id, uint8_t prio, uint32_t deadline_ms,
		 uint32_t bflags, const rc_job *j, uint32_t n, size_t *len);

/* A fp64 row-major m x n x k job, alpha 1, with operands from seed
 * (malloc'd into *a and *b, to be freed). */
void rc_job_fp64(rc_job *j, uint32_t m, uint32_t n, uint32_t k, unsigned seed,
		 double **a, double **b);

/* A fp64 row-major m x n x k job, alpha 1, on operands a and b (not
 * copied). */
rc_job rc_job_on(uint32_t m, uint32_t n, uint32_t k, const void *a,
		 const void *b);

/* Whether result (m x n, fp64 row-major) is A*B of job j to fp64
 * rounding. */
int rc_check_fp64(const rc_job *j, const uint8_t *result);

/* Writes a CTRL frame: id, the JSON json. 0 or -1. */
int rc_send_ctrl(int fd, uint64_t id, const char *json);

/* Sends CTRL json with id and reads its answer within ms: the
 * CTRL_REPLY's JSON (malloc'd, NUL-terminated) into *out; 0, or what
 * rc_read_frame returned, or -4 for a frame of another type. */
int rc_ctrl(int fd, uint64_t id, const char *json, char **out, int ms);

/* The number at a dotted path ("pool.used") of the daemon's stats,
 * asked for on connection fd; -1 when it cannot be had. */
double rc_stat_fd(int fd, const char *path);

/* rc_stat_fd on a fresh connection to url. */
double rc_stat(const char *url, const char *path);

#endif
