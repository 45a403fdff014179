/*
 * gm_ctl.c - what gemmctl's subcommands share: error messages and
 * usage errors, option values, the connection options, .npy files and
 * stdin/stdout, and the report of a finished job (its timings, as text
 * or JSON, and its result as .npy).
 */
#include "gm_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gm_ctlurl.h"
#include "gm_proto.h"

const char *gm_ctl_cmd = "gemmctl"; /* "gemmctl submit" once known */
bool gm_ctl_json;
FILE *gm_ctl_out;
static bool failure_put; /* put_failure printed the one document */

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

static void put_failure(const char *what, uint64_t id, int rv,
			const char *detail);

int gm_ctl_usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", gm_ctl_cmd, msg);
	if (gm_ctl_json)
		put_failure("usage", 0, GM_EINVAL, msg);
	return gm_ctl_try_help();
}

int gm_ctl_fail(const char *what, int rv, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gm_ctl_err("%s", msg);
	if (gm_ctl_json)
		put_failure(what, 0, rv, msg);
	return status;
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
	} else if (opt == 'j') {
		gm_ctl_json = true;
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

/* --json: {"ok":false,"error":"EBUSY","code":14,"message":...}. */
static void put_failure(const char *what, uint64_t id, int rv,
			const char *detail)
{
	cJSON *doc = cJSON_CreateObject();

	failure_put = true;
	cJSON_AddFalseToObject(doc, "ok");
	cJSON_AddStringToObject(doc, "error", gemmd_errname(rv));
	cJSON_AddNumberToObject(doc, "code", rv);
	cJSON_AddStringToObject(doc, "message", gemmd_strerror(rv));
	cJSON_AddStringToObject(doc, "detail", detail);
	cJSON_AddStringToObject(doc, "call", what);
	if (id != 0)
		gm_ctl_json_id(doc, "id", id);
	gm_ctl_put_json(doc);
}

bool gm_ctl_failure_put(void)
{
	return failure_put;
}

void gm_ctl_json_id(cJSON *doc, const char *key, uint64_t id)
{
	char digits[24];

	snprintf(digits, sizeof(digits), "%" PRIu64, id);
	cJSON_AddRawToObject(doc, key, digits);
}

int gm_ctl_connect(const struct gm_ctl_conn *c, gemmd_client **cl)
{
	char msg[512] = "";
	int rv = gm_ctlurl_check(gm_ctl_conn_url(c), msg, sizeof(msg));
	/* The dial is within --timeout too. */
	int ms = c->timeout_ms > 0 ? c->timeout_ms : GEMMD_OPEN_TIMEOUT_MS;
	const char *why;

	if (rv == GM_OK &&
	    (rv = gemmd_open_timeout(c->url, &c->tls, cl, ms)) == GM_OK)
		return 0;
	why = *msg ? msg : gemmd_last_error();
	if (rv == GM_EINVAL) /* the URL or the TLS files: says which */
		gm_ctl_err("%s", why);
	else
		gm_ctl_err("cannot reach the daemon: %s", why);
	if (gm_ctl_json)
		put_failure("connect", 0, rv, why);
	return rv == GM_EINVAL ? EXIT_USAGE : EXIT_DAEMON;
}

/* Whether the ping document doc lists dtype among its "dtypes"; true
 * when it has no such list (a daemon from before it): that daemon then
 * decides. */
static bool engine_runs(const cJSON *doc, const char *dtype)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "dtypes");
	const cJSON *t;

	if (!cJSON_IsArray(list))
		return true;
	cJSON_ArrayForEach(t, list)
	{
		if (cJSON_IsString(t) && strcmp(t->valuestring, dtype) == 0)
			return true;
	}
	return false;
}

