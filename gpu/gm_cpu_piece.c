/*
 * gm_cpu_piece.c - the blocks of gm_cpu_piece.h and the one place the
 * CPU engine calls BLAS.
 */
#include "gm_cpu_piece.h"

#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "gm_error.h"

/* Leading dimension of a densely packed operand whose op() is rows x cols:
 * the length of a stored row (row-major) or column (column-major). */
static int lead(int row_major, int trans, uint32_t rows, uint32_t cols)
{
	uint32_t stored_rows = trans ? cols : rows;
	uint32_t stored_cols = trans ? rows : cols;

	return (int)(row_major ? stored_cols : stored_rows);
}

/* Offset in elements of element (i, j) of op(X), X stored with leading
 * dimension ld: op(X)(i, j) is X(j, i) when trans, and a row-major X(i,
 * j) lies at i * ld + j, a column-major one at j * ld + i. */
static size_t at(int row_major, int trans, uint32_t i, uint32_t j, int ld)
{
	if (row_major != trans)
		return (size_t)i * (size_t)ld + j;
	return (size_t)j * (size_t)ld + i;
}

static uint32_t min_u32(uint64_t a, uint64_t b)
{
	return (uint32_t)(a < b ? a : b);
}

/* Evens out blocks of at most want along a dimension of len: as many
 * blocks as want needs, each as long as their count allows. */
static uint32_t even(uint32_t len, uint64_t want)
{
	uint64_t count;

	if (want == 0)
		want = 1;
	if (want >= len)
		return len;
	count = (len + want - 1) / want;
	return (uint32_t)((len + count - 1) / count);
}

void gm_cpu_piece_plan(gm_cpu_piece *p, const gm_job_desc *d,
		       const gm_cpu_operands *op, double beta, double flops)
{
	double per = 2.0 * (double)d->k; /* FLOPs of one element of C */
	double elems = flops / (per > 0 ? per : 1.0);
	uint32_t edge_r = min_u32(d->m, GM_CPU_PIECE_EDGE);

	*p = (gm_cpu_piece){.d = *d, .op = *op, .beta = beta};
	if (!(elems < (double)d->m * d->n)) {
		p->rows = d->m;
		p->cols = d->n;
	} else if (elems >= (double)d->n * edge_r) {
		/* Panels of whole rows. */
		p->rows = even(d->m, (uint64_t)(elems / d->n));
		p->cols = d->n;
	} else {
		/* Rows too long for a panel: blocks of edge_r rows. */
		p->rows = even(d->m, edge_r);
		p->cols =
		    even(d->n, (uint64_t)(elems / p->rows) < GM_CPU_PIECE_EDGE
				   ? GM_CPU_PIECE_EDGE
				   : (uint64_t)(elems / p->rows));
	}
}

/* Copies the rows x cols block of C at (r, c) to out, where BLAS then
 * updates it in place. */
static void place_c(const gm_cpu_piece *p, uint32_t rows, uint32_t cols,
		    size_t es)
{
	const gm_job_desc *d = &p->d;
	int row = d->layout == GM_ROW_MAJOR;
	int ld = lead(row, 0, d->m, d->n);
	uint32_t lines = row ? rows : cols, len = row ? cols : rows;
	size_t off = at(row, 0, p->r, p->c, ld);

	if ((int)len == ld) { /* the block's lines follow each other */
		memcpy((uint8_t *)p->op.out + off * es,
		       (const uint8_t *)p->op.c + off * es,
		       (size_t)lines * len * es);
		return;
	}
	for (uint32_t i = 0; i < lines; i++, off += (size_t)ld)
		memcpy((uint8_t *)p->op.out + off * es,
		       (const uint8_t *)p->op.c + off * es, (size_t)len * es);
}

double gm_cpu_piece_run(gm_cpu_piece *p)
{
	const gm_job_desc *d = &p->d;
	int row = d->layout == GM_ROW_MAJOR;
	enum CBLAS_ORDER order = row ? CblasRowMajor : CblasColMajor;
	enum CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
	int lda = lead(row, d->trans_a, d->m, d->k);
	int ldb = lead(row, d->trans_b, d->k, d->n);
	int ldc = lead(row, 0, d->m, d->n);
	uint32_t rows = min_u32(p->rows, d->m - p->r);
	uint32_t cols = min_u32(p->cols, d->n - p->c);
	size_t oa = at(row, d->trans_a, p->r, 0, lda);
	size_t ob = at(row, d->trans_b, 0, p->c, ldb);
	size_t oc = at(row, 0, p->r, p->c, ldc);
	size_t es = d->dtype == GM_FP64 ? 8 : 4;

	/* Without C, beta stays 0 and BLAS never reads out. */
	if (p->op.c != NULL && p->op.c != p->op.out)
		place_c(p, rows, cols, es);
	if (d->dtype == GM_FP64)
		cblas_dgemm(order, ta, tb, rows, cols, d->k, d->alpha,
			    (const double *)p->op.a + oa, lda,
			    (const double *)p->op.b + ob, ldb, p->beta,
			    (double *)p->op.out + oc, ldc);
	else
		cblas_sgemm(order, ta, tb, rows, cols, d->k, (float)d->alpha,
			    (const float *)p->op.a + oa, lda,
			    (const float *)p->op.b + ob, ldb, (float)p->beta,
			    (float *)p->op.out + oc, ldc);
	if ((p->c += cols) >= d->n) {
		p->c = 0;
		p->r += rows;
	}
	return 2.0 * rows * cols * d->k;
}

