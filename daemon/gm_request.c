/*
 * gm_request.c - a GEMM request's record on the loop thread: its jobs
 * filled from the request and pointed at their places in the reply or
 * in regions, and its one reply built when the last job is back; see
 * gm_request.h.
 */
#include "gm_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_log.h"
#include "gm_reply.h"
#include "gm_slab.h"

uint64_t gm_request_reply_size(const uint8_t *body, size_t len)
{
	uint64_t size = GM_HDR_SIZE;
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc jd;
	gm_job_sizes z;

	gm_proto_jobs_begin(body, len, &it);
	while (gm_proto_jobs_next_ops(&it, &jd, &ops) == 0) {
		gm_job_sizes_of(&jd, &z);
		size += GM_REPLY_JOB_SIZE +
			(gm_ref_in_region(ops.ref, GM_OPND_OUT) ? 0 : z.out);
	}
	return size;
}

/* The configured kernel, unless it cannot run dtype: the tiled kernel
 * is fp64/fp32 only, so other dtypes fall back to cuBLAS. */
static uint8_t default_kernel(const gm_loop *l, int dtype)
{
	int k = l->cfg->engine.kernel;

	if (k == GM_KERNEL_TILED && dtype != GM_FP64 && dtype != GM_FP32)
		k = GM_KERNEL_CUBLAS;
	return (uint8_t)k;
}

uint64_t gm_request_fill_job(const gm_loop *l, gm_job *j, const gm_job_desc *jd,
			     const uint8_t *a, uint8_t *rec)
{
	gm_job_sizes z;

	j->d = *jd;
	if (j->d.kernel == GM_KERNEL_DEFAULT)
		j->d.kernel = default_kernel(l, j->d.dtype);
	gm_job_sizes_of(&j->d, &z);
	j->copy_in = a;
	j->copy_in_bytes = z.a + z.b + z.c;
	j->copy_out = rec + GM_REPLY_JOB_SIZE;
	return GM_REPLY_JOB_SIZE + z.out;
}

/* A job naming regions (checked by gm_regions_check_req): points those
 * operands into them, holding each in h, and stages only the inline
 * ones. Returns the reply bytes the result no longer needs: all of them
 * when it goes to a region. */
static uint64_t place_regions(gm_loop *l, gm_sched_job *j,
			      const gm_job_operands *ops, gm_region_holds *h)
{
	gm_job_sizes z;

	j->placed = gm_regions_bind(l->regions, ops, &j->job, h);
	j->job.copy_in = ops->inline_bytes != 0 ? ops->inline_start : NULL;
	j->job.copy_in_bytes = ops->inline_bytes;
	if (!(j->placed & GM_PLACED(GM_OPND_OUT)))
		return 0;
	j->job.copy_out = NULL;
	gm_job_sizes_of(&j->job.d, &z);
	return z.out;
}

void gm_request_fill_jobs(gm_loop *l, gm_sched_request *sr, const uint8_t *body,
			  size_t len, uint8_t *rep, gm_region_holds *holds)
{
	uint64_t off = GM_HDR_SIZE;
	gm_job_operands ops;
	gm_job_iter it;
	gm_job_desc jd;

	gm_proto_jobs_begin(body, len, &it);
	for (uint32_t i = 0; i < sr->njobs; i++) {
		gm_proto_jobs_next_ops(&it, &jd, &ops);
		off += gm_request_fill_job(l, &sr->jobs[i].job, &jd,
					   ops.inline_start, rep + off);
		if (jd.flags & GM_JOB_REGIONS)
			off -= place_regions(l, &sr->jobs[i], &ops, holds);
	}
}

void gm_request_no_room(const gm_loop *l, int rv, const gm_batch *b,
			uint32_t njobs, char *text, size_t len)
{
	unsigned lim = l->cfg->queue_depth_prio[b->priority];

	if (rv != GM_EBUSY)
		snprintf(text, len, "gemmd is shutting down");
	else if (lim != 0 &&
		 gm_sched_queued_prio(l->sched, b->priority) + njobs > lim)
		snprintf(text, len,
			 "priority %u queue full (%u jobs): try again later",
			 b->priority, lim);
	else
		snprintf(text, len, "queue full: try again later");
}

/* Writes each job's reply record, logging the jobs that failed; a failed
 * job carries no result, so later results move down over the room it
 * left. */
static size_t build_reply(gm_sched_request *sr, uint8_t *rep)
{
	size_t off = GM_HDR_SIZE;

	gm_proto_put_hdr(rep, GM_MSG_GEMM_REPLY, sr->id, sr->njobs);
	for (uint32_t i = 0; i < sr->njobs; i++) {
		gm_sched_job *j = &sr->jobs[i];
		gm_reply_job rj = {.status = (uint32_t)j->job.status,
				   .dtype = j->job.d.dtype,
				   .layout = j->job.d.layout,
				   .m = j->job.d.m,
				   .n = j->job.d.n,
				   .t = j->t};
		gm_job_sizes z;

		gm_job_sizes_of(&j->job.d, &z);
		if (j->job.status != 0)
			GM_LOGJ(GM_LOG_DEBUG, sr->id, i, "failed: %s: %s",
				gm_errname(j->job.status), j->job.msg);
		if (j->job.status == 0 && j->job.copy_out != NULL) {
			rj.result_bytes = z.out;
			/* Usually already in place: then no pass over it. */
			if (rep + off + GM_REPLY_JOB_SIZE != j->job.copy_out)
				memmove(rep + off + GM_REPLY_JOB_SIZE,
					j->job.copy_out, z.out);
		} else if (j->job.status != 0) { /* 0: in its region */
			snprintf(rj.message, sizeof(rj.message), "%s",
				 j->job.msg[0] ? j->job.msg
					       : gm_strerror(j->job.status));
		}
		gm_proto_put_reply_job(rep + off, &rj);
		off += GM_REPLY_JOB_SIZE + rj.result_bytes;
	}
	return off;
}

void gm_request_done(gm_sched_request *sr, void *arg)
{
	gm_loop *l = arg;
	gm_request *rq = sr->user;
	size_t len = nng_msg_len(rq->rep);
	size_t used = build_reply(sr, nng_msg_body(rq->rep));

	nng_msg_chop(rq->rep, len - used);
	gm_regions_holds_drop(l->regions, rq->holds);
	if (rq->group != NULL) {
		/* Detached: the table keeps the reply for a wait. */
		gm_detach_done(l->detach, rq->detach_id, rq->rep);
		gm_sched_free_request(sr);
		gm_request_group_release(rq->group);
		return;
	}
	gm_reply_send(l, rq->w, rq->rep);
	nng_msg_free(rq->req);
	free(rq);
	gm_sched_free_request(sr);
}

void gm_request_group_release(gm_request_group *g)
{
	if (--g->left != 0)
		return;
	nng_msg_free(g->req);
	free(g);
}
