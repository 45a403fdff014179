/*
 * gm_procstat.c - the process's own counters from /proc; see
 * gm_procstat.h.
 */
#include "gm_procstat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* utime, stime and starttime: fields 14, 15 and 22 of /proc/self/stat,
 * counted after the command name, which may hold spaces and parentheses
 * (so from the last ')'). */
static void read_stat(gm_procstat *p, double ticks, double boot_s)
{
	char buf[1024], *q;
	unsigned long long ut, st, start;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (f == NULL)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((q = strrchr(buf, ')')) == NULL ||
	    sscanf(q + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
		   "%*d %*d %*d %*d %*d %*d %llu",
		   &ut, &st, &start) != 3)
		return;
	p->cpu_seconds = (double)(ut + st) / ticks;
	if (boot_s > 0)
		p->start_time_s = boot_s + (double)start / ticks;
}

/* "btime" of /proc/stat: when the system booted, since the epoch. */
static double boot_time(void)
{
	char line[256];
	double bt = -1;
	FILE *f = fopen("/proc/stat", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "btime %lf", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

static void read_status(gm_procstat *p)
{
	char line[256];
	double kb;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "VmRSS: %lf kB", &kb) == 1)
			p->resident_bytes = kb * 1024;
		else if (sscanf(line, "VmSize: %lf kB", &kb) == 1)
			p->virtual_bytes = kb * 1024;
	}
	fclose(f);
}

static double count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	double n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

void gm_procstat_read(gm_procstat *p)
{
	long ticks = sysconf(_SC_CLK_TCK);
	struct rlimit rl;

	p->cpu_seconds = p->resident_bytes = p->virtual_bytes = -1;
	p->open_fds = p->max_fds = p->start_time_s = -1;
	read_stat(p, ticks > 0 ? (double)ticks : 100, boot_time());
	read_status(p);
	p->open_fds = count_fds();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		p->max_fds =
		    rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur;
}
