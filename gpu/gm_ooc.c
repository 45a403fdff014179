/*
 * gm_ooc.c - the tile planner and the schedule of gm_ooc.h.
 *
 * The planner tries, for each distinct tile height (tiles of balanced
 * sizes, rounded up to TILE_ALIGN rows when large), the fewest tiles
 * across that fit the budget with panels deep enough and a few more,
 * and the fewest that fit with one panel per tile (which lets panels be
 * reused); it keeps the plan that costs least to copy in (bytes, plus
 * line_bytes per line of the 2D copies), then the one with the fewest
 * tiles, then the deepest panels. Tiles are at least TILE_MIN on
 * a side (or as long as the side): a budget too small for that has no
 * plan, rather than one of millions of tiny GEMMs. Binary searches stand in for
 * loops wherever the device bytes a plan needs shrink monotonically
 * with the number of tiles or grow with the panels' depth.
 */
#include "gm_ooc.h"

#include <string.h>

#include "gm_error.h"

#define TILE_ALIGN 64	/* sides of large tiles are multiples of it */
#define TILE_MIN   64	/* tile sides below this (or the side) do not pay */
#define KB_ALIGN   64	/* panels above this are multiples of it */
#define KB_MAX	   8192 /* deeper panels buy nothing but memory */
#define LD_BYTES   128	/* device lines start on this */
#define CP_TRIES   256	/* tile widths tried per tile height */

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static uint64_t ceil_div(uint64_t x, uint64_t y)
{
	return (x + y - 1) / y;
}

static uint64_t min_u64(uint64_t x, uint64_t y)
{
	return x < y ? x : y;
}

static int trans_of(const gm_job_desc *d, int operand)
{
	return operand == GM_OOC_A   ? d->trans_a
	       : operand == GM_OOC_B ? d->trans_b
				     : 0;
}

/* Lines, and elements per line, of the stored block behind rows x cols
 * of op(X). */
static void stored(int layout, int trans, uint64_t rows, uint64_t cols,
		   uint64_t *lines, uint64_t *len)
{
	uint64_t sr = trans ? cols : rows, sc = trans ? rows : cols;

	*lines = layout == GM_COL_MAJOR ? sc : sr;
	*len = layout == GM_COL_MAJOR ? sr : sc;
}

/* Device lines start on LD_BYTES unless they are shorter. */
static uint64_t dev_ld(uint64_t len, uint32_t esize)
{
	uint64_t pad = LD_BYTES / esize;

	return len >= pad ? round_up(len, pad) : len;
}

/* Line stride and bytes of one buffer of operand for op(X) rows x cols. */
static void size_slot(const gm_job_desc *d, uint32_t esize, int operand,
		      uint64_t rows, uint64_t cols, uint64_t *ld,
		      uint64_t *bytes)
{
	uint64_t lines, len;

	stored(d->layout, trans_of(d, operand), rows, cols, &lines, &len);
	*ld = dev_ld(len, esize);
	*bytes = round_up(lines * *ld * esize, GM_OOC_ALIGN);
}

/* Buffers of each operand: two wherever it has more than one block. */
static void slot_counts(uint64_t tm, uint64_t tn, uint64_t nk,
			unsigned slots[GM_OOC_OPERANDS])
{
	slots[GM_OOC_A] = tm * nk > 1 ? 2 : 1;
	slots[GM_OOC_B] = tn * nk > 1 ? 2 : 1;
	slots[GM_OOC_C] = tm * tn > 1 ? 2 : 1;
}

/* Tiles (or panels) of one dimension and their sizes. */
struct cut {
	uint64_t side, count;
};

/* total cut into about parts balanced pieces; a large piece is rounded
 * up to TILE_ALIGN (by 6 % at the most). */
static uint64_t side_of(uint64_t total, uint64_t parts)
{
	uint64_t s = ceil_div(total, parts);

	if (s >= 16 * TILE_ALIGN)
		s = round_up(s, TILE_ALIGN);
	return min_u64(s, total);
}

