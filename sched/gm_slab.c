/*
 * gm_slab.c - the layout of a request's slab; see gm_slab.h.
 */
#include "gm_slab.h"

void gm_slab_begin(gm_slab_cursor *c, uint64_t payload)
{
	c->at = payload;
}

uint64_t gm_slab_next(gm_slab_cursor *c, uint64_t out)
{
	uint64_t head = c->at;

	if (out != 0) {
		uint64_t res = head + GM_SLAB_REPLY_HEAD;

		/* Pad before the reply, never between its parts. */
		res = (res + GM_SLAB_OUT_ALIGN - 1) &
		      ~(uint64_t)(GM_SLAB_OUT_ALIGN - 1);
		head = res - GM_SLAB_REPLY_HEAD;
	}
	c->at = head + GM_SLAB_REPLY_HEAD + out;
	return head;
}

uint64_t gm_slab_size(const gm_slab_cursor *c)
{
	return c->at;
}
