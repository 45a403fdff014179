/*
 * gm_engine_cuda.cu - the CUDA engine behind gm_engine.h: one pinned host
 * arena for all devices, one gm_cuda_dev per visible GPU, and the
 * spreading of each submitted wave over them.
 *
 * The arena is allocated portable, so every device can DMA from any slab
 * the daemon carves, and mapped when the result is to be written straight
 * into host memory. Spreading gives each job to the device with the
 * fewest bytes queued or running; a device's share of a wave stays one
 * wave there, issued breadth-first, its small jobs coalesced. Threads,
 * completion, warm-up and faults are the devices' (gm_cuda_dev.h). A
 * submit allocates nothing once the devices have as many wave records as
 * waves in flight.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_cuda_dev.h"
#include "gm_cuda_err.h"
#include "gm_cuda_fault.h"
#include "gm_cuda_gemm.h"
#include "gm_cuda_life.h"
#include "gm_engine_plugin.h"

#define POOL_BYTES_DEFAULT (1ull << 30)
#define STREAMS_DEFAULT	   4
#define STREAMS_MAX	   64
#define SHARES_ON_STACK	   8 /* devices whose shares need no allocation */

struct cuda_engine {
	struct gm_engine base; /* first: gm_engine.c casts */
	struct gm_cuda_shared sh;
	void *arena;
	uint64_t arena_bytes;
	unsigned ndev;
	struct gm_cuda_dev **devs;
};

static struct cuda_engine *of(const gm_engine *e)
{
	return (struct cuda_engine *)e;
}

/*
 * Streams share a device's hardware work queues, 8 by default: a stream
 * whose next operation waits for another stream's event (a tiled job's
 * copy waiting for its GEMM) then holds up the streams queued behind it,
 * a small job's among them. With 32 (the most) the ring's streams and
 * the runner's each have a queue of their own. CUDA reads the variable
 * when a device's context is made, so it is set before the engine first
 * touches a device (cuda_open counts them first), unless the
 * environment sets it.
 */
static void own_queues(void)
{
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
}

/* The plugin's probe (gm_engine_plugin.h): CUDA's text says what is
 * missing, a driver or a device. */
static int cuda_probe(char *msg, size_t msglen)
{
	cudaError_t err;
	int n = 0;

	own_queues();
	if ((err = cudaGetDeviceCount(&n)) != cudaSuccess) {
		snprintf(msg, msglen, "%s", cudaGetErrorString(err));
		(void)cudaGetLastError();
		return 0;
	}
	if (n == 0)
		snprintf(msg, msglen, "no CUDA device found");
	return n;
}

/* The engine sets devices on the caller's thread while it opens and
 * closes them; the caller gets its own current device back. */
static int current_device(void)
{
	int dev = 0;

	if (cudaGetDevice(&dev) != cudaSuccess)
		(void)cudaGetLastError();
	return dev;
}

static void cuda_close(gm_engine *base)
{
	struct cuda_engine *e = of(base);
	int prev = current_device();
	unsigned i;

	for (i = 0; i < e->ndev; i++)
		if (e->devs[i] != NULL)
			gm_cuda_life_close(e->devs[i]);
	free(e->devs);
	if (e->arena != NULL && cudaFreeHost(e->arena) != cudaSuccess)
		(void)cudaGetLastError();
	pthread_mutex_destroy(&e->sh.fault_mu);
	free(e);
	cudaSetDevice(prev);
	(void)cudaGetLastError();
}

static void *cuda_arena(gm_engine *base, uint64_t *size)
{
	*size = of(base)->arena_bytes;
	return of(base)->arena;
}

static int cuda_supports(const gm_engine *base, const gm_job_desc *d, char *msg,
			 size_t msglen)
{
	int kernel = gm_cuda_gemm_kernel(d, of(base)->sh.cfg.kernel);

	return gm_cuda_gemm_supports(d, kernel, msg, msglen);
}

static int cuda_faulted(const gm_engine *base)
{
	return __atomic_load_n(&of(base)->sh.faulted, __ATOMIC_ACQUIRE);
}

/* One device's part of a wave being spread. */
struct share {
	struct gm_cuda_wave *w;
	gm_job *tail;
	uint64_t load, bytes;
};

/* Gives each job to the device with the least work queued or running,
 * counting what this wave has already given it; keeps the wave's order
 * within each device. */
