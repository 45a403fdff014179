/*
 * gm_drive.c - driving a gemmd through the client library: starting one
 * with the configuration a case needs, submitting the case's jobs,
 * timing the client's view, and reading the engine's view from the
 * daemon's stats.
 *
 * The client's view is this host's clock from the first submit to the
 * last reply: it includes building the request, the socket both ways,
 * queueing and staging in the daemon, and copying results out. The
 * engine's view is the growth of the devices' busy time in the stats
 * document (devices[].busy_s): the CUDA engine times each busy period on
 * the device from its first host-to-device copy to the end of its last
 * job, so the socket and host staging are outside it. With one busy
 * period in a run, it is exactly first H2D to last D2H; the number of
 * periods is read from devices[].busy_periods where the daemon reports
 * it.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gm_bench.h"

#define MIB	     (1024ull * 1024)
#define GIB	     (1024 * MIB)
#define PAIRS	     4	 /* distinct random A, B pairs per case */
#define START_S	     180 /* a large pinned pool takes a while */
#define STOP_S	     60
#define SUBMIT_MS    600000 /* 12 GB through a socket takes seconds */
#define SLACK	     (64 * MIB)
#define MSG_OVERHEAD (1 * MIB) /* headers of a request, generously */

struct gm_payload {
	gm_case c;
	void *a[PAIRS], *b[PAIRS];
	char *out; /* jobs results back to back, NaN until written */
	gemmd_job *jobs;
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t mib_up(uint64_t b)
{
	return (b + MIB - 1) / MIB;
}

/* ---- the daemon's process ----------------------------------------------- */

/* A command line under construction; the settings' text lives here. */
struct cmd {
	char *argv[2 * (GM_BENCH_SETS_MAX + 16)];
	char text[16][80];
	int argc, ntext;
};

static void arg(struct cmd *m, const char *s)
{
	m->argv[m->argc++] = (char *)s;
}

__attribute__((format(printf, 2, 3))) static void set(struct cmd *m,
						      const char *fmt, ...)
{
	char *t = m->text[m->ntext++];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t, sizeof(m->text[0]), fmt, ap);
	va_end(ap);
	arg(m, "-s");
	arg(m, t);
}

/* Pools hold every job of the case at once, so that the whole batch can
 * be one wave; a request holds its share of the jobs. */
static void build_cmd(struct cmd *m, const char *path, const char *url,
		      const gm_case *c, unsigned streams, char *const *sets,
		      int nsets)
{
	uint64_t per = gm_case_in_bytes(c) + gm_case_out_bytes(c);
	unsigned long long pool = mib_up(c->jobs * per + SLACK);
	uint64_t req = c->jobs / c->requests * gm_case_in_bytes(c);
	unsigned long long msg = mib_up(req + MSG_OVERHEAD);
	int i;

	memset(m, 0, sizeof(*m));
	arg(m, path);
	arg(m, "-l");
	arg(m, url);
	arg(m, "-e");
	arg(m, "cuda");
	arg(m, "-L");
	arg(m, "warn");
	set(m, "pool_bytes=%lluM", pool);
	set(m, "device_pool_bytes=%lluM", pool);
	set(m, "max_message_bytes=%lluM", msg < 1024 ? 1024 : msg);
	set(m, "streams=%u", streams);
	set(m, "issue_order=%s", c->depth ? "depth" : "breadth");
	set(m, "mapped_output=%s", c->mapped ? "true" : "false");
	set(m, "kernel=%s",
	    c->kernel == GEMMD_KERNEL_TILED ? "tiled" : "cublas");
	for (i = 0; i < nsets; i++) {
		arg(m, "-s");
		arg(m, sets[i]);
	}
	m->argv[m->argc] = NULL;
}

static void print_argv(char **argv)
{
	int i;

	printf("  starting:");
	for (i = 0; argv[i] != NULL; i++)
		printf(" %s", argv[i]);
	printf("\n");
	fflush(stdout);
}

/* Polls until the daemon answers or exits. */
static int wait_ready(gm_daemon_proc *p, char *err, size_t errlen)
{
	double until = now_ms() + START_S * 1e3;
	struct timespec pause = {0, 100 * 1000 * 1000};
	int status;

	while (now_ms() < until) {
		if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
			p->pid = 0;
			snprintf(err, errlen, "gemmd exited at start (%d)",
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			return -1;
		}
		if (p->cl == NULL && gemmd_open(p->url, NULL, &p->cl) != GM_OK)
			p->cl = NULL;
		if (p->cl != NULL && gemmd_ping(p->cl, NULL, 1000) == GM_OK)
			return 0;
		nanosleep(&pause, NULL);
	}
	snprintf(err, errlen, "gemmd did not answer in %d s", START_S);
	return -1;
}

