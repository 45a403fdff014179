/*
 * gm_proto_region.h - shared-memory regions on the wire.
 *
 * A local client hands gemmd a memfd through the hand-off socket (a
 * Unix SOCK_SEQPACKET socket beside the ipc:// one, records below) and
 * gets a region id back; a GEMM job whose flags have GM_JOB_REGIONS then
 * names (region id, offset) for A, B, C and the result instead of
 * carrying their bytes. proto/PROTOCOL.md, "Regions", specifies both byte
 * for byte. Like gm_proto.h, nothing here allocates and every function
 * may be called from any thread.
 */
#ifndef GM_PROTO_REGION_H
#define GM_PROTO_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "gm_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the region descriptor of a GM_JOB_REGIONS job ---- */

#define GM_REGION_DESC_SIZE 64 /* 4 x (id, offset), after the job headers */
#define GM_REGION_INLINE    0  /* region id of an operand that is inline */

/* The operands of a job, in descriptor order. */
enum gm_operand {
	GM_OPND_A,
	GM_OPND_B,
	GM_OPND_C,
	GM_OPND_OUT,
	GM_OPND_COUNT,
};

/* Where one operand lives: region GM_REGION_INLINE (then offset is 0) or
 * a region id and a byte offset into that region. */
typedef struct gm_region_ref {
	uint64_t region;
	uint64_t offset;
} gm_region_ref;

/* One job of a checked request, its operands located. Offsets of
 * inline operands count from the start of the request's payload
 * section; data[] are pointers into it when the iterator was given it. */
typedef struct gm_job_operands {
	gm_region_ref ref[GM_OPND_COUNT]; /* all inline without the flag */
	uint64_t off[GM_OPND_OUT];	  /* inline A, B, C: offsets */
	const uint8_t *data[GM_OPND_OUT]; /* inline A, B, C, or NULL */
	/* The inline ones of A, B, C back to back: what the job carries. */
	uint64_t inline_off;
	uint64_t inline_bytes;
} gm_job_operands;

/* Iterator over the jobs of a checked GEMM request. */
typedef struct gm_job_iter {
	const uint8_t *job;	/* next job header */
	const uint8_t *desc;	/* next region descriptor */
	const uint8_t *payload; /* the payload section, or NULL */
	uint64_t off;		/* the next job's inline bytes */
	uint32_t left;
} gm_job_iter;

/* Bytes of operand op (enum gm_operand) of a job with sizes z. */
uint64_t gm_operand_bytes(const gm_job_sizes *z, int op);

/* "A", "B", "C", "OUT". */
const char *gm_operand_name(int op);

/* Whether the job has operand op in a region. */
static inline int gm_ref_in_region(const gm_region_ref *ref, int op)
{
	return ref[op].region != GM_REGION_INLINE;
}

/*
 * Checks the descriptor ref of job d (sizes z) as far as it can be
 * checked without the regions, in the order PROTOCOL.md gives: an inline
 * operand's offset is 0, a job without C names no C (GM_EFIELD); an
 * offset is a multiple of the element size (GM_EFIELD); offset + length
 * fits in 64 bits (GM_EBOUNDS); the result does not overlap an input in
 * the same region, unless it is exactly C (GM_EFIELD).
 */
int gm_proto_check_refs(const gm_job_desc *d, const gm_job_sizes *z,
			const gm_region_ref ref[GM_OPND_COUNT], char *msg,
			size_t msglen);

/* Inline bytes of a job: those of A, B, C not in a region. */
uint64_t gm_proto_inline_bytes(const gm_job_sizes *z,
			       const gm_region_ref ref[GM_OPND_COUNT]);

/* payload_bytes of job d: its inline bytes, A + B + C without
 * GM_JOB_REGIONS, else those of them ref leaves inline. GM_EDTYPE or
 * GM_EOVERFLOW as gm_job_sizes_of. ref may be NULL without the flag. */
int gm_proto_job_payload(const gm_job_desc *d, const gm_region_ref *ref,
			 uint64_t *bytes);

