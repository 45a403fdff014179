/*
 * gm_log.h - the daemon's one logging macro.
 *
 * GM_LOG checks the level before formatting anything, and saves errno
 * first so "%s", strerror(saved) in a message reports the caller's error,
 * not one caused by logging. Lines go to stderr, in the form "log_format"
 * names (enum gm_log_format):
 *   text     2026-11-21T23:59:01.123Z gemmd[pid] LEVEL message
 *   journal  <6>message          (a syslog priority; journald stamps it)
 *   json     {"ts":"...","pid":N,"level":"info","job":"7.0","msg":"..."}
 * "auto", the default, is journal when stderr is the systemd journal
 * ($JOURNAL_STREAM), else text. Job-related lines carry the job,
 * "job REQID.INDEX: " in text and journal lines, a "job" member in JSON
 * (GM_LOGJ). Thread-safe: one write(2) per line.
 */
#ifndef GM_LOG_H
#define GM_LOG_H

#include <errno.h>

#include "gm_config.h" /* enum gm_log_level */

/* Lines above this level are not written; "log_level" sets it. */
extern int gm_log_level;

/* Sets the level and the form of lines (enum gm_log_format; auto is
 * resolved here, once). Call before any thread logs. */
void gm_log_setup(int level, int format);

/* The form lines take: GM_LOG_FORMAT_TEXT, _JOURNAL or _JSON. */
int gm_log_format(void);

/* Formats and writes one line; use GM_LOG and GM_LOGJ, not these. */
void gm_log_write(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gm_log_write_job(int level, unsigned long long id, unsigned idx,
		      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define GM_LOG(level, ...)                                  \
	do {                                                \
		if ((level) <= gm_log_level) {              \
			int gm_log_saved_errno_ = errno;    \
			gm_log_write((level), __VA_ARGS__); \
			errno = gm_log_saved_errno_;        \
		}                                           \
	} while (0)

/* A job-related line. */
#define GM_LOGJ(level, id, idx, ...)                                        \
	do {                                                                \
		if ((level) <= gm_log_level) {                              \
			int gm_log_saved_errno_ = errno;                    \
			gm_log_write_job((level), (unsigned long long)(id), \
					 (unsigned)(idx), __VA_ARGS__);     \
			errno = gm_log_saved_errno_;                        \
		}                                                           \
	} while (0)

#endif
