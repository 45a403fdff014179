/*
 * gm_cpu_worker.h - the CPU engine's state and the threads that run its
 * jobs (gm_cpu_worker.c). gm_engine_cpu.c, above it, holds the
 * gm_engine.h operations (open, submit, cancel, stats, close) and
 * starts the threads; the threads call nothing of it. Private to gpu/.
 */
#ifndef GM_CPU_WORKER_H
#define GM_CPU_WORKER_H

#include <pthread.h>

#include "gm_cpu_piece.h"
#include "gm_crew.h"
#include "gm_engine_impl.h"
#include "gm_handoff.h"

/*
 * OpenBLAS 0.3 runs a GEMM with m n k <= 65536 * 4 (SMP_THRESHOLD_MIN
 * times the default GEMM_MULTITHREAD_THRESHOLD, interface/gemm.c) on the
 * calling thread alone: a 64^3 fp32 job takes 6.5 us with one BLAS
 * thread or two on a 2-core host.
 */
#define SMALL_MNK (65536.0 * 4)
/* Work below which waking the crew costs more than it saves: a
 * helper's wake-up is tens of microseconds, 8 MFLOP about 100. */
#define BURST_MIN_FLOPS (8.0 * 1024 * 1024)
#define BURST_MAX	4096 /* jobs run as one burst, at most */
#define SIDE_MAX	256  /* jobs the side thread takes at once */
/* Jobs larger than a piece run in turns, a piece each, at most this
 * many at once: one taken after another's start still has its first
 * piece within a few pieces, and those not taken still wait where
 * cancel and their deadlines reach them. */
#define TURNS_MAX 4
/* What one BLAS thread does in a microsecond, in FLOPs (fp64; fp32
 * twice), when the engine cannot time its BLAS: low, so that pieces are
 * short rather than long. */
#define RATE_GUESS 4000.0
/* The GEMM the engine times at its start to size its pieces, an edge of
 * CAL_EDGE^3 (fp64 113 MFLOP: a few ms on two cores, past OpenBLAS's
 * one-thread size, so on all its threads as pieces are), the median of
 * CAL_RUNS calls: a call slowed by a burst of other processes, or one
 * that had a busy host's cores alone for once, does not move it. */
#define CAL_EDGE 384
#define CAL_RUNS 5

/* A job larger than one piece, started and run a piece per turn. */
struct turn {
	gm_job *job;
	gm_cpu_piece p;
};

struct cpu_engine {
	struct gm_engine base; /* first: gm_engine.c casts back */
	pthread_t worker, side;
	pthread_mutex_t mu;	  /* guards everything below it */
	pthread_cond_t side_wake; /* the side thread's */
	/* Jobs submitted and not yet taken, through gm_job.next: the
	 * worker waits on it; a warm-up asked for kicks it; closed, the
	 * engine stops. */
	gm_handoff fifo;
	int warm;	   /* a warm-up is asked for */
	int running;	   /* the worker is running jobs since busy_since */
	double busy_since; /* host clock */
	double busy_us;	   /* ended stretches of running */
	int in_piece;	   /* the worker is in a large job's piece */
	uint64_t jobs;	   /* atomic */
	/* Set at open, read-only afterwards. */
	void *arena;
	uint64_t arena_bytes;
	char name[64];
	double piece_us; /* a piece's length, at the rate timed at start */
	/* FLOPs of an fp64, fp32 piece: cpu_piece_flops, else set once at
	 * open (gm_cpu_worker_size_pieces), then read-only: a job's cut
	 * never follows the moment's load. */
	double piece_flops[2];
	/* The worker's: */
	gm_crew *crew;
	gm_job *burst[BURST_MAX];
	gm_job *side_burst[SIDE_MAX]; /* the side thread's */
	struct turn turns[TURNS_MAX];
	unsigned nturns;
	unsigned cursor; /* turns[cursor] runs next; nturns: a new one */
};

/* Times the BLAS and sizes ce's pieces, unless cpu_piece_flops set them:
 * on the opening thread, before the engine's threads start, so that
 * open returns with no BLAS call running (a process that forks after it,
 * as one that starts a gemmd does, must not fork inside OpenBLAS: its
 * fork handlers tear down its thread pool, and a call running then never
 * returned). Blocks for tens of ms. */
void gm_cpu_worker_size_pieces(struct cpu_engine *ce);

/* The worker thread: runs the jobs submitted in rounds (see
 * gm_engine_cpu.c) until the FIFO is closed and every job is back. */
void *gm_cpu_worker_main(void *arg);

/* The side thread: while the worker is in a piece, runs the small jobs
 * waiting, one after another, beside it; returns once the FIFO is
 * closed. */
void *gm_cpu_worker_side(void *arg);

/* Whether job is small: OpenBLAS runs it on the calling thread alone. */
int gm_cpu_worker_small(const gm_job *job);

#endif
