/*
 * gm_engine.h - the one interface every compute engine implements.
 *
 * An engine runs GEMM jobs asynchronously. The loop thread submits a wave
 * of jobs and returns at once; each job comes back exactly once through
 * the done callback (or with the jobs that end beside it, when the
 * caller asked: gm_engine_on_done_together), which the engine calls on
 * one of its own threads.
 * The callback must only hand the job to the loop (lock, push, wake);
 * it must not call back into the engine. Engines never call exit().
 *
 * Implementations: gm_engine_cpu.c (OpenBLAS, always built) and
 * gm_engine_cuda.cu (cuBLAS and the tiled kernel, built when CUDA is,
 * into a plugin gemmd opens when it is asked for: see the constructors).
 *
 * Small jobs are coalesced: the jobs of one wave that share dtype,
 * transposes, layout, m, n, k, alpha, beta, C-ness and kernel run as one
 * batched call, with their copies grouped (gm_cuda_batch.cu), and a
 * small job's result does not depend on which jobs it ran with: it is
 * the same, bit for bit, alone or in a batch. Jobs reach the engine in
 * host memory it can DMA from (a slab of the arena or a registered
 * region); jobs of one shape laid out at a constant stride from each
 * other (each job's A, B, C and result at the same offsets from its
 * start, as when a request's jobs sit back to back in one slab) cross
 * the link in one copy per operand for the whole batch.
 *
 * Jobs of any size run. A job that needs more than its share of a
 * device's pool (ooc_share_pct of device_pool_bytes), or whose operands
 * lie in pageable memory (gm_job.host_pageable), is run out of core: its
 * C in tiles, the panels of A and B each tile needs streamed through at
 * most that share of the pool while other jobs run in the rest
 * (gm_ooc.h, gm_cuda_ooc.h). Such a job fails only as any job does (out
 * of memory, a fault: one error, never a partial result), or with
 * GM_ETOOBIG when the share cannot hold even 64 x 64 tiles. The CPU engine runs
 * any job in host memory as it is.
 */
#ifndef GM_ENGINE_H
#define GM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "gm_job.h"

