/*
 * plugin_stale.c - CUDA engine plugins that gemmd's loader must refuse,
 * for test_engine_load.c: built once per kind, each with what a plugin
 * of another gemmd would carry (STALE_ABI: another interface number;
 * STALE_LAYOUT: other structure sizes; STALE_VERSION: another version)
 * or, with NO_ENTRY, without the entry symbol; plugin_needs_missing.so
 * is a good table that needs a library no file provides. Every function of the
 * table aborts: the loader must refuse the table before it calls any.
 */
#include <stdlib.h>

#include "gm_engine_plugin.h"

#ifndef STALE_ABI
#define STALE_ABI GM_ENGINE_PLUGIN_ABI
#endif
#ifndef STALE_LAYOUT
#define STALE_LAYOUT 0
#endif
#ifndef NO_ENTRY
#define NO_ENTRY 0
#endif

#if NEEDS_MISSING
/* Called, so that the link keeps the library (plugin_missing.c). */
int gm_missing_stand_in(void);
int gm_stale_uses(void);
int gm_stale_uses(void)
{
	return gm_missing_stand_in();
}
#endif

static int probe(char *msg, size_t msglen)
{
	abort();
}

static int open_engine(const gm_engine_config *cfg, gm_engine_done_fn done,
		       void *arg, gm_engine **out, char *msg, size_t msglen)
{
	abort();
}

static int memory(int dev, size_t *free_bytes, size_t *total_bytes)
{
	abort();
}

static const struct gm_engine_plugin table = {
    .abi = STALE_ABI,
    .layout = GM_ENGINE_PLUGIN_LAYOUT + STALE_LAYOUT,
    .version = STALE_VERSION,
    .probe = probe,
    .open = open_engine,
    .memory = memory,
};

#if NO_ENTRY
const struct gm_engine_plugin *gm_engine_plugin_other(void);
const struct gm_engine_plugin *gm_engine_plugin_other(void)
#else
const struct gm_engine_plugin *gm_engine_plugin_entry(void)
#endif
{
	return &table;
}
