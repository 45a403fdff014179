/*
 * gm_fairq.h - the waiting jobs of a scheduler, fair between
 * principals in work, not in jobs nor in connections.
 *
 * Per priority, every principal with jobs waiting (gm_sched_request.
 * principal; a request that names none is its connection's own) has one
 * FIFO (a flow), its jobs in the order they were pushed, whatever
 * connection they came on. Each flow carries a tag: the work
 * (gm_fairq_work) its principal has had started at that priority, on a
 * clock shared by the priority's flows, and the job whose turn it is
 * heads the flow of the least tag (the older tag first on a tie); taking
 * it adds its work to the flow's tag. That is start-time fair queueing:
 * principals that keep jobs waiting get equal work started, whatever the
 * size of their jobs, so one that sends a few huge jobs does not get
 * more than its share over one that sends many small ones, and with jobs
 * of one size they take turns, one job each, as a ring would. Opening
 * more connections gets a principal no more turns: they all feed its one
 * flow. A flow new to the queue starts at the tag of the last job taken
 * at its priority: it is served after the flows that have had no more
 * than that, and gets no credit for the time it had nothing waiting. A
 * job peeked but not taken (it does not fit yet) keeps its flow's tag
 * and so its turn.
 *
 * Flows come from a pool made at creation, one per job the queue may
 * hold (each flow holds a job at least), so nothing here allocates after
 * gm_fairq_create. Jobs are chained through gm_sched_job.qnext. Loop
 * thread only, like the scheduler that owns it.
 */
#ifndef GM_FAIRQ_H
#define GM_FAIRQ_H

#include <stdint.h>

#include "gm_sched_job.h"

typedef struct gm_fairq gm_fairq;

/* What a job's work counts besides its 2mnk FLOPs, in FLOPs: each host
 * byte it moves (A, B, C and result: gm_sched_job.bytes) as 4, since
 * host memory moves about 10 GB/s where BLAS does 40-100 GFLOP/s on a
 * few cores; and each job 2^20 more, about what its wake-ups and reply
 * cost (tens of us) at that rate, so that a flood of tiny jobs is not
 * free. */
#define GM_FAIRQ_BYTE_WORK 4.0
#define GM_FAIRQ_JOB_WORK  1048576.0

/* The work of j as the queue counts it (see above). */
double gm_fairq_work(const gm_sched_job *j);

/* Makes a queue for at most cap jobs. GM_ENOMEM. */
int gm_fairq_create(unsigned cap, gm_fairq **out);
void gm_fairq_destroy(gm_fairq *q);

/* Appends j to the flow of its request's principal (its connection when
 * it names none) at its priority. The queue must hold fewer than cap
 * jobs. */
void gm_fairq_push(gm_fairq *q, gm_sched_job *j);

/* The job whose turn it is at priority prio, or NULL when none waits. */
gm_sched_job *gm_fairq_peek(const gm_fairq *q, unsigned prio);

/* Removes the job gm_fairq_peek(q, prio) returned, adds its work to its
 * flow's tag, and returns it. */
gm_sched_job *gm_fairq_take(gm_fairq *q, unsigned prio);

/* Sets the flow whose turn it is at prio aside (its job cannot start
 * yet), so that gm_fairq_peek shows the next one's; gm_fairq_unhold puts
 * every flow set aside back where its tag places it. The caller unholds
 * before it lets go of the queue: gm_fairq_remove_if sees no flow set
 * aside. */
void gm_fairq_hold(gm_fairq *q, unsigned prio);
void gm_fairq_unhold(gm_fairq *q);

/* Removes j from wherever it waits, its flow's tag unchanged (it was
 * not served). Takes time in the length of j's flow. */
void gm_fairq_remove(gm_fairq *q, gm_sched_job *j);

/* Removes every job for which drop(j, arg) is true, keeping the order of
 * the others and the tags, and returns them chained through qnext
 * (NULL: none). drop must not touch the queue. */
gm_sched_job *gm_fairq_remove_if(gm_fairq *q,
				 int (*drop)(gm_sched_job *j, void *arg),
				 void *arg);

/* Jobs waiting at priority prio, and in all. */
uint64_t gm_fairq_count(const gm_fairq *q, unsigned prio);
uint64_t gm_fairq_total(const gm_fairq *q);

#endif
