/*
 * gm_cuda_stage.cu - a small set of threads that copy host memory on the
 * issue thread's behalf (see gm_cuda_stage.h).
 *
 * A call cuts its pieces into blocks; the caller and every thread take
 * blocks off one atomic counter until none is left, so a chunk of one
 * large job and a chunk of many small ones spread alike. Each call is a
 * generation: every thread checks in to it before the call returns, so
 * that no thread can still be reading the call's pieces afterwards. The
 * threads sleep on a condition variable between calls.
 */
#include "gm_cuda_stage.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

/* Large enough that taking a block costs nothing beside copying it,
 * small enough that a 2 MiB payload is one block and a 128 MiB one keeps
 * every thread busy. */
#define BLOCK (2ull << 20)

struct gm_cuda_stager {
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* a new generation, or stop */
	pthread_cond_t done_cv; /* a thread checked out */
	pthread_t *threads;
	unsigned nthreads; /* started */
	/* guarded by mu: */
	unsigned gen;	  /* calls made */
	unsigned joined;  /* threads that took the current generation */
	unsigned copying; /* of those, still copying */
	int stop;
	/* set under mu before a generation starts, read-only during it: */
	const struct gm_cuda_piece *pieces;
	const uint64_t *first; /* first[i]: index of piece i's first block */
	size_t npieces;
	uint64_t nblocks;
	uint64_t next; /* atomic: next block to copy */
};

/* Copies blocks until none is left. */
static void drain(struct gm_cuda_stager *s)
{
	for (;;) {
		uint64_t b = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
		size_t lo = 0, hi = s->npieces;
		uint64_t off, len;

		if (b >= s->nblocks)
			return;
		while (hi - lo > 1) { /* the piece holding block b */
			size_t mid = (lo + hi) / 2;

			if (s->first[mid] <= b)
				lo = mid;
			else
				hi = mid;
		}
		off = (b - s->first[lo]) * BLOCK;
		len = s->pieces[lo].bytes - off;
		memcpy((char *)s->pieces[lo].dst + off,
		       (const char *)s->pieces[lo].src + off,
		       len < BLOCK ? len : BLOCK);
	}
}

static void *stager_main(void *arg)
{
	struct gm_cuda_stager *s = (struct gm_cuda_stager *)arg;
	unsigned seen = 0;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->gen == seen && !s->stop)
			pthread_cond_wait(&s->work_cv, &s->mu);
		if (s->stop)
			break;
		seen = s->gen;
		s->joined++;
		s->copying++;
		pthread_mutex_unlock(&s->mu);
		drain(s);
		pthread_mutex_lock(&s->mu);
		s->copying--;
		pthread_cond_signal(&s->done_cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int gm_cuda_stager_open(unsigned threads, struct gm_cuda_stager **out)
{
	struct gm_cuda_stager *s;

	*out = NULL;
	if ((s = (struct gm_cuda_stager *)calloc(1, sizeof(*s))) == NULL)
		return GM_ENOMEM;
	s->threads =
	    (pthread_t *)calloc(threads ? threads : 1, sizeof(*s->threads));
	if (s->threads == NULL) {
		free(s);
		return GM_ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	for (; s->nthreads < threads; s->nthreads++)
		if (pthread_create(&s->threads[s->nthreads], NULL, stager_main,
				   s) != 0) {
			gm_cuda_stager_close(s);
			return GM_ENOMEM;
		}
	*out = s;
	return GM_OK;
}

void gm_cuda_stager_close(struct gm_cuda_stager *s)
{
	unsigned i;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->work_cv);
	pthread_mutex_unlock(&s->mu);
	for (i = 0; i < s->nthreads; i++)
		pthread_join(s->threads[i], NULL);
	pthread_cond_destroy(&s->done_cv);
	pthread_cond_destroy(&s->work_cv);
	pthread_mutex_destroy(&s->mu);
	free(s->threads);
	free(s);
}

static void copy_alone(const struct gm_cuda_piece *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		memcpy(p[i].dst, p[i].src, p[i].bytes);
}

void gm_cuda_stager_copy(struct gm_cuda_stager *s,
			 const struct gm_cuda_piece *p, size_t n)
{
	uint64_t *first, blocks = 0;
	size_t i;

	for (i = 0; i < n; i++)
		blocks += (p[i].bytes + BLOCK - 1) / BLOCK;
	/* Waking the threads costs more than one block takes to copy. */
	if (blocks <= 1 || s->nthreads == 0 ||
	    (first = (uint64_t *)malloc(n * sizeof(*first))) == NULL) {
		copy_alone(p, n);
		return;
	}
	for (i = 0, blocks = 0; i < n; i++) {
		first[i] = blocks;
		blocks += (p[i].bytes + BLOCK - 1) / BLOCK;
	}
	pthread_mutex_lock(&s->mu);
	s->pieces = p;
	s->first = first;
	s->npieces = n;
	s->nblocks = blocks;
	s->next = 0;
	s->joined = 0;
	s->gen++;
	pthread_cond_broadcast(&s->work_cv);
	pthread_mutex_unlock(&s->mu);
	drain(s);
	pthread_mutex_lock(&s->mu);
	while (s->joined < s->nthreads || s->copying > 0)
		pthread_cond_wait(&s->done_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	free(first);
}
