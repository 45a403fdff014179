/*
 * gm_engine_cpu.c - the CPU engine: OpenBLAS on one worker thread and a
 * small crew.
 *
 * gm_engine_submit appends jobs to a FIFO (gm_handoff.h, under the
 * engine's lock) and wakes a dedicated worker thread (never libuv's pool: a
 * GEMM there would starve the daemon's file system work). The worker takes from
 * the FIFO only what it runs next, so that the jobs behind still wait where
 * gm_engine_cancel can take them back and their deadlines still count. It works
 * in rounds: first every small job waiting (m n k at most SMALL_MNK, which
 * OpenBLAS runs on the calling thread only) runs, as one burst shared by the
 * worker and a crew of helper threads (gm_crew.h), each job on one core, so
 * that a wave of small jobs costs one wake-up per helper, not one per job; then
 * one piece (gm_cpu_piece.h, about cpu_piece_us of BLAS on OpenBLAS's
 * own threads) of the large job whose turn it is. A piece's FLOPs are
 * fixed once, before the first job, by a GEMM the worker times then
 * (gm_cpu_worker.c): a job's cut never follows the moment's load, so
 * that the same job gives the same bytes each time; a host loaded later
 * than that makes pieces longer than cpu_piece_us instead. Large jobs take
 * turns, at most TURNS_MAX at once, a new one joining after the others have had
 * their piece. While the worker is in a piece, a side thread runs the
 * small jobs that come meanwhile, one after another, beside it: the
 * kernel gives its few microseconds a core between the BLAS threads'
 * slices, so a small job need not wait for the piece to end. So no job
 * waits behind a large one for more than about a piece per large job
 * under way, a small one far less, whoever sent it, and cancel and
 * deadlines reach every job not yet taken. The threads are
 * gm_cpu_worker.c's. Jobs taken are started
 * (gm_engine_started); each job's start_us is its first BLAS call's, and
 * a large job's kernel_us runs to the end of its last piece, the pieces
 * of others in between included. The done callback is called from
 * whichever thread ran the job. The device is busy from the moment the
 * worker takes work until it has none, and counted so as it goes.
 * Kernel choice is a GPU concern: every kernel a job names runs as BLAS
 * here. The CPU reads and writes host memory directly, so copy_in and
 * copy_out are used as the operands themselves instead of being staged
 * through the arena, and operands in pageable memory
 * (gm_job.host_pageable) are used where they are: a job of any size
 * that fits in host memory runs. The arena is only reserved address space
 * (MAP_NORESERVE): pages the pool never hands out cost nothing.
 */
#include "gm_cpu_worker.h"

#include <cblas.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gm_error.h"

static int cpu_supports(const gm_engine *e, const gm_job_desc *d, char *msg,
			size_t msglen)
{
	return gm_cpu_piece_check(d->dtype, msg, msglen);
}

static int cpu_cancel(gm_engine *e, gm_job *job)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;
	bool found;

	pthread_mutex_lock(&ce->mu);
	found = gm_handoff_remove(&ce->fifo, job);
	pthread_mutex_unlock(&ce->mu);
	return found ? GM_OK : GM_ENOTFOUND;
}

static int cpu_warmup(gm_engine *e)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	pthread_mutex_lock(&ce->mu);
	ce->warm = 1;
	gm_handoff_kick(&ce->fifo);
	pthread_mutex_unlock(&ce->mu);
	return GM_OK;
}

static int cpu_submit(gm_engine *e, gm_job **jobs, size_t n)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	if (n == 0)
		return GM_OK;
	pthread_mutex_lock(&ce->mu);
	gm_handoff_push_all(&ce->fifo, (void *const *)jobs, n);
	if (ce->in_piece)
		pthread_cond_signal(&ce->side_wake);
	pthread_mutex_unlock(&ce->mu);
	return GM_OK;
}

static void cpu_close(gm_engine *e)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	pthread_mutex_lock(&ce->mu);
	gm_handoff_close(&ce->fifo);
	pthread_cond_signal(&ce->side_wake);
	pthread_mutex_unlock(&ce->mu);
	/* The side thread first: it may hold jobs taken off the FIFO, which
	 * the worker's last round then no longer sees; it stops at once. */
	pthread_join(ce->side, NULL);
	pthread_join(ce->worker, NULL);

	gm_crew_close(ce->crew);
	munmap(ce->arena, ce->arena_bytes);
	pthread_cond_destroy(&ce->side_wake);
	gm_handoff_destroy(&ce->fifo);
	pthread_mutex_destroy(&ce->mu);
	free(ce);
}

static void *cpu_arena(gm_engine *e, uint64_t *size)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	*size = ce->arena_bytes;
	return ce->arena;
}

static int cpu_faulted(const gm_engine *e)
{
	return 0;
}

static unsigned cpu_devices(const gm_engine *e)
{
	return 1;
}

