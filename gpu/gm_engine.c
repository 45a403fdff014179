/*
 * gm_engine.c - picks an engine at open and forwards the public calls of
 * gm_engine.h to the engine's table of operations (gm_engine_impl.h).
 * The CUDA engine's constructors are its plugin's (gm_engine_load.c).
 */
#include "gm_engine_impl.h"

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

void gm_engine_close(gm_engine *e)
{
	e->ops->close(e);
}

const char *gm_engine_name(const gm_engine *e)
{
	return e->ops->name;
}

void *gm_engine_arena(gm_engine *e, uint64_t *size)
{
	return e->ops->arena(e, size);
}

int gm_engine_supports(const gm_engine *e, const gm_job_desc *d, char *msg,
		       size_t msglen)
{
	return e->ops->supports(e, d, msg, msglen);
}

int gm_engine_submit(gm_engine *e, gm_job **jobs, size_t n)
{
	return e->ops->submit(e, jobs, n);
}

void gm_engine_on_start(gm_engine *e, gm_engine_jobs_fn fn)
{
	e->start = fn;
}

void gm_engine_on_done_together(gm_engine *e, gm_engine_jobs_fn fn)
{
	e->done_together = fn;
}

int gm_engine_cancel(gm_engine *e, gm_job *job)
{
	if (e->ops->cancel == NULL)
		return GM_ENOTFOUND;
	return e->ops->cancel(e, job);
}

int gm_engine_register(gm_engine *e, void *p, size_t len, char *msg,
		       size_t msglen)
{
	if (e->ops->reg == NULL)
		return GM_OK;
	return e->ops->reg(e, p, len, msg, msglen);
}

void gm_engine_unregister(gm_engine *e, void *p)
{
	if (e->ops->unreg != NULL)
		e->ops->unreg(e, p);
}

int gm_engine_warmup(gm_engine *e, gm_engine_warm_fn fn, void *arg)
{
	int rv;

	if (__atomic_load_n(&e->warming, __ATOMIC_ACQUIRE))
		return GM_EBUSY;
	e->warm_fn = fn;
	e->warm_arg = arg;
	e->warm_t0 = gm_engine_now_us();
	__atomic_store_n(&e->warming, 1, __ATOMIC_RELEASE);
	if ((rv = e->ops->warmup(e)) != GM_OK)
		__atomic_store_n(&e->warming, 0, __ATOMIC_RELEASE);
	return rv;
}

int gm_engine_ready(const gm_engine *e, double *ms)
{
	int warming = __atomic_load_n(&e->warming, __ATOMIC_ACQUIRE);

	if (ms != NULL)
		__atomic_load(&e->warm_ms, ms, __ATOMIC_RELAXED);
	return !warming;
}

int gm_engine_faulted(const gm_engine *e)
{
	return e->ops->faulted(e);
}

unsigned gm_engine_devices(const gm_engine *e)
{
	return e->ops->devices(e);
}

void gm_engine_device_stats(gm_engine *e, unsigned dev, gm_device_stats *s)
{
	e->ops->device_stats(e, dev, s);
}
