/* gm_log.c - timestamped log lines on stderr, one write(2) each. */
#include "gm_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int gm_log_level = GM_LOG_INFO;

void gm_log_write(int level, const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	size_t n;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n,
			      ".%03ldZ gemmd[%d] %s ", ts.tv_nsec / 1000000,
			      (int)getpid(), gm_config_log_level_name(level));
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so lines from several threads never interleave;
	 * a failed log write has nowhere better to go. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
