/*
 * gm_slab.c - the layout of a job's slab; see gm_slab.h.
 */
#include "gm_slab.h"

#include <stddef.h>

static int inline_c(const gm_job_sizes *z, unsigned placed)
{
	return z->c != 0 && !(placed & GM_PLACED(GM_OPND_C));
}

uint64_t gm_slab_bytes(const gm_job_desc *d, unsigned placed)
{
	uint64_t n = 0;
	gm_job_sizes z;

	gm_job_sizes_of(d, &z);
	for (int op = GM_OPND_A; op < GM_OPND_OUT; op++)
		if (!(placed & GM_PLACED(op)))
			n += gm_operand_bytes(&z, op);
	if (!(placed & GM_PLACED(GM_OPND_OUT)) && !inline_c(&z, placed))
		n += z.out;
	return n;
}

void gm_slab_place(gm_job *j, unsigned placed, void *slab)
{
	void **at[GM_OPND_OUT] = {&j->a, &j->b, &j->c};
	uint8_t *p = slab;
	gm_job_sizes z;

	gm_job_sizes_of(&j->d, &z);
	for (int op = GM_OPND_A; op < GM_OPND_OUT; op++) {
		uint64_t len = gm_operand_bytes(&z, op);

		if (placed & GM_PLACED(op))
			continue;
		*at[op] = NULL;
		if (len != 0) {
			*at[op] = p;
			p += len;
		}
	}
	j->copy_to = placed != 0 && p != (uint8_t *)slab ? slab : NULL;
	if (!(placed & GM_PLACED(GM_OPND_OUT)))
		j->out = inline_c(&z, placed) ? j->c : p;
}
