/*
 * gm_cuda_stage.cu - host copies of a chunk spread over a crew of threads
 * (see gm_cuda_stage.h).
 *
 * A call cuts its pieces into blocks, and the crew (gm_crew.h) takes
 * blocks off one counter, so that a chunk of one large job and a chunk
 * of many small ones spread alike. The table of each piece's first
 * block is kept between calls and only grows, so a call allocates
 * nothing once the stager has seen its largest chunk.
 */
#include "gm_cuda_stage.h"

#include <stdlib.h>
#include <string.h>

#include "gm_crew.h"
#include "gm_error.h"

/* Large enough that taking a block costs nothing beside copying it,
 * small enough that a 2 MiB payload is one block and a 128 MiB one keeps
 * every thread busy. */
#define BLOCK (2ull << 20)

struct gm_cuda_stager {
	gm_crew *crew;
	uint64_t *first; /* first[i]: index of piece i's first block */
	size_t cap;
	/* the call under way: */
	const struct gm_cuda_piece *pieces;
	size_t npieces;
};

static uint64_t blocks_of(uint64_t bytes)
{
	return (bytes + BLOCK - 1) / BLOCK;
}

/* Copies block b: a binary search finds the piece holding it. */
static void copy_block(void *arg, uint64_t b)
{
	struct gm_cuda_stager *s = (struct gm_cuda_stager *)arg;
	size_t lo = 0, hi = s->npieces;
	uint64_t off, len;

	while (hi - lo > 1) {
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

int gm_cuda_stager_open(unsigned threads, struct gm_cuda_stager **out)
{
	struct gm_cuda_stager *s;

	*out = NULL;
	if ((s = (struct gm_cuda_stager *)calloc(1, sizeof(*s))) == NULL)
		return GM_ENOMEM;
	if (gm_crew_open(threads, &s->crew) != GM_OK) {
		free(s);
		return GM_ENOMEM;
	}
	*out = s;
	return GM_OK;
}

void gm_cuda_stager_close(struct gm_cuda_stager *s)
{
	if (s == NULL)
		return;
	gm_crew_close(s->crew);
	free(s->first);
	free(s);
}

static void copy_alone(const struct gm_cuda_piece *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		memcpy(p[i].dst, p[i].src, p[i].bytes);
}

/* Room for n pieces in the block table; 0 when it cannot grow. */
static int fit(struct gm_cuda_stager *s, size_t n)
{
	uint64_t *t;
	size_t cap = s->cap ? s->cap : 256;

	if (n <= s->cap)
		return 1;
	while (cap < n)
		cap *= 2;
	if ((t = (uint64_t *)realloc(s->first, cap * sizeof(*t))) == NULL)
		return 0;
	s->first = t;
	s->cap = cap;
	return 1;
}

void gm_cuda_stager_copy(struct gm_cuda_stager *s,
			 const struct gm_cuda_piece *p, size_t n)
{
	uint64_t blocks = 0;
	size_t i;

	for (i = 0; i < n; i++)
		blocks += blocks_of(p[i].bytes);
	/* Waking the threads costs more than one block takes to copy. */
	if (blocks <= 1 || gm_crew_size(s->crew) == 0 || !fit(s, n)) {
		copy_alone(p, n);
		return;
	}
	for (i = 0, blocks = 0; i < n; i++) {
		s->first[i] = blocks;
		blocks += blocks_of(p[i].bytes);
	}
	s->pieces = p;
	s->npieces = n;
	gm_crew_run(s->crew, copy_block, s, blocks);
}