int gm_ctl_check_dtype(gemmd_client *cl, int dtype, int *timeout_ms)
{
	const char *name = gm_dtype_name(dtype), *engine;
	char *reply = NULL, msg[128];
	double t0 = gm_ctl_now_ms(), left;
	cJSON *doc;
	int rc = 0, rv;

	if (name == NULL)
		return 0; /* the daemon's own checks then answer */
	rv = gemmd_ping(cl, &reply, *timeout_ms);
	/* The job would meet the same silence, within what is left. */
	if (rv == GM_ETIMEDOUT || rv == GM_ETRANSPORT)
		return gm_ctl_failed("job", 0, rv, NULL);
	if (rv != GM_OK)
		return 0;
	left = *timeout_ms - (gm_ctl_now_ms() - t0);
	*timeout_ms = left < 1 ? 1 : (int)left;
	doc = cJSON_Parse(reply);
	free(reply);
	if (!engine_runs(doc, name)) {
		engine = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(doc, "engine"));
		/* Reported as the daemon's refusal is, in the engine's
		 * words. */
		snprintf(msg, sizeof(msg),
			 "dtype %s is unsupported by the %s engine", name,
			 engine ? engine : "daemon's");
		rc = gm_ctl_failed("job", 0, GM_EUNSUPPORTED, msg);
	}
	cJSON_Delete(doc);
	return rc;
}

int gm_ctl_failed(const char *what, uint64_t id, int rv, const char *detail)
{
	if (detail == NULL || *detail == '\0')
		detail = gemmd_last_error();
	if (gm_ctl_json)
		put_failure(what, id, rv, detail);
	if (id != 0)
		gm_ctl_err("%s of job %" PRIu64 " failed: %s (%s)%s%s", what,
			   id, gemmd_strerror(rv), gemmd_errname(rv),
			   *detail ? ": " : "", detail);
	else
		gm_ctl_err("%s failed: %s (%s)%s%s", what, gemmd_strerror(rv),
			   gemmd_errname(rv), *detail ? ": " : "", detail);
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

	fprintf(gm_ctl_out, "  %s %.*f ms", name,
		ms < 10	   ? 3
		: ms < 100 ? 1
			   : 0,
		ms);
}

void gm_ctl_put_times(const gemmd_timings *t)
{
	put_ms("queue", t->queue_us);
	put_ms("h2d", t->h2d_us);
	put_ms("kernel", t->kernel_us);
	put_ms("d2h", t->d2h_us);
	put_ms("total", t->total_us);
}

/* The kernel's rate in GFLOP/s; 0 when the daemon timed no kernel. */
static double kernel_rate(const gemmd_job *j)
{
	double flops = 2.0 * j->m * j->n * j->k;

	return j->t.kernel_us > 0 ? flops / j->t.kernel_us / 1e3 : 0;
}

void gm_ctl_print_timings(const gemmd_job *j)
{
	double rate = kernel_rate(j);

	fprintf(gm_ctl_out, "ok  %" PRIu32 "x%" PRIu32 "x%" PRIu32 " %s", j->m,
		j->n, j->k, gm_dtype_name(j->dtype));
	gm_ctl_put_times(&j->t);
	if (rate >= 1000)
		fprintf(gm_ctl_out, "  (%.1f TFLOP/s)", rate / 1000);
	else if (rate > 0)
		fprintf(gm_ctl_out, "  (%.1f GFLOP/s)", rate);
	fputc('\n', gm_ctl_out);
}

cJSON *gm_ctl_job_json(const gemmd_job *j)
{
	cJSON *doc = cJSON_CreateObject(), *t;

	cJSON_AddTrueToObject(doc, "ok");
	cJSON_AddNumberToObject(doc, "m", j->m);
	cJSON_AddNumberToObject(doc, "n", j->n);
	cJSON_AddNumberToObject(doc, "k", j->k);
	cJSON_AddStringToObject(doc, "dtype", gm_dtype_name(j->dtype));
	cJSON_AddStringToObject(doc, "layout",
				j->layout == GEMMD_COL_MAJOR ? "col" : "row");
	t = cJSON_AddObjectToObject(doc, "timings_us");
	cJSON_AddNumberToObject(t, "queue", j->t.queue_us);
	cJSON_AddNumberToObject(t, "h2d", j->t.h2d_us);
	cJSON_AddNumberToObject(t, "kernel", j->t.kernel_us);
	cJSON_AddNumberToObject(t, "d2h", j->t.d2h_us);
	cJSON_AddNumberToObject(t, "total", j->t.total_us);
	cJSON_AddNumberToObject(doc, "start_seq", (double)j->t.start_seq);
	cJSON_AddNumberToObject(doc, "gflops_per_s", kernel_rate(j));
	return doc;
}

