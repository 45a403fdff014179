/*
 * gm_sockbench.c - gemmd_socket_bench's cases, daemon and runs; see
 * gm_sockbench.h.
 */
#include "gm_sockbench.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gm_net.h"

#define START_S	  180
#define SUBMIT_MS 600000
#define ALIGN	  4096

enum { P_STAGED, P_REGIONS, P_SOCKET, P_TCP, P_TLS };

static const struct {
	const char *name;
	int kind;
} paths[GM_SB_PATHS] = {
    {"ipc staged", GM_URL_IPC}, {"ipc regions", GM_URL_IPC},
    {"ipc socket", GM_URL_IPC}, {"tcp", GM_URL_TCP},
    {"tls", GM_URL_TLS},
};

static const gm_sb_case shapes[GM_SB_CASES] = {
    {.name = "gemv", .label = "64 x (1024x1024 . 1024x1)", 1024, 1, 1024},
    {.name = "outer", .label = "64 x (1024x1 . 1x1024)", 1024, 1024, 1},
    {.name = "square", .label = "64 x 1024^2", 1024, 1024, 1024},
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int gm_sb_select(gm_sb *b, const char *name)
{
	for (int i = 0; i < GM_SB_CASES; i++)
		if (strcmp(shapes[i].name, name) == 0) {
			b->cases[i].selected = true;
			return 0;
		}
	return -1;
}

const char *gm_sb_path_name(int path)
{
	return paths[path].name;
}

int gm_sb_path_kind(int path)
{
	return paths[path].kind;
}

bool gm_sb_has_path(const gm_sb *b, int path)
{
	return b->url == NULL || gm_url_kind(b->url) == paths[path].kind;
}

/* ---- the daemon ---- */

static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int start(gm_sb *b, char *msg, size_t msglen)
{
	char text[6][256], *argv[32 + 2 * GM_SB_SETS_MAX];
	int n = 0;
	double until = now_ms() + START_S * 1e3;
	gemmd_client *cl = NULL;

	snprintf(text[0], sizeof(text[0]), "tls_cert=%s", b->tls.server_cert);
	snprintf(text[1], sizeof(text[1]), "tls_key=%s", b->tls.server_key);
	snprintf(text[2], sizeof(text[2]), "tls_ca=%s", b->tls.ca);
	/* The square case is 1.5 GiB in one request. */
	snprintf(text[3], sizeof(text[3]), "pool_bytes=1700M");
	snprintf(text[4], sizeof(text[4]), "max_message_bytes=1100M");
	argv[n++] = (char *)b->gemmd;
	argv[n++] = "-l";
	argv[n++] = b->ipc;
	argv[n++] = "-l";
	argv[n++] = b->tcp;
	argv[n++] = "-l";
	argv[n++] = b->tlsurl;
	argv[n++] = "-e";
	argv[n++] = (char *)b->engine;
	argv[n++] = "-L";
	argv[n++] = "warn";
	for (int i = 0; i < 5; i++) {
		argv[n++] = "-s";
		argv[n++] = text[i];
	}
	for (int i = 0; i < b->nsets; i++) {
		argv[n++] = "-s";
		argv[n++] = b->sets[i];
	}
	argv[n] = NULL;
	printf("starting:");
	for (int i = 0; i < n; i++)
		printf(" %s", argv[i]);
	printf("\n");
	fflush(stdout);
	if ((b->pid = fork()) == 0) {
		execv(b->gemmd, argv);
		fprintf(stderr, "%s: %s\n", b->gemmd, strerror(errno));
		_exit(127);
	}
	while (b->pid > 0 && now_ms() < until) {
		int status;

		if (waitpid(b->pid, &status, WNOHANG) == b->pid) {
			b->pid = 0;
			snprintf(msg, msglen, "gemmd exited at start");
			return -1;
		}
		if (gemmd_open(b->ipc, NULL, &cl) == GM_OK) {
			int rv = gemmd_ping(cl, NULL, 1000);

			gemmd_close(cl);
			if (rv == GM_OK)
				return 0;
		}
		usleep(100 * 1000);
	}
	snprintf(msg, msglen, "gemmd did not answer in %d s", START_S);
	return -1;
}

int gm_sb_open(gm_sb *b, char *msg, size_t msglen)
{
	bool any = false;

	for (int i = 0; i < GM_SB_CASES; i++) {
		bool sel = b->cases[i].selected;

		b->cases[i] = shapes[i];
		b->cases[i].selected = sel;
		any |= sel;
	}
	for (int i = 0; !any && i < GM_SB_CASES; i++)
		b->cases[i].selected = true;
	snprintf(b->dir, sizeof(b->dir), "/tmp/gemmd-socket-bench.XXXXXX");
	if (mkdtemp(b->dir) == NULL) {
		snprintf(msg, msglen, "mkdtemp: %s", strerror(errno));
		b->dir[0] = '\0';
		return -1;
	}
	if (gm_rawrate_make_certs(b->dir, &b->tls) != 0) {
		snprintf(msg, msglen, "no certificates (openssl missing?)");
		return -1;
	}
	if (b->url != NULL) {
		snprintf(b->ipc, sizeof(b->ipc), "%s", b->url);
		snprintf(b->tcp, sizeof(b->tcp), "%s", b->url);
		return 0;
	}
	snprintf(b->ipc, sizeof(b->ipc), "ipc://%s/gemmd.sock", b->dir);
	snprintf(b->tcp, sizeof(b->tcp), "tcp://127.0.0.1:%d", free_port());
	snprintf(b->tlsurl, sizeof(b->tlsurl), "tls+tcp://127.0.0.1:%d",
		 free_port());
	return start(b, msg, msglen);
}

void gm_sb_describe(gm_sb *b)
{
	struct utsname u;
	gemmd_client *cl;
	char *reply = NULL;
	const char *url = b->url ? b->url : b->ipc;

	uname(&u);
	printf("host %s, %ld cores, %.1f GiB; %d repetitions after a warm-up, "
	       "median\n",
	       u.nodename, sysconf(_SC_NPROCESSORS_ONLN),
	       (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) /
		   (1 << 30),
	       b->reps);
	if (gm_url_kind(url) != GM_URL_TLS && gemmd_open(url, NULL, &cl) == 0) {
		if (gemmd_ping(cl, &reply, 5000) == GM_OK)
			printf("gemmd: %s\n", reply);
		free(reply);
		gemmd_close(cl);
	}
	for (int i = 0; i < GM_SB_CASES; i++)
		if (b->cases[i].selected)
			printf("%-8s %s fp64 in one request\n",
			       b->cases[i].name, b->cases[i].label);
}

int gm_sb_close(gm_sb *b)
{
	char cmd[128];
	int status = 0;

	if (b->pid > 0) {
		kill(b->pid, SIGTERM);
		waitpid(b->pid, &status, 0);
		b->pid = 0;
	}
	if (b->dir[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", b->dir);
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ---- operands ---- */

static double *fill(size_t n, uint64_t seed)
{
	double *p = malloc(n * sizeof(*p));
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; p != NULL && i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (double)(x >> 11) / (double)(1ull << 53) * 2 - 1;
	}
	return p;
}

int gm_sb_prepare(gm_sb *b, gm_sb_case *c, char *msg, size_t msglen)
{
	size_t na = (size_t)c->m * c->k, nb = (size_t)c->k * c->n;

	(void)b;
	c->in = (uint64_t)GM_SB_JOBS * (na + nb) * 8;
	c->out = (uint64_t)GM_SB_JOBS * c->m * c->n * 8;
	c->a = fill(GM_SB_JOBS * na, 1);
	c->b = fill(GM_SB_JOBS * nb, 2);
	c->res = malloc(c->out);
	if (c->a == NULL || c->b == NULL || c->res == NULL) {
		snprintf(msg, msglen, "no memory for %.0f MiB",
			 (double)(c->in + c->out) / (1 << 20));
		gm_sb_release(c);
		return -1;
	}
	memset(c->res, 0xff, c->out); /* NaN, and faulted in */
	return 0;
}

void gm_sb_release(gm_sb_case *c)
{
	free(c->a);
	free(c->b);
	free(c->res);
	c->a = c->b = c->res = NULL;
}

/* ---- runs ---- */

/* Where a run's operands and results are: the case's buffers, or a
 * region holding A's, B's and the results back to back. */
struct place {
	const double *a, *b;
	double *res;
	gemmd_region *r;
	uint64_t ob, ores; /* offsets of B and of the results */
};

static uint64_t up(uint64_t n)
{
	return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

static void make_jobs(const gm_sb_case *c, const struct place *pl,
		      gemmd_job *jobs)
{
	size_t na = (size_t)c->m * c->k, nb = (size_t)c->k * c->n,
	       nr = (size_t)c->m * c->n;

	for (size_t i = 0; i < GM_SB_JOBS; i++) {
		gemmd_job *j = &jobs[i];

		*j = (gemmd_job){.dtype = GEMMD_FP64,
				 .m = c->m,
				 .n = c->n,
				 .k = c->k,
				 .alpha = 1};
		if (pl->r == NULL) {
			j->a = pl->a + i * na;
			j->b = pl->b + i * nb;
			j->out = pl->res + i * nr;
			continue;
		}
		j->a_ref = (gemmd_region_ref){pl->r, i * na * 8};
		j->b_ref = (gemmd_region_ref){pl->r, pl->ob + i * nb * 8};
		j->out_ref = (gemmd_region_ref){pl->r, pl->ores + i * nr * 8};
	}
}

/* Elements (0, 0) and (m-1, n-1) of every result, recomputed. */
static int check(const gm_sb_case *c, const struct place *pl, char *why,
		 size_t whylen)
{
	size_t na = (size_t)c->m * c->k, nb = (size_t)c->k * c->n,
	       nr = (size_t)c->m * c->n;

	for (size_t i = 0; i < GM_SB_JOBS; i++) {
		const double *a = pl->a + i * na, *bb = pl->b + i * nb;
		const double *r = pl->res + i * nr;

		for (int e = 0; e < 2; e++) {
			uint32_t row = e ? c->m - 1 : 0, col = e ? c->n - 1 : 0;
			double s = 0, mag = 0;

			for (uint32_t l = 0; l < c->k; l++) {
				s += a[(size_t)row * c->k + l] *
				     bb[(size_t)l * c->n + col];
				mag += fabs(a[(size_t)row * c->k + l] *
					    bb[(size_t)l * c->n + col]);
			}
			if (!(fabs(r[(size_t)row * c->n + col] - s) <=
			      1e-12 * (mag + 1))) {
				snprintf(why, whylen,
					 "job %zu: element %u,%u is %g, not %g",
					 i, row, col,
					 r[(size_t)row * c->n + col], s);
				return -1;
			}
		}
	}
	return 0;
}

static int open_path(gm_sb *b, int path, gemmd_client **cl)
{
	gemmd_open_opts o = {.connections = b->connections};
	const char *url = b->ipc;

	if (path == P_REGIONS || path == P_SOCKET)
		o.flags = GEMMD_OPEN_NO_SHM;
	if (path == P_TCP)
		url = b->tcp;
	if (path == P_TLS) {
		url = b->url ? b->url : b->tlsurl;
		o.tls_ca_file = b->tls.ca;
		o.tls_cert_file = b->tls.client_cert;
		o.tls_key_file = b->tls.client_key;
	}
	return gemmd_open(url, &o, cl);
}

/* A region with the case's inputs copied in (not timed). */
static int regions(gemmd_client *cl, const gm_sb_case *c, struct place *pl)
{
	uint64_t ina = (uint64_t)GM_SB_JOBS * c->m * c->k * 8;
	uint64_t inb = (uint64_t)GM_SB_JOBS * c->k * c->n * 8;
	int rv;

	pl->ob = up(ina);
	pl->ores = pl->ob + up(inb);
	if ((rv = gemmd_region_create(cl, pl->ores + up(c->out), &pl->r)))
		return rv;
	memcpy(gemmd_region_ptr(pl->r), c->a, ina);
	memcpy((char *)gemmd_region_ptr(pl->r) + pl->ob, c->b, inb);
	pl->a = gemmd_region_ptr(pl->r);
	pl->b = (const double *)((char *)gemmd_region_ptr(pl->r) + pl->ob);
	pl->res = (double *)((char *)gemmd_region_ptr(pl->r) + pl->ores);
	return GM_OK;
}

int gm_sb_run(gm_sb *b, gm_sb_case *c, int path, double *ms, char *why,
	      size_t whylen)
{
	struct place pl = {c->a, c->b, c->res, NULL, 0, 0};
	gemmd_job *jobs = calloc(GM_SB_JOBS, sizeof(*jobs));
	double *t = calloc((size_t)b->reps + 1, sizeof(*t));
	gemmd_client *cl = NULL;
	int rv, i, bad = -1;

	if (jobs == NULL || t == NULL) {
		rv = GM_ENOMEM;
		snprintf(why, whylen, "no memory");
		goto out;
	}
	if ((rv = open_path(b, path, &cl)) != GM_OK ||
	    (path == P_REGIONS && (rv = regions(cl, c, &pl)) != GM_OK)) {
		snprintf(why, whylen, "%s: %s", gemmd_errname(rv),
			 gemmd_last_error());
		goto out;
	}
	make_jobs(c, &pl, jobs);
	for (i = 0; i <= b->reps; i++) {
		double t0 = now_ms();

		rv = gemmd_submit(cl, jobs, GM_SB_JOBS, NULL, SUBMIT_MS);
		t[i] = now_ms() - t0;
		for (int j = 0; rv == GM_OK && j < GM_SB_JOBS; j++)
			if (jobs[j].status != GM_OK)
				bad = j;
		if (rv != GM_OK || bad >= 0) {
			snprintf(why, whylen, "%s: %s",
				 gemmd_errname(rv ? rv : jobs[bad].status),
				 rv ? gemmd_last_error() : jobs[bad].message);
			rv = rv ? rv : jobs[bad].status;
			goto out;
		}
	}
	if ((rv = check(c, &pl, why, whylen)) != 0)
		goto out;
	qsort(t + 1, (size_t)b->reps, sizeof(*t), cmp);
	*ms = b->reps % 2 ? t[1 + b->reps / 2]
			  : (t[b->reps / 2] + t[1 + b->reps / 2]) / 2;
out:
	if (pl.r != NULL)
		gemmd_region_release(pl.r);
	gemmd_close(cl);
	free(jobs);
	free(t);
	return rv == GM_OK ? 0 : -1;
}
