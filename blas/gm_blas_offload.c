/*
 * gm_blas_offload.c - one BLAS GEMM call run by gemmd. Over ipc:// its
 * operands are packed densely into the shim's shared-memory region (BLAS
 * leading dimensions may be larger than a matrix's rows or columns; a
 * job's matrices are dense), the job names them by offset, the daemon
 * writes the result in place of C there, and it is copied back into C
 * with C's leading dimension. Without a region they go through the
 * socket: as they are where already dense, else packed. C is sent only
 * when beta is not 0 (BLAS does not read it then: it may hold NaNs), and
 * written only when the job succeeded, so that the host BLAS can start
 * over from the caller's own C after any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_blas.h"

#define ALIGN 256 /* what DMA likes */

/* A matrix as BLAS stores it: lines (rows in row-major, columns in
 * column-major) of len elements, ld elements apart. */
struct mat {
	const void *p;
	uint64_t lines, len, ld;
};

static struct mat stored(const void *p, int layout, int rows, int cols, int ld)
{
	struct mat m = {p, (uint64_t)rows, (uint64_t)cols, (uint64_t)ld};

	if (layout == GEMMD_COL_MAJOR) {
		m.lines = (uint64_t)cols;
		m.len = (uint64_t)rows;
	}
	return m;
}

static uint64_t dense_bytes(const struct mat *m, size_t es)
{
	return m->lines * m->len * es;
}

static void pack(void *dst, const struct mat *m, size_t es)
{
	uint64_t i;

	if (m->ld == m->len) {
		memcpy(dst, m->p, dense_bytes(m, es));
		return;
	}
	for (i = 0; i < m->lines; i++)
		memcpy((char *)dst + i * m->len * es,
		       (const char *)m->p + i * m->ld * es, m->len * es);
}

static void unpack(void *dst, const struct mat *m, const void *src, size_t es)
{
	uint64_t i;

	if (m->ld == m->len) {
		memcpy(dst, src, dense_bytes(m, es));
		return;
	}
	for (i = 0; i < m->lines; i++)
		memcpy((char *)dst + i * m->ld * es,
		       (const char *)src + i * m->len * es, m->len * es);
}

/* The call as three matrices; false when BLAS would refuse it (a
 * leading dimension too small) or has nothing for gemmd to do: the host
 * BLAS answers those itself. */
static bool matrices(const struct gm_blas_call *c, struct mat *a, struct mat *b,
		     struct mat *cm)
{
	if (c->m < 1 || c->n < 1 || c->k < 1 || c->alpha == 0 ||
	    c->m > (int)GEMMD_MAX_DIM || c->n > (int)GEMMD_MAX_DIM ||
	    c->k > (int)GEMMD_MAX_DIM)
		return false;
	*a = stored(c->a, c->layout, c->trans_a ? c->k : c->m,
		    c->trans_a ? c->m : c->k, c->lda);
	*b = stored(c->b, c->layout, c->trans_b ? c->n : c->k,
		    c->trans_b ? c->k : c->n, c->ldb);
	*cm = stored(c->c, c->layout, c->m, c->n, c->ldc);
	return a->ld >= a->len && b->ld >= b->len && cm->ld >= cm->len;
}

/* The job's own fields, without its operands. */
static gemmd_job job_of(const struct gm_blas_call *c)
{
	gemmd_job j = {0};

	j.dtype = c->dtype;
	j.layout = c->layout;
	j.trans_a = c->trans_a;
	j.trans_b = c->trans_b;
	j.m = (uint32_t)c->m;
	j.n = (uint32_t)c->n;
	j.k = (uint32_t)c->k;
	j.alpha = c->alpha;
	j.beta = c->beta;
	return j;
}

/* The operands in region r, named by j: false when they do not fit in
 * its free space now. Their offsets (A, B, C and the result) in offs. */
static bool in_region(gemmd_region *r, gemmd_job *j, const struct mat m[3],
		      size_t es, uint64_t offs[3])
{
	uint8_t *base = gemmd_region_ptr(r);
	int i, got = 0;

	for (i = 0; i < 3; i++, got++)
		if (gemmd_region_alloc(r, dense_bytes(&m[i], es), ALIGN,
				       &offs[i]) != GEMMD_OK)
			break;
	if (got < 3) {
		while (got-- > 0)
			gemmd_region_free(r, offs[got]);
		return false;
	}
	pack(base + offs[0], &m[0], es);
	pack(base + offs[1], &m[1], es);
	j->a_ref = (gemmd_region_ref){r, offs[0]};
	j->b_ref = (gemmd_region_ref){r, offs[1]};
	j->out_ref = (gemmd_region_ref){r, offs[2]};
	if (j->beta != 0) {
		pack(base + offs[2], &m[2], es);
		j->c_ref = j->out_ref; /* C updated in place */
	}
	return true;
}

/* Through the socket: dense operands as they are, others packed into
 * bufs (freed by the caller). false when memory runs out. */
