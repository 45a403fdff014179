/*
 * gm_engine_open.c - picks an engine at open (gm_engine_open): checks the
 * host pool against the memory there is, then calls the CPU engine's
 * constructor or the CUDA engine's (its plugin's, gm_engine_load.c). The
 * top of the engines' modules: it calls the engines, none of them calls
 * it.
 */
#include "gm_engine.h"

#include <stdio.h>
#include <unistd.h>

#include "gm_error.h"

/* What memory the process may have: the host's, or its cgroup's limit
 * when that is lower (cgroup v2's memory.max); 0 when unknown. */
static uint64_t memory_available(const char **whose)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t host =
	    pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	unsigned long long limit;
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");

	*whose = "this host's memory";
	if (f != NULL) {
		if (fscanf(f, "%llu", &limit) == 1 && limit < host) {
			host = limit;
			*whose = "this cgroup's memory.max";
		}
		fclose(f);
	}
	return host;
}

/* A host pool larger than the memory there is would not be refused by
 * the allocation (the CPU engine maps it without reserving): back-
 * pressure would be gone, the kernel's OOM killer in its place. */
static int check_pool(const gm_engine_config *cfg, char *msg, size_t msglen)
{
	const char *whose;
	uint64_t have = memory_available(&whose);

	if (have == 0 || cfg->pool_bytes <= have)
		return GM_OK;
	snprintf(msg, msglen,
		 "pool_bytes %llu (%.1f GiB) is more than %s, %llu bytes "
		 "(%.1f GiB)",
		 (unsigned long long)cfg->pool_bytes,
		 (double)cfg->pool_bytes / (1 << 30), whose,
		 (unsigned long long)have, (double)have / (1 << 30));
	return GM_ECONFIG;
}

int gm_engine_open(const gm_engine_config *cfg, gm_engine_done_fn done,
		   void *arg, gm_engine **out, char *msg, size_t msglen)
{
	int kind = cfg->kind, rv;

	*out = NULL;
	if ((rv = check_pool(cfg, msg, msglen)) != GM_OK)
		return rv;
	if (kind == GM_ENGINE_AUTO)
		kind =
		    gm_engine_cuda_count() > 0 ? GM_ENGINE_CUDA : GM_ENGINE_CPU;
	switch (kind) {
	case GM_ENGINE_CPU:
		return gm_engine_cpu_open(cfg, done, arg, out, msg, msglen);
	case GM_ENGINE_CUDA:
		return gm_engine_cuda_open(cfg, done, arg, out, msg, msglen);
	default:
		snprintf(msg, msglen, "unknown engine kind %d", cfg->kind);
		return GM_EINVAL;
	}
}
