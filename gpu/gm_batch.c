/*
 * gm_batch.c - keys, slots and copy plans of coalesced jobs; see
 * gm_batch.h.
 */
#include "gm_batch.h"

#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

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

/* ---- groups --------------------------------------------------------- */

struct group {
	gm_job_desc key;
	gm_job *head, *tail;
	uint32_t count;
	uint64_t bytes, slot_bytes;
};

struct gm_batch_groups {
	uint32_t max, n;      /* groups available, in use */
	uint32_t cursor;      /* the first group not yet empty */
	uint32_t table_size;  /* a power of two, at least 2 max */
	int32_t *table;	      /* group index + 1, 0 empty */
	struct group *groups; /* in order of their first job */
};

int gm_batch_groups_create(uint32_t max_groups, gm_batch_groups **out)
{
	gm_batch_groups *g;

	*out = NULL;
	if ((g = calloc(1, sizeof(*g))) == NULL)
		return GM_ENOMEM;
	g->max = max_groups ? max_groups : 1;
	for (g->table_size = 16; g->table_size < 2 * g->max;)
		g->table_size *= 2;
	g->table = calloc(g->table_size, sizeof(*g->table));
	g->groups = calloc(g->max, sizeof(*g->groups));
	if (g->table == NULL || g->groups == NULL) {
		gm_batch_groups_destroy(g);
		return GM_ENOMEM;
	}
	*out = g;
	return GM_OK;
}

void gm_batch_groups_destroy(gm_batch_groups *g)
{
	if (g == NULL)
		return;
	free(g->table);
	free(g->groups);
	free(g);
}

/* The table entry of d's key: its group's, or the empty one where it
 * would go. */
static uint32_t entry_of(const gm_batch_groups *g, const gm_job_desc *d)
{
	uint32_t mask = g->table_size - 1;
	uint32_t i = (uint32_t)gm_batch_hash(d) & mask;

	for (; g->table[i] != 0; i = (i + 1) & mask)
		if (gm_batch_same(&g->groups[g->table[i] - 1].key, d))
			break;
	return i;
}

int gm_batch_groups_add(gm_batch_groups *g, gm_job *job, uint64_t bytes,
			uint64_t slot_bytes)
{
	uint32_t i = entry_of(g, &job->d);
	struct group *gr;

	if (g->table[i] == 0) {
		if (g->n == g->max)
			return GM_ENOMEM;
		gr = &g->groups[g->n];
		memset(gr, 0, sizeof(*gr));
		gr->key = job->d;
		gr->slot_bytes = slot_bytes;
		g->table[i] = (int32_t)++g->n;
	}
	gr = &g->groups[g->table[i] - 1];
	job->next = NULL;
	if (gr->tail != NULL)
		gr->tail->next = job;
	else
		gr->head = job;
	gr->tail = job;
	gr->count++;
	gr->bytes += bytes;
	return GM_OK;
}

int gm_batch_groups_remove(gm_batch_groups *g, gm_job *job)
{
	uint32_t i = entry_of(g, &job->d);
	struct group *gr;
	gm_job **at, *prev = NULL;

	if (g->table[i] == 0)
		return 0;
	gr = &g->groups[g->table[i] - 1];
	for (at = &gr->head; *at != NULL; prev = *at, at = &(*at)->next) {
		if (*at != job)
			continue;
		*at = job->next;
		if (gr->tail == job)
			gr->tail = prev;
		job->next = NULL;
		/* Bytes leave a group in proportion: its jobs are all one
		 * size. */
		gr->bytes -= gr->bytes / gr->count;
		gr->count--;
		return 1;
	}
	return 0;
}

/* Takes the first n jobs off gr onto the batch being cut. */
static void take(struct group *gr, uint32_t n, gm_job **head, gm_job **tail,
		 uint64_t *dev_bytes)
{
	gm_job *last = gr->head;
	uint32_t i;

	for (i = 1; i < n; i++)
		last = last->next;
	if (*tail != NULL)
		(*tail)->next = gr->head;
	else
		*head = gr->head;
	*tail = last;
	*dev_bytes += n * gr->slot_bytes;
	/* Bytes leave a group in proportion: its jobs are all one size. */
	gr->bytes -= gr->bytes / gr->count * n;
	gr->count -= n;
	gr->head = last->next;
	if (gr->count == 0)
		gr->tail = NULL;
	last->next = NULL;
}

static void reset(gm_batch_groups *g)
{
	memset(g->table, 0, g->table_size * sizeof(*g->table));
	g->n = 0;
	g->cursor = 0;
}

/* A group that fills half a batch, by bytes or by jobs. */
static int large(const struct group *gr, uint64_t max_bytes, uint32_t max_jobs)
{
	return gr->bytes >= max_bytes / 2 || gr->count >= max_jobs / 2;
}

uint32_t gm_batch_groups_cut(gm_batch_groups *g, uint64_t max_bytes,
			     uint32_t max_jobs, gm_job **head,
			     uint64_t *dev_bytes)
{
	gm_job *tail = NULL;
	uint32_t jobs = 0;
	uint64_t bytes = 0;
	struct group *gr;

	*head = NULL;
	*dev_bytes = 0;
	while (g->cursor < g->n && g->groups[g->cursor].count == 0)
		g->cursor++;
	if (g->cursor == g->n) {
		reset(g);
		return 0;
	}
	gr = &g->groups[g->cursor];
	if (large(gr, max_bytes, max_jobs)) {
		/* Its own batches, as even as the bounds allow. */
		uint64_t parts = (gr->bytes + max_bytes - 1) / max_bytes;
		uint64_t by_jobs = (gr->count + max_jobs - 1) / max_jobs;
		uint64_t n;

		parts = parts > by_jobs ? parts : by_jobs;
		n = (gr->count + parts - 1) / parts;
		take(gr, (uint32_t)n, head, &tail, dev_bytes);
		return (uint32_t)n;
	}
	/* Whole small groups, as many as fit. */
	for (; g->cursor < g->n; g->cursor++) {
		gr = &g->groups[g->cursor];
		if (gr->count == 0)
			continue;
		if (jobs > 0 && (large(gr, max_bytes, max_jobs) ||
				 bytes + gr->bytes > max_bytes ||
				 jobs + gr->count > max_jobs))
			break;
		bytes += gr->bytes;
		jobs += gr->count;
		take(gr, gr->count, head, &tail, dev_bytes);
	}
	return jobs;
}
