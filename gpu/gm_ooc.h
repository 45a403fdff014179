/*
 * gm_ooc.h - out-of-core GEMM: how a job too large for its share of a
 * device, or one whose operands lie in pageable host memory, is cut into
 * tiles of C and panels of A and B, and in which order their copies and
 * multiplications go to the device.
 *
 * A plan (gm_ooc_plan_make) cuts C into tm x tn tiles of at most mt x nt
 * elements and K into nk panels of at most kb. A tile is computed in
 * place in a device buffer: for each panel p, rows of A (mt x kb) and
 * columns of B (kb x nt) are copied in and multiplied into the tile,
 * with the job's beta and C for p = 0 and beta = 1 after; after the last
 * panel the tile is copied out. Buffers come in twos, so that one
 * step's copies run while the previous step's GEMM does and one tile's
 * copy back while the next tile computes. A panel that the next tile
 * needs again is not copied again: with one panel per tile (nk = 1) the
 * tiles go in a snake along their longer run, so a row of A (or a column
 * of B) crosses the link once.
 *
 * The plan minimises what copying in costs, which is what bounds a
 * tiled job (a PCIe 5 link moves about 55 GB/s; a GPU multiplies fp64 at
 * about 55 TFLOP/s, so a tile must do some 1000 flops per byte it brings
 * in, which a square tile of side s does at s / esize): the bytes, plus
 * a cost per line of each 2D copy, because a panel whose lines are
 * short crosses the link far slower than its bytes would (GM_OOC_LINE_
 * BYTES). It does so under two constraints: its buffers fit the budget
 * it is given, and its panels are at least GM_OOC_KB_BYTES / esize deep
 * (or as deep as K, or half the tile's side for the tiny tiles of a tiny
 * budget), so that each GEMM does enough work per element of C it reads
 * and writes back.
 *
 * The schedule of a range of tile positions (gm_ooc_iter) is a sequence
 * of operations, each on one of three streams (copies in, GEMMs, copies
 * out), each waiting for events recorded by earlier operations and
 * recording its own: the only ordering between streams. The CUDA engine
 * carries the operations out in order (gm_cuda_tile.cu); the unit tests
 * carry them out on the CPU in random interleavings that respect only
 * the events. Tiles are independent units: a range of positions can run
 * on one device while another range runs on another.
 *
 * Plain C, no CUDA; pure functions, any thread.
 */
#ifndef GM_OOC_H
#define GM_OOC_H

#include <stdint.h>

#include "gm_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A tiled job holds at most this percent of its device's pool by
 * default (gm_engine_config.ooc_share_pct), so that other jobs keep
 * running beside it in the rest. Measured on an H100 (bench/RESULTS.md
 * "Out of core"): 32768^3 fp64 through half of a 4 GiB pool crossed 60
 * GB in panels of 17 KiB lines, copy-bound at 0.91x the resident rate;
 * through three quarters, 51.5 GB in panels of 20 KiB lines, 0.98x.
 */
#define GM_OOC_SHARE_PCT 75
/* Panels are at least this many bytes deep (kb >= this / esize). */
#define GM_OOC_KB_BYTES 2048
/* Device buffers start on this. */
#define GM_OOC_ALIGN 256
/*
 * What one line of a 2D copy between host and device costs, in bytes of
 * copying: measured on an H100 on PCIe 5 (bench/RESULTS.md), panels of
 * 2 KiB and 5 KiB lines, 128 and 256 KiB apart in host memory, crossed
 * at 17 and 19 GB/s, long lines at over 40: each line cost about 160 ns
 * more than its bytes, 8 KiB at 52 GB/s.
 */
#define GM_OOC_LINE_BYTES 8192

/* The operands of a plan; C stands for C in and the result out. */
enum gm_ooc_operand { GM_OOC_A, GM_OOC_B, GM_OOC_C, GM_OOC_OPERANDS };

/* Buffers of one operand, at most. */
#define GM_OOC_SLOTS 2

typedef struct gm_ooc_plan {
	gm_job_desc d;	     /* the job */
	uint32_t esize;	     /* bytes of an element */
	int load_c;	     /* C is read: the job has C and beta != 0 */
	uint32_t mt, nt, kb; /* tile rows, tile columns, panel depth; the
				last of each may be shorter */
	uint32_t tm, tn, nk; /* tiles down, tiles across, panels */
	int cols_first;	     /* tiles go column after column */
	unsigned slots[GM_OOC_OPERANDS];      /* buffers of each operand */
	uint64_t ld[GM_OOC_OPERANDS];	      /* their line stride, elements */
	uint64_t slot_bytes[GM_OOC_OPERANDS]; /* one buffer, aligned */
	uint64_t bytes;			      /* device bytes of all buffers */
	uint64_t h2d_bytes, d2h_bytes;	      /* what crosses the link (in:
						 at most) */
	uint64_t h2d_lines;		      /* in lines of 2D copies, about */
} gm_ooc_plan;

