/*
 * gm_ctl.h - private to gemmctl: what its subcommands share. Exit
 * statuses, the reporting of errors and usage errors, option values, the
 * options every subcommand that talks to the daemon takes (struct
 * gm_ctl_conn, CONN_OPTS, CONN_HELP), the report of a finished job, and
 * the subcommands themselves, one file each or a few by concern
 * (gm_ctl_submit.c, gm_ctl_info.c, gm_ctl_jobs.c, gm_ctl_rand.c,
 * gm_ctl_benchcmd.c). All of it runs on gemmctl's main thread (bench's
 * completion callbacks only hand requests back to it); what prints,
 * prints to stdout, and errors go to stderr.
 */
#ifndef GM_CTL_H
#define GM_CTL_H

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gemmd.h"
#include "gm_npy.h"

enum {
	EXIT_JOB = 1,	 /* the job failed or the daemon refused it */
	EXIT_USAGE = 2,	 /* bad command line */
	EXIT_DAEMON = 3, /* cannot reach the daemon, timeout, transport */
	EXIT_FILE = 4,	 /* a .npy file cannot be read or written */
	EXIT_VERIFY = 5, /* --verify found the result wrong */
};

#define DEFAULT_TIMEOUT_MS 60000

/* The name usage errors go under: "gemmctl", "gemmctl submit" once main
 * knows the subcommand. */
extern const char *gm_ctl_cmd;

/* --json was given: what the command prints is one JSON document, and a
 * failure prints one too ({"ok":false,...}), whether the daemon's or
 * found here (gm_ctl_fail). */
extern bool gm_ctl_json;

/* Where a command's report (text or JSON) goes: stdout, or stderr while
 * stdout carries a .npy file (gm_ctl_check_output of "-"). */
extern FILE *gm_ctl_out;

/* Prints "gemmctl: " and the message, a line on stderr. */
void gm_ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* After getopt has already said what was wrong: points at --help;
 * returns EXIT_USAGE. */
int gm_ctl_try_help(void);

/* Prints the message under gm_ctl_cmd (with --json also as a failure
 * document, EINVAL), then as gm_ctl_try_help. */
int gm_ctl_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* A failure found here, before or after the daemon's part (a file, a
 * shape): prints the message as gm_ctl_err does and, with --json, as
 * {"ok":false,"error":NAME,"code":rv,...,"call":what}, so that a script
 * reads one document whatever failed. Returns status. */
