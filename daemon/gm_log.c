/*
 * gm_log.c - log lines on stderr, one write(2) each, in the form the
 * reader wants: with a timestamp on a terminal or in a file, with a
 * "<N>" syslog priority and no timestamp when stderr is the systemd
 * journal (it stamps lines itself and takes the priority from the
 * prefix, so `journalctl -p err` finds errors), or as one JSON object a
 * line for log shippers.
 */
#include "gm_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_ 1024

int gm_log_level = GM_LOG_INFO;
static int log_format = GM_LOG_FORMAT_TEXT;

/* syslog priorities of our levels: err, warning, info, debug. */
static const int priority[] = {3, 4, 6, 7};

/* Whether stderr is the stream systemd connected to the journal: it says
 * so in JOURNAL_STREAM as "device:inode" of that stream. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(STDERR_FILENO, &st) != 0)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void gm_log_setup(int level, int format)
{
	gm_log_level = level;
	if (format == GM_LOG_FORMAT_AUTO)
		format = stderr_is_journal() ? GM_LOG_FORMAT_JOURNAL
					     : GM_LOG_FORMAT_TEXT;
	log_format = format;
}

int gm_log_format(void)
{
	return log_format;
}

/* Appends s to out (room bytes at *n) as the inside of a JSON string. */
static void put_json_string(char *out, size_t room, size_t *n, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	for (; *s != '\0' && *n + 7 < room; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[(*n)++] = '\\';
			out[(*n)++] = (char)c;
		} else if (c < 0x20) {
			*n += (size_t)snprintf(out + *n, room - *n, "\\u00%c%c",
					       hex[c >> 4], hex[c & 15]);
		} else {
			out[(*n)++] = (char)c;
		}
	}
}

static size_t timestamp(char *out, size_t room)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(out, room, "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(out + n, room - n, ".%03ldZ",
			      ts.tv_nsec / 1000000);
	return n;
}

/* The line for message text (job: "ID.IDX" or NULL). */
static size_t format_line(char *line, size_t room, int level, const char *job,
			  const char *text)
{
	const char *name = gm_config_log_level_name(level);
	char ts[40];
	size_t n = 0;

	switch (log_format) {
	case GM_LOG_FORMAT_JOURNAL:
		n = (size_t)snprintf(line, room, "<%d>%s%s%s", priority[level],
				     job ? "job " : "", job ? job : "",
				     job ? ": " : "");
		break;
	case GM_LOG_FORMAT_JSON:
		timestamp(ts, sizeof(ts));
		n = (size_t)snprintf(line, room,
				     "{\"ts\":\"%s\",\"pid\":%d,\"level\":"
				     "\"%s\",",
				     ts, (int)getpid(), name);
		if (job != NULL)
			n += (size_t)snprintf(line + n, room - n,
					      "\"job\":\"%s\",", job);
		n += (size_t)snprintf(line + n, room - n, "\"msg\":\"");
		put_json_string(line, room, &n, text);
		n += (size_t)snprintf(line + n, room - n, "\"}");
		return n < room ? n : room - 1;
	default:
		n = timestamp(line, room);
		n += (size_t)snprintf(
		    line + n, room - n, " gemmd[%d] %s %s%s%s", (int)getpid(),
		    name, job ? "job " : "", job ? job : "", job ? ": " : "");
	}
	if (n < room)
		n += (size_t)snprintf(line + n, room - n, "%s", text);
	return n < room ? n : room - 1;
}

static void vwrite_line(int level, const char *job, const char *fmt, va_list ap)
{
	char text[LINE_MAX_], line[LINE_MAX_ + 256];
	size_t n;

	vsnprintf(text, sizeof(text), fmt, ap);
	n = format_line(line, sizeof(line) - 1, level, job, text);
	line[n++] = '\n';
	/* One write per line so lines from several threads never interleave;
	 * a failed log write has nowhere better to go. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

void gm_log_write(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwrite_line(level, NULL, fmt, ap);
	va_end(ap);
}

void gm_log_write_job(int level, unsigned long long id, unsigned idx,
		      const char *fmt, ...)
{
	char job[48];
	va_list ap;

	snprintf(job, sizeof(job), "%llu.%u", id, idx);
	va_start(ap, fmt);
	vwrite_line(level, job, fmt, ap);
	va_end(ap);
}
