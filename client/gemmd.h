/*
 * gemmd.h - the gemmd client library.
 *
 * A service links this library to have a gemmd daemon compute GEMM jobs,
 * C <- alpha * op(A) * op(B) + beta * C: over ipc:// on the same host,
 * tcp:// or tls+tcp:// from another, in the wire format of
 * proto/PROTOCOL.md (frames on plain byte streams). A gemmd_client holds
 * one or more connections to each daemon it dialed; every call may be
 * made from any thread, and any number of requests may be in flight at
 * once: they are pipelined on the connections, each with its own request
 * id, and answered in whatever order the daemon finishes them. Operands
 * are written to the socket straight from the caller's buffers and
 * results read straight into them. Every function that can fail returns
 * a gm_err code from gm_error.h (GM_OK is 0; the same codes the daemon
 * sends); gemmd_strerror() gives the text.
 *
 * A request runs at most once: the library never writes a request
 * twice. A request not yet written when its connection drops waits for
 * the connection to be redialed, and fails with GM_ETRANSPORT at once
 * when that dial fails (the daemon is gone), unless the client was
 * opened GEMMD_OPEN_LAZY: it then waits for a dial that succeeds,
 * within its timeout. One with any byte written fails with
 * GM_ETRANSPORT as soon as its connection drops, and the caller decides
 * whether to retry (whether its jobs ran is then unknown). A GEMM call with a
 * timeout sends it as its jobs' deadline (gemmd_submit_opts.deadline_ms,
 * when that is not sooner): a job the daemon has not started within the
 * timeout of its receipt never runs. A call that times out may still
 * leave a job running in the daemon; its replies are read and discarded
 * when they come. No call writes into, or reads
 * from, a caller's buffer after it returned (or, asynchronously, after
 * its done callback ran).
 *
 * Over ipc://, jobs with plain pointers of more than about a MiB are
 * staged through a shared-memory region the library owns (see
 * gemmd_open_opts), unless GEMMD_OPEN_NO_SHM.
 */
#ifndef GEMMD_H
#define GEMMD_H

#include <stddef.h>
#include <stdint.h>

#include "gm_error.h"
#include "gemmd_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where gemmd_open(NULL, ...) dials when $GEMMD_URL is not set. */
#define GEMMD_DEFAULT_URL "ipc:///run/gemmd/gemmd.sock"

/* timeout_ms: wait as long as it takes. */
#define GEMMD_FOREVER (-1)

/* Element types; the values are those of the wire format. */
enum gemmd_dtype {
	GEMMD_FP64 = 1,
	GEMMD_FP32 = 2,
	GEMMD_TF32 = 3, /* fp32 data, TF32 tensor-core compute */
	GEMMD_FP16 = 4, /* IEEE binary16 data, fp32 accumulate */
	GEMMD_BF16 = 5, /* bfloat16 data, fp32 accumulate */
};

/* Storage order of A, B, C and the result of one job. */
enum gemmd_layout {
	GEMMD_ROW_MAJOR = 0,
	GEMMD_COL_MAJOR = 1,
};

enum gemmd_kernel {
	GEMMD_KERNEL_DEFAULT = 0, /* whatever the daemon is configured with */
	GEMMD_KERNEL_CUBLAS = 1,
	GEMMD_KERNEL_TILED = 2, /* shared-memory tiled kernel, fp64/fp32 */
};

#define GEMMD_PRIORITY_MAX     3 /* priorities 0 (lowest) .. 3 */
#define GEMMD_PRIORITY_DEFAULT 1
#define GEMMD_MAX_DIM	       (1u << 20) /* each of m, n, k */
#define GEMMD_MAX_JOBS	       65536u	  /* per request */
#define GEMMD_MSG_TEXT	       97	  /* job message, with its NUL */

typedef struct gemmd_client gemmd_client;

/* A shared-memory region this process and its daemon both map
 * (gemmd_region_create). */
typedef struct gemmd_region gemmd_region;

