/*
 * gm_cpu_piece.h - one job of the CPU engine cut into pieces: blocks of
 * its result C, each one BLAS call over the full k, so that the engine
 * can run other jobs between two of them (gm_engine_cpu.c).
 *
 * A piece never splits k: every element of C is one BLAS dot product of
 * the whole depth, with beta applied once, so a job run in pieces gives
 * the unsplit call's result within rounding. Not bit for bit: OpenBLAS
 * 0.3 gives results that depend on how a call is shared among its
 * threads and on which edge kernels a block's size takes (a 1000^3 fp64
 * job cut into 100-row panels differs from the whole call in the last
 * bit of some elements on two threads, not on one). So the cut is a
 * function of the job's shape and dtype and of the FLOPs of a piece
 * alone, and the engine fixes those FLOPs for its life: the same job
 * always gets the same calls and the same bytes, whatever else runs
 * (nothing else changes a call's rounding: OpenBLAS splits a call among
 * its threads by the call's shape and thread count, and a job run on
 * another thread meanwhile has its own buffers). A job that fits in one
 * piece is one call. Plain C over cblas; the caller owns the job and its
 * memory. One thread per gm_cpu_piece.
 */
#ifndef GM_CPU_PIECE_H
#define GM_CPU_PIECE_H

#include <stdint.h>

#include "gm_job.h"

/* Edge of the narrowest block a piece is cut to, unless the job is
 * smaller: thinner blocks run BLAS far below its speed. */
#define GM_CPU_PIECE_EDGE 64

/* Where one job's operands are, wherever they live (gm_engine_cpu.c
 * finds them). */
typedef struct gm_cpu_operands {
	const void *a, *b, *c; /* c NULL when the job has no C */
	void *out;
} gm_cpu_operands;

/* A job's pieces: blocks of rows x cols elements of C (those at the
 * last row or column of blocks may be smaller), band by band of rows,
 * each band from left to right. */
typedef struct gm_cpu_piece {
	gm_job_desc d;
	gm_cpu_operands op;
	double beta;	     /* the job's with C, else 0: out is not read */
	uint32_t rows, cols; /* of a block */
	uint32_t r, c;	     /* origin of the next block; r == m: done */
} gm_cpu_piece;

/* GM_OK when the CPU engine runs dtype (fp64, fp32), else
 * GM_EUNSUPPORTED with a message. */
int gm_cpu_piece_check(int dtype, char *msg, size_t msglen);

/*
 * Readies job to run in pieces of about flops each (INFINITY: one):
 * clears its results, finds its operands (copy_in and copy_out stand for
 * those they hold; gm_job.h) and plans p. GM_OK, or the job is failed
 * with its status and msg set and the code returned (an unsupported
 * dtype, sizes that overflow, an operand missing, a short copy_in).
 */
int gm_cpu_piece_prepare(gm_cpu_piece *p, gm_job *job, double flops);

/* Plans d's pieces at about flops each (at least one block of
 * GM_CPU_PIECE_EDGE^2 elements, or of the whole job when smaller; at
 * most the whole job). beta is the job's with C, else 0. */
void gm_cpu_piece_plan(gm_cpu_piece *p, const gm_job_desc *d,
		       const gm_cpu_operands *op, double beta, double flops);

/* Runs the next block: places its part of C in out (when C is not
 * already there), then out = alpha*op(A)*op(B) + beta*out over it.
 * Returns the block's FLOPs. Blocks for the length of a BLAS call. */
double gm_cpu_piece_run(gm_cpu_piece *p);

/* Whether every block has run. */
int gm_cpu_piece_done(const gm_cpu_piece *p);

/* How many blocks the plan has in all. */
uint64_t gm_cpu_piece_count(const gm_cpu_piece *p);

#endif
