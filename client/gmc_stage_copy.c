/*
 * gmc_stage_copy.c - the copies of staged operands into the region and
 * of results out of it, in pieces run by the client's workers; see
 * gmc_stage_copy.h.
 *
 * A piece is a range of bytes of a chunk's copy stream: for the copy in,
 * the chunk's jobs' A, B and C one after the other; for the copy out,
 * one job's result. A piece holds its chunk; it copies only while the
 * call is alive, pinned so that the caller is not told before the copy
 * ends, and never after: a call that ended has its pieces skipped.
 */
#include "gmc_stage_copy.h"

#include <stdlib.h>
#include <string.h>

#include "gemmd.h"
#include "gmc_conn.h"

#define IN UINT32_MAX /* a piece's job when it copies in */

typedef struct piece {
	gmc_task task;
	gmc_chunk *ch;
	uint32_t job;	   /* the job whose result it copies, or IN */
	uint64_t from, to; /* bytes of the stream */
} piece;

uint64_t gmc_stage_layout(const gm_job_desc *d, uint64_t off[GM_OPND_COUNT])
{
	gm_job_sizes z;
	uint64_t at = 0;

	gm_job_sizes_of(d, &z);
	for (int op = 0; op < GM_OPND_COUNT; op++) {
		off[op] = at;
		at += (gm_operand_bytes(&z, op) + GMC_STAGE_ALIGN - 1) &
		      ~(uint64_t)(GMC_STAGE_ALIGN - 1);
	}
	return at;
}

/* Copies [from, to) of the copy-in stream of ch into its block. */
static void copy_in(gmc_chunk *ch, const gmc_call *k, uint64_t from,
		    uint64_t to)
{
	const gmc_part *p = ch->part;
	uint8_t *base = gemmd_region_ptr(ch->sr->r);
	uint64_t at = 0;

	for (uint32_t i = 0; i < p->njobs && at < to; i++) {
		const gemmd_job *j = &k->jobs[p->first + i];
		const void *src[GM_OPND_OUT] = {j->a, j->b, j->c};
		const gm_job_desc *d = &ch->sc->d[p->first + i];
		uint64_t off[GM_OPND_COUNT];
		gm_job_sizes z;

		gmc_stage_layout(d, off);
		gm_job_sizes_of(d, &z);
		for (int op = 0; op < GM_OPND_OUT && at < to; op++) {
			uint64_t len = gm_operand_bytes(&z, op);
			uint64_t lo = from > at ? from - at : 0;
			uint64_t hi = to - at < len ? to - at : len;

			if (lo < hi)
				memcpy(base + ch->slot[i] + off[op] + lo,
				       (const uint8_t *)src[op] + lo, hi - lo);
			at += len;
		}
	}
}

static void copy_out(gmc_chunk *ch, const gmc_call *k, uint32_t i,
		     uint64_t from, uint64_t to)
{
	const uint8_t *base = gemmd_region_ptr(ch->sr->r);
	uint64_t off[GM_OPND_COUNT];

	gmc_stage_layout(&ch->sc->d[ch->part->first + i], off);
	memcpy((uint8_t *)k->jobs[ch->part->first + i].out + from,
	       base + ch->slot[i] + off[GM_OPND_OUT] + from, to - from);
}

static void piece_run(gmc_task *task)
{
	piece *pc = (piece *)task;
	gmc_chunk *ch = pc->ch;
	const gmc_stage_copied *cb = ch->sr->st->copied;
	gemmd_client *cl = ch->part->cl;
	gmc_todo t = GMC_TODO_INIT(cl);
	gmc_call *k;

	pthread_mutex_lock(&cl->mu);
	if ((k = ch->part->call) != NULL)
		gmc_call_pin(k);
	pthread_mutex_unlock(&cl->mu);
	if (k != NULL && pc->job == IN)
		copy_in(ch, k, pc->from, pc->to);
	else if (k != NULL)
		copy_out(ch, k, pc->job, pc->from, pc->to);
	pthread_mutex_lock(&cl->mu);
	if (k != NULL)
		gmc_call_unpin(k, &t);
	if (pc->job == IN && --ch->ins == 0)
		cb->in_done(ch, &t);
	else if (pc->job != IN && --ch->outs[pc->job] == 0)
		cb->settle(ch, pc->job, &t);
	cb->drop(ch, &t);
	pthread_mutex_unlock(&cl->mu);
	free(pc);
	gmc_todo_run(&t);
}

/* Queues the pieces of a stream of bytes, all or none: GM_OK or
 * GM_ENOMEM. */
static int queue(gmc_chunk *ch, uint32_t job, uint64_t bytes, bool urgent)
{
	gmc_workers *w = ch->part->cl->workers;
	unsigned n =
	    (unsigned)((bytes + GMC_STAGE_PIECE - 1) / GMC_STAGE_PIECE);
	piece **all = w && n ? calloc(n, sizeof(*all)) : NULL;
	unsigned i;

	if (all == NULL)
		return GM_ENOMEM;
	for (i = 0; i < n && (all[i] = malloc(sizeof(piece))) != NULL; i++)
		*all[i] = (piece){.task.fn = piece_run,
				  .ch = ch,
				  .job = job,
				  .from = (uint64_t)i * GMC_STAGE_PIECE,
				  .to = i + 1 == n ? bytes
						   : (uint64_t)(i + 1) *
							 GMC_STAGE_PIECE};
	if (i < n) {
		while (i-- > 0)
			free(all[i]);
		free(all);
		return GM_ENOMEM;
	}
	ch->refs += n;
	if (job == IN)
		ch->ins += n;
	else
		ch->outs[job] += n;
	for (i = 0; i < n; i++)
		gmc_workers_push(w, &all[i]->task, urgent);
	free(all);
	return GM_OK;
}

int gmc_stage_copy_in(gmc_chunk *ch)
{
	const gmc_part *p = ch->part;
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < p->njobs; i++) {
		gm_job_sizes z;

		gm_job_sizes_of(&ch->sc->d[p->first + i], &z);
		bytes += z.a + z.b + z.c;
	}
	return queue(ch, IN, bytes, false);
}

int gmc_stage_copy_out(gmc_chunk *ch, uint32_t index)
{
	gm_job_sizes z;

	gm_job_sizes_of(&ch->sc->d[ch->part->first + index], &z);
	/* Results first: they answer jobs and free blocks. */
	return queue(ch, index, z.out, true);
}