void gm_ctl_put_json(cJSON *doc)
{
	char *text = cJSON_PrintUnformatted(doc);

	if (text != NULL)
		fprintf(gm_ctl_out, "%s\n", text);
	fflush(gm_ctl_out);
	free(text);
	cJSON_Delete(doc);
}

static bool is_stdio(const char *path)
{
	return strcmp(path, GM_CTL_STDIO) == 0;
}

int gm_ctl_read_npy(const char *path, gm_npy *m)
{
	char msg[512];
	int rv;

	rv = is_stdio(path) ? gm_npy_fread(stdin, "stdin", m, msg, sizeof(msg))
			    : gm_npy_read(path, m, msg, sizeof(msg));
	if (rv == 0)
		return 0;
	return gm_ctl_fail("read", rv, rv == GM_ENOMEM ? EXIT_JOB : EXIT_FILE,
			   "%s", msg);
}

int gm_ctl_write_npy(const char *path, const gm_npy *m)
{
	char msg[512];
	int rv;

	rv = is_stdio(path)
		 ? gm_npy_fwrite(stdout, "stdout", m, msg, sizeof(msg))
		 : gm_npy_write(path, m, msg, sizeof(msg));
	if (rv == 0)
		return 0;
	return gm_ctl_fail("write", rv, EXIT_FILE, "%s", msg);
}

int gm_ctl_check_output(const char *path)
{
	int fd;

	if (is_stdio(path)) {
		if (isatty(STDOUT_FILENO))
			return gm_ctl_usage_error(
			    "-o -: stdout is a terminal; redirect it or name "
			    "a file");
		gm_ctl_out = stderr;
		return 0;
	}
	/* O_NONBLOCK: a FIFO with no reader yet must not hang the check. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK, 0666);
	if (fd >= 0) {
		close(fd);
		unlink(path);
		return 0;
	}
	if (errno == EEXIST && (fd = open(path, O_WRONLY | O_NONBLOCK)) >= 0) {
		close(fd);
		return 0;
	}
	if (errno == ENXIO) /* a FIFO whose reader comes later */
		return 0;
	return gm_ctl_fail("write", GM_EIO, EXIT_FILE,
			   "%s: cannot be written: %s", path, strerror(errno));
}

int gm_ctl_write_result(const char *path, const gemmd_job *j)
{
	gm_npy r = {.dtype = j->dtype == GM_FP64 ? GM_FP64 : GM_FP32,
		    .fortran = j->layout == GEMMD_COL_MAJOR,
		    .rows = j->m,
		    .cols = j->n,
		    .data = j->out};
	int rv;

	/* fp64, fp32 and tf32 results are written as they are, from where
	 * they came back; fp16 and bf16 are widened to float32 first. */
	if (j->dtype == GM_FP64 || j->dtype == GM_FP32 || j->dtype == GM_TF32)
		return gm_ctl_write_npy(path, &r);
	rv = gm_npy_unpack(j->out, j->dtype, j->m, j->n,
			   j->layout == GEMMD_COL_MAJOR, &r);
	if (rv != 0)
		return gm_ctl_fail("write", rv, EXIT_JOB, "%s: %s", path,
				   gemmd_strerror(rv));
	rv = gm_ctl_write_npy(path, &r);
	gm_npy_free(&r);
	return rv;
}
