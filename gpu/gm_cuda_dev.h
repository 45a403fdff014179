/*
 * gm_cuda_dev.h - one GPU as the CUDA engine drives it.
 *
 * Private to the CUDA engine's .cu files (it names CUDA types). A device
 * owns a ring of streams, each with its cuBLAS handle and workspace; a
 * cuBLASLt handle with its algorithms for batches (gm_cuda_lt.h); one
 * device allocation whose slabs a gm_pool hands out; an issue thread
 * that turns queued waves into work on the streams (gm_cuda_issue.cu),
 * small jobs coalesced into batches (gm_cuda_batch.cu) or, alone, run on
 * their host memory (gm_cuda_direct.h), with a few
 * threads that stage socket payloads for it (gm_cuda_stage.h); one
 * completion thread per stream that waits for that stream's work in
 * order and hands it back (gm_cuda_done.cu); and a runner that takes the
 * jobs too large for their share of the device, or in pageable memory,
 * and runs them tile by tile beside the others (gm_cuda_ooc.h). Jobs
 * wait inside the device, never in the caller, when its memory is
 * full.
 *
 * Busy time is timed on the device: a busy period (jobs in flight) opens
 * with an event recorded just before its first host-to-device copy, and
 * each completion measures its job's end from that event; the latest end
 * is the period's length when the last job is released. Meanwhile the
 * open period counts by the host clock, and every device-timed total is
 * shown through a gm_tl_shown, so the stats never show more busy time
 * than wall time passed. The same event gives each job's start on the
 * host clock (gm_job.start_us): each completion thread sees its job's
 * end at most a little after it happened, so the host time of the span
 * event is at most the soonest of those sightings less their times after
 * the event.
 *
 * Threads cross on gm_handoff queues (gm_handoff.h has the map): the
 * loop's waves to the issue thread, tiled jobs to the runner, each
 * stream's contexts to its completion thread, all under mu, with the
 * device's spin policies (gm_spin.h) for the issue thread's waves, the
 * completion threads' end events and their queues.
 *
 * Locking: the fields under "guarded by mu" are only touched with mu
 * held; the CUDA objects are made before the threads start and destroyed
 * after they stop. The done callback is called without mu.
 *
 * Layering: calls and includes go down this list, never up.
 *   gm_engine_cuda.cu  the engine's table: spreads waves over devices
 *   gm_cuda_life       opens and closes a device, starts its threads
 *   gm_cuda_issue      the issue thread (waves into work on the ring)
 *   gm_cuda_warm       the warm-up the issue thread runs
 *   gm_cuda_ooc        the runner's thread and queue
 *   gm_cuda_tile       the runner's CUDA objects, a tiled job's operations
 *   gm_cuda_take       a context and its slab for the issue thread
 *   gm_cuda_batch      a batch's copies and batched call
 *   gm_cuda_direct     a small job run on its host memory
 *   gm_cuda_done       a stream's completion thread
 *   gm_cuda_dev        this header: the device's state and the shared
 *                      steps under mu that every module above takes
 * Below them all, the leaves: gm_cuda_gemm, gm_cuda_lt, gm_cuda_stage,
 * gm_cuda_err, gm_cuda_fault, and gpu/'s own gm_pool, gm_batch,
 * gm_timeline, gm_engine_impl. State a lower module works on is
 * declared in its header (the runner's CUDA objects in gm_cuda_tile.h),
 * and opening and closing, which touch every module, sit at the top.
 */
#ifndef GM_CUDA_DEV_H
#define GM_CUDA_DEV_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gm_batch.h"
#include "gm_cuda_lt.h"
#include "gm_cuda_stage.h"
#include "gm_timeline.h"
#include "gm_engine.h"
#include "gm_handoff.h"
#include "gm_pool.h"
#include "gm_spin.h"

struct gm_cuda_ooc; /* the runner's (gm_cuda_tile.h) */

/* Jobs in one batch, at most: what one batched call takes. */
#define GM_CUDA_BATCH_JOBS GM_CUDA_LT_COUNT
/* Staging copies the issue thread hands the stager at once. */
#define GM_CUDA_STAGE_PIECES 4096