/* Where an operand of a job lives in a region. */
typedef struct gemmd_region_ref {
	gemmd_region *region; /* NULL: not in a region */
	uint64_t offset;      /* bytes from the region's start; a multiple
				 of the job's element size */
} gemmd_region_ref;

/* Microseconds a job spent in each phase, as the daemon measured them
 * (proto/PROTOCOL.md, "Timings"). h2d, kernel and d2h are intervals on
 * the job's CUDA stream: with streams running at once they include waits
 * for a copy engine or SMs another stream held. Phases a job never
 * reached are 0. */
typedef struct gemmd_timings {
	double queue_us;    /* receipt to the job's first device operation */
	double h2d_us;	    /* host-to-device copies; 0 on the CPU engine */
	double kernel_us;   /* the GEMM (the BLAS call on the CPU engine) */
	double d2h_us;	    /* device-to-host copy; 0 on the CPU engine */
	double total_us;    /* daemon's clock, receipt to reply; the same for
			       every job of a request, no network included */
	uint64_t start_seq; /* the job's place, from 1, in the order the
			       daemon handed jobs to its engine since it
			       started; 0 when it never was */
} gemmd_timings;

/*
 * One GEMM job. A is m x k (k x m when trans_a), B is k x n (n x k when
 * trans_b), C and out are m x n, all densely packed in the job's layout
 * with elements of the job's dtype. The call copies a, b and c once into
 * the request; out must have room for m * n elements.
 */
typedef struct gemmd_job {
	/* Set by the caller. */
	int dtype;	  /* enum gemmd_dtype */
	int layout;	  /* enum gemmd_layout */
	int kernel;	  /* enum gemmd_kernel */
	int trans_a;	  /* 0 or 1 */
	int trans_b;	  /* 0 or 1 */
	uint32_t m, n, k; /* each 1..GEMMD_MAX_DIM */
	double alpha;	  /* finite */
	double beta;	  /* finite; used only with c or c_ref */
	const void *a;	  /* required, or a_ref */
	const void *b;	  /* required, or b_ref */
	const void *c;	  /* NULL: no C input, out = alpha*op(A)*op(B) */
	void *out;	  /* required, or out_ref; written when status
			     is GM_OK */

	/*
	 * Or operands in a shared-memory region: where a ref's region is
	 * set, the pointer above must be NULL, and the operand is read from
	 * (the result written to) the region at the ref's offset, so none
	 * of its bytes cross the socket. A job may mix pointers and
	 * regions. c_ref set means the job has C; out_ref may be exactly
	 * c_ref (C updated in place), else it must not overlap an input.
	 * Regions go to the daemon whose hand-off socket made them: a
	 * client dialing several daemons should not name them.
	 */
	gemmd_region_ref a_ref, b_ref, c_ref, out_ref;

	/* Filled by the call, also when the whole request fails. */
	int status;		      /* gm_err of this job */
	char message[GEMMD_MSG_TEXT]; /* detail when status != 0, else "" */
	gemmd_timings t;	      /* zero when the daemon sent none */
} gemmd_job;

/* Batch options; NULL in a call means the defaults (all fields 0 except
 * priority GEMMD_PRIORITY_DEFAULT). */
typedef struct gemmd_submit_opts {
	int priority;	      /* 0..GEMMD_PRIORITY_MAX; higher starts first */
	uint32_t deadline_ms; /* 0: none; else a job not started this many
				 ms after the daemon received the request
				 fails GM_ETIMEDOUT and never runs (one
				 that has started runs to completion) */
} gemmd_submit_opts;

/* gemmd_open_opts.flags: return at once and dial in the background, so
 * that a service may start before the daemon; requests wait for a
 * connection within their own timeout (without it, a request whose
 * dial fails fails GM_ETRANSPORT at once). Without it gemmd_open fails when
 * the first dial does. Either way a dropped connection is redialed in
 * the background (at once after one that carried replies, else backing
 * off from 0.1 s to 2 s), for as long as the client is open. */
#define GEMMD_OPEN_LAZY 0x1u