/*
 * Plans d (valid: dims within GM_MAX_DIM, known dtype and layout) for at
 * most budget device bytes, each line of a 2D copy in costing line_bytes
 * (GM_OOC_LINE_BYTES). GM_OK, or GM_ETOOBIG when no plan fits the
 * budget: tiles are at least 64 x 64 (or the whole side), so a few
 * hundred KiB always do, a few KiB may not.
 */
int gm_ooc_plan_make(const gm_job_desc *d, uint64_t budget, uint64_t line_bytes,
		     gm_ooc_plan *p);

/* The share of a device pool of pool_bytes one tiled job may hold: pct
 * percent of it (0: GM_OOC_SHARE_PCT). */
uint64_t gm_ooc_share(uint64_t pool_bytes, unsigned pct);

/* Byte offset of buffer slot of operand in a plan's device memory. */
uint64_t gm_ooc_slot_offset(const gm_ooc_plan *p, int operand, unsigned slot);

/* A tile of C: rows [row, row + rows), columns [col, col + cols). */
typedef struct gm_ooc_tile {
	uint32_t i, j; /* its place among the tiles */
	uint32_t row, rows, col, cols;
} gm_ooc_tile;

uint32_t gm_ooc_tiles(const gm_ooc_plan *p);

/* The tile at position pos < gm_ooc_tiles(p) of the plan's order. */
void gm_ooc_tile_at(const gm_ooc_plan *p, uint32_t pos, gm_ooc_tile *t);

/*
 * A block of an operand as stored in host memory, and where it goes in
 * a device buffer: lines lines of width bytes, line i at host byte
 * off + i * hpitch from the operand's start and at device byte
 * i * dpitch from the buffer's start (dpitch = ld * esize). A line is a
 * row in a row-major job, a column in a column-major one.
 */
typedef struct gm_ooc_block {
	uint64_t off, hpitch, width, dpitch, ld;
	uint32_t lines;
} gm_ooc_block;

/* The block of operand holding rows [r, r + nr) and columns [c, c + nc)
 * of op(A), op(B) or C (m x n, also the result). */
void gm_ooc_block_of(const gm_ooc_plan *p, int operand, uint32_t r, uint32_t nr,
		     uint32_t c, uint32_t nc, gm_ooc_block *b);

enum gm_ooc_kind { GM_OOC_LOAD, GM_OOC_GEMM, GM_OOC_STORE };
enum gm_ooc_stream { GM_OOC_IN, GM_OOC_MUL, GM_OOC_OUT, GM_OOC_STREAMS };

/* Events, by purpose and operand slot: LOADED when a slot's copy in is
 * done, FREE when its last reader is (an A or B slot's last GEMM, a C
 * slot's copy out), DONE when a C slot's tile is computed. Each is
 * recorded by one stream only. */
#define GM_OOC_EV_LOADED(operand, slot) (2 * (operand) + (slot))
#define GM_OOC_EV_FREE(operand, slot)	(6 + 2 * (operand) + (slot))
#define GM_OOC_EV_DONE(slot)		(12 + (slot))
#define GM_OOC_EVENTS			14

/*
 * One operation. A wait is on the latest record of that event issued
 * before this operation (none: nothing to wait for), as with
 * cudaStreamWaitEvent; the records come after the operation on its
 * stream.
 *   LOAD:  blk of operand (A, B, or C from the job's C) into its slot.
 *   GEMM:  slot C += alpha op(slot A) op(slot B), m x n x k, with
 *          beta (the job's for the first panel when C is loaded, 0 for
 *          the first without, 1 after).
 *   STORE: blk of C's slot to the job's result.
 */
typedef struct gm_ooc_op {
	uint8_t kind, stream;
	uint8_t operand, slot; /* LOAD, STORE; GEMM: slot is C's */
	uint8_t a_slot, b_slot;
	uint8_t nwait, nrecord;
	uint8_t wait[3], record[3];
	gm_ooc_block blk;   /* LOAD, STORE */
	uint32_t m, n, k;   /* GEMM */
	double beta;	    /* GEMM */
	uint32_t pos, step; /* tile position and panel */
} gm_ooc_op;

/* The operations of tile positions [first, end), generated one by one. */
typedef struct gm_ooc_iter {
	const gm_ooc_plan *p;
	uint32_t first, end, pos, step;
	uint64_t held[2][GM_OOC_SLOTS]; /* A, B: block in each slot, 0 none */
	unsigned last[2];		/* A, B: slot loaded last */
	int stored;			/* the last tile's copy out is out */
	gm_ooc_tile prev;		/* the tile whose copy out is due */
	unsigned prev_slot;
	gm_ooc_op q[5];
	unsigned qn, qi;
} gm_ooc_iter;

void gm_ooc_iter_init(gm_ooc_iter *it, const gm_ooc_plan *p, uint32_t first,
		      uint32_t end);

/* The next operation into *op: 1, or 0 when there is none left. */
int gm_ooc_next(gm_ooc_iter *it, gm_ooc_op *op);

#ifdef __cplusplus
}
#endif
#endif