int gm_drive_start(const char *path, const gm_case *c, unsigned streams,
		   char *const *sets, int nsets, gm_daemon_proc *p, char *err,
		   size_t errlen)
{
	static unsigned serial;
	struct cmd m;
	int rv;

	memset(p, 0, sizeof(*p));
	if (nsets > GM_BENCH_SETS_MAX) {
		snprintf(err, errlen, "at most %d --set options",
			 GM_BENCH_SETS_MAX);
		return -1;
	}
	snprintf(p->url, sizeof(p->url), "ipc:///tmp/gemmd-bench-%d-%u.sock",
		 (int)getpid(), serial++);
	build_cmd(&m, path, p->url, c, streams, sets, nsets);
	print_argv(m.argv);
	fflush(stderr);
	if ((p->pid = fork()) == 0) {
		execv(path, m.argv);
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		_exit(127);
	}
	if (p->pid < 0) {
		p->pid = 0;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if ((rv = wait_ready(p, err, errlen)) != 0)
		gm_drive_stop(p);
	return rv;
}

int gm_drive_attach(const char *url, gm_daemon_proc *p, char *err,
		    size_t errlen)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->url, sizeof(p->url), "%s", url);
	if (gemmd_open(url, NULL, &p->cl) != GM_OK) {
		snprintf(err, errlen, "%s", gemmd_last_error());
		p->cl = NULL;
		return -1;
	}
	return 0;
}

int gm_drive_stop(gm_daemon_proc *p)
{
	struct timespec pause = {0, 50 * 1000 * 1000};
	double until = now_ms() + STOP_S * 1e3;
	int status = 0;

	if (p->cl != NULL)
		gemmd_close(p->cl);
	p->cl = NULL;
	if (p->pid <= 0)
		return 0;
	kill(p->pid, SIGTERM);
	while (waitpid(p->pid, &status, WNOHANG) == 0) {
		if (now_ms() > until) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			break;
		}
		nanosleep(&pause, NULL);
	}
	p->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- payloads ----------------------------------------------------------- */

gm_payload *gm_drive_payload(const gm_case *c)
{
	gm_payload *pl = calloc(1, sizeof(*pl));
	uint64_t in = gm_case_in_bytes(c), out = gm_case_out_bytes(c);
	size_t esz = c->dtype == GEMMD_FP64 ? 8 : 4, i;

	if (pl == NULL)
		return NULL;
	pl->c = *c;
	pl->out = malloc(c->jobs * out);
	pl->jobs = calloc(c->jobs, sizeof(*pl->jobs));
	for (i = 0; i < PAIRS; i++) {
		pl->a[i] = malloc(in / 2);
		pl->b[i] = malloc(in / 2);
		if (pl->a[i] == NULL || pl->b[i] == NULL)
			break;
		gm_bench_random(c->dtype, pl->a[i], in / 2 / esz, 2 * i + 1);
		gm_bench_random(c->dtype, pl->b[i], in / 2 / esz, 2 * i + 2);
	}
	if (i < PAIRS || pl->out == NULL || pl->jobs == NULL) {
		gm_drive_payload_free(pl);
		return NULL;
	}
	/* NaN in both dtypes; also faults the pages in before timing. */
	memset(pl->out, 0xff, c->jobs * out);
	for (i = 0; i < c->jobs; i++) {
		gemmd_job *j = &pl->jobs[i];

		j->dtype = c->dtype;
		j->layout = GEMMD_ROW_MAJOR;
		j->kernel = c->kernel;
		j->m = j->n = j->k = c->n;
		j->alpha = 1;
		j->a = pl->a[i % PAIRS];
		j->b = pl->b[i % PAIRS];
		j->out = pl->out + i * out;
	}
	return pl;
}

void gm_drive_payload_free(gm_payload *pl)
{
	size_t i;

	if (pl == NULL)
		return;
	for (i = 0; i < PAIRS; i++) {
		free(pl->a[i]);
		free(pl->b[i]);
	}
	free(pl->out);
	free(pl->jobs);
	free(pl);
}

/* ---- the engine's view -------------------------------------------------- */

/* Busy seconds of the busiest device and busy periods of all, from the
 * stats document; periods < 0 when the daemon does not report them. */
static int read_busy(gm_daemon_proc *p, double *busy_s, double *periods,
		     char *err, size_t errlen)
{
	const cJSON *devs, *d;
	char *text = NULL;
	cJSON *doc;
	int rv;

	if ((rv = gemmd_stats(p->cl, &text, 10000)) != GM_OK) {
		snprintf(err, errlen, "stats: %s", gemmd_last_error());
		return -1;
	}
	doc = cJSON_Parse(text);
	free(text);
	devs = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(doc, "stats"), "devices");
	*busy_s = 0;
	*periods = 0;
	cJSON_ArrayForEach(d, devs)
	{
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(d, "busy_s");
		const cJSON *n =
		    cJSON_GetObjectItemCaseSensitive(d, "busy_periods");

		if (cJSON_IsNumber(b) && b->valuedouble > *busy_s)
			*busy_s = b->valuedouble;
		if (cJSON_IsNumber(n) && *periods >= 0)
			*periods += n->valuedouble;
		else
			*periods = -1;
	}
	rv = cJSON_IsArray(devs) ? 0 : -1;
	if (rv != 0)
		snprintf(err, errlen, "stats: no devices[]");
	cJSON_Delete(doc);
	return rv;
}