static struct cut cut_of(uint64_t total, uint64_t parts)
{
	struct cut c;

	c.side = side_of(total, parts);
	c.count = ceil_div(total, c.side);
	return c;
}

/* The most parts whose side is at least TILE_MIN (or total). */
static uint64_t max_parts(uint64_t total)
{
	uint64_t floor = min_u64(total, TILE_MIN), lo = 1, hi = total;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (side_of(total, mid) >= floor)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* The smallest parts after p whose side is smaller than p's; total + 1
 * when there is none. */
static uint64_t next_parts(uint64_t total, uint64_t p)
{
	uint64_t s = side_of(total, p), lo = p + 1, hi = total + 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (side_of(total, mid) < s)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

struct search {
	const gm_job_desc *d;
	uint32_t esize;
	uint64_t budget, line_bytes;
	int load_c;
};

/* Device bytes of the buffers of tiles r x c with panels kb deep, nk of
 * them. */
static uint64_t need(const struct search *s, struct cut r, struct cut c,
		     uint64_t kb, uint64_t nk)
{
	unsigned slots[GM_OOC_OPERANDS];
	uint64_t ld, a, b, cb;

	slot_counts(r.count, c.count, nk, slots);
	size_slot(s->d, s->esize, GM_OOC_A, r.side, kb, &ld, &a);
	size_slot(s->d, s->esize, GM_OOC_B, kb, c.side, &ld, &b);
	size_slot(s->d, s->esize, GM_OOC_C, r.side, c.side, &ld, &cb);
	return slots[GM_OOC_A] * a + slots[GM_OOC_B] * b + slots[GM_OOC_C] * cb;
}

/* The deepest panels that fit beside tiles r x c; 0 when none does. */
static uint64_t fit_kb(const struct search *s, struct cut r, struct cut c)
{
	uint64_t k = s->d->k, lo = 0, hi;

	if (k <= KB_MAX && need(s, r, c, k, 1) <= s->budget)
		return k;
	hi = k <= KB_MAX ? k - 1 : KB_MAX;
	while (lo < hi) { /* more than one panel: two buffers each */
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (need(s, r, c, mid, 2) <= s->budget)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Panels shallower than this are not worth their GEMMs. */
static uint64_t kb_min(const struct search *s, struct cut r, struct cut c)
{
	uint64_t half = min_u64(r.side, c.side) / 2;

	return min_u64(
	    s->d->k, min_u64(GM_OOC_KB_BYTES / s->esize, half > 0 ? half : 1));
}

struct cand {
	struct cut r, c;
	uint64_t kb, nk;
	int cols_first;
	double bytes, lines; /* copied in */
	double cost;
};

/* Whether the stored lines of operand run along the rows of op(X)
 * (each line holds a row's elements), else along its columns. */
static int along_rows(const gm_job_desc *d, int operand)
{
	int trans = trans_of(d, operand);

	return d->layout == GM_COL_MAJOR ? trans : !trans;
}

/*
 * What x copies in: each tile's panels, less those reused along a run of
 * tiles when there is one panel per tile, plus C when it is read; in
 * bytes and in lines of 2D copies. A block's lines run along one of its
 * dimensions, so, summed over blocks, an operand's lines are that
 * dimension's extent times the times it is loaded (panels of A whose
 * lines run along K: K per tile). Its cost is the bytes plus line_bytes
 * per line.
 */
static void traffic(const struct search *s, struct cand *x)
{
	const gm_job_desc *d = s->d;
	double e = s->esize, m = d->m, n = d->n, k = d->k;
	double tm = (double)x->r.count, tn = (double)x->c.count;
	double nk = (double)x->nk, lb = (double)s->line_bytes;
	int a_m = along_rows(d, GM_OOC_A), b_k = along_rows(d, GM_OOC_B);
	double rows, cols, rows_l, cols_l;

	x->cols_first = 0;
	if (x->nk > 1) {
		x->bytes = e * k * (m * tn + n * tm);
		x->lines = (a_m ? nk * tn * m : tm * tn * k) +
			   (b_k ? tm * tn * k : nk * tm * n);
	} else {
		/* A once per row of tiles, B once per tile; or the other
		 * way round, column after column. */
		rows = e * k * (m + n * tm);
		rows_l = (a_m ? m : tm * k) + (b_k ? tm * tn * k : tm * n);
		cols = e * k * (n + m * tn);
		cols_l = (a_m ? tn * m : tm * tn * k) + (b_k ? tn * k : n);
		x->cols_first = cols + lb * cols_l < rows + lb * rows_l;
		x->bytes = x->cols_first ? cols : rows;
		x->lines = x->cols_first ? cols_l : rows_l;
	}
	if (s->load_c) {
		x->bytes += e * m * n;
		x->lines += along_rows(d, GM_OOC_C) ? tn * m : tm * n;
	}
	x->cost = x->bytes + lb * x->lines;
}

/* Fills x for tiles of about rp x cp parts; 0 when they do not fit. */
static int try_cut(const struct search *s, uint64_t rp, uint64_t cp,
		   struct cand *x)
{
	uint64_t k = s->d->k;

	x->r = cut_of(s->d->m, rp);
	x->c = cut_of(s->d->n, cp);
	x->kb = fit_kb(s, x->r, x->c);
	if (x->kb == 0 || x->kb < kb_min(s, x->r, x->c))
		return 0;
	if (x->kb < k) {
		uint64_t even;

		if (x->kb >= KB_ALIGN)
			x->kb = x->kb / KB_ALIGN * KB_ALIGN;
		/* As even as the alignment allows, never deeper. */
		even = ceil_div(k, ceil_div(k, x->kb));
		x->kb = even >= KB_ALIGN ? round_up(even, KB_ALIGN) : even;
		x->nk = ceil_div(k, x->kb);
	} else {
		x->nk = 1;
	}
	traffic(s, x);
	return 1;
}

static int better(const struct cand *x, const struct cand *y)
{
	uint64_t tx = x->r.count * x->c.count, ty = y->r.count * y->c.count;

	if (x->cost != y->cost)
		return x->cost < y->cost;
	if (tx != ty)
		return tx < ty;
	return x->kb > y->kb;
}

/* The fewest parts across, from 2 to the most, for which ok holds of the
 * cut; 0 when none does. Both tests below grow more true with more
 * parts. */
static uint64_t fewest(const struct search *s, uint64_t rp,
		       int (*ok)(const struct search *, uint64_t, uint64_t))
{
	uint64_t most = max_parts(s->d->n), lo = 2, hi = most + 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ok(s, rp, mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo <= most ? lo : 0;
}

static int fits(const struct search *s, uint64_t rp, uint64_t cp)
{
	struct cand x;

	return try_cut(s, rp, cp, &x);
}

static int fits_one_panel(const struct search *s, uint64_t rp, uint64_t cp)
{
	struct cand x;

	return try_cut(s, rp, cp, &x) && x.nk == 1;
}

static void consider(const struct search *s, uint64_t rp, uint64_t cp,
		     struct cand *best, int *found)
{
	struct cand x;

	if (cp == 0 || !try_cut(s, rp, cp, &x))
		return;
	if (!*found || better(&x, best)) {
		*best = x;
		*found = 1;
	}
}

uint64_t gm_ooc_share(uint64_t pool_bytes, unsigned pct)
{
	pct = pct != 0 && pct <= 100 ? pct : GM_OOC_SHARE_PCT;
	/* pool_bytes is at most 1 TiB (device_pool_bytes): no overflow */
	return pool_bytes * pct / 100 / GM_OOC_ALIGN * GM_OOC_ALIGN;
}

static void fill(gm_ooc_plan *p, const struct search *s, const struct cand *x)
{
	const gm_job_desc *d = s->d;
	uint64_t e = s->esize, a_loads, b_loads;

	p->h2d_lines = (uint64_t)x->lines;
	p->mt = (uint32_t)x->r.side;
	p->nt = (uint32_t)x->c.side;
	p->kb = (uint32_t)x->kb;
	p->tm = (uint32_t)x->r.count;
	p->tn = (uint32_t)x->c.count;
	p->nk = (uint32_t)x->nk;
	p->cols_first = x->cols_first;
	slot_counts(p->tm, p->tn, p->nk, p->slots);
	size_slot(d, s->esize, GM_OOC_A, p->mt, p->kb, &p->ld[GM_OOC_A],
		  &p->slot_bytes[GM_OOC_A]);
	size_slot(d, s->esize, GM_OOC_B, p->kb, p->nt, &p->ld[GM_OOC_B],
		  &p->slot_bytes[GM_OOC_B]);
	size_slot(d, s->esize, GM_OOC_C, p->mt, p->nt, &p->ld[GM_OOC_C],
		  &p->slot_bytes[GM_OOC_C]);
	p->bytes = 0;
	for (int i = 0; i < GM_OOC_OPERANDS; i++)
		p->bytes += p->slots[i] * p->slot_bytes[i];
	/* As traffic() counts, exactly: the snake's reuse at the turns
	 * aside. */
	a_loads = p->nk > 1 || p->cols_first ? p->tn : 1;
	b_loads = p->nk > 1 || !p->cols_first ? p->tm : 1;
	p->h2d_bytes = e * d->k * (d->m * a_loads + d->n * b_loads) +
		       (p->load_c ? e * d->m * d->n : 0);
	p->d2h_bytes = e * d->m * d->n;
}

/* For tiles rp parts high: one across, the fewest that fit and more
 * (more tiles can allow deeper panels, so fewer lines), and the fewest
 * with one panel per tile. */
static void consider_height(const struct search *s, uint64_t rp,
			    struct cand *best, int *found)
{
	uint64_t n = s->d->n, most = max_parts(n), cp = fewest(s, rp, fits);

	consider(s, rp, 1, best, found);
	for (int i = 0; cp != 0 && cp <= most && i < CP_TRIES; i++) {
		consider(s, rp, cp, best, found);
		cp = next_parts(n, cp);
	}
	if (s->d->k <= KB_MAX)
		consider(s, rp, fewest(s, rp, fits_one_panel), best, found);
}

int gm_ooc_plan_make(const gm_job_desc *d, uint64_t budget, uint64_t line_bytes,
		     gm_ooc_plan *p)
{
	struct search s;
	struct cand best;
	int found = 0;

	memset(p, 0, sizeof(*p));
	p->d = *d;
	p->esize = (uint32_t)gm_dtype_size(d->dtype);
	p->load_c = (d->flags & GM_JOB_HAS_C) && d->beta != 0.0;
	if (p->esize == 0 || d->m == 0 || d->n == 0 || d->k == 0)
		return GM_EINVAL;
	s.d = d;
	s.esize = p->esize;
	s.budget = budget;
	s.line_bytes = line_bytes;
	s.load_c = p->load_c;
	for (uint64_t rp = 1, most = max_parts(d->m); rp <= most;
	     rp = next_parts(d->m, rp))
		consider_height(&s, rp, &best, &found);
	if (!found)
		return GM_ETOOBIG;
	fill(p, &s, &best);
	return GM_OK;
}

uint64_t gm_ooc_slot_offset(const gm_ooc_plan *p, int operand, unsigned slot)
{
	uint64_t off = 0;

	/* C's buffers, then A's, then B's. */
	if (operand != GM_OOC_C)
		off += p->slots[GM_OOC_C] * p->slot_bytes[GM_OOC_C];
	if (operand == GM_OOC_B)
		off += p->slots[GM_OOC_A] * p->slot_bytes[GM_OOC_A];
	return off + slot * p->slot_bytes[operand];
}

uint32_t gm_ooc_tiles(const gm_ooc_plan *p)
{
	return p->tm * p->tn;
}

/* Tiles go in a snake: every other run backwards, so that the tile
 * after a turn shares its panel with the one before it. */
void gm_ooc_tile_at(const gm_ooc_plan *p, uint32_t pos, gm_ooc_tile *t)
{
	uint32_t run = p->cols_first ? p->tm : p->tn;
	uint32_t outer = pos / run, inner = pos % run;

	if (outer & 1)
		inner = run - 1 - inner;
	t->i = p->cols_first ? inner : outer;
	t->j = p->cols_first ? outer : inner;
	t->row = t->i * p->mt;
	t->col = t->j * p->nt;
	t->rows = p->d.m - t->row < p->mt ? p->d.m - t->row : p->mt;
	t->cols = p->d.n - t->col < p->nt ? p->d.n - t->col : p->nt;
}

void gm_ooc_block_of(const gm_ooc_plan *p, int operand, uint32_t r, uint32_t nr,
		     uint32_t c, uint32_t nc, gm_ooc_block *b)
{
	const gm_job_desc *d = &p->d;
	int trans = trans_of(d, operand);
	uint64_t rows = operand == GM_OOC_B ? d->k : d->m;
	uint64_t cols = operand == GM_OOC_A ? d->k : d->n;
	uint64_t e = p->esize, lines, ld, first, at, len;

	/* The whole operand's line stride, then the block's corner. */
	stored(d->layout, trans, rows, cols, &lines, &ld);
	stored(d->layout, trans, r, c, &first, &at);
	stored(d->layout, trans, nr, nc, &lines, &len);
	b->off = (first * ld + at) * e;
	b->hpitch = ld * e;
	b->width = len * e;
	b->lines = (uint32_t)lines;
	b->ld = p->ld[operand];
	b->dpitch = b->ld * e;
}

/* ---- the schedule ---------------------------------------------------- */

void gm_ooc_iter_init(gm_ooc_iter *it, const gm_ooc_plan *p, uint32_t first,
		      uint32_t end)
{
	memset(it, 0, sizeof(*it));
	it->p = p;
	it->first = first;
	it->end = end;
	it->pos = first;
	it->stored = 1;
	it->last[GM_OOC_A] = it->last[GM_OOC_B] = GM_OOC_SLOTS - 1;
}

static gm_ooc_op *push(gm_ooc_iter *it, int kind, int stream)
{
	gm_ooc_op *op = &it->q[it->qn++];

	memset(op, 0, sizeof(*op));
	op->kind = (uint8_t)kind;
	op->stream = (uint8_t)stream;
	op->pos = it->pos;
	op->step = it->step;
	return op;
}

static void wait_on(gm_ooc_op *op, int ev)
{
	op->wait[op->nwait++] = (uint8_t)ev;
}

static void record(gm_ooc_op *op, int ev)
{
	op->record[op->nrecord++] = (uint8_t)ev;
}

static uint32_t depth(const gm_ooc_plan *p, uint32_t step)
{
	uint32_t k0 = step * p->kb;

	return p->d.k - k0 < p->kb ? p->d.k - k0 : p->kb;
}

/* The slot that holds block key of x (A or B) for the next GEMM: the
 * one loaded last when it holds key already, else the next one, which
 * *load says must be loaded. */
static unsigned place(gm_ooc_iter *it, int x, uint64_t key, int *load)
{
	unsigned s = it->last[x];

	*load = it->held[x][s] != key;
	if (*load) {
		s = (s + 1) % it->p->slots[x];
		it->held[x][s] = key;
		it->last[x] = s;
	}
	return s;
}

static void load(gm_ooc_iter *it, int x, unsigned slot, const gm_ooc_tile *t)
{
	const gm_ooc_plan *p = it->p;
	gm_ooc_op *op = push(it, GM_OOC_LOAD, GM_OOC_IN);
	uint32_t k0 = it->step * p->kb, kd = depth(p, it->step);

	op->operand = (uint8_t)x;
	op->slot = (uint8_t)slot;
	if (x == GM_OOC_A)
		gm_ooc_block_of(p, x, t->row, t->rows, k0, kd, &op->blk);
	else if (x == GM_OOC_B)
		gm_ooc_block_of(p, x, k0, kd, t->col, t->cols, &op->blk);
	else
		gm_ooc_block_of(p, x, t->row, t->rows, t->col, t->cols,
				&op->blk);
	wait_on(op, GM_OOC_EV_FREE(x, slot));
	record(op, GM_OOC_EV_LOADED(x, slot));
}

static void store(gm_ooc_iter *it, const gm_ooc_tile *t, unsigned slot)
{
	gm_ooc_op *op = push(it, GM_OOC_STORE, GM_OOC_OUT);

	op->pos = it->pos - 1; /* the tile before the one under way */
	op->step = it->p->nk - 1;
	op->operand = GM_OOC_C;
	op->slot = (uint8_t)slot;
	gm_ooc_block_of(it->p, GM_OOC_C, t->row, t->rows, t->col, t->cols,
			&op->blk);
	wait_on(op, GM_OOC_EV_DONE(slot));
	record(op, GM_OOC_EV_FREE(GM_OOC_C, slot));
}

static void gemm(gm_ooc_iter *it, const gm_ooc_tile *t, unsigned c, unsigned sa,
		 unsigned sb)
{
	const gm_ooc_plan *p = it->p;
	gm_ooc_op *op = push(it, GM_OOC_GEMM, GM_OOC_MUL);
	int first = it->step == 0;

	op->slot = (uint8_t)c;
	op->a_slot = (uint8_t)sa;
	op->b_slot = (uint8_t)sb;
	op->m = t->rows;
	op->n = t->cols;
	op->k = depth(p, it->step);
	op->beta = !first ? 1.0 : p->load_c ? p->d.beta : 0.0;
	wait_on(op, GM_OOC_EV_LOADED(GM_OOC_A, sa));
	wait_on(op, GM_OOC_EV_LOADED(GM_OOC_B, sb));
	if (first) /* the tile's buffer: its C in, or free to overwrite */
		wait_on(op, p->load_c ? GM_OOC_EV_LOADED(GM_OOC_C, c)
				      : GM_OOC_EV_FREE(GM_OOC_C, c));
	record(op, GM_OOC_EV_FREE(GM_OOC_A, sa));
	record(op, GM_OOC_EV_FREE(GM_OOC_B, sb));
	if (it->step + 1 == p->nk)
		record(op, GM_OOC_EV_DONE(c));
}

/* The operations of the next step: its loads, its GEMM, and after the
 * first GEMM of a tile the copy out of the tile before, so that the
 * issuer has the new tile's work queued before it might wait for the
 * old one's. */
static void generate(gm_ooc_iter *it)
{
	const gm_ooc_plan *p = it->p;
	unsigned c = (it->pos - it->first) % p->slots[GM_OOC_C], sa, sb;
	gm_ooc_tile t;
	int la, lb;

	it->qn = it->qi = 0;
	gm_ooc_tile_at(p, it->pos, &t);
	if (it->step == 0 && p->load_c)
		load(it, GM_OOC_C, c, &t);
	sa = place(it, GM_OOC_A, (uint64_t)t.i * p->nk + it->step + 1, &la);
	if (la)
		load(it, GM_OOC_A, sa, &t);
	sb = place(it, GM_OOC_B, (uint64_t)t.j * p->nk + it->step + 1, &lb);
	if (lb)
		load(it, GM_OOC_B, sb, &t);
	gemm(it, &t, c, sa, sb);
	if (it->step == 0 && !it->stored) {
		store(it, &it->prev, it->prev_slot);
		it->stored = 1;
	}
	if (++it->step == p->nk) {
		it->prev = t;
		it->prev_slot = c;
		it->stored = 0;
		it->step = 0;
		it->pos++;
	}
}

int gm_ooc_next(gm_ooc_iter *it, gm_ooc_op *op)
{
	if (it->qi == it->qn) {
		if (it->pos < it->end) {
			generate(it);
		} else if (!it->stored) {
			it->qn = it->qi = 0;
			store(it, &it->prev, it->prev_slot);
			it->stored = 1;
		} else {
			return 0;
		}
	}
	*op = it->q[it->qi++];
	return 1;
}
