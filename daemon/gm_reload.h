/*
 * gm_reload.h - what the loop derives from its configuration, and
 * SIGHUP's reload of it.
 *
 * A reload builds the configuration again from where the running one
 * came from (main's file and command line), takes from it every key
 * that may change while gemmd runs (the config table's reloadable rows:
 * log level, allow-lists, request limits, connection caps and deadlines,
 * per-priority queue caps, region quotas, HTTP limits), derives again
 * what the loop keeps beside the configuration, and logs each key that
 * changed: taken, or needing a restart (the value in use stays). A
 * configuration that does not load or check is logged and the running
 * one kept whole. Connections already open keep what they were let in
 * under; caps and deadlines apply from their next check.
 */
#ifndef GM_RELOAD_H
#define GM_RELOAD_H

#include "gm_loop.h"

/* Derives from l->cfg what the loop keeps beside it: the request limits
 * (l->lim), the log level and the queue's per-priority caps. At start,
 * once the scheduler is open, and after each reload. Loop thread. */
void gm_reload_derive(gm_loop *l);

/* SIGHUP: reads the configuration again with l->reread and takes what
 * may change into l->cfg_own, as above. Blocks while the file is read
 * (a regular file of at most 1 MiB). Loop thread. */
void gm_reload_run(gm_loop *l);

#endif
