/*
 * gm_cuda_lt.cu - cuBLASLt with one algorithm per shape; see
 * gm_cuda_lt.h.
 *
 * The table is open-addressed over a window of PROBE slots from the one
 * a shape's hash names: a shape takes the first empty slot of its
 * window, or, with none, the slot its hash names, from whatever shape
 * was there. Its descriptors are initialised in the slot; only the batch
 * count changes from call to call.
 */
#include "gm_cuda_lt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "gm_cuda_err.h"

#define TABLE 4096 /* shapes remembered; a power of two */
#define PROBE 8	   /* slots a shape may take */

/* What the algorithm is chosen for. Built zeroed, so that memcmp sees
 * no stray padding. */
struct key {
	int32_t data, compute, scale, ta, tb;
	uint32_t m, n, k;
	uint64_t lda, ldb, ldc;
	int64_t stride;
};

enum { EMPTY, ALGO, NO_ALGO };

struct entry {
	struct key key;
	int state;
	cublasLtMatmulDescOpaque_t desc;
	cublasLtMatrixLayoutOpaque_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
};

struct gm_cuda_lt {
	cublasLtHandle_t h;
	size_t ws_bytes;
	cublasLtMatmulPreferenceOpaque_t pref;
	struct entry *table;
};

static int init(struct gm_cuda_lt *lt, size_t ws_bytes, char *msg,
		size_t msglen)
{
	uint64_t ws = ws_bytes;
	uint32_t no_split = CUBLASLT_REDUCTION_SCHEME_NONE;

	lt->ws_bytes = ws_bytes;
	lt->table = (struct entry *)calloc(TABLE, sizeof(struct entry));
	if (lt->table == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	GM_CUBLAS_TRY(cublasLtCreate(&lt->h), msg, msglen);
	GM_CUBLAS_TRY(cublasLtMatmulPreferenceInit(&lt->pref), msg, msglen);
	GM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
			  &lt->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
			  &ws, sizeof(ws)),
		      msg, msglen);
	/* Each result element summed along K by one kernel, never split
	 * over several and added up after: nothing in the sum's order then
	 * depends on how many problems share the call. */
	GM_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
			  &lt->pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
			  &no_split, sizeof(no_split)),
		      msg, msglen);
	return GM_OK;
}

