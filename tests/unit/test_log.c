/*
 * test_log.c - unit tests for daemon/gm_log: each form of line (text,
 * journal, JSON) written to a file standing in for stderr, the level
 * filter, job lines, JSON escaping, and "auto" choosing the journal form
 * only when $JOURNAL_STREAM names the stream stderr is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_log.h"

static char path[] = "/tmp/gemmd-test-log.XXXXXX";
static int saved_stderr = -1;

/* Points stderr at a fresh empty file and sets the log up. */
static void capture(int level, int format)
{
	int fd;

	if (saved_stderr < 0)
		saved_stderr = dup(STDERR_FILENO);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
	gm_log_setup(level, format);
}

/* Gives stderr back and returns what was written (static). */
static const char *captured(void)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	dup2(saved_stderr, STDERR_FILENO);
	unlink(path);
	memcpy(path + strlen(path) - 6, "XXXXXX", 6);
	return buf;
}

static void test_text(void **state)
{
	const char *out;
	char want[64];

	(void)state;
	capture(GM_LOG_INFO, GM_LOG_FORMAT_TEXT);
	GM_LOG(GM_LOG_WARN, "pool %d%% full", 95);
	GM_LOG(GM_LOG_DEBUG, "not written");
	GM_LOGJ(GM_LOG_INFO, 12, 3, "failed: %s", "EDIM");
	out = captured();
	/* 2026-11-24T20:53:01.123Z gemmd[PID] warn pool 95% full */
	assert_int_equal(out[4], '-');
	assert_int_equal(out[10], 'T');
	assert_int_equal(out[23], 'Z');
	snprintf(want, sizeof(want), " gemmd[%d] warn pool 95%% full\n",
		 (int)getpid());
	assert_non_null(strstr(out, want));
	assert_null(strstr(out, "not written"));
	assert_non_null(strstr(out, " info job 12.3: failed: EDIM\n"));
}

static void test_journal(void **state)
{
	const char *out;

	(void)state;
	capture(GM_LOG_DEBUG, GM_LOG_FORMAT_JOURNAL);
	GM_LOG(GM_LOG_ERROR, "GPU fault");
	GM_LOG(GM_LOG_WARN, "plain TCP");
	GM_LOGJ(GM_LOG_INFO, 7, 0, "failed: %s", "ETOOBIG");
	GM_LOG(GM_LOG_DEBUG, "region 5 released");
	out = captured();
	assert_string_equal(out, "<3>GPU fault\n<4>plain TCP\n"
				 "<6>job 7.0: failed: ETOOBIG\n"
				 "<7>region 5 released\n");
}

static void test_json(void **state)
{
	const char *out, *line2;
	char want[64];

	(void)state;
	capture(GM_LOG_INFO, GM_LOG_FORMAT_JSON);
	GM_LOG(GM_LOG_INFO, "a \"quoted\" word\tand a \\ and %c", 1);
	GM_LOGJ(GM_LOG_ERROR, 9, 2, "%s", "no memory");
	out = captured();
	snprintf(want, sizeof(want), "{\"ts\":\"");
	assert_memory_equal(out, want, strlen(want));
	snprintf(want, sizeof(want), "\",\"pid\":%d,\"level\":\"info\",",
		 (int)getpid());
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "\"msg\":\"a \\\"quoted\\\" word\\u0009"
				    "and a \\\\ and \\u0001\"}\n"));
	line2 = strchr(out, '\n') + 1;
	assert_non_null(strstr(line2, "\"level\":\"error\",\"job\":\"9.2\","
				      "\"msg\":\"no memory\"}\n"));
	assert_int_equal(strchr(line2, '\n')[1], '\0');
}

static void test_auto(void **state)
{
	struct stat st;
	char js[64];

	(void)state;
	unsetenv("JOURNAL_STREAM");
	capture(GM_LOG_INFO, GM_LOG_FORMAT_AUTO);
	assert_int_equal(gm_log_format(), GM_LOG_FORMAT_TEXT);
	/* Another stream's device and inode: not the journal. */
	setenv("JOURNAL_STREAM", "1:2", 1);
	gm_log_setup(GM_LOG_INFO, GM_LOG_FORMAT_AUTO);
	assert_int_equal(gm_log_format(), GM_LOG_FORMAT_TEXT);
	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	gm_log_setup(GM_LOG_INFO, GM_LOG_FORMAT_AUTO);
	assert_int_equal(gm_log_format(), GM_LOG_FORMAT_JOURNAL);
	/* Asked for text, text it is, journal or not. */
	gm_log_setup(GM_LOG_INFO, GM_LOG_FORMAT_TEXT);
	assert_int_equal(gm_log_format(), GM_LOG_FORMAT_TEXT);
	unsetenv("JOURNAL_STREAM");
	captured();
}

static void test_long_line(void **state)
{
	char big[3000];
	const char *out;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int f = GM_LOG_FORMAT_TEXT; f <= GM_LOG_FORMAT_JSON; f++) {
		capture(GM_LOG_INFO, f);
		GM_LOG(GM_LOG_INFO, "%s", big);
		out = captured();
		/* Cut, but still one line. */
		assert_true(strlen(out) < 1400);
		assert_int_equal(out[strlen(out) - 1], '\n');
		assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),      cmocka_unit_test(test_journal),
	    cmocka_unit_test(test_json),      cmocka_unit_test(test_auto),
	    cmocka_unit_test(test_long_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