static void cpu_device_stats(gm_engine *e, unsigned dev, gm_device_stats *s)
{
	struct cpu_engine *ce = (struct cpu_engine *)e;

	memset(s, 0, sizeof(*s));
	if (dev != 0)
		return;
	snprintf(s->name, sizeof(s->name), "%s", ce->name);
	pthread_mutex_lock(&ce->mu);
	s->jobs = __atomic_load_n(&ce->jobs, __ATOMIC_RELAXED);
	s->busy_us = ce->busy_us;
	if (ce->running)
		s->busy_us += gm_engine_now_us() - ce->busy_since;
	/* BLAS calls are all the CPU engine runs: no copies, no streams. */
	s->kernel_us = s->busy_us;
	pthread_mutex_unlock(&ce->mu);
}

static const struct gm_engine_ops cpu_ops = {
    .name = "cpu",
    .close = cpu_close,
    .arena = cpu_arena,
    .supports = cpu_supports,
    .submit = cpu_submit,
    .faulted = cpu_faulted,
    .devices = cpu_devices,
    .device_stats = cpu_device_stats,
    .warmup = cpu_warmup,
    .cancel = cpu_cancel,
};

static int map_arena(struct cpu_engine *ce, uint64_t bytes, char *msg,
		     size_t msglen)
{
	void *p;

	if (bytes == 0 || bytes > SIZE_MAX) {
		snprintf(msg, msglen, "pool_bytes %llu is not a usable size",
			 (unsigned long long)bytes);
		return GM_EINVAL;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		snprintf(msg, msglen, "cannot map a %llu-byte arena: %s",
			 (unsigned long long)bytes, strerror(errno));
		return GM_ENOMEM;
	}
	ce->arena = p;
	ce->arena_bytes = bytes;
	return GM_OK;
}

/* Starts the crew, the worker and the side thread: GM_OK, or GM_ENOMEM
 * with none left running. */
static int start_threads(struct cpu_engine *ce)
{
	/* As many threads run small jobs as OpenBLAS runs large ones. */
	if (gm_crew_open((unsigned)openblas_get_num_threads() - 1, &ce->crew) !=
	    GM_OK)
		return GM_ENOMEM;
	if (pthread_create(&ce->worker, NULL, gm_cpu_worker_main, ce) != 0)
		goto fail_worker;
	if (pthread_create(&ce->side, NULL, gm_cpu_worker_side, ce) != 0)
		goto fail_side;
	return GM_OK;

fail_side:
	pthread_mutex_lock(&ce->mu);
	gm_handoff_close(&ce->fifo);
	pthread_mutex_unlock(&ce->mu);
	pthread_join(ce->worker, NULL);
fail_worker:
	gm_crew_close(ce->crew);
	return GM_ENOMEM;
}

int gm_engine_cpu_open(const gm_engine_config *cfg, gm_engine_done_fn done,
		       void *arg, gm_engine **out, char *msg, size_t msglen)
{
	struct cpu_engine *ce;
	int rv;

	*out = NULL;
	if ((ce = calloc(1, sizeof(*ce))) == NULL) {
		snprintf(msg, msglen, "out of memory for the cpu engine");
		return GM_ENOMEM;
	}
	if ((rv = map_arena(ce, cfg->pool_bytes, msg, msglen)) != 0) {
		free(ce);
		return rv;
	}
	ce->base.ops = &cpu_ops;
	ce->base.done = done;
	ce->base.done_arg = arg;
	pthread_mutex_init(&ce->mu, NULL);
	pthread_cond_init(&ce->side_wake, NULL);
	/* The worker sleeps at once: the CPU engine has no wake-up on a
	 * small job's path worth polling for (spin_us is the CUDA
	 * engine's). */
	if (gm_handoff_init(&ce->fifo, &ce->mu, offsetof(gm_job, next), NULL) !=
	    0) {
		snprintf(msg, msglen, "cannot make the cpu engine's queue");
		pthread_cond_destroy(&ce->side_wake);
		pthread_mutex_destroy(&ce->mu);
		munmap(ce->arena, ce->arena_bytes);
		free(ce);
		return GM_ENOMEM;
	}
	/* OpenBLAS keeps one thread count per process. */
	if (cfg->cpu_threads != 0)
		openblas_set_num_threads((int)cfg->cpu_threads);
	snprintf(ce->name, sizeof(ce->name), "cpu (OpenBLAS, %d threads)",
		 openblas_get_num_threads());
	ce->piece_us =
	    cfg->cpu_piece_us != 0 ? cfg->cpu_piece_us : GM_CPU_PIECE_US;
	ce->piece_flops[0] = ce->piece_flops[1] = (double)cfg->cpu_piece_flops;
	gm_cpu_worker_size_pieces(ce);
	if (start_threads(ce) != GM_OK) {
		snprintf(msg, msglen, "cannot start the cpu worker threads");
		pthread_cond_destroy(&ce->side_wake);
		gm_handoff_destroy(&ce->fifo);
		pthread_mutex_destroy(&ce->mu);
		munmap(ce->arena, ce->arena_bytes);
		free(ce);
		return GM_ENOMEM;
	}
	*out = &ce->base;
	return GM_OK;
}
