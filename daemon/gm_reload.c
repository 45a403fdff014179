/*
 * gm_reload.c - SIGHUP's reload and what the loop derives from its
 * configuration; see gm_reload.h.
 *
 * The keys that changed are logged after the new values are in force,
 * so that a new log level already filters the lines that report it.
 */
#include "gm_reload.h"

#include <stdio.h>
#include <string.h>

#include "gm_log.h"

/* The most changed keys reported one by one, and how much of a value a
 * line shows (an allow-list may be long). */
#define MAX_CHANGES 64
#define VALUE_CHARS 96

typedef struct change {
	const char *key; /* the config table's, static */
	int taken;
	char was[VALUE_CHARS], now[VALUE_CHARS];
} change;

typedef struct changes {
	change v[MAX_CHANGES];
	unsigned n, taken, kept;
} changes;

void gm_reload_derive(gm_loop *l)
{
	const gm_config *cfg = l->cfg;

	gm_log_level = cfg->log_level;
	l->lim = (gm_limits){.max_jobs = cfg->max_jobs,
			     .max_dim = cfg->max_dim,
			     .max_job_bytes = cfg->max_message_bytes,
			     .max_frame = cfg->max_message_bytes,
			     .max_ctrl = cfg->max_ctrl_bytes};
	gm_sched_set_limits(l->sched, cfg->queue_depth_prio);
}

/* A value as a log line shows it: cut with "..." when long. */
static void show(char *out, const char *value)
{
	size_t len = strlen(value);

	if (len < VALUE_CHARS) {
		memcpy(out, value, len + 1);
		return;
	}
	memcpy(out, value, VALUE_CHARS - 4);
	memcpy(out + VALUE_CHARS - 4, "...", 4);
}

static void on_change(void *arg, const char *key, bool taken, const char *was,
		      const char *now)
{
	changes *ch = arg;
	change *c;

	if (taken)
		ch->taken++;
	else
		ch->kept++;
	if (ch->n == MAX_CHANGES)
		return;
	c = &ch->v[ch->n++];
	c->key = key;
	c->taken = taken;
	show(c->was, was);
	show(c->now, now);
}

static void report(const changes *ch)
{
	for (unsigned i = 0; i < ch->n; i++) {
		const change *c = &ch->v[i];

		if (c->taken)
			GM_LOG(GM_LOG_INFO, "reload: %s %s -> %s", c->key,
			       c->was, c->now);
		else
			GM_LOG(GM_LOG_WARN,
			       "reload: %s %s -> %s needs a restart; %s stays "
			       "in use",
			       c->key, c->was, c->now, c->was);
	}
	GM_LOG(GM_LOG_INFO,
	       "SIGHUP: configuration reloaded: %u key(s) taken, %u need a "
	       "restart",
	       ch->taken, ch->kept);
}

void gm_reload_run(gm_loop *l)
{
	static changes ch; /* a few KiB: off the stack */
	char msg[512];
	gm_config next;
	int rv;

	gm_config_defaults(&next);
	if ((rv = l->reread(&next, l->reread_arg, msg, sizeof(msg))) != GM_OK) {
		GM_LOG(GM_LOG_ERROR,
		       "SIGHUP: configuration not reloaded, the running one "
		       "kept: %s",
		       msg);
		gm_config_free(&next);
		return;
	}
	memset(&ch, 0, sizeof(ch));
	rv = gm_config_reload(l->cfg_own, &next, on_change, &ch);
	gm_config_free(&next);
	gm_reload_derive(l);
	report(&ch);
	if (rv != GM_OK)
		GM_LOG(GM_LOG_ERROR,
		       "SIGHUP: %s: keys after the last one reported kept "
		       "their value",
		       gm_strerror(rv));
}
