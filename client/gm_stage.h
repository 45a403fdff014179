/*
 * gm_stage.h - private to the client library: plain pointers over
 * ipc:// staged through a shared-memory region the library owns.
 * (placeholder: staging off)
 */
#ifndef GM_STAGE_H
#define GM_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "gm_call.h"
#include "gm_client.h"

struct gm_stage;

int gm_stage_new(gm_daemon *dm, uint64_t bytes, struct gm_stage **out);
void gm_stage_shutdown(struct gm_stage *st);
void gm_stage_free(struct gm_stage *st);
bool gm_stage_wants(const gm_daemon *dm, const gm_call *k,
		    const gm_job_desc *d);
int gm_stage_submit(gm_daemon *dm, gm_call *k, const gm_job_desc *d,
		    const gm_batch *b, gm_todo *t);
void gm_stage_replied(gm_part *p, uint32_t index, const gm_reply_job *r,
		      gm_todo *t);
void gm_stage_part_over(gm_part *p, gm_todo *t);
void gm_stage_call_end(gm_call *k, gm_todo *t);

#endif
