/*
 * itest_core.c - helpers of every C integration test; see itest_core.h.
 */
#include "itest_core.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

/* Ports below the kernel's ephemeral range: a port the kernel handed out
 * for bind(port 0) may be taken a moment later as the local end of
 * another process's outgoing connection (tests make thousands), and the
 * gemmd meant to listen there then fails to start. Below the range no
 * outgoing connection takes it; the port is picked at random there and
 * checked free on every address. */
int it_free_port(void)
{
	static unsigned seq;
	unsigned low = 32768;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%u", &low) != 1 || low < 2048)
			low = 32768;
		fclose(f);
	}
	for (int tries = 0; tries < 1000; tries++) {
		struct sockaddr_in sa = {.sin_family = AF_INET};
		unsigned r =
		    (unsigned)getpid() * 7919u +
		    __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED) * 104729u +
		    (unsigned)tries;
		int port = (int)(1024 + r % (low - 1024));
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

		if (fd < 0)
			return -1;
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		sa.sin_port = htons((uint16_t)port);
		ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return port;
	}
	return -1;
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

static pid_t spawn(const char *const *argv, const char *errpath, int append,
		   long nofile)
{
	struct rlimit rl = {(rlim_t)nofile, (rlim_t)nofile};
	pid_t pid = fork();
	int fd;

	if (pid != 0)
		return pid;
	/* A test that fails half-way leaves no daemon behind. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (nofile != 0 && setrlimit(RLIMIT_NOFILE, &rl) != 0)
		_exit(126);
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

/* Whether gemmd at url answers a ping within ms. */
/* Whether gemmd at url answers a ping saying it is ready: the tests
 * start on a warm engine (the CPU engine sizes its pieces first, which a
 * loaded host can make take a second), as a client that waits for
 * /readyz would. */
static int pings(const char *url, int ms)
{
	int fd = rc_connect(url, NULL), rv;
	char *doc = NULL;

	if (fd < 0)
		return 0;
	rv = rc_ctrl(fd, 1, "{\"op\":\"ping\"}", &doc, ms);
	close(fd);
	rv = rv == 0 && doc != NULL && strstr(doc, "\"ready\":true") != NULL;
	free(doc);
	return rv;
}

int it_start(it_daemon *d, const char *const *args)
{
	const char *argv[ARGS_MAX];
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
	if (argv[0] == NULL || (d->pid = spawn(argv, d->log, 1, d->nofile)) < 0)
		return -1;
	for (int i = 0; i < 250; i++) {
		if (pings(d->tcp, 200))
			return 0;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			return -1;
		}
		usleep(20000);
	}
	it_kill(d);
	return -1;
}

/* Copies the last lines of d's log to stderr, after why. */
static void tail_log(const it_daemon *d, const char *why)
{
	char line[1024], *ring[40] = {0};
	unsigned n = 0;
	FILE *f = fopen(d->log, "r");

	fprintf(stderr, "%s; the end of %s:\n", why, d->log);
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		free(ring[n % 40]);
		ring[n++ % 40] = strdup(line);
	}
	fclose(f);
	for (unsigned i = n > 40 ? n - 40 : 0; i < n; i++) {
		fputs(ring[i % 40] ? ring[i % 40] : "", stderr);
		free(ring[i % 40]);
		ring[i % 40] = NULL;
	}
}

int it_start_metrics(it_daemon *d, int *port, const char *const *args)
{
	const char *argv[ARGS_MAX];
	char set[64];
	int n = 0;

	if (it_setup(d) != 0 || (*port = it_free_port()) < 0)
		return -1;
	snprintf(set, sizeof(set), "metrics_listen=127.0.0.1:%d", *port);
	argv[n++] = "--set";
	argv[n++] = set;
	for (int i = 0; args != NULL && args[i] != NULL && n < ARGS_MAX - 8;
	     i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return it_start(d, argv);
}

int it_stop(it_daemon *d)
{
	double until = it_now_us() + IT_STOP_MS * 1e3;
	pid_t w;
	int st;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, SIGTERM);
	while ((w = waitpid(d->pid, &st, WNOHANG)) == 0 && it_now_us() < until)
		usleep(2000);
	if (w != d->pid) {
		/* A stop that hangs is a bug of gemmd's: say where it was. */
		tail_log(d, "gemmd did not exit within IT_STOP_MS of SIGTERM");
		it_kill(d);
		return -1;
	}
	d->pid = 0;
	if (exit_status(st) != 0)
		tail_log(d, "gemmd did not exit 0");
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
	if (argv[0] == NULL || (pid = spawn(argv, path, 0, 0)) < 0) {
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

double it_num(const cJSON *stats, const char *path)
{
	char key[64];
	const cJSON *o = stats;

	while (o != NULL && *path != '\0') {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(key))
				     : cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + (path[n] == '.');
	}
	return cJSON_IsNumber(o) ? o->valuedouble : -1;
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

cJSON *it_rstats(const it_daemon *d)
{
	int fd = rc_connect(d->tcp, NULL);
	char *doc = NULL;
	cJSON *root, *stats;

	if (fd < 0)
		return NULL;
	if (rc_ctrl(fd, 2, "{\"op\":\"stats\"}", &doc, 5000) != 0) {
		close(fd);
		return NULL;
	}
	close(fd);
	root = cJSON_Parse(doc);
	free(doc);
	stats = cJSON_DetachItemFromObjectCaseSensitive(root, "stats");
	cJSON_Delete(root);
	return stats;
}

double it_rstat(const it_daemon *d, const char *path)
{
	cJSON *s = it_rstats(d);
	double v = it_num(s, path);

	cJSON_Delete(s);
	return v;
}

static double wait_stat(const it_daemon *d, const char *path, double want,
			int ms, bool at_least)
{
	double end = it_now_us() + ms * 1e3, v;

	while ((v = it_rstat(d, path)) != want && !(at_least && v > want) &&
	       it_now_us() < end)
		usleep(10000);
	return v;
}

double it_wait_stat(const it_daemon *d, const char *path, double want, int ms)
{
	return wait_stat(d, path, want, ms, false);
}

double it_wait_stat_min(const it_daemon *d, const char *path, double want,
			int ms)
{
	return wait_stat(d, path, want, ms, true);
}

int it_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if ((dir = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL)
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

int it_rss_tells(void)
{
#ifdef __SANITIZE_ADDRESS__
	return 0; /* gemmd is built as this test is */
#else
	return getenv("ASAN_OPTIONS") == NULL;
#endif
}

long it_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

double it_cpu_ms(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* After the command's closing parenthesis: fields 3 on; utime and
	 * stime are 14 and 15. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		   &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}
