/*
 * itest.c - the daemon fixture's gemmd: started on temporary sockets
 * with the engine, arguments and environment a test names, waited for
 * until ready, stopped, killed, reaped, its log read; see itest.h.
 */
#include "itest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define ARGS_MAX  48
#define ENV_FAULT "GEMMD_INJECT_FAULT="

extern char **environ;

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

/* gemmd's environment: ours without GEMMD_INJECT_FAULT, with it set to
 * fault when not NULL. Built before fork: the child may only exec (the
 * CPU engine's and nng's threads run in this process). */
static char **child_env(const char *fault)
{
	static char var[64];
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + 2, sizeof(*env))) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], ENV_FAULT, strlen(ENV_FAULT)) != 0)
			env[k++] = environ[i];
	if (fault != NULL) {
		snprintf(var, sizeof(var), ENV_FAULT "%s", fault);
		env[k++] = var;
	}
	return env;
}

static pid_t spawn(const char *const *argv, const char *errpath, int append,
		   long nofile, const char *fault)
{
	struct rlimit rl = {(rlim_t)nofile, (rlim_t)nofile};
	char **env = child_env(fault);
	pid_t pid;
	int fd;

	if (env == NULL || (pid = fork()) != 0) {
		free(env);
		return env == NULL ? -1 : pid;
	}
	/* A test that fails half-way leaves no daemon behind. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (nofile != 0 && setrlimit(RLIMIT_NOFILE, &rl) != 0)
		_exit(126);
	fd = open(errpath, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC),
		  0600);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(127);
	execve(argv[0], (char *const *)argv, env);
	_exit(127);
}

static int exit_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Whether gemmd at url answers a ping saying it is ready (or, with
 * answer_only, at all): the tests start on a warm engine (the CPU
 * engine sizes its pieces first, which a loaded host can make take a
 * second), as a client that waits for /readyz would. */
static int pings(const char *url, int ms, bool answer_only)
{
	int fd = rc_connect(url, NULL), rv;
	char *doc = NULL;

	if (fd < 0)
		return 0;
	rv = rc_ctrl(fd, 1, "{\"op\":\"ping\"}", &doc, ms);
	close(fd);
	rv = rv == 0 && doc != NULL &&
	     (answer_only || strstr(doc, "\"ready\":true") != NULL);
	free(doc);
	return rv;
}

int it_start(it_daemon *d, const char *const *args)
{
	const char *argv[ARGS_MAX];
	char engine[32];
	double until = it_now_us() + d->start_ms * 1e3;
	int argc = 0, st;

	snprintf(engine, sizeof(engine), "--engine=%s",
		 d->engine != NULL ? d->engine : "cpu");
	argv[argc++] = getenv("GEMMD");
	argv[argc++] = engine;
	argv[argc++] = "--listen";
	argv[argc++] = d->ipc;
	argv[argc++] = "--listen";
	argv[argc++] = d->tcp;
	for (int i = 0; args != NULL && args[i] != NULL && argc < ARGS_MAX - 1;
	     i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	if (argv[0] == NULL ||
	    (d->pid = spawn(argv, d->log, 1, d->nofile, d->fault)) < 0)
		return -1;
	for (int i = 0; i < 250 || it_now_us() < until; i++) {
		if (pings(d->tcp, 200, d->answer_only))
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

int it_launch(it_daemon *d, const char *const *args)
{
	return it_setup(d) == 0 ? it_start(d, args) : -1;
}

void it_tail_log(const it_daemon *d, const char *why)
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
		it_tail_log(d,
			    "gemmd did not exit within IT_STOP_MS of SIGTERM");
		it_kill(d);
		return -1;
	}
	d->pid = 0;
	if (exit_status(st) != 0)
		it_tail_log(d, "gemmd did not exit 0");
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

int it_wait_exit(it_daemon *d, int ms, double *took_ms)
{
	double t0 = it_now_us();
	pid_t w;
	int st;

	if (d->pid <= 0)
		return -1;
	while ((w = waitpid(d->pid, &st, WNOHANG)) == 0 &&
	       it_now_us() - t0 <= ms * 1e3)
		usleep(2000);
	if (took_ms != NULL)
		*took_ms = (it_now_us() - t0) / 1e3;
	if (w != d->pid)
		return -1;
	d->pid = 0;
	return exit_status(st);
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

int it_finish(it_daemon *d)
{
	int st = it_stop(d);

	it_cleanup(d);
	return st;
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
	if (argv[0] == NULL || (pid = spawn(argv, path, 0, 0, NULL)) < 0) {
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

int it_run_setup(const struct CMUnitTest *tests, size_t n,
		 int (*setup)(void **state))
{
	if (getenv("GEMMD") == NULL) {
		fprintf(stderr, "GEMMD is not set\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	return _cmocka_run_group_tests("tests", tests, n, setup, NULL);
}

int it_run(const struct CMUnitTest *tests, size_t n)
{
	return it_run_setup(tests, n, NULL);
}