int gm_cuda_lt_open(size_t ws_bytes, struct gm_cuda_lt **out, char *msg,
		    size_t msglen)
{
	struct gm_cuda_lt *lt;
	int rv;

	*out = NULL;
	if ((lt = (struct gm_cuda_lt *)calloc(1, sizeof(*lt))) == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	if ((rv = init(lt, ws_bytes, msg, msglen)) != GM_OK) {
		gm_cuda_lt_close(lt);
		return rv;
	}
	*out = lt;
	return GM_OK;
}

void gm_cuda_lt_close(struct gm_cuda_lt *lt)
{
	if (lt == NULL)
		return;
	if (lt->h != NULL)
		cublasLtDestroy(lt->h);
	free(lt->table);
	free(lt);
}

static struct key key_of(const gm_cuda_lt_problem *p)
{
	struct key k;

	memset(&k, 0, sizeof(k));
	k.data = p->data;
	k.compute = p->compute;
	k.scale = p->scale;
	k.ta = p->ta;
	k.tb = p->tb;
	k.m = p->m;
	k.n = p->n;
	k.k = p->k;
	k.lda = p->lda;
	k.ldb = p->ldb;
	k.ldc = p->ldc;
	k.stride = p->stride;
	return k;
}

static unsigned slot_of(const struct key *k)
{
	const unsigned char *b = (const unsigned char *)k;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return (unsigned)(h ^ (h >> 32)) & (TABLE - 1);
}

static int set_count(cublasLtMatrixLayoutOpaque_t *l, int32_t count, char *msg,
		     size_t msglen)
{
	GM_CUBLAS_TRY(
	    cublasLtMatrixLayoutSetAttribute(
		l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
	    msg, msglen);
	return GM_OK;
}

/* One stored matrix rows x cols, leading dimension ld, in a batch. */
static int layout(cublasLtMatrixLayoutOpaque_t *l, const struct key *k,
		  uint64_t rows, uint64_t cols, uint64_t ld, char *msg,
		  size_t msglen)
{
	int64_t stride = k->stride;

	GM_CUBLAS_TRY(cublasLtMatrixLayoutInit(l, (cudaDataType)k->data, rows,
					       cols, (int64_t)ld),
		      msg, msglen);
	GM_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(
			  l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
			  &stride, sizeof(stride)),
		      msg, msglen);
	return set_count(l, GM_CUDA_LT_COUNT, msg, msglen);
}

static int describe(struct entry *e, const struct key *k, char *msg,
		    size_t msglen)
{
	cublasOperation_t oa = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t ob = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	int rv;

	GM_CUBLAS_TRY(cublasLtMatmulDescInit(&e->desc,
					     (cublasComputeType_t)k->compute,
					     (cudaDataType)k->scale),
		      msg, msglen);
	GM_CUBLAS_TRY(
	    cublasLtMatmulDescSetAttribute(
		&e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof(oa)),
	    msg, msglen);
	GM_CUBLAS_TRY(
	    cublasLtMatmulDescSetAttribute(
		&e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof(ob)),
	    msg, msglen);
	/* op(A) is m x k and op(B) k x n: stored transposed when flagged. */
	if ((rv = layout(&e->la, k, k->ta ? k->k : k->m, k->ta ? k->m : k->k,
			 k->lda, msg, msglen)) != GM_OK ||
	    (rv = layout(&e->lb, k, k->tb ? k->n : k->k, k->tb ? k->k : k->n,
			 k->ldb, msg, msglen)) != GM_OK)
		return rv;
	return layout(&e->lc, k, k->m, k->n, k->ldc, msg, msglen);
}

/* Fills slot e for shape k: its descriptors and cuBLASLt's choice for a
 * batch of GM_CUDA_LT_COUNT. */
static int choose(struct gm_cuda_lt *lt, struct entry *e, const struct key *k,
		  char *msg, size_t msglen)
{
	cublasLtMatmulHeuristicResult_t r;
	cublasStatus_t s;
	int n = 0, rv;

	e->state = EMPTY;
	e->key = *k;
	if ((rv = describe(e, k, msg, msglen)) != GM_OK)
		return rv;
	memset(&r, 0, sizeof(r));
	s = cublasLtMatmulAlgoGetHeuristic(lt->h, &e->desc, &e->la, &e->lb,
					   &e->lc, &e->lc, &lt->pref, 1, &r,
					   &n);
	if (s == CUBLAS_STATUS_NOT_SUPPORTED ||
	    (s == CUBLAS_STATUS_SUCCESS && (n == 0 || r.state != 0))) {
		e->state = NO_ALGO;
		return GM_OK;
	}
	GM_CUBLAS_TRY(s, msg, msglen);
	e->algo = r.algo;
	e->state = ALGO;
	return GM_OK;
}

/* The slot of shape k: where it is, else where it goes. */
static struct entry *find(struct gm_cuda_lt *lt, const struct key *k)
{
	unsigned at = slot_of(k), i;
	struct entry *empty = NULL;

	for (i = 0; i < PROBE; i++) {
		struct entry *e = &lt->table[(at + i) & (TABLE - 1)];

		if (e->state == EMPTY) {
			if (empty == NULL)
				empty = e;
		} else if (memcmp(&e->key, k, sizeof(*k)) == 0) {
			return e;
		}
	}
	return empty != NULL ? empty : &lt->table[at];
}

int gm_cuda_lt_matmul(struct gm_cuda_lt *lt, cudaStream_t stream, void *ws,
		      const gm_cuda_lt_problem *p, char *msg, size_t msglen)
{
	struct key k = key_of(p);
	struct entry *e = find(lt, &k);
	int rv;

	if (p->count == 0 || p->count > GM_CUDA_LT_COUNT) {
		snprintf(msg, msglen, "batch of %u problems", p->count);
		return GM_EINVAL;
	}
	if ((e->state == EMPTY || memcmp(&e->key, &k, sizeof(k)) != 0) &&
	    (rv = choose(lt, e, &k, msg, msglen)) != GM_OK)
		return rv;
	if (e->state == NO_ALGO)
		return GM_EUNSUPPORTED;
	if ((rv = set_count(&e->la, (int32_t)p->count, msg, msglen)) != 0 ||
	    (rv = set_count(&e->lb, (int32_t)p->count, msg, msglen)) != 0 ||
	    (rv = set_count(&e->lc, (int32_t)p->count, msg, msglen)) != 0)
		return rv;
	GM_CUBLAS_TRY(cublasLtMatmul(lt->h, &e->desc, p->alpha, p->a, &e->la,
				     p->b, &e->lb, p->beta, p->c, &e->lc, p->c,
				     &e->lc, &e->algo, ws, lt->ws_bytes,
				     stream),
		      msg, msglen);
	return GM_OK;
}