static void spread(struct cuda_engine *e, struct share *sh, gm_job **jobs,
		   size_t n)
{
	unsigned i;
	size_t k;

	for (i = 0; i < e->ndev; i++)
		sh[i].load = gm_cuda_dev_load(e->devs[i]);
	for (k = 0; k < n; k++) {
		uint64_t b = gm_cuda_job_bytes(jobs[k]);
		unsigned best = 0;

		for (i = 1; i < e->ndev; i++)
			if (sh[i].load < sh[best].load)
				best = i;
		jobs[k]->next = NULL;
		if (sh[best].tail != NULL)
			sh[best].tail->next = jobs[k];
		else
			sh[best].w->head = jobs[k];
		sh[best].tail = jobs[k];
		sh[best].load += b;
		sh[best].bytes += b;
	}
}

static void give_back(struct cuda_engine *e, struct share *sh)
{
	for (unsigned i = 0; i < e->ndev; i++)
		if (sh[i].w != NULL)
			gm_cuda_dev_wave_free(e->devs[i], sh[i].w);
}

static int cuda_submit(gm_engine *base, gm_job **jobs, size_t n)
{
	struct cuda_engine *e = of(base);
	struct share stack[SHARES_ON_STACK], *sh = stack;
	unsigned i;
	int rv = GM_OK;

	if (cuda_faulted(base))
		return GM_EGPUFAULT;
	if (n == 0)
		return GM_OK;
	/* Everything that can fail happens before any job is taken. */
	if (e->ndev > SHARES_ON_STACK &&
	    (sh = (struct share *)malloc(e->ndev * sizeof(*sh))) == NULL)
		return GM_ENOMEM;
	memset(sh, 0, e->ndev * sizeof(*sh));
	for (i = 0; i < e->ndev && rv == GM_OK; i++)
		if ((sh[i].w = gm_cuda_dev_wave(e->devs[i])) == NULL)
			rv = GM_ENOMEM;
	if (rv == GM_OK) {
		spread(e, sh, jobs, n);
		for (i = 0; i < e->ndev; i++) {
			if (sh[i].w->head == NULL)
				continue;
			gm_cuda_dev_queue(e->devs[i], sh[i].w, sh[i].bytes);
			sh[i].w = NULL;
		}
	}
	give_back(e, sh);
	if (sh != stack)
		free(sh);
	return rv;
}

static int cuda_warmup(gm_engine *base)
{
	struct cuda_engine *e = of(base);

	e->sh.warm_status = GM_OK;
	e->sh.warm_msg[0] = '\0';
	__atomic_store_n(&e->sh.warm_left, (int)e->ndev, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < e->ndev; i++)
		gm_cuda_dev_warm(e->devs[i]);
	return GM_OK;
}

static unsigned cuda_devices(const gm_engine *base)
{
	return of(base)->ndev;
}

static void cuda_device_stats(gm_engine *base, unsigned dev, gm_device_stats *s)
{
	struct cuda_engine *e = of(base);

	if (dev >= e->ndev) {
		memset(s, 0, sizeof(*s));
		return;
	}
	gm_cuda_dev_stats(e->devs[dev], s);
}

/* A region is pinned once, portable like the arena so that any device
 * may DMA from it, and mapped like the arena so that kernels may read
 * and write it (small jobs alone, mapped output). The caller's thread
 * gets its device back. */
static int cuda_reg(gm_engine *, void *p, size_t len, char *msg, size_t msglen)
{
	unsigned flags = cudaHostRegisterPortable | cudaHostRegisterMapped;
	int prev = current_device(), rv = GM_OK;
	cudaError_t err;

	if ((err = cudaSetDevice(0)) == cudaSuccess)
		err = cudaHostRegister(p, len, flags);
	if (err != cudaSuccess)
		rv = gm_cuda_fail(err, "cudaHostRegister", __FILE__, __LINE__,
				  msg, msglen);
	cudaSetDevice(prev);
	(void)cudaGetLastError();
	return rv;
}

static void cuda_unreg(gm_engine *, void *p)
{
	int prev = current_device();

	if (cudaSetDevice(0) != cudaSuccess ||
	    cudaHostUnregister(p) != cudaSuccess)
		(void)cudaGetLastError();
	cudaSetDevice(prev);
	(void)cudaGetLastError();
}

