/*
 * gmc_stage_copy.h - private to the staging of plain pointers
 * (gmc_stage.h): what a stage is made of (its region, the calls it took,
 * their chunks), and the copies of a chunk's operands into its block and
 * of its results out, on the client's worker threads. The copies are
 * below the stage: when the last of a chunk's copies in or of a job's
 * copies out is done, they tell it through the gmc_stage_copied it gave.
 */
#ifndef GMC_STAGE_COPY_H
#define GMC_STAGE_COPY_H

#include "gm_proto.h"
#include "gmc_call.h"
#include "gmc_client.h"
#include "gmc_workers.h"

#define GMC_STAGE_PIECE (2u << 20) /* one copy task */
#define GMC_STAGE_ALIGN 256	   /* each operand in the region */

typedef struct gmc_stage gmc_stage;
typedef struct gmc_chunk gmc_chunk;

/* What the copies tell their stage, under the client's lock. */
typedef struct gmc_stage_copied {
	/* The last copy in of ch is done: it goes out. */
	void (*in_done)(gmc_chunk *ch, gmc_todo *t);
	/* The last copy out of job index of ch is done: it is answered. */
	void (*settle)(gmc_chunk *ch, uint32_t index, gmc_todo *t);
	/* A copy's hold on ch is let go (after the two above). */
	void (*drop)(gmc_chunk *ch, gmc_todo *t);
} gmc_stage_copied;

/* A staging region and the chunks that hold blocks of it. */
typedef struct gmc_stage_region {
	gemmd_region *r;
	gmc_stage *st;
	unsigned users;	  /* chunks with a block of it */
	bool stale;	  /* retired (a lost chunk may still be written, or a
			     larger region replaces it): no new chunks */
	gmc_task release; /* on a worker, once stale and unused */
} gmc_stage_region;

/* STAGE_DRAIN: no current region, the retired ones not yet released:
 * the next is made once they are, so that the daemon's quota sees only
 * it. */
enum { STAGE_NONE, STAGE_MAKING, STAGE_READY, STAGE_DRAIN, STAGE_OFF };

struct gmc_stage {
	gmc_daemon *dm;
	const gmc_stage_copied *copied;
	uint64_t bytes; /* the current region's, or the last one's: the
			   stage never shrinks */
	uint64_t limit; /* the largest region the daemon may take: learnt
			   from its refusals (UINT64_MAX: none yet) */
	unsigned live;	/* regions made and not released */
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
	uint64_t need;	 /* its largest job's slot */
	uint32_t next;	 /* its first job not in a chunk */
	unsigned chunks; /* alive */
	bool waiting;	 /* in st's queue, holding one of k's open units */
	struct gmc_stage_call *next_wait;
} gmc_stage_call;

/* Jobs [part->first, + part->njobs) of a call in one block. */
struct gmc_chunk {
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
};

/* Offsets in a job's slot of A, B, C and OUT, and the slot's bytes. */
uint64_t gmc_stage_layout(const gm_job_desc *d, uint64_t off[GM_OPND_COUNT]);

/* Queues the copies of ch's operands into its block on the client's
 * workers (made before the region was). GM_OK or GM_ENOMEM. */
int gmc_stage_copy_in(gmc_chunk *ch);

/* Queues the copies of job index's result out of ch's block. */
int gmc_stage_copy_out(gmc_chunk *ch, uint32_t index);

#endif
