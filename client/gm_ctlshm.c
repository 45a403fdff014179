/*
 * gm_ctlshm.c - gemmctl's submit through a shared-memory region: one
 * region sized for the job, A, B and C copied in, the result written
 * there by the daemon and copied out, the region released.
 */
#include "gm_ctlshm.h"

#include <string.h>

#include "gm_proto.h"

#define ALIGN 256 /* what DMA likes */

bool gm_ctlshm_usable(const char *url)
{
	return url != NULL && strncmp(url, "ipc://", 6) == 0;
}

static uint64_t up(uint64_t n)
{
	return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

int gm_ctlshm_submit(gemmd_client *cl, gemmd_job *j,
		     const gemmd_submit_opts *opts, int timeout_ms)
{
	uint64_t es = gm_dtype_size(j->dtype);
	uint64_t na = (uint64_t)j->m * j->k * es,
		 nb = (uint64_t)j->k * j->n * es;
	uint64_t nc = (uint64_t)j->m * j->n * es;
	uint64_t ob = up(na), oc = ob + up(nb), oo = oc + (j->c ? up(nc) : 0);
	gemmd_job k = *j;
	gemmd_region *r;
	uint8_t *base;
	int rv;

	if (es == 0 || j->a == NULL || j->b == NULL || j->out == NULL)
		return gemmd_submit(cl, j, 1, opts, timeout_ms);
	if ((rv = gemmd_region_create(cl, oo + nc, &r)) != GM_OK)
		return gemmd_submit(cl, j, 1, opts, timeout_ms);
	base = gemmd_region_ptr(r);
	memcpy(base, j->a, na);
	memcpy(base + ob, j->b, nb);
	if (j->c != NULL)
		memcpy(base + oc, j->c, nc);
	k.a = k.b = k.c = k.out = NULL;
	k.a_ref = (gemmd_region_ref){r, 0};
	k.b_ref = (gemmd_region_ref){r, ob};
	k.c_ref = (gemmd_region_ref){j->c != NULL ? r : NULL, j->c ? oc : 0};
	k.out_ref = (gemmd_region_ref){r, oo};
	rv = gemmd_submit(cl, &k, 1, opts, timeout_ms);
	j->status = k.status;
	memcpy(j->message, k.message, sizeof(j->message));
	j->t = k.t;
	if (rv == GM_OK && k.status == GM_OK)
		memcpy(j->out, base + oo, nc);
	gemmd_region_release(r);
	return rv;
}
