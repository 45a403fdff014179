/*
 * gm_ctl.c - what gemmctl's subcommands share: error messages and
 * usage errors, option values, the connection options, and the report
 * of a finished job (its timings and its result as .npy).
 */
#include "gm_ctl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gm_npy.h"
#include "gm_proto.h"

const char *gm_ctl_cmd = "gemmctl"; /* "gemmctl submit" once known */

void gm_ctl_err(const char *fmt, ...)
{
	va_list ap;

	fputs("gemmctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int gm_ctl_try_help(void)
{
	fprintf(stderr, "Try '%s --help'.\n", gm_ctl_cmd);
	return EXIT_USAGE;
}

int gm_ctl_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", gm_ctl_cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return gm_ctl_try_help();
}

bool gm_ctl_parse_long(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *out >= min &&
	       *out <= max;
}

bool gm_ctl_parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno == 0 && end != s && *end == '\0' && isfinite(*out);
}

bool gm_ctl_conn_opt(struct gm_ctl_conn *c, int opt, int *rc)
{
	long v;

	if (opt == 'U') {
		c->url = optarg;
	} else if (opt == 'C') {
		c->tls.tls_ca_file = optarg;
	} else if (opt == 'E') {
		c->tls.tls_cert_file = optarg;
	} else if (opt == 'K') {
		c->tls.tls_key_file = optarg;
	} else if (opt == 'N') {
		c->tls.tls_server_name = optarg;
	} else if (opt == 'T') {
		if (gm_ctl_parse_long(optarg, 1, INT32_MAX, &v))
			c->timeout_ms = (int)v;
		else
			*rc = gm_ctl_usage_error(
			    "--timeout '%s': want milliseconds "
			    "> 0",
			    optarg);
	} else {
		return false;
	}
	return true;
}

const char *gm_ctl_conn_url(const struct gm_ctl_conn *c)
{
	const char *env = getenv("GEMMD_URL");

	if (c->url != NULL)
		return c->url;
	return env != NULL && *env ? env : GEMMD_DEFAULT_URL;
}

int gm_ctl_daemon_status(int rv)
{
	return rv == GM_ETRANSPORT || rv == GM_ETIMEDOUT || rv == GM_ECANCELED
		   ? EXIT_DAEMON
		   : EXIT_JOB;
}

int gm_ctl_connect(const struct gm_ctl_conn *c, gemmd_client **cl)
{
	int rv = gemmd_open(c->url, &c->tls, cl);

	if (rv == GM_OK)
		return 0;
	gm_ctl_err("cannot reach the daemon: %s", gemmd_last_error());
	return rv == GM_EINVAL ? EXIT_USAGE : EXIT_DAEMON;
}

int gm_ctl_failed(const char *what, uint64_t id, int rv, const char *detail)
{
	if (detail == NULL || *detail == '\0')
		detail = gemmd_last_error();
	if (id != 0)
		gm_ctl_err("%s of job %" PRIu64 " failed: %s (%s)%s%s", what,
			   id, gemmd_strerror(rv), gm_errname(rv),
			   *detail ? ": " : "", detail);
	else
		gm_ctl_err("%s failed: %s (%s)%s%s", what, gemmd_strerror(rv),
			   gm_errname(rv), *detail ? ": " : "", detail);
	return gm_ctl_daemon_status(rv);
}

double gm_ctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Milliseconds with about three significant digits, never exponents. */
static void put_ms(const char *name, double us)
{
	double ms = us / 1000.0;

	printf("  %s %.*f ms", name, ms < 10 ? 3 : ms < 100 ? 1 : 0, ms);
}

void gm_ctl_put_times(const gemmd_timings *t)
{
	put_ms("queue", t->queue_us);
	put_ms("h2d", t->h2d_us);
	put_ms("kernel", t->kernel_us);
	put_ms("d2h", t->d2h_us);
	put_ms("total", t->total_us);
}

void gm_ctl_print_timings(const gemmd_job *j)
{
	double flops = 2.0 * j->m * j->n * j->k;
	double rate = j->t.kernel_us > 0 ? flops / j->t.kernel_us / 1e3 : 0;

	printf("ok  %" PRIu32 "x%" PRIu32 "x%" PRIu32 " %s", j->m, j->n, j->k,
	       gm_dtype_name(j->dtype));
	gm_ctl_put_times(&j->t);
	if (rate >= 1000)
		printf("  (%.1f TFLOP/s)", rate / 1000);
	else if (rate > 0)
		printf("  (%.1f GFLOP/s)", rate);
	putchar('\n');
}

int gm_ctl_write_result(const char *path, const gemmd_job *j)
{
	char msg[512];
	gm_npy r;
	int rv;

	rv = gm_npy_unpack(j->out, j->dtype, j->m, j->n,
			   j->layout == GEMMD_COL_MAJOR, &r);
	if (rv != 0) {
		gm_ctl_err("%s: %s", path, gemmd_strerror(rv));
		return EXIT_JOB;
	}
	rv = gm_npy_write(path, &r, msg, sizeof(msg));
	gm_npy_free(&r);
	if (rv != 0) {
		gm_ctl_err("%s", msg);
		return EXIT_FILE;
	}
	return 0;
}
