/*
 * gm_batch.c - keys, slots and copy plans of coalesced jobs; see
 * gm_batch.h.
 */
#include "gm_batch.h"

#include <string.h>

#define ALIGN_UP(x) \
	(((x) + GM_BATCH_ALIGN - 1) & ~(uint64_t)(GM_BATCH_ALIGN - 1))
#define OPS_MAX 3

static double beta_used(const gm_job_desc *d)
{
	return (d->flags & GM_JOB_HAS_C) ? d->beta : 0.0;
}

int gm_batch_same(const gm_job_desc *x, const gm_job_desc *y)
{
	double bx = beta_used(x), by = beta_used(y);

	return x->dtype == y->dtype && x->kernel == y->kernel &&
	       x->trans_a == y->trans_a && x->trans_b == y->trans_b &&
	       x->layout == y->layout &&
	       (x->flags & GM_JOB_HAS_C) == (y->flags & GM_JOB_HAS_C) &&
	       x->m == y->m && x->n == y->n && x->k == y->k &&
	       memcmp(&x->alpha, &y->alpha, sizeof(x->alpha)) == 0 &&
	       memcmp(&bx, &by, sizeof(bx)) == 0;
}

/* FNV-1a over the compared fields, one 64-bit word at a time. */
static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

uint64_t gm_batch_hash(const gm_job_desc *d)
{
	double beta = beta_used(d);
	uint64_t h = 0xcbf29ce484222325ull, a, b;

	memcpy(&a, &d->alpha, sizeof(a));
	memcpy(&b, &beta, sizeof(b));
	h = mix(h, (uint64_t)d->dtype | (uint64_t)d->kernel << 8 |
		       (uint64_t)d->trans_a << 16 | (uint64_t)d->trans_b << 24 |
		       (uint64_t)d->layout << 32 |
		       (uint64_t)(d->flags & GM_JOB_HAS_C) << 40);
	h = mix(h, (uint64_t)d->m << 32 | d->n);
	h = mix(h, d->k);
	h = mix(h, a);
	h = mix(h, b);
	return h ^ (h >> 29);
}

void gm_batch_slot_of(const gm_job_sizes *sz, gm_batch_slot *s)
{
	s->b = ALIGN_UP(sz->a);
	s->c = s->b + ALIGN_UP(sz->b);
	s->bytes = s->c + ALIGN_UP(sz->out);
}

/* The operands a plan moves, in slot order. */
struct ops {
	int n;
	uint64_t dev[OPS_MAX];	/* offset in the slot */
	uint64_t size[OPS_MAX]; /* bytes */
	int which[OPS_MAX];	/* 0 a, 1 b, 2 c, 3 out */
	/* Found across the run: */
	char *base[OPS_MAX];
	uint64_t step[OPS_MAX];
	int strided[OPS_MAX];
};

static char *operand(const gm_job *j, int which)
{
	switch (which) {
	case 0:
		return j->a;
	case 1:
		return j->b;
	case 2:
		return j->c;
	default:
		return j->out;
	}
}

static void add(struct ops *o, int which, uint64_t dev, uint64_t size)
{
	if (size == 0)
		return;
	o->which[o->n] = which;
	o->dev[o->n] = dev;
	o->size[o->n] = size;
	o->n++;
}

/* Finds which operands lie at one positive stride across the run. */
static void find_strides(struct ops *o, gm_job *first, uint32_t count)
{
	gm_job *j = first;
	uint32_t i;
	int k;

	for (k = 0; k < o->n; k++) {
		o->base[k] = operand(first, o->which[k]);
		o->strided[k] = count >= 2;
	}
	for (i = 0; i < count; i++, j = j->next)
		for (k = 0; k < o->n; k++) {
			char *p = operand(j, o->which[k]);

			if (i == 1) {
				o->step[k] = (uint64_t)(p - o->base[k]);
				o->strided[k] = p > o->base[k];
			} else if (i > 1 && o->strided[k]) {
				o->strided[k] =
				    p == o->base[k] + (uint64_t)i * o->step[k];
			}
		}
	/* Rows that overlap on the host are no strided copy. */
	for (k = 0; k < o->n; k++)
		if (o->strided[k] && o->step[k] < o->size[k])
			o->strided[k] = 0;
}

/* Whether operand y can extend a copy that starts at operand x and ends
 * with operand y - 1: the host gap to y is the device gap, and for
 * strided rows, the widened row still fits in the stride. */
static int joins(const struct ops *o, int x, int y, const char *hx,
		 const char *hy)
{
	uint64_t width = o->dev[y] + o->size[y] - o->dev[x];

	if (o->strided[y] != o->strided[y - 1] || hy < hx ||
	    (uint64_t)(hy - hx) != o->dev[y] - o->dev[x])
		return 0;
	return !o->strided[y] ||
	       (o->step[y] == o->step[x] && width <= o->step[x]);
}

static void emit_strided(const struct ops *o, const gm_batch_slot *s,
			 uint64_t dev, uint32_t count, gm_batch_emit_fn emit,
			 void *arg)
{
	int x = 0, y;

	while (x < o->n) {
		if (!o->strided[x]) {
			x++;
			continue;
		}
		for (y = x + 1;
		     y < o->n && joins(o, x, y, o->base[x], o->base[y]); y++)
			;
		emit(arg,
		     &(gm_batch_copy){
			 .host = o->base[x],
			 .dev = dev + o->dev[x],
			 .width = o->dev[y - 1] + o->size[y - 1] - o->dev[x],
			 .hpitch = o->step[x],
			 .dpitch = s->bytes,
			 .rows = count,
		     });
		x = y;
	}
}

static void emit_pieces(const struct ops *o, const gm_batch_slot *s,
			uint64_t dev, gm_job *first, uint32_t count,
			gm_batch_emit_fn emit, void *arg)
{
	gm_job *j = first;
	uint32_t i;
	int x, y;

	for (i = 0; i < count; i++, j = j->next) {
		uint64_t at = dev + (uint64_t)i * s->bytes;

		for (x = 0; x < o->n; x = y) {
			char *hx = operand(j, o->which[x]);
			uint64_t width;

			if (o->strided[x]) {
				y = x + 1;
				continue;
			}
			for (y = x + 1;
			     y < o->n &&
			     joins(o, x, y, hx, operand(j, o->which[y]));
			     y++)
				;
			width = o->dev[y - 1] + o->size[y - 1] - o->dev[x];
			emit(arg, &(gm_batch_copy){.host = hx,
						   .dev = at + o->dev[x],
						   .width = width,
						   .hpitch = width,
						   .dpitch = width,
						   .rows = 1});
		}
	}
}

void gm_batch_plan(gm_job *first, uint32_t count, const gm_batch_slot *s,
		   uint64_t dev, int dir, int with_c, gm_batch_emit_fn emit,
		   void *arg)
{
	struct ops o = {0};
	gm_job_sizes sz;

	if (count == 0 || gm_job_sizes_of(&first->d, &sz) != 0)
		return;
	if (dir == GM_BATCH_IN) {
		add(&o, 0, 0, sz.a);
		add(&o, 1, s->b, sz.b);
		if (with_c)
			add(&o, 2, s->c, sz.c);
	} else {
		add(&o, 3, s->c, sz.out);
	}
	find_strides(&o, first, count);
	emit_strided(&o, s, dev, count, emit, arg);
	emit_pieces(&o, s, dev, first, count, emit, arg);
}
