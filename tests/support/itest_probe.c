/*
 * itest_probe.c - what the tests read of a running gemmd and of the
 * machine: stats by key over raw frames, its process in /proc, the
 * descriptor limit, clocks and quantiles; see itest.h.
 */
#include "itest.h"

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double it_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
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