/* What the devices of one engine share; owned by the engine. */
struct gm_cuda_shared {
	gm_engine_config cfg; /* defaults filled in */
	gm_engine *engine;
	int faulted;	 /* atomic: a sticky error happened on some device */
	int fault_armed; /* atomic: enum gm_cuda_fault, test builds only */
	pthread_mutex_t fault_mu;
	char fault_msg[GM_MSG_TEXT + 1]; /* the first fault, under fault_mu */
	/* A warm-up: devices still at it, and its first failure. */
	int warm_left; /* atomic */
	int warm_status;
	char warm_msg[GM_MSG_TEXT + 1]; /* under fault_mu */
};

/* Events bracketing the phases of a context on its stream, in order.
 * Nothing else runs on the stream between one phase and the next, so the
 * end of one is the start of the next: four events time three phases. */
enum {
	EV_H2D_START,
	EV_H2D_END,    /* and the kernel's start */
	EV_KERNEL_END, /* and the copy back's start */
	EV_END,	       /* after the job's last operation; the one waited on */
	EV_COUNT,
};

/*
 * A job on its own, or a batch of small jobs, from the moment it has
 * device memory until it is handed back: one slab, one stream, one set
 * of events. A batch's jobs are linked from job through gm_job.next, in
 * runs of one key (gm_batch.h), each job in its slot of the slab; the
 * first job's status and msg are the batch's until completion gives
 * them to every job. Contexts are made on demand and reused, so events
 * are not created per job.
 */
struct gm_cuda_ctx {
	gm_job *job;	/* the job, or the batch's first */
	uint32_t njobs; /* 1 for a job on its own */
	int batch;	/* coalesced: slots and batched calls */
	int direct;	/* a batch of one run on its host memory, no copies
			   (gm_cuda_direct.h) */
	struct gm_cuda_ctx *next; /* free list or a stream's queue */
	struct gm_cuda_stream *st;
	void *slab; /* from the device pool */
	/* A job on its own: */
	char *da, *db, *dc; /* dc: C and the result; mapped host memory
			       when mapped */
	gm_job_sizes sz;
	int kernel; /* enum gm_kernel, resolved */
	int has_c, mapped;
	int ended; /* EV_END (gm_cuda_ctx_ev) was recorded */
	/* Its first copy's start: ev[EV_H2D_START], or the device's span_ev
	 * when the context opened the busy period (one record fewer for a
	 * job alone; span_ev stays until the context is released). */
	cudaEvent_t start;
	/* EV_H2D_START .. EV_END after the busy period's start, µs; < 0
	 * when unknown. end_us is at[EV_END]. */
	double at[EV_COUNT];
	double end_us;
	cudaEvent_t ev[EV_COUNT];
};

/* The event that marks point i of c's work. A job run on its host
 * memory has no copies: its start stands for EV_H2D_END and its
 * kernel's end for EV_END, two records fewer on its path (each some
 * 2 us of the issue thread's). */
static inline cudaEvent_t gm_cuda_ctx_ev(const struct gm_cuda_ctx *c, int i)
{
	if (i == EV_H2D_START || (c->direct && i == EV_H2D_END))
		return c->start;
	if (c->direct && i == EV_END)
		return c->ev[EV_KERNEL_END];
	return c->ev[i];
}

struct gm_cuda_stream {
	struct gm_cuda_dev *dev;
	cudaStream_t s;
	cublasHandle_t blas; /* bound to s, with its own workspace */
	void *ws;	     /* that workspace, also cuBLASLt's on s */
	pthread_t thread;    /* completion thread */
	int started;
	/* Contexts issued, in stream order, through next, under the
	 * device's mu; closed: the thread hands back the rest and exits. */
	gm_handoff done;
};

/* Where the device-timed span of the current busy period stands. */
enum {
	SPAN_NONE,    /* no busy period */
	SPAN_PENDING, /* busy; its first copy not yet issued */
	SPAN_OPEN,    /* span_ev recorded before the first copy */
};