/* gemmd_open_opts.flags: over ipc://, send plain pointers through the
 * socket instead of staging them through shared memory. */
#define GEMMD_OPEN_NO_SHM 0x2u

/* Connections to a tcp:// or tls+tcp:// daemon when connections is 0:
 * one stream over TCP moves what one window and one core allow, so a
 * large request goes over several. */
#define GEMMD_TCP_CONNECTIONS_DEFAULT 4u

/* Staging region of a client over ipc:// when staging_bytes is 0. */
#define GEMMD_STAGING_BYTES_DEFAULT (256ull << 20)

/*
 * Options of gemmd_open and gemmd_dial; NULL means all zero. The tls_
 * fields are for tls+tcp:// URLs only and are an error with any other.
 *
 * connections: a large GEMM request (64 MiB of operands and results or
 * more) to a daemon with several connections is striped: split into job
 * ranges of about equal bytes, one request per connection, all in
 * flight at once; the call ends when all are answered. 0 means 1 over
 * ipc:// and GEMMD_TCP_CONNECTIONS_DEFAULT over tcp:// and tls+tcp://,
 * of which only the first is dialed at open: the others are dialed
 * when a large request is striped over them (its parts wait for the
 * dials; a part whose dial fails moves to a connection that is up), and
 * one that fails or drops stays down until the next large request, so
 * a client that sends only small requests holds one connection. The
 * daemon sees
 * several requests: each is queued, or refused, on its own. When some
 * are refused whole (GM_EBUSY for a full queue, say) and others
 * answered, the call returns GM_OK, the jobs of a refused part carry
 * the refusal as their status and message and the others their own
 * outcomes; when all are refused it returns the refusal, as for one
 * request. A part whose connection drops fails the call as usual.
 *
 * Staging (ipc:// without GEMMD_OPEN_NO_SHM, when the daemon takes
 * regions): a GEMM request whose jobs all have plain pointers and move
 * at least a MiB goes through a region of staging_bytes that the library
 * makes at its first such request (the daemon registers it with its
 * engine: with CUDA about a millisecond per MiB, once) and reuses. A few
 * threads copy the operands in, chunk by chunk of jobs (a chunk is one
 * request to the daemon, sent as soon as its copies are done, while the
 * next chunk is copied), and copy each result out as its reply comes.
 * As with striping, the chunks are requests of their own: a chunk
 * refused whole gives its jobs the refusal, later chunks are not sent
 * (their jobs GM_ECANCELED), and the call returns GM_OK when some chunk
 * was answered. Priority applies to each chunk, and deadline_ms counts
 * from the call's start. A job larger than half the region makes the
 * library replace it with one that holds two of it (a power of two),
 * kept while the client lives: staging_bytes is the initial size, the
 * daemon's region_max_bytes the bound. Detached requests, jobs naming
 * regions and jobs over half of what the daemon's quota allows take the
 * socket, and so does everything when the region cannot be made
 * (regions off in the daemon).
 */
typedef struct gemmd_open_opts {
	unsigned flags;		     /* GEMMD_OPEN_LAZY, GEMMD_OPEN_NO_SHM */
	const char *tls_ca_file;     /* PEM CA chain that signed the daemon's
					certificate; required for TLS */
	const char *tls_cert_file;   /* PEM client certificate, when the daemon
					asks for one; with tls_key_file NULL
					the key is in this file too */
	const char *tls_key_file;    /* PEM private key, unencrypted */
	const char *tls_server_name; /* the DNS name or IP address the
					daemon's certificate must carry;
					NULL: the URL's host */
	const char *region_socket;   /* the daemon's hand-off socket for
					regions; NULL: beside the ipc://
					socket of the URL */
	unsigned connections;	     /* connections to the daemon; 0: 1
					over ipc://, else
					GEMMD_TCP_CONNECTIONS_DEFAULT; at
					most 64 */
	uint64_t staging_bytes;	     /* ipc://: the staging region's size;
					0: GEMMD_STAGING_BYTES_DEFAULT */
} gemmd_open_opts;

