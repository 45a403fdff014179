/*
 * gm_workers.h - private to the client library: a few threads that run
 * tasks from one queue, for what must not run on an nng thread or under
 * the client's lock: copying staged operands and results (gm_stage.h),
 * making and releasing the staging region, which waits on the daemon.
 * Made on first use. Tasks run in order, urgent ones first.
 */
#ifndef GM_WORKERS_H
#define GM_WORKERS_H

#include <stdbool.h>

typedef struct gm_workers gm_workers;

/* A task, embedded in what it works on; fn runs once per push, on one of
 * the threads, with no lock held. */
typedef struct gm_task {
	void (*fn)(struct gm_task *task);
	struct gm_task *next;
} gm_task;

/* Starts n threads (at least one). GM_OK or GM_ENOMEM. */
int gm_workers_new(unsigned n, gm_workers **out);

/* Queues task; urgent ones go before the others. Any thread. */
void gm_workers_push(gm_workers *w, gm_task *task, bool urgent);

/* Runs every task queued, then stops the threads and frees w. Not from
 * a task. NULL is fine. */
void gm_workers_free(gm_workers *w);

#endif
