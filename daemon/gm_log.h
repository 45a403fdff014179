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

#include "gm_config.h" /* enum gm_log_level */

/* Lines above this level are not written; "log_level" sets it. */
extern int gm_log_level;

/* Formats and writes one line; use GM_LOG, not this. */
void gm_log_write(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

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
