/*
 * gm_fairq.h - the waiting jobs of a scheduler, fair between
 * connections.
 *
 * Per priority, every connection with jobs waiting has its own FIFO (a
 * flow), and the flows of a priority form a ring that takes turns: the
 * job at the head of the flow whose turn it is goes first, then the turn
 * passes to the next flow. A connection that queues a thousand jobs
 * thus gets one job started for each one of every other connection at
 * that priority, while its own jobs keep their order. A flow new to the
 * ring gets its turn after those already in it. Flows come from a pool
 * made at creation, one per job the queue may hold (each flow holds a
 * job at least), so nothing here allocates after gm_fairq_create. Jobs
 * are chained through gm_sched_job.qnext. Loop thread only, like the
 * scheduler that owns it.
 */
#ifndef GM_FAIRQ_H
#define GM_FAIRQ_H

#include <stdint.h>

#include "gm_sched_job.h"

typedef struct gm_fairq gm_fairq;

/* Makes a queue for at most cap jobs. GM_ENOMEM. */
int gm_fairq_create(unsigned cap, gm_fairq **out);
void gm_fairq_destroy(gm_fairq *q);

/* Appends j to the flow of (j->req->conn, j->req->batch.priority). The
 * queue must hold fewer than cap jobs. */
void gm_fairq_push(gm_fairq *q, gm_sched_job *j);

/* The job whose turn it is at priority prio, or NULL when none waits. */
gm_sched_job *gm_fairq_peek(const gm_fairq *q, unsigned prio);

/* Removes the job gm_fairq_peek(q, prio) returned and passes the turn
 * to the next flow; returns it. */
gm_sched_job *gm_fairq_take(gm_fairq *q, unsigned prio);

/* Removes j from wherever it waits, leaving the turn where it is (on
 * the next flow if j's flow had it and is now empty). Takes time in the
 * length of j's flow. */
void gm_fairq_remove(gm_fairq *q, gm_sched_job *j);

/* Removes every job for which drop(j, arg) is true, keeping the order of
 * the others and the turns, and returns them chained through qnext
 * (NULL: none). drop must not touch the queue. */
gm_sched_job *gm_fairq_remove_if(gm_fairq *q,
				 int (*drop)(gm_sched_job *j, void *arg),
				 void *arg);

/* Jobs waiting at priority prio, and in all. */
uint64_t gm_fairq_count(const gm_fairq *q, unsigned prio);
uint64_t gm_fairq_total(const gm_fairq *q);

#endif