#ifdef __cplusplus
extern "C" {
#endif

enum gm_engine_kind {
	GM_ENGINE_AUTO = 0, /* CUDA when a device is present, else CPU */
	GM_ENGINE_CPU = 1,
	GM_ENGINE_CUDA = 2,
};

enum gm_issue_order {
	GM_ISSUE_BREADTH = 0, /* all H2D of a wave, then kernels, then D2H */
	GM_ISSUE_DEPTH = 1,   /* each job's H2D, kernel, D2H in turn */
};

typedef struct gm_engine_config {
	int kind;		    /* enum gm_engine_kind */
	uint64_t pool_bytes;	    /* host arena (pinned on CUDA) */
	uint64_t device_pool_bytes; /* per device; 0: engine's choice. A
				       tiled job holds at most
				       ooc_share_pct of it */
	unsigned streams;	    /* stream ring size per device */
	int issue_order;	    /* enum gm_issue_order */
	int kernel;		    /* default kernel (enum gm_kernel) */
	int mapped_output;	    /* CUDA: C in mapped pinned memory */
	unsigned cpu_threads;	    /* CPU engine: BLAS threads, 0 = all */
	/*
	 * CPU: how long one piece of a large job runs, in µs (0:
	 * GM_CPU_PIECE_US): the engine runs the small jobs waiting between
	 * two pieces (those that come during one beside it), and large
	 * jobs a piece each in turn, so that a small job waits about one
	 * piece behind any job at most (gm_cpu_piece.h). It times a GEMM
	 * once at its start to size pieces by FLOPs, fixed from then on so
	 * that a job's result never depends on the load of the moment.
	 */
	unsigned cpu_piece_us;
	/* CPU: FLOPs of one piece instead, whatever they take (0: sized
	 * from cpu_piece_us by the GEMM timed at start). Set, a job's cut
	 * is the same on every start and every host, not only for one
	 * daemon's life. */
	uint64_t cpu_piece_flops;
	/*
	 * CUDA: a job whose host bytes (A + B + C + result) are at most
	 * this is small: it is coalesced with the jobs of its wave that
	 * share its shape (see the file comment), and its result comes
	 * back in its batch's one copy even with mapped_output. 0 means
	 * GM_SMALL_JOB_BYTES; 1 coalesces nothing. Not a configuration
	 * key: tests and benchmarks set it to compare the two paths.
	 */
	uint64_t small_job_bytes;
	/*
	 * CUDA: a small job that comes alone (a batch of one) with host
	 * bytes at most this runs straight on its mapped host memory, with
	 * no copies (gm_cuda_direct.h). 0 means GM_DIRECT_JOB_BYTES; 1 runs
	 * none so. Not a configuration key: tests and benchmarks set it to
	 * compare the two paths.
	 */
	uint64_t direct_job_bytes;
	/*
	 * CUDA: what the tile planner charges per line of a 2D copy
	 * (gm_ooc.h). 0 means GM_OOC_LINE_BYTES; 1 charges next to
	 * nothing, so plans minimise bytes alone. Not a configuration key:
	 * the benchmark compares plans with it.
	 */
	uint64_t ooc_line_bytes;
	/*
	 * CUDA: µs each of a device's threads keeps polling for its next
	 * piece of work after its last before it sleeps: the issue thread
	 * for a wave, one completion thread for its event and then for the
	 * next context on its stream. Waking a sleeping thread costs tens
	 * of µs on the path of a small job; polling costs CPU only for
	 * spin_us after work, so an idle engine sleeps. 0: sleep at once.
	 */
	unsigned spin_us;
	/* CUDA: percent of a device's pool that one tiled job may hold;
	 * a larger job is tiled (gm_ooc.h). 0: GM_OOC_SHARE_PCT. */
	unsigned ooc_share_pct;
} gm_engine_config;

/* The "spin_us" key's default (bench/RESULTS.md "Small jobs"). */
#define GM_SPIN_US 200

/*
 * The default of small_job_bytes, measured (bench/gemmd_small_bench,
 * bench/RESULTS.md "Small jobs", an H100 on PCIe 5): per job, square fp32
 * jobs coalesced against job by job took 12.2 against 40.9 us at 256^3
 * (768 KiB), 27.3 against 45.5 at 384^3 (1.7 MiB), 46.9 against 52.4 at
 * 512^3 (3 MiB), and 107.5 against 105.3 at 768^3 (6.75 MiB): coalescing
 * pays up to about 4 MiB, and no more beyond.
 */
#define GM_SMALL_JOB_BYTES (4ull << 20)

/*
 * The default of direct_job_bytes, measured (an H100 on PCIe 5, one
 * square fp32 job with C alone, cuBLASLt's call kept as a graph): straight
 * on mapped host memory against copies in and out, 10.6 against 19.3 us
 * at 16^3, 19.0 against 29.0 at 64^3 (64 KiB), 30.8 against 30.3 at
 * 128^3 (256 KiB), where the kernel's reads across the link cost what
 * the copies save.
 */
#define GM_DIRECT_JOB_BYTES (64ull << 10)

/*
 * The default of cpu_piece_us. A piece costs one BLAS call's start (tens
 * of µs with its threads' wake-ups) and a cut of the job's panels: at
 * 20 ms that is a fraction of a percent, while a small job behind a
 * 3000^3 fp64 job (about 1 s on two cores) waits 20 ms, not the second.
 */
#define GM_CPU_PIECE_US 20000

/* Most streams in one device's ring (the "streams" key's bound). */
#define GM_MAX_STREAMS 64

/* Per-device counters an engine keeps; read with gm_engine_device_stats. */
typedef struct gm_device_stats {
	char name[64];
	uint64_t jobs;
	uint64_t mem_used;  /* device pool bytes in use */
	uint64_t mem_total; /* device pool bytes */
	/*
	 * Time the device was busy, summed over busy periods (stretches with
	 * at least one job in flight). CUDA: each ended period from its
	 * first host-to-device copy to the end of its last job, timed with
	 * events on the device, so host staging before the first copy and
	 * the hand-back after the last are not in it; a period still open
	 * counts by the host clock. CPU: time in the BLAS calls.
	 */
	double busy_us;
	uint64_t busy_periods; /* busy periods ended (CUDA; 0 on the CPU) */
	/*
	 * Where the device's time went, for the copy/compute overlap, in
	 * µs since the engine opened, each the length of a union of
	 * intervals taken from the jobs' events: kernel_us with at least one
	 * kernel running (any stream), copy_us with at least one copy
	 * running (either direction, any stream), overlap_us with both at
	 * once (so overlap_us <= min(kernel_us, copy_us)). stream_busy_us[i]
	 * is the time stream i of the ring had a job on it, from the start
	 * of the job's first copy to the end of its last operation, for
	 * i < nstreams. Intervals on a stream include waits for an engine
	 * another stream holds. The CPU engine sets kernel_us = busy_us and
	 * leaves the rest 0.
	 */
	double kernel_us;
	double copy_us;
	double overlap_us;
	unsigned nstreams; /* <= GM_MAX_STREAMS */
	double stream_busy_us[GM_MAX_STREAMS];
} gm_device_stats;

typedef struct gm_engine gm_engine;

/* Called once per job on an engine thread; see the file comment. */
typedef void (*gm_engine_done_fn)(gm_job *job, void *arg);

/* Called on an engine thread with job and the n - 1 jobs after it
 * through their next, under the rules of the done callback (with its
 * arg): jobs that start together (gm_engine_on_start) or come back
 * together (gm_engine_on_done_together) come in one call, so that the
 * caller can hand them on at once. */
typedef void (*gm_engine_jobs_fn)(gm_job *job, uint32_t n, void *arg);

/* Called once when a warm-up ends, on an engine thread, under the same
 * rules as the done callback. status is GM_OK or the first failure (with
 * msg; NULL when GM_OK); ms is the wall time since gm_engine_warmup. */
typedef void (*gm_engine_warm_fn)(void *arg, int status, double ms,
				  const char *msg);

/*
 * Opens the engine cfg->kind asks for (AUTO: CUDA if a device is found,
 * else CPU). Allocates the host arena. On failure returns a code and a
 * message in msg; nothing is left allocated. A pool_bytes over the
 * memory the host (or the process's cgroup) has, or a device_pool_bytes
 * over a device's, is GM_ECONFIG with a message naming the key and what
 * there is. Loop thread, blocks while devices initialise.
 */
int gm_engine_open(const gm_engine_config *cfg, gm_engine_done_fn done,
		   void *arg, gm_engine **out, char *msg, size_t msglen);

/* Blocks until every submitted job has come back through the callback,
 * then frees everything the engine holds. */
void gm_engine_close(gm_engine *e);

/* "cpu" or "cuda". */
const char *gm_engine_name(const gm_engine *e);

/* The host arena slabs are carved from, and its size. Owned by e. */
void *gm_engine_arena(gm_engine *e, uint64_t *size);

/* GM_OK when e can run d, else GM_EUNSUPPORTED with a message. */
int gm_engine_supports(const gm_engine *e, const gm_job_desc *d, char *msg,
		       size_t msglen);

/* Hands jobs[0..n-1] (one wave) to the engine; never blocks on the jobs.
 * Each job comes back through the done callback, failed or not. Returns
 * GM_EGPUFAULT without taking the jobs once the engine is faulted. */
int gm_engine_submit(gm_engine *e, gm_job **jobs, size_t n);

/*
 * Jobs start when the engine commits to running them: the CPU engine
 * when its worker takes one off its queue (its BLAS call follows at
 * once), the CUDA engine when its work is issued to a stream (where it
 * may still wait behind work issued before it: its start_us says when
 * it began on the device). A job that fails before it starts comes back
 * without a start. The engine marks each job as it starts
 * (gm_job_started) and counts starts by the job's prio, so that the
 * caller tells the jobs waiting in the engine from those running by
 * reading, with no news crossing threads: gm_engine_starts is the count
 * for prio, any thread.
 */
uint64_t gm_engine_starts(const gm_engine *e, unsigned prio);

/* Asks for fn to be called, besides, as jobs start, in the order they
 * do (a test that watches the order). Set before the first submit. */
void gm_engine_on_start(gm_engine *e, gm_engine_jobs_fn fn);

/*
 * Asks for jobs that come back together (a coalesced batch of the CUDA
 * engine) to come in one call of fn instead of one done call each. Each
 * job is the caller's from the call's start: fn reads a job's next
 * before it hands the job on. Set before the first submit. Loop thread.
 */
void gm_engine_on_done_together(gm_engine *e, gm_engine_jobs_fn fn);

/*
 * Takes job back from e when it has not started (see gm_engine_on_start)
 * and still waits in the engine's queue: GM_OK, and the job is the
 * caller's again, never to come back through the done callback; else
 * GM_ENOTFOUND (it started, is on its way back, or the engine is between
 * two steps of it: the CUDA engine takes back jobs of waves its devices
 * have not begun, jobs waiting for device memory, alone or in a batch,
 * and jobs waiting for a device's out-of-core runner). Loop thread.
 */
int gm_engine_cancel(gm_engine *e, gm_job *job);

/*
 * Makes the len bytes at p (a shared-memory region the daemon mapped)
 * usable as job operands and results, once, so that jobs pointing into
 * it need no staging: CUDA pins it for DMA from every device
 * (cudaHostRegister, portable and mapped: kernels may read it); the CPU
 * engine uses memory as it is. GM_OK, or a code with msg. Blocks
 * (pinning takes about a millisecond per MiB); any thread, concurrently
 * with submits.
 */
int gm_engine_register(gm_engine *e, void *p, size_t len, char *msg,
		       size_t msglen);

/* Undoes gm_engine_register(e, p, ...). No job pointing into the region
 * may be on the engine: the caller waits for every one to come back.
 * Blocks; any thread. */
void gm_engine_unregister(gm_engine *e, void *p);

/*
 * Warms the engine up on its own threads and returns at once: every
 * device runs each dtype's cuBLAS paths (the per-job call and the
 * batched one), and the tiled kernel, once on tiny inputs, so that the
 * libraries and kernels a first job needs are loaded before it comes
 * (lazily loaded, they cost the first job of each kind about 100 ms).
 * Jobs submitted meanwhile are taken as usual and wait on each device
 * behind its warm-up. fn (may be NULL) is called once when every device
 * is done. Meant to be called right after gm_engine_open, before the
 * daemon reports itself ready: it can listen and answer that it is not
 * ready yet meanwhile (gm_engine_ready). GM_OK, or GM_EBUSY while a
 * warm-up is running. Loop thread.
 */
int gm_engine_warmup(gm_engine *e, gm_engine_warm_fn fn, void *arg);

/* 0 while a warm-up runs, else 1 (also when none was asked for); *ms
 * (may be NULL) gets the last warm-up's wall time, 0 before one ended.
 * Any thread. */
int gm_engine_ready(const gm_engine *e, double *ms);

/* Non-zero once a sticky device fault has happened: the daemon must stop
 * accepting and exit non-zero after the in-flight jobs came back. */
int gm_engine_faulted(const gm_engine *e);

/* Number of devices (1 for the CPU engine) and counters of one of them. */
unsigned gm_engine_devices(const gm_engine *e);
void gm_engine_device_stats(gm_engine *e, unsigned dev, gm_device_stats *s);

/*
 * Engine constructors, used by gm_engine_open. The CUDA engine is a
 * plugin (gemmd-cuda.so, gm_engine_plugin.h) that the first of the
 * gm_engine_cuda_* calls opens, once per process: $GEMMD_CUDA_PLUGIN
 * when set, else the build tree's for a program run from the build
 * tree, else the one installed beside gemmd (LIBDIR/gemmd/, found from
 * the program's own directory). When it cannot be loaded (a CUDA library
 * missing, a stale plugin) gm_engine_cuda_open fails GM_ENODEV with the
 * loader's text.
 */
int gm_engine_cpu_open(const gm_engine_config *cfg, gm_engine_done_fn done,
		       void *arg, gm_engine **out, char *msg, size_t msglen);
int gm_engine_cuda_open(const gm_engine_config *cfg, gm_engine_done_fn done,
			void *arg, gm_engine **out, char *msg, size_t msglen);

/* Number of CUDA devices usable, 0 when none, when CUDA is not built in
 * or when its plugin cannot be loaded. Any thread. */
int gm_engine_cuda_count(void);

/* gm_engine_cuda_count, and when it is 0 why in msg (msglen may be 0):
 * "built without CUDA", the plugin's path and the loader's text (the
 * missing library named), or CUDA's own ("no CUDA-capable device is
 * detected"). When it is not 0, msg gets the plugin's path. Any
 * thread. */
int gm_engine_cuda_probe(char *msg, size_t msglen);

/* Free and total memory of CUDA device dev (cudaMemGetInfo), for tests
 * that check an engine gave back what it took: GM_OK, or GM_ENODEV when
 * there is no such device or no CUDA. Sets the caller's thread's
 * current device to dev. */
int gm_engine_cuda_memory(int dev, size_t *free_bytes, size_t *total_bytes);

#ifdef __cplusplus
}
#endif
#endif