/* Completion of gemmd_submit_async: rv as gemmd_submit would return it. */
typedef void (*gemmd_done_fn)(void *arg, int rv);

/* How long gemmd_open and gemmd_dial wait for their first dial. */
#define GEMMD_OPEN_TIMEOUT_MS 10000

/* Opens a client dialing url (NULL: $GEMMD_URL, else GEMMD_DEFAULT_URL)
 * and stores it in *out. GM_EINVAL for a malformed or unsupported URL or
 * bad options, GM_ETRANSPORT when the daemon cannot be reached (the
 * detail in gemmd_last_error()), GM_ETIMEDOUT when the first dial has
 * not ended within GEMMD_OPEN_TIMEOUT_MS (a host that does not answer, a
 * listener that does not accept), GM_ENOMEM. Blocks for the first dial
 * unless GEMMD_OPEN_LAZY. Any thread. */
int gemmd_open(const char *url, const gemmd_open_opts *opts,
	       gemmd_client **out);

/* gemmd_open waiting up to timeout_ms (> 0, or GEMMD_FOREVER) for the
 * first dial instead. */
int gemmd_open_timeout(const char *url, const gemmd_open_opts *opts,
		       gemmd_client **out, int timeout_ms);

/* Dials one more daemon from c. Each request then goes to one daemon:
 * the one whose hand-off socket made the regions its jobs name, else,
 * among the daemons with a connection up, the one with the least
 * outstanding work (bytes of requests and results in flight plus FLOPs
 * / 64), taken in turn when equal. A request whose connection drops
 * fails; it is not moved to another daemon. opts as for gemmd_open
 * (NULL: none). Returns as gemmd_open does. Any thread. */
int gemmd_dial(gemmd_client *c, const char *url, const gemmd_open_opts *opts);

/* Fails the requests still in flight (their done callbacks run with
 * GM_ECANCELED before this returns), closes the connections, releases
 * the regions and frees c. Blocks until the library's threads are done
 * with c. No other call on c may run or start during or after it, and
 * it must not be called from a done callback. */
void gemmd_close(gemmd_client *c);

/*
 * Sends jobs[0..n-1] as one request and waits up to timeout_ms (> 0, or
 * GEMMD_FOREVER) for the replies. Returns GM_OK when the daemon
 * answered: each job's status then says whether it succeeded, and its
 * out holds the result when it did. Otherwise returns why, with the
 * status and message of each job that has no answer of its own set to
 * it: the daemon's refusal of the whole request (GM_EBUSY,
 * GM_ESHUTDOWN, ...: no job ran), a job invalid before sending (its own
 * code; the others GM_ECANCELED), GM_ETIMEDOUT or GM_ETRANSPORT (the
 * jobs answered before keep their outcomes; whether the others ran is
 * unknown), GM_EINVAL (bad arguments), GM_ENOMEM. gemmd_last_error()
 * has the detail.
 *
 * Results are read into out as they arrive, once their reply record has
 * been checked: a job whose status is not GM_OK may have had part of
 * its out written. A call returns at its timeout unless a read into, or
 * a write from, the caller's buffers is in progress at that moment: it
 * then returns when that operation ends, and if that takes more than a
 * second (the daemon stopped reading or writing in the middle of it)
 * the connection is closed, failing its other requests with
 * GM_ETRANSPORT. A request half written when its call ends is finished
 * with zeros in place of the rest of the caller's operands, so that the
 * connection stays usable: its jobs may run on those operands, and a job
 * whose result goes to a region may then write that result there.
 * Blocks. Any thread.
 */
int gemmd_submit(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		 const gemmd_submit_opts *opts, int timeout_ms);

/* As gemmd_submit without waiting. Returns GM_OK when the request is on
 * its way: done(arg, rv) will then be called exactly once, on one of the
 * library's threads (nng's, its timer thread, a copy thread), when the
 * replies are in the jobs, on failure or timeout, or from gemmd_close;
 * jobs and everything they point to must stay valid and untouched until
 * it is. Any other return means done will not be called (the jobs say
 * why, as for gemmd_submit). done may start calls; it must not block for
 * long, nor call gemmd_close. */
