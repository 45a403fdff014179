/*
 * itest.c - helpers of the C integration tests; see itest.h.
 */
#include "itest.h"

#include "gm_proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARGS_MAX 48

double it_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int it_free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int it_setup(it_daemon *d)
{
	int port = it_free_port();

	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/gemmd-it.XXXXXX");
	if (port < 0 || mkdtemp(d->dir) == NULL)
		return -1;
	snprintf(d->path, sizeof(d->path), "%s/run/gemmd.sock", d->dir);
	snprintf(d->ipc, sizeof(d->ipc), "ipc://%s", d->path);
	snprintf(d->tcp, sizeof(d->tcp), "tcp://127.0.0.1:%d", port);
	snprintf(d->log, sizeof(d->log), "%s/gemmd.log", d->dir);
	return 0;
}

static pid_t spawn(const char *const *argv, const char *errpath, int append)
{
	pid_t pid = fork();
	int fd;

	if (pid != 0)
		return pid;
	/* A test that fails half-way leaves no daemon behind. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	fd = open(errpath, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC),
		  0600);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(127);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

static int exit_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int it_start(it_daemon *d, const char *const *args)
{
	const char *argv[ARGS_MAX];
	gemmd_client *c = NULL;
	int argc = 0, st;

	argv[argc++] = getenv("GEMMD");
	argv[argc++] = "--engine=cpu";
	argv[argc++] = "--listen";
	argv[argc++] = d->ipc;
	argv[argc++] = "--listen";
	argv[argc++] = d->tcp;
	for (int i = 0; args != NULL && args[i] != NULL && argc < ARGS_MAX - 1;
	     i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	if (argv[0] == NULL || (d->pid = spawn(argv, d->log, 1)) < 0)
		return -1;
	if (gemmd_open(d->tcp, &(gemmd_open_opts){.flags = GEMMD_OPEN_LAZY},
		       &c) != GM_OK)
		goto fail;
	for (int i = 0; i < 100; i++) {
		if (gemmd_ping(c, NULL, 200) == GM_OK) {
			gemmd_close(c);
			return 0;
		}
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			break;
		}
		usleep(20000);
	}
fail:
	gemmd_close(c);
	if (d->pid > 0)
		it_kill(d);
	return -1;
}

int it_stop(it_daemon *d)
{
	int st;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, SIGTERM);
	if (waitpid(d->pid, &st, 0) != d->pid)
		return -1;
	d->pid = 0;
	return exit_status(st);
}

void it_kill(it_daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	d->pid = 0;
}

void it_cleanup(it_daemon *d)
{
	char cmd[128];

	it_kill(d);
	if (d->dir[0] == '\0')
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", d->dir);
	d->dir[0] = '\0';
}

/* Reads at most len - 1 bytes of the file at path into buf. */
static void read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

int it_run_gemmd(const char *const *args, char *err, size_t errlen)
{
	const char *argv[ARGS_MAX];
	char path[] = "/tmp/gemmd-it-err.XXXXXX";
	int argc = 0, st = 0, fd = mkstemp(path);
	pid_t pid;

	if (fd < 0)
		return -1;
	close(fd);
	argv[argc++] = getenv("GEMMD");
	argv[argc++] = "--engine=cpu";
	for (int i = 0; args != NULL && args[i] != NULL && argc < ARGS_MAX - 1;
	     i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	if (argv[0] == NULL || (pid = spawn(argv, path, 0)) < 0) {
		unlink(path);
		return -1;
	}
	for (int i = 0; i < 1000 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(pid, &st, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		st = -1;
	}
	read_text(path, err, errlen);
	unlink(path);
	return st < 0 ? -1 : exit_status(st);
}

int it_file_has(const char *path, const char *text)
{
	static char buf[1 << 16];

	read_text(path, buf, sizeof(buf));
	return strstr(buf, text) != NULL;
}

cJSON *it_stats(gemmd_client *c)
{
	char *doc = NULL;
	cJSON *root, *stats;

	if (gemmd_stats(c, &doc, 5000) != GM_OK)
		return NULL;
	root = cJSON_Parse(doc);
	free(doc);
	stats = cJSON_DetachItemFromObjectCaseSensitive(root, "stats");
	cJSON_Delete(root);
	return stats;
}

double it_num(const cJSON *stats, const char *path)
{
	char key[64];
	const cJSON *o = stats;

	while (o != NULL && *path != '\0') {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + (path[n] == '.');
	}
	return cJSON_IsNumber(o) ? o->valuedouble : -1;
}

double it_stat(gemmd_client *c, const char *path)
{
	cJSON *s = it_stats(c);
	double v = it_num(s, path);

	cJSON_Delete(s);
	return v;
}

int it_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t k = write(fd, b, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int it_closed_by_peer(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	double end = it_now_us() + ms * 1e3;
	char buf[256];

	while (it_now_us() < end) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		if (read(fd, buf, sizeof(buf)) <= 0)
			return 1;
	}
	return 0;
}

static int connect_url(const char *url, int *ipc)
{
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	struct sockaddr_in si = {.sin_family = AF_INET};
	char host[64];
	int fd, port;

	*ipc = strncmp(url, "ipc://", 6) == 0;
	if (*ipc) {
		snprintf(su.sun_path, sizeof(su.sun_path), "%s", url + 6);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 &&
		    connect(fd, (struct sockaddr *)&su, sizeof(su)) == 0)
			return fd;
	} else {
		if (sscanf(url, "tcp://%63[^:]:%d", host, &port) != 2 ||
		    inet_pton(AF_INET, host, &si.sin_addr) != 1)
			return -1;
		si.sin_port = htons((uint16_t)port);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 &&
		    connect(fd, (struct sockaddr *)&si, sizeof(si)) == 0)
			return fd;
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

int it_sp_connect(const char *url, int *ipc)
{
	static const uint8_t hello[8] = {0, 'S', 'P', 0, 0x00, 0x30, 0, 0};
	int fd = connect_url(url, ipc);

	if (fd >= 0 && it_write_all(fd, hello, sizeof(hello)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int it_sp_frame(int fd, int ipc, uint64_t len)
{
	uint8_t h[9];
	int n = 0;

	if (ipc)
		h[n++] = 0x01;
	for (int i = 7; i >= 0; i--)
		h[n++] = (uint8_t)(len >> (8 * i));
	return it_write_all(fd, h, (size_t)n);
}

long it_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		getrlimit(RLIMIT_NOFILE, &rl);
	return rl.rlim_cur == RLIM_INFINITY ? 1L << 20 : (long)rl.rlim_cur;
}

void it_job(gemmd_job *j, uint32_t m, uint32_t n, uint32_t k, unsigned seed)
{
	size_t na = (size_t)m * k, nb = (size_t)k * n;
	double *a = malloc(na * sizeof(double)),
	       *b = malloc(nb * sizeof(double));
	void *out = malloc((size_t)m * n * sizeof(double));

	for (size_t i = 0; a != NULL && i < na; i++)
		a[i] = (double)rand_r(&seed) / RAND_MAX * 2 - 1;
	for (size_t i = 0; b != NULL && i < nb; i++)
		b[i] = (double)rand_r(&seed) / RAND_MAX * 2 - 1;
	if (out != NULL)
		memset(out, 0xA5, (size_t)m * n * sizeof(double));
	*j = (gemmd_job){.dtype = GEMMD_FP64,
			 .layout = GEMMD_ROW_MAJOR,
			 .m = m,
			 .n = n,
			 .k = k,
			 .alpha = 1.0,
			 .a = a,
			 .b = b,
			 .out = out};
}

void it_job_free(gemmd_job *j)
{
	free((void *)j->a);
	free((void *)j->b);
	free(j->out);
}

int it_job_ok(const gemmd_job *j)
{
	const double *a = j->a, *b = j->b, *c = j->out;

	if (j->status != GM_OK)
		return 0;
	for (size_t r = 0; r < j->m; r++)
		for (size_t col = 0; col < j->n; col++) {
			double s = 0, mag = 0;

			for (size_t p = 0; p < j->k; p++) {
				s += a[r * j->k + p] * b[p * j->n + col];
				mag +=
				    fabs(a[r * j->k + p] * b[p * j->n + col]);
			}
			if (fabs(c[r * j->n + col] - s) >
			    4e-16 * (double)j->k * mag + 1e-300)
				return 0;
		}
	return 1;
}

int it_job_untouched(const gemmd_job *j)
{
	const uint8_t *p = j->out;

	for (size_t i = 0; i < (size_t)j->m * j->n * sizeof(double); i++)
		if (p[i] != 0xA5)
			return 0;
	return 1;
}

uint8_t *it_request(const gemmd_job *j, uint64_t id, size_t head, size_t *len)
{
	gm_job_desc jd = {.dtype = GM_FP64,
			  .m = j->m,
			  .n = j->n,
			  .k = j->k,
			  .alpha = j->alpha};
	gm_batch bt = {.priority = GM_BATCH_PRIO_DEFAULT};
	size_t na = (size_t)j->m * j->k * 8, nb = (size_t)j->k * j->n * 8;
	size_t msg = GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE + na + nb;
	uint8_t *p = malloc(head + msg), *q;

	if (p == NULL)
		return NULL;
	q = p + head;
	gm_proto_put_hdr(q, GM_MSG_GEMM, id, 1);
	gm_proto_put_batch(q + GM_HDR_SIZE, &bt);
	gm_proto_put_job(q + GM_HDR_SIZE + GM_BATCH_SIZE, &jd);
	q += GM_HDR_SIZE + GM_BATCH_SIZE + GM_JOB_HDR_SIZE;
	memcpy(q, j->a, na);
	memcpy(q + na, j->b, nb);
	*len = head + msg;
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double it_quantile(double *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)ceil(q * (double)n);
	return v[i > 0 ? i - 1 : 0];
}