/* Reads and writes the 64-byte descriptor at p. */
void gm_proto_get_refs(const uint8_t *p, gm_region_ref ref[GM_OPND_COUNT]);
void gm_proto_put_refs(uint8_t *p, const gm_region_ref ref[GM_OPND_COUNT]);

/* Writes a job header as gm_proto_put_job does, with payload_bytes as
 * gm_proto_job_payload gives it for ref (NULL: no regions). */
void gm_proto_put_job_refs(uint8_t *p, const gm_job_desc *d,
			   const gm_region_ref *ref);

/* Starts iterating over the jobs of a request with header h that
 * passed gm_proto_check_descs: head and desc are its head and
 * descriptors, payload its payload section (NULL: not at hand; the
 * operands then carry offsets only). */
void gm_proto_jobs_begin(gm_job_iter *it, const gm_hdr *h, const uint8_t *head,
			 const uint8_t *desc, const uint8_t *payload);

/* Next job: fills d and ops. Returns 0, or GM_ENOTFOUND at the end. */
int gm_proto_jobs_next(gm_job_iter *it, gm_job_desc *d, gm_job_operands *ops);

/* ---- the hand-off socket ---- */

#define GM_HANDOFF_MAGIC    0x47524D47u /* bytes 'G' 'M' 'R' 'G' */
#define GM_HANDOFF_VERSION  1
#define GM_HANDOFF_REQ_SIZE 32	/* a request record */
#define GM_HANDOFF_REP_SIZE 128 /* a reply record */

/*
 * Where gemmd listens for regions when the configuration does not say
 * (region_socket), and where a client looks for them: named after the
 * daemon's first ipc:// socket, ipc_path (without "ipc://"), beside it:
 * the path without a trailing ".sock", then "-regions.sock"
 * (/run/gemmd/gemmd.sock: /run/gemmd/gemmd-regions.sock). Daemons on
 * different sockets of one directory thus have different ones. Writes
 * it into out (len bytes); returns what snprintf returns. Both sides
 * call this one function so that their names cannot drift.
 */
int gm_handoff_path(const char *ipc_path, char *out, size_t len);

enum gm_handoff_op {
	GM_HANDOFF_REGISTER = 1, /* carries the memfd; reply: the region id */
	GM_HANDOFF_RELEASE = 2,	 /* names a region id of this connection */
};

typedef struct gm_handoff_req {
	uint16_t op;	 /* enum gm_handoff_op */
	uint64_t size;	 /* REGISTER: bytes of the memfd; RELEASE: 0 */
	uint64_t region; /* RELEASE: the id; REGISTER: 0 */
} gm_handoff_req;

typedef struct gm_handoff_rep {
	uint16_t op;	 /* the request's, 0 when it could not be read */
	uint32_t status; /* gm_err */
	uint64_t region; /* REGISTER: the new id; RELEASE: the id */
	uint64_t size;	 /* the region's bytes, 0 on failure */
	char message[GM_MSG_TEXT + 1];
} gm_handoff_rep;

void gm_handoff_put_req(uint8_t *p, const gm_handoff_req *r);

/* Decodes and checks a request record of len bytes: GM_ETRUNC short,
 * GM_ETRAILING long, GM_EMAGIC, GM_EVERSION, GM_EMSGTYPE for an unknown
 * op, GM_EFIELD for reserved bytes or a size or id the op does not
 * allow. r->op is set as soon as it was read. */
int gm_handoff_get_req(const uint8_t *p, size_t len, gm_handoff_req *r,
		       char *msg, size_t msglen);

/* Writes a reply record; message as in gm_proto_put_error. */
void gm_handoff_put_rep(uint8_t *p, const gm_handoff_rep *r);

/* Decodes and checks a reply record: lengths, magic, version and
 * reserved bytes as for requests. */
int gm_handoff_get_rep(const uint8_t *p, size_t len, gm_handoff_rep *r,
		       char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