int gemmd_submit_async(gemmd_client *c, gemmd_job *jobs, uint32_t n,
		       const gemmd_submit_opts *opts, int timeout_ms,
		       gemmd_done_fn done, void *arg);

/* Sends a JSON control request (e.g. {"op":"stats"}) and waits up to
 * timeout_ms for the reply. On GM_OK *reply is the reply document
 * ({"ok":true,...}), malloc'd and NUL-terminated: free() it. A refusal
 * ({"ok":false,"code":N,...}) returns code N with *reply NULL and the
 * daemon's message in gemmd_last_error(); other failures are as for
 * gemmd_submit, plus GM_EJSON for a reply that is not a JSON object.
 * Blocks. Any thread. */
int gemmd_ctrl(gemmd_client *c, const char *request, char **reply,
	       int timeout_ms);

/* gemmd_ctrl with {"op":"ping"}; reply may be NULL when only liveness
 * matters. The reply's "state" says whether the daemon is ready or
 * draining, and its "dtypes" which dtypes its engine runs: a job of
 * another fails EUNSUPPORTED, which a caller may say without sending
 * it, as gemmctl and the Python package do (PROTOCOL.md 7). */
int gemmd_ping(gemmd_client *c, char **reply, int timeout_ms);

/* gemmd_ctrl with {"op":"stats"}: the daemon's statistics document. */
int gemmd_stats(gemmd_client *c, char **reply, int timeout_ms);

/*
 * Detached jobs. A detached request is answered at once with one id per
 * job; the jobs queue and run as usual, each on its own (a job of it can
 * finish, be waited for or be canceled while the others still wait).
 * The daemon keeps each result for its configured detach_keep_s after
 * the job finished, for gemmd_wait on any connection of the same
 * principal (the same uid over ipc://, the same certificate subject
 * over tls+tcp://, any plain tcp:// client), even another process's;
 * then it drops it and the job reads GEMMD_JOB_EXPIRED. To any other
 * principal a job's id is unknown (GM_ENOTFOUND). Ids are random, below
 * 2^53, never two alike at once; results do not survive a restart.
 */

/* States of a detached job; the names are the wire's ("queued", ...). */
enum gemmd_job_state {
	GEMMD_JOB_QUEUED = 0,
	GEMMD_JOB_RUNNING = 1,
	GEMMD_JOB_DONE = 2,	/* finished with status GM_OK */
	GEMMD_JOB_FAILED = 3,	/* finished with an error status */
	GEMMD_JOB_CANCELED = 4, /* it did not run, or its result was
				   dropped */
	GEMMD_JOB_EXPIRED = 5,	/* its result was dropped unclaimed */
};

/* What the daemon knows of a detached job. */
typedef struct gemmd_job_info {
	uint64_t id;
	int state;		      /* enum gemmd_job_state */
	int status;		      /* gm_err once finished; 0 before */
	char message[GEMMD_MSG_TEXT]; /* detail when status != 0 */
	int has_result;		      /* gemmd_wait would return it now */
	int priority;
	int dtype, layout; /* enum gemmd_dtype, enum gemmd_layout */
	uint32_t m, n, k;
	gemmd_timings t; /* zero until the job finished */
} gemmd_job_info;

/* Sends jobs[0..n-1] as one detached request and waits up to timeout_ms
 * for its ids, stored in ids[0..n-1] in job order. The jobs are checked
 * and sent as by gemmd_submit, but out may be NULL and is never written;
 * a, b and c may be freed when this returns. Returns GM_OK when the
 * request was queued; else as gemmd_submit (GM_EBUSY also when the
 * daemon has no room left for detached results). Blocks. Any thread. */
int gemmd_submit_detached(gemmd_client *c, gemmd_job *jobs, uint32_t n,
			  const gemmd_submit_opts *opts, uint64_t *ids,
			  int timeout_ms);

