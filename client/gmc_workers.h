/*
 * gmc_workers.h - private to the client library: a few threads that run
 * tasks from one queue, for what must not run on an nng thread or under
 * the client's lock: copying staged operands and results (gmc_stage.h),
 * making and releasing the staging region, which waits on the daemon.
 * Made on first use. Tasks run in order, urgent ones first.
 */
#ifndef GMC_WORKERS_H
#define GMC_WORKERS_H

#include <stdbool.h>

typedef struct gmc_workers gmc_workers;

/* A task, embedded in what it works on; fn runs once per push, on one of
 * the threads, with no lock held. */
typedef struct gmc_task {
	void (*fn)(struct gmc_task *task);
	struct gmc_task *next;
} gmc_task;

/* Starts n threads (at least one). GM_OK or GM_ENOMEM. */
int gmc_workers_new(unsigned n, gmc_workers **out);

/* Queues task; urgent ones go before the others. Any thread. */
void gmc_workers_push(gmc_workers *w, gmc_task *task, bool urgent);

/* Runs every task queued, then stops the threads and frees w. Not from
 * a task. NULL is fine. */
void gmc_workers_free(gmc_workers *w);

#endif
