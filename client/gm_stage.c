#include "gm_stage.h"

int gm_stage_new(gm_daemon *dm, uint64_t bytes, struct gm_stage **out)
{
	(void)dm;
	(void)bytes;
	*out = NULL;
	return GM_OK;
}
void gm_stage_shutdown(struct gm_stage *st)
{
	(void)st;
}
void gm_stage_free(struct gm_stage *st)
{
	(void)st;
}
bool gm_stage_wants(const gm_daemon *dm, const gm_call *k, const gm_job_desc *d)
{
	(void)dm;
	(void)k;
	(void)d;
	return false;
}
int gm_stage_submit(gm_daemon *dm, gm_call *k, const gm_job_desc *d,
		    const gm_batch *b, gm_todo *t)
{
	(void)dm;
	(void)k;
	(void)d;
	(void)b;
	(void)t;
	return GM_EINTERNAL;
}
void gm_stage_replied(gm_part *p, uint32_t index, const gm_reply_job *r,
		      gm_todo *t)
{
	(void)p;
	(void)index;
	(void)r;
	(void)t;
}
void gm_stage_part_over(gm_part *p, gm_todo *t)
{
	(void)p;
	(void)t;
}
void gm_stage_call_end(gm_call *k, gm_todo *t)
{
	(void)k;
	(void)t;
}