/* Fills *info with the state of detached job id. GM_ENOTFOUND for an id
 * the daemon does not know (never, or no longer) or that another
 * principal submitted; else as gemmd_ctrl.
 * Blocks. Any thread. */
int gemmd_job_status(gemmd_client *c, uint64_t id, gemmd_job_info *info,
		     int timeout_ms);

/*
 * Waits up to timeout_ms (>= 0; 0 asks once; or GEMMD_FOREVER) for
 * detached job id to finish and takes its result: the daemon then no
 * longer holds it, and a second wait gets GM_ENOTFOUND. With job->out
 * NULL the call fills job's dtype, layout, m and n from the result and
 * mallocs out for it (free() it; it stays NULL when the job failed);
 * else job's dtype, layout, m and n must be the job's (GM_EINVAL in
 * job->status otherwise, out untouched). Returns GM_OK when the daemon
 * answered with the job's outcome: job->status says whether the job
 * succeeded, job->t has its timings. Else why there is none, also in
 * job->status: GM_ETIMEDOUT (not finished in time; wait again),
 * GM_ECANCELED, GM_ENOTFOUND (unknown id, another principal's, or the
 * result expired or was taken), GM_EBUSY (another wait holds the job), or as
 * gemmd_ctrl. The daemon answers a timed-out wait itself; the call allows it a
 * second more, so that a result is not taken by a call that gave up. Blocks.
 * Any thread.
 */
int gemmd_wait(gemmd_client *c, uint64_t id, gemmd_job *job, int timeout_ms);

/* Cancels detached job id: a queued job never runs; a running one runs
 * to its end but its result is dropped; a kept result is dropped; the
 * job then reads GEMMD_JOB_CANCELED with status GM_ECANCELED. *state
 * (may be NULL) is the job's state after: GEMMD_JOB_CANCELED, or
 * GEMMD_JOB_RUNNING for a job that is finishing. GM_ENOTFOUND (also for
 * another principal's job); else as gemmd_ctrl. Blocks. Any thread. */
int gemmd_cancel(gemmd_client *c, uint64_t id, int *state, int timeout_ms);

/* "queued", "running", ...; NULL for another value. */
const char *gemmd_job_state_name(int state);

/* Drains the daemon: new GEMM requests are refused with GM_EDRAINING
 * while queued and running jobs finish and every other request is
 * served; gemmd_resume undoes it (GM_ESHUTDOWN when the daemon is
 * stopping). Admin operations: GM_EACCES for a client the daemon's
 * admin_uids or admin_subjects do not name (never one over plain
 * tcp://). As gemmd_ctrl. Blocks. Any thread. */
int gemmd_drain(gemmd_client *c, int timeout_ms);
int gemmd_resume(gemmd_client *c, int timeout_ms);

/* ---- shared-memory regions: zero-copy operands for local clients ----
 *
 * Over ipc:// a job's operands can live in memory this process shares
 * with the daemon instead of crossing the socket: the daemon registers
 * each region with its engine once (pinned for DMA with CUDA) and reads
 * inputs from it, and writes results into it, directly. Create regions
 * up front and reuse them: registering costs about a millisecond per MiB.
 * A region is a memfd sealed against shrinking, handed to the daemon
 * over its hand-off socket, which only this process and the daemon ever
 * map; the daemon lets only this uid use it. The daemon limits the
 * regions (count and bytes) per uid. All calls may be made from any
 * thread. */

/*
 * Makes a region of bytes (> 0), mapped here and in c's daemon, and
 * stores it in *out. Fails with GM_EINVAL when c has no hand-off socket
 * (neither an ipc:// URL nor opts->region_socket), GM_ETRANSPORT when
 * the socket cannot be reached, GM_ENOMEM when the memory cannot be
 * made here, or the daemon's refusal: GM_ETOOBIG over a quota,
 * GM_ESHUTDOWN, GM_ECUDA when it cannot be pinned. gemmd_last_error()
 * has the detail. Blocks while the daemon maps and registers it, up to
 * 10 s and 4 ms per MiB (registering takes about 1 ms per MiB with
 * CUDA); then GM_ETIMEDOUT.
 */
