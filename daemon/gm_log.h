/*
 * gm_log.h - the daemon's one logging macro.
 *
 * GM_LOG checks the level before formatting anything, and saves errno
 * first so "%s", strerror(saved) in a message reports the caller's error,
 * not one caused by logging. Lines go to stderr as
 *   2026-11-21T23:59:01.123Z gemmd[pid] LEVEL message
 * which journald and a terminal both read well. Job-related lines carry
 * "job REQID.INDEX" (GM_LOGJ). Thread-safe: one write(2) per line.
 */
#ifndef GM_LOG_H
#define GM_LOG_H

#include <errno.h>

enum gm_log_level {
	GM_LOG_ERROR = 0,
	GM_LOG_WARN = 1,
	GM_LOG_INFO = 2,
	GM_LOG_DEBUG = 3,
};

extern int gm_log_level;

/* Formats and writes one line; use GM_LOG, not this. */
void gm_log_write(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Level for "error", "warn", "info", "debug"; -1 for anything else. */
int gm_log_parse_level(const char *name);
const char *gm_log_level_name(int level);

#define GM_LOG(level, ...)                                  \
	do {                                                \
		if ((level) <= gm_log_level) {              \
			int gm_log_saved_errno_ = errno;    \
			gm_log_write((level), __VA_ARGS__); \
			errno = gm_log_saved_errno_;        \
		}                                           \
	} while (0)

/* A job-related line: "job ID.IDX: message". */
#define GM_LOGJ(level, id, idx, fmt, ...)                            \
	GM_LOG(level, "job %llu.%u: " fmt, (unsigned long long)(id), \
	       (unsigned)(idx), __VA_ARGS__)

#endif