/* One submitted wave's share of a device; jobs linked by job->next. */
struct gm_cuda_wave {
	gm_job *head;
	struct gm_cuda_wave *next;
};

struct gm_cuda_dev {
	struct gm_cuda_shared *sh;
	int index;
	char name[64];
	unsigned nstreams;
	struct gm_cuda_stream *streams;
	void *mem; /* workspaces, then the job pool */
	gm_pool *pool;
	cudaEvent_t span_ev; /* start of the busy period's span */
	pthread_t issue_thread;
	int issue_started;
	/* The spin policies (gm_engine_config.spin_us): the issue thread
	 * polling for a wave; one completion thread at a time polling its
	 * end event, one its queue. */
	gm_spin spin_waves, spin_ends, spin_idle;
	struct gm_cuda_ooc *ooc; /* the runner's own */
	pthread_t ooc_thread;
	int ooc_started;

	/* The issue thread's own, made at open: */
	unsigned next_stream;	       /* the ring's position */
	unsigned last_stream;	       /* the stream given last */
	int was_idle;		       /* nothing was in flight at the last
					  grab: the last stream is free */
	struct gm_cuda_stager *stager; /* its copying helpers */
	struct gm_cuda_lt *lt;
	struct gm_cuda_direct *direct;	   /* small jobs alone (direct.cu) */
	gm_batch_groups *groups;	   /* a wave's small jobs by key */
	struct gm_cuda_copies *copies;	   /* a batch's pieces (batch.cu) */
	struct gm_cuda_piece *pieces;	   /* staging copies of a chunk */
	uint64_t small_bytes, batch_bytes; /* see gm_cuda_issue.cu */

	pthread_mutex_t mu;
	pthread_cond_t issue_cv; /* memory freed, a job taken back, fault */
	pthread_cond_t ooc_cv;	 /* memory freed, fault */
	/* guarded by mu: */
	gm_handoff waves;    /* for the issue thread, through next; a
				warm-up asked for kicks it; closed: issue
				what is queued, then exit */
	gm_handoff ooc_jobs; /* tiled jobs for the runner, through
				gm_job.next; closed: run them, then exit */
	uint64_t ooc_want;   /* the runner waits for this much of the
				pool: start nothing new meanwhile */
	struct gm_cuda_wave *free_waves; /* wave records to reuse */
	/* Jobs of the wave being issued that are still queued, linked by
	 * next: held, those that go one context each and have none yet,
	 * which the issue thread takes one at a time; current, the job or
	 * batch (current_n jobs) it is getting memory for, while
	 * current_waits says it sleeps for it, the small jobs still in
	 * groups waiting with it. gm_cuda_dev_take_back takes a job from
	 * held at any time, from current and groups while it sleeps. */
	gm_job *held, *current;
	uint32_t current_n;
	int current_waits;
	int mem_waits; /* threads asleep until memory comes back */
	int warm;      /* a warm-up is asked for */
	struct gm_cuda_ctx *free_ctx;
	unsigned nctx;	      /* contexts made */
	unsigned inflight;    /* contexts out of the free list */
	uint64_t outstanding; /* host bytes of jobs queued or running */
	uint64_t jobs;	      /* jobs handed back */
	double busy_us;	      /* ended busy periods, device-timed */
	double busy_since;    /* host clock at the start of the open one */
	double span_host;     /* host clock of span_ev, at most; 0 unknown */
	/* What the stats showed of each total (gm_tl_shown): */
	struct gm_tl_shown show_busy, show_kernel, show_copy, show_overlap;
	struct gm_tl_shown show_stream[GM_MAX_STREAMS];
	uint64_t periods;      /* busy periods ended */
	int span_state;	       /* SPAN_*; only the issue thread moves it
				  from PENDING to OPEN */
	double span_end_us;    /* latest job end in the open period */
	struct gm_timeline tl; /* copy/kernel overlap */
	double stream_busy_us[GM_MAX_STREAMS]; /* job spans per stream */
	int faulted; /* also read without mu, atomically */
};