static bool in_socket(gemmd_job *j, const struct mat m[3], size_t es,
		      void *bufs[3])
{
	const void **in[3] = {&j->a, &j->b, &j->c};
	int i;

	for (i = 0; i < 3; i++) {
		if (i == 2 && j->beta == 0)
			continue;
		if (m[i].ld == m[i].len) {
			*in[i] = m[i].p;
			continue;
		}
		if ((bufs[i] = malloc(dense_bytes(&m[i], es))) == NULL)
			return false;
		pack(bufs[i], &m[i], es);
		*in[i] = bufs[i];
	}
	/* The result: into C itself when it is dense (the library writes
	 * it only when the job succeeded), else into a buffer to unpack
	 * from, C's packed copy when there is one (the request holds its
	 * own copy of it by then). */
	if (m[2].ld == m[2].len)
		j->out = (void *)m[2].p;
	else if (bufs[2] != NULL)
		j->out = bufs[2];
	else if ((j->out = bufs[2] = malloc(dense_bytes(&m[2], es))) == NULL)
		return false;
	return true;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* "dgemm_ col NT 512x384x256 ld 600/384/512", for the log. */
static void describe(const struct gm_blas_call *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s %c%c %dx%dx%d ld %d/%d/%d", c->name,
		 c->layout == GEMMD_ROW_MAJOR ? "row" : "col",
		 c->trans_a ? 'T' : 'N', c->trans_b ? 'T' : 'N', c->m, c->n,
		 c->k, c->lda, c->ldb, c->ldc);
}

/* What is left at t of a call's timeout that started at t0 (at least
 * 1 ms: the call then times out, it does not wait for ever). */
static int left_ms(double t0, double t)
{
	int ms = gm_blas_config()->timeout_ms;

	if (ms == GEMMD_FOREVER)
		return ms;
	return t - t0 < ms - 1 ? ms - (int)(t - t0) : 1;
}

/* Sends j, within what is left of the call's timeout since start, and
 * reports; true when it succeeded. *lost: the daemon may still be
 * running it. */
static bool run(gemmd_client *cl, gemmd_job *j, const char *what,
		const char *path, double start, bool *lost)
{
	double t0 = now_ms();
	int rv = gemmd_submit(cl, j, 1, NULL, left_ms(start, t0));
	int code = rv != GEMMD_OK ? rv : j->status;

	*lost = rv == GEMMD_ETIMEDOUT || rv == GEMMD_ETRANSPORT;
	/* A job gemmd failed at its deadline (the call's timeout, sent
	 * with it) did not run, but says as much as a timeout: the queue
	 * is too long to wait on. */
	if (*lost || code == GEMMD_ETIMEDOUT)
		gm_blas_pause(code);
	if (code == GEMMD_OK) {
		gm_blas_log(1, "%s -> gemmd (%s) %.3f ms, kernel %.3f ms", what,
			    path, now_ms() - t0, j->t.kernel_us / 1e3);
		return true;
	}
	gm_blas_log(1, "%s -> host: gemmd said %s: %s", what,
		    gemmd_errname(code),
		    j->message[0] ? j->message : gemmd_last_error());
	return false;
}

bool gm_blas_offload(const struct gm_blas_call *c)
{
	const struct gm_blas_config *cfg = gm_blas_config();
	size_t es = c->dtype == GEMMD_FP64 ? 8 : 4;
	struct mat m[3];
	gemmd_job j = job_of(c);
	void *bufs[3] = {NULL, NULL, NULL};
	uint64_t offs[3], total;
	gemmd_client *cl;
	gemmd_region *r;
	char what[128];
	bool ok = false, lost = false, gone;
	double start = now_ms();

	describe(c, what, sizeof(what));
	if (!cfg->enabled || !matrices(c, &m[0], &m[1], &m[2]))
		return false;
	if (2.0 * c->m * c->n * c->k < cfg->min_flops) {
		gm_blas_log(2, "%s -> host: under GEMMD_BLAS_MIN_FLOPS", what);
		return false;
	}
	if ((cl = gm_blas_client()) == NULL) {
		gm_blas_log(1, "%s -> host: gemmd not reachable now", what);
		return false;
	}
	total = 3 * ALIGN + dense_bytes(&m[0], es) + dense_bytes(&m[1], es) +
		dense_bytes(&m[2], es);
	r = gm_blas_region_get(cl, total, left_ms(start, now_ms()), &gone);
	if (gone) {
		gm_blas_log(1, "%s -> host: gemmd made no region: %s", what,
			    gemmd_last_error());
		return false;
	}
	if (r != NULL && in_region(r, &j, m, es, offs)) {
		if ((ok = run(cl, &j, what, "region", start, &lost)))
			unpack(c->c, &m[2],
			       (uint8_t *)gemmd_region_ptr(r) + offs[2], es);
		for (int i = 0; !lost && i < 3; i++)
			gemmd_region_free(r, offs[i]);
		gm_blas_region_put(r, lost);
		return ok;
	}
	if (r != NULL)
		gm_blas_region_put(r, false);
	if (in_socket(&j, m, es, bufs) &&
	    (ok = run(cl, &j, what, "socket", start, &lost)) && j.out != c->c)
		unpack(c->c, &m[2], j.out, es);
	for (int i = 0; i < 3; i++)
		free(bufs[i]);
	return ok;
}
