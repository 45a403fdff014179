/*
 * gm_verify.c - gemmctl submit --verify: a long double reference of a
 * finished job computed from the exact values sent, and the tolerance
 * its error is held to.
 */
#include "gm_verify.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "gm_npy.h"
#include "gm_proto.h"

/* Element (i, c) of a rows x cols matrix of the job's dtype and layout. */
static double at(const gemmd_job *j, const void *buf, uint64_t rows,
		 uint64_t cols, uint64_t i, uint64_t c)
{
	uint64_t idx =
	    j->layout == GEMMD_ROW_MAJOR ? i * cols + c : c * rows + i;

	return gm_npy_wire_get(buf, j->dtype, idx);
}

/* op(A) as M x K and op(B) transposed as N x K, both row-major, so the
 * reference reads both along K. Every wire value is exact in a double. */
static int op_rows(const gemmd_job *j, double **opa, double **opbt)
{
	uint64_t m = j->m, n = j->n, k = j->k, i, p;

	*opa = malloc(m * k * sizeof(double));
	*opbt = malloc(n * k * sizeof(double));
	if (*opa == NULL || *opbt == NULL)
		return GM_ENOMEM;
	for (i = 0; i < m; i++)
		for (p = 0; p < k; p++)
			(*opa)[i * k + p] = j->trans_a
						? at(j, j->a, k, m, p, i)
						: at(j, j->a, m, k, i, p);
	for (i = 0; i < n; i++)
		for (p = 0; p < k; p++)
			(*opbt)[i * k + p] = j->trans_b
						 ? at(j, j->b, n, k, i, p)
						 : at(j, j->b, k, n, p, i);
	return GM_OK;
}

/* Sums of squares over the whole result: error, reference, and the
 * terms each reference element is summed from. */
struct sums {
	long double err, ref, terms;
};

static void reference(const gemmd_job *j, const double *opa, const double *opbt,
		      struct sums *s)
{
	uint64_t m = j->m, n = j->n, k = j->k, i, c, p;
	long double acc, sq, t, ref, d, bc;

	for (i = 0; i < m; i++) {
		for (c = 0; c < n; c++) {
			acc = sq = 0;
			for (p = 0; p < k; p++) {
				t = (long double)opa[i * k + p] *
				    opbt[c * k + p];
				acc += t;
				sq += t * t;
			}
			ref = j->alpha * acc;
			sq *= (long double)j->alpha * j->alpha;
			bc = j->c ? j->beta *
					(long double)at(j, j->c, m, n, i, c)
				  : 0;
			ref += bc;
			d = at(j, j->out, m, n, i, c) - ref;
			s->err += d * d;
			s->ref += ref * ref;
			s->terms += sq + bc * bc;
		}
	}
}

/*
 * The tolerance, for rel_err = ||out - ref||_F / ||ref||_F with ref
 * computed here in long double (its own error is negligible) from the
 * exact values sent. Rounding errors are modelled as in Higham and
 * Mary's probabilistic analysis: independent, so K of them grow like
 * sqrt(K) rather than K. Each result element is a sum of K terms
 * alpha * a * b (and beta * c); sigma = ||sqrt(sum of squared terms)||_F
 * / ||ref||_F measures how much the terms cancel: about 1 for random
 * signs, 1/sqrt(K) for same-sign data, large when the result cancels,
 * which is exactly when a GEMM's error relative to it grows. The
 * partial sums of an element are bounded by |ref| for same-sign terms
 * and by the root sum of squares for random ones, so the error of an
 * element, relative to ||ref||_F, is at most about u * (1 + sigma) per
 * unit of rounding u. Three sources:
 *  - accumulation: u_acc * sqrt(K) * (1 + sigma), with u_acc the unit
 *    roundoff of the compute precision: fp64 2^-53, else fp32 2^-24
 *    (fp16 and bf16 accumulate in fp32);
 *  - input rounding, tf32 only: the tensor cores drop 13 mantissa bits
 *    of each fp32 input, perhaps by truncation, so u_in is a whole tf32
 *    ulp, 2^-10, per input. Truncation is biased: on same-sign data the
 *    errors add up instead of cancelling, so this term is not
 *    discounted: 2 * u_in * (1 + sigma);
 *  - output rounding, once per element: u_out (fp64 2^-53, fp32 and
 *    tf32 2^-24, fp16 2^-11, bf16 2^-8).
 * The factor 2 on the first two and 4 on the last are the margin. A
 * simulation with sequential fp32 sums (worse than cuBLAS's blocked
 * ones) and truncated tf32 inputs stayed under a fifth of this for
 * random, same-sign and cancelling data, K from 16 to 16384.
 */
static double tolerance(int dtype, uint32_t k, double sigma)
{
	double u_acc = dtype == GM_FP64 ? 0x1p-53 : 0x1p-24;
	double u_in = dtype == GM_TF32 ? 0x1p-10 : 0;
	double u_out = dtype == GM_FP16	  ? 0x1p-11
		       : dtype == GM_BF16 ? 0x1p-8
					  : u_acc;

	return 2 * (2 * u_in + u_acc * sqrt(k)) * (1 + sigma) + 4 * u_out;
}

int gm_verify_job(const gemmd_job *j, double *rel, double *tol)
{
	struct sums s = {0, 0, 0};
	double *opa = NULL, *opbt = NULL;
	double norm, sigma;
	int rv = op_rows(j, &opa, &opbt);

	if (rv == GM_OK)
		reference(j, opa, opbt, &s);
	free(opa);
	free(opbt);
	if (rv != GM_OK)
		return rv;
	/* An all-zero reference leaves absolute error as the measure. */
	norm = s.ref > 0 ? sqrtl(s.ref) : 1;
	*rel = (double)(sqrtl(s.err) / norm);
	sigma = (double)(sqrtl(s.terms) / norm);
	*tol = tolerance(j->dtype, j->k, sigma);
	return GM_OK;
}
