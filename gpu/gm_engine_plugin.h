/*
 * gm_engine_plugin.h - the entry table of the CUDA engine's plugin.
 *
 * The CUDA engine is built into gemmd-cuda.so, a shared module that
 * links the CUDA runtime, cuBLAS and cuBLASLt; gemmd links none of them
 * and opens the plugin (gm_engine_load.c) only when the CUDA engine is
 * asked for, so that a CUDA-enabled gemmd still runs its CPU engine on a
 * machine with no CUDA at all. The plugin exports one function,
 * gm_engine_plugin_entry, which returns its table. The table and the
 * structures the two sides share (the engine's configuration, struct
 * gm_engine, its operations, gm_job) must be those gemmd was built with:
 * the loader refuses a plugin whose interface number, layout or version
 * differ (a stale plugin left installed by an older gemmd, say), before
 * it calls anything in it.
 *
 * Private to gpu/.
 */
#ifndef GM_ENGINE_PLUGIN_H
#define GM_ENGINE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "gm_engine_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised when the table's members change; the layout below catches the
 * shared structures' sizes without anyone remembering to. */
#define GM_ENGINE_PLUGIN_ABI 2

#define GM_ENGINE_PLUGIN_LAYOUT                         \
	((uint64_t)sizeof(gm_engine_config) |           \
	 (uint64_t)sizeof(struct gm_engine) << 16 |     \
	 (uint64_t)sizeof(struct gm_engine_ops) << 32 | \
	 (uint64_t)sizeof(gm_job) << 48)

#define GM_ENGINE_PLUGIN_SYMBOL "gm_engine_plugin_entry"

struct gm_engine_plugin {
	uint32_t abi;	     /* GM_ENGINE_PLUGIN_ABI; first, read first */
	uint64_t layout;     /* GM_ENGINE_PLUGIN_LAYOUT */
	const char *version; /* the gemmd version it was built as */
	/* Number of usable devices; 0 with msg (CUDA's own text) when
	 * there is none or the driver cannot be used. Any thread. */
	int (*probe)(char *msg, size_t msglen);
	/* gm_engine_cuda_open's contract (gm_engine.h). */
	int (*open)(const gm_engine_config *cfg, gm_engine_done_fn done,
		    void *arg, gm_engine **out, char *msg, size_t msglen);
	/* gm_engine_cuda_memory's contract (gm_engine.h). */
	int (*memory)(int dev, size_t *free_bytes, size_t *total_bytes);
};

typedef const struct gm_engine_plugin *(*gm_engine_plugin_entry_fn)(void);

/* The one symbol the plugin exports (gemmd-cuda.map). */
const struct gm_engine_plugin *gm_engine_plugin_entry(void);

#ifdef __cplusplus
}
#endif
#endif