int gm_cpu_piece_done(const gm_cpu_piece *p)
{
	return p->r >= p->d.m;
}

uint64_t gm_cpu_piece_count(const gm_cpu_piece *p)
{
	uint64_t down = (p->d.m + p->rows - 1) / p->rows;
	uint64_t across = (p->d.n + p->cols - 1) / p->cols;

	return down * across;
}

int gm_cpu_piece_check(int dtype, char *msg, size_t msglen)
{
	const char *name;

	if (dtype == GM_FP64 || dtype == GM_FP32)
		return GM_OK;
	if ((name = gm_dtype_name(dtype)) != NULL)
		snprintf(msg, msglen,
			 "dtype %s is unsupported by the cpu engine", name);
	else
		snprintf(msg, msglen,
			 "dtype %d is unsupported by the cpu engine", dtype);
	return GM_EUNSUPPORTED;
}

/* With copy_to set, copy_in holds only the operands that lie in
 * [copy_to, copy_to + copy_in_bytes): each of those is read from
 * copy_in at the same offset, the others (in regions) where they are. */
static const void *in_place(const gm_job *job, const void *p, uint64_t len)
{
	const uint8_t *to = job->copy_to, *q = p;

	if (q < to || len > job->copy_in_bytes ||
	    (uint64_t)(q - to) > job->copy_in_bytes - len)
		return p;
	return (const uint8_t *)job->copy_in + (q - to);
}

/* Finds the operands of job: the wire-ordered copy_in buffer when set
 * (all of A, B, C, or with copy_to those it stands for), else a, b and
 * c; the result goes to copy_out when set, else to out. */
static int operands_of(gm_job *job, const gm_job_sizes *sz, gm_cpu_operands *op)
{
	int has_c = (job->d.flags & GM_JOB_HAS_C) != 0;
	const uint8_t *in = job->copy_in;

	if (in != NULL && job->copy_to != NULL) {
		op->a = in_place(job, job->a, sz->a);
		op->b = in_place(job, job->b, sz->b);
		op->c = has_c ? in_place(job, job->c, sz->c) : NULL;
	} else if (in != NULL) {
		if (job->copy_in_bytes < sz->a + sz->b + sz->c) {
			snprintf(job->msg, sizeof(job->msg),
				 "copy_in holds %llu bytes, the job needs %llu",
				 (unsigned long long)job->copy_in_bytes,
				 (unsigned long long)(sz->a + sz->b + sz->c));
			return GM_EINVAL;
		}
		op->a = in;
		op->b = in + sz->a;
		op->c = has_c ? in + sz->a + sz->b : NULL;
	} else {
		op->a = job->a;
		op->b = job->b;
		op->c = has_c ? job->c : NULL;
	}
	op->out = job->copy_out != NULL ? job->copy_out : job->out;
	if (op->a == NULL || op->b == NULL || op->out == NULL ||
	    (has_c && op->c == NULL)) {
		snprintf(job->msg, sizeof(job->msg), "job operand missing");
		return GM_EINVAL;
	}
	return GM_OK;
}

int gm_cpu_piece_prepare(gm_cpu_piece *p, gm_job *job, double flops)
{
	gm_cpu_operands op;
	gm_job_sizes sz;

	job->msg[0] = '\0';
	job->h2d_us = job->kernel_us = job->d2h_us = job->start_us = 0.0;
	job->device = -1;
	if ((job->status = gm_cpu_piece_check(job->d.dtype, job->msg,
					      sizeof(job->msg))) != 0)
		return job->status;
	if ((job->status = gm_job_sizes_of(&job->d, &sz)) != 0) {
		snprintf(job->msg, sizeof(job->msg), "job sizes: %s",
			 gm_strerror(job->status));
		return job->status;
	}
	if ((job->status = operands_of(job, &sz, &op)) != 0)
		return job->status;
	gm_cpu_piece_plan(p, &job->d, &op, op.c != NULL ? job->d.beta : 0.0,
			  flops);
	return GM_OK;
}