/* A wave record, reused from the ones d's issue thread is done with
 * (allocated only while their number grows); NULL when out of memory.
 * Loop thread. */
struct gm_cuda_wave *gm_cuda_dev_wave(struct gm_cuda_dev *d);

/* Gives back w, unused, or issued by d's issue thread. */
void gm_cuda_dev_wave_free(struct gm_cuda_dev *d, struct gm_cuda_wave *w);

/* Queues w (bytes: its jobs' host bytes) for the issue thread; takes w.
 * Never blocks on the device. Loop thread. */
void gm_cuda_dev_queue(struct gm_cuda_dev *d, struct gm_cuda_wave *w,
		       uint64_t bytes);

/* Asks d's issue thread to warm up before it takes more waves; the last
 * device to finish ends the engine's warm-up (gm_cuda_warm.h). */
void gm_cuda_dev_warm(struct gm_cuda_dev *d);

/* Takes job back while it is still queued on d: in a wave its issue
 * thread has not begun, among the wave's jobs that have no memory yet
 * (held; current and groups while the issue thread waits for memory),
 * or in the runner's queue. GM_OK, or GM_ENOTFOUND. Loop thread. */
int gm_cuda_dev_take_back(struct gm_cuda_dev *d, gm_job *job);

/* Under mu: a completion thread saw, at host time seen, the end of a
 * context whose events lie at[] after the span event; returns the host
 * time its first copy began (see the file comment). */
double gm_cuda_dev_start_of(struct gm_cuda_dev *d, const double *at,
			    double seen);

/* Host bytes of jobs queued or running on d: what spreading balances. */
uint64_t gm_cuda_dev_load(struct gm_cuda_dev *d);

void gm_cuda_dev_stats(struct gm_cuda_dev *d, gm_device_stats *s);

/* Host bytes of a job's operands and result; 0 when they overflow. */
uint64_t gm_cuda_job_bytes(const gm_job *j);

/* Between the device's own threads (issue, completion, runner): */

/* Records a sticky fault with its text: d and the engine are faulted from
 * now on and d's issue thread wakes up to fail what it holds. */
void gm_cuda_dev_fault(struct gm_cuda_dev *d, const char *msg);
int gm_cuda_dev_faulted(struct gm_cuda_dev *d);

/* Gives ctx's slab and ctx back, counts its end_us into the busy
 * period, and wakes a thread waiting for memory. */
void gm_cuda_dev_release(struct gm_cuda_dev *d, struct gm_cuda_ctx *ctx);

/* Under mu, after memory went back to the pool: wakes the threads
 * waiting for it (the issue thread, the runner), if any (mem_waits). */
void gm_cuda_dev_freed(struct gm_cuda_dev *d);

/* What gm_cuda_dev_open_span finds. */
enum { SPAN_NOT_OPEN, SPAN_ALREADY_OPEN, SPAN_OPENED_HERE };

/* Opens the busy period's device-timed span on stream s if it is still
 * pending (the first copy of the period is about to be issued there):
 * SPAN_OPENED_HERE when this call recorded span_ev, else whether the span is
 * open. Issue thread or runner, with work in flight. */
int gm_cuda_dev_open_span(struct gm_cuda_dev *d, cudaStream_t s);

/* Under mu, as inflight leaves or reaches 0: a busy period begins or
 * ends. */
void gm_cuda_dev_busy_begin(struct gm_cuda_dev *d);
void gm_cuda_dev_busy_end(struct gm_cuda_dev *d);

/* Destroys a context's events and frees it. */
void gm_cuda_ctx_destroy(struct gm_cuda_ctx *c);

/* Counts job as d's and calls the done callback (without mu). */
void gm_cuda_dev_finish(struct gm_cuda_dev *d, gm_job *job);

/* The same for n jobs linked from job, with one lock for all; job->next
 * is read before each is handed back. */
void gm_cuda_dev_finish_n(struct gm_cuda_dev *d, gm_job *job, uint32_t n);

#endif
