/*
 * outcomes_fx.h - what the outcome tests share: one gemmd on the CPU engine
 * for the whole run, with a "blocker" sized by a calibration run to keep
 * one BLAS thread busy for about BLOCK_S seconds (setup, teardown);
 * jobs and control requests in raw frames (gm_rawc.h); the daemon's
 * counts; one case of the table run through one kind of request and
 * checked: one answer each, counted once, the daemon back to idle.
 */
#ifndef OUTCOMES_FX_H
#define OUTCOMES_FX_H

#include <errno.h>
#include <math.h>
#include <sys/socket.h>

#include "it_case.h"

#define WAIT_MS	    20000 /* for answers that should never take it */
#define QUIET_MS    200	  /* nothing more comes on a connection within */
#define BLOCK_S	    0.5	  /* how long a blocker keeps the engine busy */
#define DEADLINE_MS 50	  /* passes while a job waits behind a blocker */
#define QUEUE_DEPTH 3	  /* a request of 4 jobs never fits */
#define DETACH_MAX  (1u << 20)
#define SMALL	    72	 /* m = n = k of a small job (see above) */
#define WIDE	    400	 /* m = n of a job whose result passes DETACH_MAX */
#define HUGE	    4096 /* m = n = k of a job larger than the pool */

/* Error codes (PROTOCOL.md 9). */
enum {
	OK = 0,
	EUNSUPPORTED_ = 6,
	EDIM_ = 7,
	ETOOBIG_ = 13,
	EBUSY_ = 14,
	ETIMEDOUT_ = 18,
	ECANCELED_ = 26,
	ENOTFOUND_ = 27,
	EDRAINING_ = 30,
	ESHUTDOWN_ = 17,
};

/* An expectation that is an ERROR refusing the whole request, not a
 * job's status. */
#define REFUSED 0x1000

/* Kinds of request (columns of the table). */
enum kind {
	PLAIN,
	DETACHED,
	QUEUED,		  /* plain, behind a blocker */
	QUEUED_DETACHED,  /* detached, behind a blocker */
	CANCELED,	  /* detached, behind a blocker, canceled */
	DEADLINE,	  /* plain, behind a blocker, its deadline passes */
	DEADLINE_DETACHED /* the same, detached */
};

#define KINDS 7

extern const char *const kind_names[KINDS];

int is_detached(int k);

int is_queued(int k);

/* Jobs a case's request is made of. */
enum shape {
	S_SMALL,  /* fp64 SMALL^3: runs */
	S_FP16,	  /* fp16 SMALL^3: the CPU engine cannot run it */
	S_DIM0,	  /* m = 0: refused by the wire checks */
	S_REGION, /* A in a region that does not exist */
	S_WIDE,	  /* fp64 WIDE x WIDE x 8: its result passes DETACH_MAX */
	S_HUGE,	  /* fp64 HUGE^3: larger than the pool, pageable off */
};

typedef struct outcome {
	const char *name;
	enum shape jobs[4];
	uint32_t njobs;
	int drain; /* sent while the daemon drains */
	int wire;  /* refused by the wire checks (PROTOCOL.md 8 steps
		      1-18): counted as a refused request, its jobs not
		      counted (a malformed frame's count is not trusted) */
	/* Per kind, per job: its status, or REFUSED | the ERROR's code
	 * that refused the whole request. */
	int expect[KINDS][2];
} outcome;

/* The daemon and the blocker sized for it. */
struct outcomes_fx {
	it_daemon d;
	uint32_t blocker_n;
	char pool_arg[64];
	uint64_t next_id;
};

extern struct outcomes_fx fx;

extern double *zeros;

/* ---- frames ---- */

rc_job job_of(enum shape s);

/* Sends a request of o's jobs on fd: detached or not, with deadline
 * dl_ms. A request larger than the pool is sent up to its payload
 * only: the daemon refuses it from its head. Returns its id. */
uint64_t send_request(int fd, const outcome *o, int detached, uint32_t dl_ms);

/* The blocker: one fp64 job of fx.blocker_n^3 on a connection of its
 * own, running once this returns. */
int send_blocker(void);

/* Reads the blocker's reply: it ran, and it ran long enough to have
 * held the jobs queued behind it for their deadlines. */
void end_blocker(int fd);

/* The JSON object of a CTRL_REPLY (cJSON_Delete it). */
cJSON *json_of(const rc_frame *f);

/* A CTRL_REPLY's code: 0 when "ok" is true. */
int code_of(const cJSON *doc);

/* Sends CTRL json on fd and reads its answer into f. */
void ctrl(int fd, const char *json, rc_frame *f);

/* A CTRL request answered with a CTRL_REPLY: its code, its "state"
 * into state (32 bytes) when not NULL. */
int ctrl_code(int fd, const char *json, char *state);

/* A wait for detached job id: the status of its GEMM_REPLY, or the code
 * of a CTRL_REPLY refusing it (ECANCELED: the job's status then). */
int wait_job(int fd, uint64_t id);

/* Nothing more comes on fd: every answer was one answer. */
void quiet(int fd);

/* The same, or fd is closed: a stopping gemmd closes its connections
 * once it has answered every job. */
void quiet_or_closed(int fd);

/* ---- the daemon's state ---- */

typedef struct counts {
	double ok, failed, rejected, total, refused;
} counts;

counts counts_now(const it_daemon *d);

/* Waits (WAIT_MS at most) until d holds nothing, then says which key
 * does not read as idle. */
void assert_idle(const it_daemon *d, const char *what);

/* ---- one case ---- */

/* Reads the answer of plain request id of o: one frame per job, or one
 * ERROR; the statuses (or REFUSED | code) into got. */
void read_plain(int fd, uint64_t id, const outcome *o, int *got);

/* Reads the answer of detached request id of n jobs: 0 with their ids
 * in ids, or REFUSED | the code of the ERROR that refused it. */
int read_ids(int fd, uint64_t id, uint32_t n, uint64_t *ids);

/* Reads the answer of detached request id of o: its ids, or one ERROR
 * (then REFUSED | code into got). Cancels the jobs when asked to, then
 * waits for each: its outcome into got, taken once, its status the
 * same. */
void read_detached(int fd, uint64_t id, const outcome *o, int cancel, int *got);

/* The stats' counts moved by what the case's jobs ended with (want),
 * and the blocker's one job ok when there was one. */
void assert_counted(const counts *before, const outcome *o, const int *want,
		    int blocker);

void run_case(const outcome *o, int kind);

/* ---- setup ---- */

/* Sizes the blocker to BLOCK_S on one BLAS thread, from a 400^3 job. */
uint32_t calibrate(void);

int setup(void **state);

int teardown(void **state);

#endif
