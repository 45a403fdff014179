/*
 * gm_stage_impl.h - private to the staging of plain pointers: what its
 * two files share (gm_stage.c: regions, calls and chunks; gm_stage_copy.c:
 * the copies in and out).
 */
#ifndef GM_STAGE_IMPL_H
#define GM_STAGE_IMPL_H

#include "gm_daemon.h"
#include "gm_shm.h"
#include "gm_stage.h"

/* A staging region and the chunks that hold blocks of it. */
typedef struct gm_stage_region {
	gemmd_region *r;
	gm_stage *st;
	unsigned users;	 /* chunks with a block of it */
	bool stale;	 /* a lost chunk may still be written: no new ones */
	gm_task release; /* on a worker, once stale and unused */
} gm_stage_region;

enum { STAGE_NONE, STAGE_MAKING, STAGE_READY, STAGE_OFF };

struct gm_stage {
	gm_daemon *dm;
	uint64_t bytes;
	int state;
	uint64_t off_until; /* STAGE_OFF: gm_timer_now() */
	gm_stage_region *cur;
	struct gm_stage_call *head, *tail; /* calls waiting for blocks */
	gm_task make;
};

/* A call going through the stage. */
typedef struct gm_stage_call {
	gm_call *k; /* NULL once it ended */
	gm_stage *st;
	gm_job_desc *d;
	gm_batch b;
	uint32_t next;	 /* its first job not in a chunk */
	unsigned chunks; /* alive */
	bool waiting;	 /* in st's queue, holding one of k's open units */
	struct gm_stage_call *next_wait;
} gm_stage_call;

/* Jobs [part->first, + part->njobs) of a call in one block. */
typedef struct gm_chunk {
	gm_stage_call *sc;
	gm_stage_region *sr;
	gm_part *part; /* held */
	uint64_t off, bytes;
	uint64_t *slot;	   /* per job: where its operands start */
	gm_reply_job *rec; /* per job: its reply while its result moves */
	unsigned *outs;	   /* per job: copies out left */
	unsigned ins;	   /* copies in left */
	unsigned refs;	   /* its life, and copies queued */
	bool tainted;	   /* its block may be written by a lost request */
} gm_chunk;

/* Offsets in a job's slot of A, B, C and OUT, and the slot's bytes. */
uint64_t gm_stage_layout(const gm_job_desc *d, uint64_t off[GM_OPND_COUNT]);

/* Queues the copies of ch's operands into its block. */
int gm_stage_copy_in(gm_chunk *ch);

/* Queues the copies of job index's result out of ch's block. */
int gm_stage_copy_out(gm_chunk *ch, uint32_t index);

/* A copy in of ch is done: the chunk goes out after the last. */
void gm_stage_in_done(gm_chunk *ch, gm_todo *t);

/* Job index of ch is answered with its reply (its result copied). */
void gm_stage_settle(gm_chunk *ch, uint32_t index, gm_todo *t);

/* Lets go of ch; the last hold frees its block and ch. */
void gm_stage_chunk_drop(gm_chunk *ch, gm_todo *t);

#endif
