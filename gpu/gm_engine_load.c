/*
 * gm_engine_load.c - finds, opens and checks the CUDA engine's plugin
 * (gm_engine_plugin.h), once per process, and forwards the CUDA
 * engine's constructors of gm_engine.h to it. In a gemmd built without
 * CUDA they say so, so that callers need no #ifdef of their own.
 *
 * The plugin is opened RTLD_NOW | RTLD_LOCAL: a CUDA library it cannot
 * find fails the dlopen here, with the library named, instead of a
 * later call; and its symbols stay its own.
 */
#include "gm_engine_plugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_error.h"

#if GEMMD_HAVE_CUDA

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct gm_engine_plugin *plugin; /* NULL: not loaded */
static char path[2 * PATH_MAX]; /* an exe's directory and a relative path */
static char why[3 * PATH_MAX];	/* why not, when plugin is NULL */

/* Whether the running program lies under the build tree (realpaths). */
static int in_build_tree(const char *exe)
{
	char root[PATH_MAX];
	size_t n;

	if (realpath(GM_BUILD_ROOT, root) == NULL)
		return 0;
	n = strlen(root);
	return strncmp(exe, root, n) == 0 && exe[n] == '/';
}

/* Where to look, in path: see gm_engine.h's constructors. */
static void find_path(void)
{
	const char *env = getenv("GEMMD_CUDA_PLUGIN");
	char exe[PATH_MAX];
	char *slash;

	if (env != NULL && env[0] != '\0') {
		snprintf(path, sizeof(path), "%s", env);
		return;
	}
	if (realpath("/proc/self/exe", exe) == NULL ||
	    (slash = strrchr(exe, '/')) == NULL) {
		snprintf(path, sizeof(path), "%s", GM_CUDA_PLUGIN_BUILT);
		return;
	}
	if (in_build_tree(exe)) {
		snprintf(path, sizeof(path), "%s", GM_CUDA_PLUGIN_BUILT);
		return;
	}
	if (GM_CUDA_PLUGIN_INSTALLED[0] == '/') {
		snprintf(path, sizeof(path), "%s", GM_CUDA_PLUGIN_INSTALLED);
		return;
	}
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/%s", exe, GM_CUDA_PLUGIN_INSTALLED);
	/* Said in messages: LIBDIR/gemmd/gemmd-cuda.so, not SBINDIR/../. */
	if (realpath(path, exe) != NULL)
		snprintf(path, sizeof(path), "%s", exe);
}

/* A plugin built from other sources than this gemmd may lay out the
 * structures both share differently: refused before any call. Past a
 * different interface number nothing else in the table can be read. */
static int check(const struct gm_engine_plugin *p)
{
	if (p == NULL) {
		snprintf(why, sizeof(why), "%s: no entry table", path);
		return 0;
	}
	if (p->abi != GM_ENGINE_PLUGIN_ABI) {
		snprintf(why, sizeof(why),
			 "%s: a stale plugin (interface %u; this gemmd's is "
			 "%u)",
			 path, (unsigned)p->abi, GM_ENGINE_PLUGIN_ABI);
		return 0;
	}
	if (p->layout != GM_ENGINE_PLUGIN_LAYOUT ||
	    strcmp(p->version, GM_ENGINE_VERSION) != 0) {
		snprintf(why, sizeof(why),
			 "%s: a stale plugin (gemmd %s, layout %#llx; this "
			 "gemmd is %s, layout %#llx)",
			 path, p->version, (unsigned long long)p->layout,
			 GM_ENGINE_VERSION,
			 (unsigned long long)GM_ENGINE_PLUGIN_LAYOUT);
		return 0;
	}
	return 1;
}

static void load(void)
{
	gm_engine_plugin_entry_fn entry;
	void *h;

	find_path();
	if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		/* The text names the plugin or the library it lacks. */
		snprintf(why, sizeof(why), "%s", dlerror());
		return;
	}
	*(void **)&entry = dlsym(h, GM_ENGINE_PLUGIN_SYMBOL);
	if (entry == NULL) {
		snprintf(why, sizeof(why), "%s", dlerror());
		dlclose(h);
		return;
	}
	if (!check(entry())) {
		dlclose(h);
		return;
	}
	/* Kept open for the process's life: engines and their threads run
	 * its code until the end. */
	plugin = entry();
}

/* The plugin, or NULL with why. */
static const struct gm_engine_plugin *get(void)
{
	pthread_once(&once, load);
	return plugin;
}

int gm_engine_cuda_probe(char *msg, size_t msglen)
{
	const struct gm_engine_plugin *p = get();
	char cuda[256];
	int n;

	if (p == NULL) {
		if (msglen > 0)
			snprintf(msg, msglen, "cannot load the CUDA engine: %s",
				 why);
		return 0;
	}
	n = p->probe(cuda, sizeof(cuda));
	if (msglen > 0 && n > 0)
		snprintf(msg, msglen, "%s", path);
	else if (msglen > 0)
		snprintf(msg, msglen, "%s (%s)", cuda, path);
	return n;
}

int gm_engine_cuda_count(void)
{
	return gm_engine_cuda_probe(NULL, 0);
}

int gm_engine_cuda_open(const gm_engine_config *cfg, gm_engine_done_fn done,
			void *arg, gm_engine **out, char *msg, size_t msglen)
{
	const struct gm_engine_plugin *p = get();

	*out = NULL;
	if (p == NULL) {
		snprintf(msg, msglen, "cannot load the CUDA engine: %s", why);
		return GM_ENODEV;
	}
	return p->open(cfg, done, arg, out, msg, msglen);
}

int gm_engine_cuda_memory(int dev, size_t *free_bytes, size_t *total_bytes)
{
	const struct gm_engine_plugin *p = get();

	if (p == NULL)
		return GM_ENODEV;
	return p->memory(dev, free_bytes, total_bytes);
}

#else /* !GEMMD_HAVE_CUDA */

#define NOT_BUILT "this gemmd was built without CUDA"

int gm_engine_cuda_probe(char *msg, size_t msglen)
{
	if (msglen > 0)
		snprintf(msg, msglen, NOT_BUILT);
	return 0;
}

int gm_engine_cuda_count(void)
{
	return 0;
}

int gm_engine_cuda_open(const gm_engine_config *cfg, gm_engine_done_fn done,
			void *arg, gm_engine **out, char *msg, size_t msglen)
{
	*out = NULL;
	snprintf(msg, msglen, NOT_BUILT);
	return GM_ENODEV;
}

int gm_engine_cuda_memory(int dev, size_t *free_bytes, size_t *total_bytes)
{
	return GM_ENODEV;
}

#endif