/* A job still in a wave that no device has begun. */
static int cuda_cancel(gm_engine *base, gm_job *job)
{
	struct cuda_engine *e = of(base);

	for (unsigned i = 0; i < e->ndev; i++)
		if (gm_cuda_dev_take_back(e->devs[i], job) == GM_OK)
			return GM_OK;
	return GM_ENOTFOUND;
}

/* In the order of struct gm_engine_ops. */
static const struct gm_engine_ops cuda_ops = {
    "cuda",	       /* name */
    cuda_close,	       /* close */
    cuda_arena,	       /* arena */
    cuda_supports,     /* supports */
    cuda_submit,       /* submit */
    cuda_faulted,      /* faulted */
    cuda_devices,      /* devices */
    cuda_device_stats, /* device_stats */
    cuda_reg,	       /* reg */
    cuda_unreg,	       /* unreg */
    cuda_warmup,       /* warmup */
    cuda_cancel,       /* cancel */
};

static void fill_defaults(gm_engine_config *c)
{
	if (c->pool_bytes == 0)
		c->pool_bytes = POOL_BYTES_DEFAULT;
	if (c->streams == 0)
		c->streams = STREAMS_DEFAULT;
	if (c->streams > STREAMS_MAX)
		c->streams = STREAMS_MAX;
}

/* The pinned arena. Portable: any device may DMA from it. Mapped:
 * kernels may read and write it (small jobs alone, mapped output). Never
 * pageable: without it the engine does not open. */
static int alloc_arena(struct cuda_engine *e, char *msg, size_t msglen)
{
	unsigned flags = cudaHostAllocPortable | cudaHostAllocMapped;

	GM_CUDA_TRY(cudaSetDevice(0), msg, msglen);
	GM_CUDA_TRY(cudaHostAlloc(&e->arena, e->sh.cfg.pool_bytes, flags), msg,
		    msglen);
	e->arena_bytes = e->sh.cfg.pool_bytes;
	return GM_OK;
}

static int open_devices(struct cuda_engine *e, unsigned ndev, char *msg,
			size_t msglen)
{
	unsigned i;
	int rv;

	e->devs = (struct gm_cuda_dev **)calloc(ndev, sizeof(*e->devs));
	if (e->devs == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	e->ndev = ndev;
	for (i = 0; i < ndev; i++)
		if ((rv = gm_cuda_life_open(&e->sh, (int)i, &e->devs[i], msg,
					    msglen)) != GM_OK)
			return rv;
	return GM_OK;
}

static int cuda_open(const gm_engine_config *cfg, gm_engine_done_fn done,
		     void *arg, gm_engine **out, char *msg, size_t msglen)
{
	int ndev = cuda_probe(msg, msglen);
	struct cuda_engine *e;
	int rv, prev;

	*out = NULL;
	if (ndev <= 0)
		return GM_ENODEV;
	if ((e = (struct cuda_engine *)calloc(1, sizeof(*e))) == NULL) {
		snprintf(msg, msglen, "out of host memory");
		return GM_ENOMEM;
	}
	e->base.ops = &cuda_ops;
	e->base.done = done;
	e->base.done_arg = arg;
	e->sh.cfg = *cfg;
	fill_defaults(&e->sh.cfg);
	e->sh.engine = &e->base;
	e->sh.fault_armed = gm_cuda_fault_arm();
	pthread_mutex_init(&e->sh.fault_mu, NULL);
	prev = current_device();
	if ((rv = alloc_arena(e, msg, msglen)) != GM_OK ||
	    (rv = open_devices(e, (unsigned)ndev, msg, msglen)) != GM_OK) {
		cuda_close(&e->base);
		return rv;
	}
	cudaSetDevice(prev);
	*out = &e->base;
	return GM_OK;
}

static int cuda_memory(int dev, size_t *free_bytes, size_t *total_bytes)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || dev < 0 || dev >= n ||
	    cudaSetDevice(dev) != cudaSuccess ||
	    cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
		(void)cudaGetLastError();
		return GM_ENODEV;
	}
	return GM_OK;
}

/* What gemmd's loader checks and calls (gm_engine_plugin.h). */
static const struct gm_engine_plugin plugin = {
    GM_ENGINE_PLUGIN_ABI,
    GM_ENGINE_PLUGIN_LAYOUT,
    GM_ENGINE_VERSION,
    cuda_probe,
    cuda_open,
    cuda_memory,
};

extern "C" const struct gm_engine_plugin *gm_engine_plugin_entry(void)
{
	return &plugin;
}