/* ---- runs --------------------------------------------------------------- */

/* Requests in flight at once: their completions meet here. */
struct flight {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t left;
	int rv; /* the first failure */
	double last_ms;
};

static void on_reply(void *arg, int rv)
{
	struct flight *f = arg;

	pthread_mutex_lock(&f->mu);
	if (rv != GM_OK && f->rv == GM_OK)
		f->rv = rv;
	if (--f->left == 0) {
		f->last_ms = now_ms();
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
}

/* Sends jobs[0..n-1] as nreq requests at once and waits for all. */
static int submit_split(gm_daemon_proc *p, gemmd_job *jobs, uint32_t n,
			uint32_t nreq, double *end_ms)
{
	struct flight f = {.left = nreq};
	uint32_t per = n / nreq, i;
	int rv = GM_OK;

	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	for (i = 0; i < nreq; i++) {
		uint32_t cnt = i + 1 < nreq ? per : n - per * i;

		rv = gemmd_submit_async(p->cl, jobs + per * i, cnt, NULL,
					SUBMIT_MS, on_reply, &f);
		if (rv != GM_OK) { /* those not sent never call back */
			pthread_mutex_lock(&f.mu);
			f.left -= nreq - i;
			pthread_mutex_unlock(&f.mu);
			break;
		}
	}
	pthread_mutex_lock(&f.mu);
	while (f.left > 0)
		pthread_cond_wait(&f.cv, &f.mu);
	pthread_mutex_unlock(&f.mu);
	*end_ms = f.last_ms > 0 ? f.last_ms : now_ms();
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
	return rv != GM_OK ? rv : f.rv;
}

static void count_failures(const gemmd_job *jobs, uint32_t n, gm_run *out)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (jobs[i].t.total_us / 1e3 > out->daemon_ms)
			out->daemon_ms = jobs[i].t.total_us / 1e3;
	for (i = 0; i < n; i++)
		if (jobs[i].status != GM_OK && out->failed++ == 0)
			snprintf(out->why, sizeof(out->why), "job %u: %s: %s",
				 i, gemmd_strerror(jobs[i].status),
				 jobs[i].message);
}

int gm_drive_run(gm_daemon_proc *p, const gm_case *c, gm_payload *pl,
		 uint32_t jobs, gm_run *out, char *err, size_t errlen)
{
	double b0, b1, n0, n1, t0, t1;
	uint32_t nreq = c->requests;
	int rv;

	memset(out, 0, sizeof(*out));
	if (jobs == 0 || jobs > c->jobs)
		jobs = c->jobs;
	if (nreq > jobs)
		nreq = jobs;
	if (read_busy(p, &b0, &n0, err, errlen) != 0)
		return -1;
	t0 = now_ms();
	if (nreq <= 1) {
		rv = gemmd_submit(p->cl, pl->jobs, jobs, NULL, SUBMIT_MS);
		t1 = now_ms();
	} else {
		rv = submit_split(p, pl->jobs, jobs, nreq, &t1);
	}
	if (rv != GM_OK) {
		snprintf(err, errlen, "submit: %s: %s", gemmd_strerror(rv),
			 gemmd_last_error());
		return -1;
	}
	if (read_busy(p, &b1, &n1, err, errlen) != 0)
		return -1;
	out->client_ms = t1 - t0;
	out->engine_ms = (b1 - b0) * 1e3;
	out->periods = n0 >= 0 && n1 >= 0 ? n1 - n0 : -1;
	count_failures(pl->jobs, jobs, out);
	return 0;
}

/* ---- checking ----------------------------------------------------------- */

static double elem(int dtype, const void *p, size_t i)
{
	return dtype == GEMMD_FP64 ? ((const double *)p)[i]
				   : ((const float *)p)[i];
}

/* Largest |got - want| / sum |a||b| over a few elements of job j. */
static double check_job(const gm_payload *pl, uint32_t j)
{
	const gemmd_job *jb = &pl->jobs[j];
	size_t n = pl->c.n, s;
	double worst = 0;
	uint64_t x = 0x9E3779B97F4A7C15ull * (j + 1);

	for (s = 0; s < 8; s++) {
		size_t r, col, q;
		double want = 0, scale = 0, got, e;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = (size_t)(x % n);
		col = (size_t)((x >> 32) % n);
		for (q = 0; q < n; q++) {
			double a = elem(jb->dtype, jb->a, r * n + q);
			double b = elem(jb->dtype, jb->b, q * n + col);

			want += a * b;
			scale += fabs(a * b);
		}
		got = elem(jb->dtype, jb->out, r * n + col);
		e = fabs(got - want) / (scale > 0 ? scale : 1);
		if (isnan(e)) /* never written */
			return e;
		if (e > worst)
			worst = e;
	}
	return worst;
}

double gm_drive_verify(const gm_case *c, const gm_payload *pl)
{
	double a = check_job(pl, 0), b = check_job(pl, c->jobs - 1);

	return isnan(a) || a > b ? a : b;
}