int gemmd_region_create(gemmd_client *c, uint64_t bytes, gemmd_region **out);

/* gemmd_region_create within timeout_ms (> 0, or GEMMD_FOREVER), from
 * the dial of the hand-off socket to the daemon's answer: GM_ETIMEDOUT
 * when the daemon did not answer in time (a stopped or hung daemon).
 * The regions made before stay usable; if the daemon makes the region
 * after all, the client's next region call releases it. */
int gemmd_region_create_timeout(gemmd_client *c, uint64_t bytes,
				gemmd_region **out, int timeout_ms);

/* The region's memory in this process, its size, and its id (what jobs
 * name on the wire). */
void *gemmd_region_ptr(const gemmd_region *r);
uint64_t gemmd_region_size(const gemmd_region *r);
uint64_t gemmd_region_id(const gemmd_region *r);

/* Hands r back: the daemon forgets it (keeping its mapping until the
 * jobs using it are done), it is unmapped here and freed. No call of
 * this process may still use it. Returns the daemon's answer, or
 * GM_ETRANSPORT when it could not be asked (r is freed anyway; the
 * daemon lets it go when the client's hand-off connection closes), or
 * GM_ETIMEDOUT when the daemon did not answer within 10 s (r is freed
 * here; the daemon's answer is read by the client's next region call).
 * gemmd_close releases every region of its client. Blocks. */
int gemmd_region_release(gemmd_region *r);

/* A first-fit allocator over r, for callers that want one: reserves
 * bytes (> 0) at an offset that is a multiple of align (a power of two;
 * 0: 256, what DMA likes), stored in *offset. GM_ENOMEM when no gap
 * fits, GM_EINVAL for bad arguments. */
int gemmd_region_alloc(gemmd_region *r, uint64_t bytes, uint64_t align,
		       uint64_t *offset);

/* Frees the block that gemmd_region_alloc put at offset; GM_ENOTFOUND
 * when there is none. gemmd_region_reset frees every block. */
int gemmd_region_free(gemmd_region *r, uint64_t offset);
void gemmd_region_reset(gemmd_region *r);

/* Static text of a gm_err code; "unknown error" for other values. */
const char *gemmd_strerror(int code);

/* Detail of the last failed blocking call (gemmd_open, gemmd_submit,
 * gemmd_ctrl, ...) made by this thread, e.g. "ipc:///run/gemmd/gemmd.sock:
 * Connection refused"; "" when there was none. Valid until this thread's
 * next call into the library. */
const char *gemmd_last_error(void);

/* ---- version and error codes ----
 *
 * The codes every call returns, as GEMMD_OK, GEMMD_EINVAL, GEMMD_EBUSY,
 * ...: the same values as gm_error.h's GM_ names and the wire's,
 * generated from its one list (GM_ERRNO_MAP), so they cannot drift.
 * Callers use these and the two functions below: gm_error.h's own
 * gm_strerror() and gm_errname() are internal, not exported by
 * libgemmd.so. */
enum gemmd_errno {
#define GEMMD_ERRNO_ENUM(name, val, text) GEMMD_##name = val,
	GM_ERRNO_MAP(GEMMD_ERRNO_ENUM)
#undef GEMMD_ERRNO_ENUM
};

/* Symbolic name of a code without its prefix ("OK", "EBUSY"), as
 * `gemmctl` prints it and the daemon's stats key it; "E?" for other
 * values. Static text. Any thread. */
const char *gemmd_errname(int code);

/* The library's version, "MAJOR.MINOR.PATCH": the one loaded at run time,
 * which may be newer than GEMMD_VERSION_STRING of the headers a program
 * was compiled with (same major: same ABI). Static text. Any thread. */
const char *gemmd_version(void);

#ifdef __cplusplus
}
#endif
#endif