int gm_ctl_fail(const char *what, int rv, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whether s is all a decimal integer in min..max; the value in *out. */
bool gm_ctl_parse_long(const char *s, long min, long max, long *out);

/* Whether s is all a finite number; the value in *out. */
bool gm_ctl_parse_double(const char *s, double *out);

/* Options that every subcommand talking to the daemon takes. */
struct gm_ctl_conn {
	const char *url;
	int timeout_ms;
	gemmd_open_opts tls;
};

/* clang-format off */
#define CONN_OPTS \
	{"url", required_argument, NULL, 'U'}, \
	{"timeout", required_argument, NULL, 'T'}, \
	{"ca", required_argument, NULL, 'C'}, \
	{"cert", required_argument, NULL, 'E'}, \
	{"key", required_argument, NULL, 'K'}, \
	{"server-name", required_argument, NULL, 'N'}, \
	{"json", no_argument, NULL, 'j'}, \
	{"help", no_argument, NULL, 'h'}

#define CONN_HELP \
	"      --url URL       daemon address (default $GEMMD_URL, else\n" \
	"                      " GEMMD_DEFAULT_URL ")\n" \
	"      --timeout MS    give up after MS milliseconds (default 60000)\n" \
	"      --ca FILE       tls+tcp://: PEM CA that signed the daemon's\n" \
	"                      certificate (required for TLS)\n" \
	"      --cert FILE     tls+tcp://: PEM client certificate (and key)\n" \
	"      --key FILE      tls+tcp://: PEM key, if not in --cert\n" \
	"      --server-name N tls+tcp://: name the daemon's certificate must\n" \
	"                      carry (default: the URL's host)\n" \
	"      --json          print one JSON document instead of text, also\n" \
	"                      {\"ok\":false,\"error\":NAME,...} when the call fails\n" \
	"  -h, --help          show this help and exit\n"
/* clang-format on */

/* Handles the options of struct gm_ctl_conn and --json, with
 * getopt_long's optarg; false for another option. A bad value sets *rc to
 * the exit status. */
bool gm_ctl_conn_opt(struct gm_ctl_conn *c, int opt, int *rc);

/* The URL gemmd_open will dial, for messages. */
const char *gm_ctl_conn_url(const struct gm_ctl_conn *c);

/* Exit status for a failed library call: the connection, or the job. */
int gm_ctl_daemon_status(int rv);

/* Opens a client for c into *cl (the caller closes it): 0, or the exit
 * status after saying why not. Blocks while it dials. */
int gm_ctl_connect(const struct gm_ctl_conn *c, gemmd_client **cl);

/* Before a job of dtype is sent on cl: whether the daemon's engine runs
 * it, from the "dtypes" its ping lists (PROTOCOL.md 7). 0, with what
 * the ping left of *timeout_ms there for the job; or the exit status
 * after reporting EUNSUPPORTED as the daemon would have, or the ping's
 * ETIMEDOUT or ETRANSPORT, which the job would meet too. A ping refused
 * otherwise, or one that lists no dtypes, passes: the daemon then
 * decides. Blocks for one round trip. */
int gm_ctl_check_dtype(gemmd_client *cl, int dtype, int *timeout_ms);

/* Reports a failed call, what, about job id (0: none), with detail, or
 * the library's last error when detail is NULL or empty, on stderr and
 * with --json as {"ok":false,"error":NAME,...}; returns the exit status
 * gm_ctl_daemon_status gives. */
int gm_ctl_failed(const char *what, uint64_t id, int rv, const char *detail);

/* A monotonic clock, in milliseconds. */
double gm_ctl_now_ms(void);

/* Prints the timings t, "  queue 1.234 ms  h2d ...", without a newline,
 * on gm_ctl_out. */
void gm_ctl_put_times(const gemmd_timings *t);

/* Prints a finished job's line on gm_ctl_out: shape, dtype, timings,
 * kernel rate. */
void gm_ctl_print_timings(const gemmd_job *j);

/* The file name that means stdin (an input) or stdout (the output). */
#define GM_CTL_STDIO "-"

/* Reads the .npy file at path, or stdin for "-", into m: 0, or the exit
 * status after saying why not. */
int gm_ctl_read_npy(const char *path, gm_npy *m);

/* Writes m as .npy to path, or to stdout for "-": 0, or the exit status
 * after saying why not. */
int gm_ctl_write_npy(const char *path, const gm_npy *m);

/* Before a job runs: whether its result could be written to path, so
 * that it is not computed and then lost. A missing file is created and
 * removed again, an existing one opened without truncating it. For "-":
 * stdout must not be a terminal, and reports move to stderr (gm_ctl_out).
 * 0, or the exit status after saying why not. */
int gm_ctl_check_output(const char *path);

/* Writes j's result to path as .npy (fp32 and narrower as float32): 0,
 * or the exit status after saying why not. */
int gm_ctl_write_result(const char *path, const gemmd_job *j);

/* Whether a failure document was printed (--json): a command that
 * meant to print its own report then prints nothing more. */
bool gm_ctl_failure_put(void);

/* Prints doc as one line on gm_ctl_out and frees it. */
void gm_ctl_put_json(cJSON *doc);

/* Adds id to doc as key, in exact digits: as a double, cJSON prints a
 * 16-digit id rounded (and in exponent form). */
void gm_ctl_json_id(cJSON *doc, const char *key, uint64_t id);

/* A finished job as JSON, {"ok":true,"m":...,"dtype":...,"timings_us":
 * {...},"gflops_per_s":...}, for the caller to add to and print. */
cJSON *gm_ctl_job_json(const gemmd_job *j);

/* The next number of a splitmix64 sequence at *state (any seed). */
uint64_t gm_ctl_random(uint64_t *state);

/* Fills m (its dtype fp64, fp32 or fp16, its data allocated) with
 * uniform random values in [-1, 1), exact in the dtype, from seed. */
void gm_ctl_fill_random(gm_npy *m, uint64_t seed);

/* The subcommands: argv[0] is "gemmctl NAME"; each parses its own
 * options and returns gemmctl's exit status. */
int gm_ctl_submit(int argc, char **argv); /* gm_ctl_submit.c */
int gm_ctl_ping(int argc, char **argv);	  /* gm_ctl_info.c */
int gm_ctl_stats(int argc, char **argv);
int gm_ctl_version(int argc, char **argv);
int gm_ctl_status(int argc, char **argv); /* gm_ctl_jobs.c */
int gm_ctl_wait(int argc, char **argv);
int gm_ctl_cancel(int argc, char **argv);
int gm_ctl_jobs(int argc, char **argv);
int gm_ctl_drain(int argc, char **argv);
int gm_ctl_resume(int argc, char **argv);
int gm_ctl_rand(int argc, char **argv);	 /* gm_ctl_rand.c */
int gm_ctl_bench(int argc, char **argv); /* gm_ctl_benchcmd.c */

#endif
