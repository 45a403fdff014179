/*
 * gmc_stage_impl.h - private to the staging of plain pointers: what its
 * two files share (gmc_stage.c: regions, calls and chunks; gmc_stage_copy.c:
 * the copies in and out).
 */
#ifndef GMC_STAGE_IMPL_H
#define GMC_STAGE_IMPL_H

#include "gmc_daemon.h"
#include "gmc_shm.h"
#include "gmc_stage.h"

/* A staging region and the chunks that hold blocks of it. */
typedef struct gmc_stage_region {
	gemmd_region *r;
	gmc_stage *st;
	unsigned users;	  /* chunks with a block of it */
	bool stale;	  /* a lost chunk may still be written: no new ones */
	gmc_task release; /* on a worker, once stale and unused */
} gmc_stage_region;

enum { STAGE_NONE, STAGE_MAKING, STAGE_READY, STAGE_OFF };

struct gmc_stage {
	gmc_daemon *dm;
	uint64_t bytes;
	int state;
	uint64_t off_until; /* STAGE_OFF: gmc_timer_now() */
	gmc_stage_region *cur;
	struct gmc_stage_call *head, *tail; /* calls waiting for blocks */
	gmc_task make;
};

/* A call going through the stage. */
typedef struct gmc_stage_call {
	gmc_call *k; /* NULL once it ended */
	gmc_stage *st;
	gm_job_desc *d;
	gm_batch b;
	uint32_t next;	 /* its first job not in a chunk */
	unsigned chunks; /* alive */
	bool waiting;	 /* in st's queue, holding one of k's open units */
	struct gmc_stage_call *next_wait;
} gmc_stage_call;

/* Jobs [part->first, + part->njobs) of a call in one block. */
typedef struct gmc_chunk {
	gmc_stage_call *sc;
	gmc_stage_region *sr;
	gmc_part *part; /* held */
	uint64_t off, bytes;
	uint64_t *slot;	   /* per job: where its operands start */
	gm_reply_job *rec; /* per job: its reply while its result moves */
	unsigned *outs;	   /* per job: copies out left */
	unsigned ins;	   /* copies in left */
	unsigned refs;	   /* its life, and copies queued */
	bool tainted;	   /* its block may be written by a lost request */
} gmc_chunk;

/* Offsets in a job's slot of A, B, C and OUT, and the slot's bytes. */
uint64_t gmc_stage_layout(const gm_job_desc *d, uint64_t off[GM_OPND_COUNT]);

/* Queues the copies of ch's operands into its block. */
int gmc_stage_copy_in(gmc_chunk *ch);

/* Queues the copies of job index's result out of ch's block. */
int gmc_stage_copy_out(gmc_chunk *ch, uint32_t index);

/* A copy in of ch is done: the chunk goes out after the last. */
void gmc_stage_in_done(gmc_chunk *ch, gmc_todo *t);

/* Job index of ch is answered with its reply (its result copied). */
void gmc_stage_settle(gmc_chunk *ch, uint32_t index, gmc_todo *t);

/* Lets go of ch; the last hold frees its block and ch. */
void gmc_stage_chunk_drop(gmc_chunk *ch, gmc_todo *t);

#endif
