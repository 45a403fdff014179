/*
 * gm_procstat.h - what the kernel knows of this process, for the
 * standard process_* metrics every Prometheus exporter gives: CPU time,
 * memory, descriptors and their limit, start time. Read from /proc on
 * Linux; fields that cannot be read are negative. Any thread.
 */
#ifndef GM_PROCSTAT_H
#define GM_PROCSTAT_H

typedef struct gm_procstat {
	double cpu_seconds;    /* user + system */
	double resident_bytes; /* VmRSS */
	double virtual_bytes;  /* VmSize */
	double open_fds;       /* entries of /proc/self/fd */
	double max_fds;	       /* RLIMIT_NOFILE, soft */
	double start_time_s;   /* since the epoch */
} gm_procstat;

/* Fills p; never fails as a whole. */
void gm_procstat_read(gm_procstat *p);

#endif
