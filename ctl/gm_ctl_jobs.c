/*
 * gm_ctl_jobs.c - gemmctl's commands on detached jobs and on the queue:
 * status, wait and cancel of a job by its id, jobs (the caller's jobs
 * listed), drain (optionally waiting until nothing is queued or running)
 * and resume. They share one option parser, job_parse, told which
 * options each takes.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gm_ctl.h"
#include "gm_proto.h"

/* What these subcommands take beside the connection options. */
struct job_args {
	struct gm_ctl_conn conn;
	uint64_t id;
	const char *out_path; /* wait */
	bool idle;	      /* drain --wait */
};

enum { TAKES_ID = 1, TAKES_OUT = 2, TAKES_WAIT = 4 };

#define DRAIN_POLL_US 100000

static const char status_help[] =
    "Usage: gemmctl status ID [--json] [options]\n"
    "Show detached job ID: its state (queued, running, done, failed,\n"
    "canceled, expired), shape, priority, and once it finished its\n"
    "status and timings, and whether its result still waits for\n"
    "'gemmctl wait' (--json: the daemon's document). Exit 0 when the\n"
    "daemon knows the job, whatever its state; 1 when it does not\n"
    "(never, or no longer).\n"
    "\n" CONN_HELP;

static const char wait_help[] =
    "Usage: gemmctl wait ID -o OUT.npy [options]\n"
    "Wait for detached job ID to finish (up to --timeout), take its\n"
    "result from the daemon, which then no longer holds it, and write\n"
    "it as .npy; print its timings. Exit 1 when the job failed, was\n"
    "canceled, or its result expired or was already taken; 3 when it\n"
    "did not finish within --timeout (wait again); 4 when OUT.npy cannot\n"
    "be written, checked before the result is taken.\n"
    "\n"
    "  -o, --output FILE   write the result here (required), or to stdout\n"
    "                      with '-o -' (the report then goes to "
    "stderr)\n" CONN_HELP;

static const char cancel_help[] =
    "Usage: gemmctl cancel ID [options]\n"
    "Cancel detached job ID: a queued job never runs; a running one runs\n"
    "to its end but its result is dropped; a result waiting for 'gemmctl\n"
    "wait' is dropped. Prints the job's state after. Exit 1 for a job\n"
    "the daemon does not know.\n"
    "\n" CONN_HELP;

static const char jobs_help[] =
    "Usage: gemmctl jobs [--json] [options]\n"
    "List your jobs the daemon holds: those queued or running, by their\n"
    "request id and index, and your detached jobs by their id, whatever\n"
    "their state (queued, running, done, failed, canceled, expired), as\n"
    "long as the daemon keeps them. Yours are those of your user (on\n"
    "ipc://), your certificate (tls+tcp://) or of anyone on plain tcp://;\n"
    "an admin sees everyone's, each with its owner. At most 1000 are\n"
    "listed; a last line says how many more there are. --json: the\n"
    "daemon's document.\n"
    "\n" CONN_HELP;

static const char drain_help[] =
    "Usage: gemmctl drain [--wait] [options]\n"
    "Drain the daemon: new jobs are refused with EDRAINING while queued\n"
    "and running jobs finish; ping, stats, status, wait and cancel go on.\n"
    "'gemmctl resume' undoes it. SIGUSR1 to gemmd drains it too.\n"
    "\n"
    "      --wait          return once no job is queued or running (exit 3\n"
    "                      if that takes longer than --timeout)\n" CONN_HELP;

static const char resume_help[] =
    "Usage: gemmctl resume [options]\n"
    "Accept jobs again after a drain. Exit 1 when the daemon is stopping.\n"
    "\n" CONN_HELP;

static bool parse_id(const char *s, uint64_t *id)
{
	char *end;

	errno = 0;
	*id = strtoull(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *s >= '0' &&
	       *s <= '9' && *id != 0;
}

/* One option of job_parse, if takes has it; false for another. */
static bool job_opt(struct job_args *a, unsigned takes, int opt)
{
	if (opt == 'o' && (takes & TAKES_OUT))
		a->out_path = optarg;
	else if (opt == 'W' && (takes & TAKES_WAIT))
		a->idle = true;
	else
		return false;
	return true;
}

static int job_parse(int argc, char **argv, struct job_args *a, unsigned takes,
		     const char *help)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"wait", no_argument, NULL, 'W'},
	    CONN_OPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt, rc = 0;

	while (rc == 0 &&
	       (opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(help, stdout);
			return -1;
		}
		if (opt == '?' || (!job_opt(a, takes, opt) &&
				   !gm_ctl_conn_opt(&a->conn, opt, &rc)))
			return opt == '?'
				   ? gm_ctl_try_help()
				   : gm_ctl_usage_error("option '%s' is not "
							"one of this command's",
							argv[optind - 1]);
	}
	if (rc != 0)
		return rc;
	if ((takes & TAKES_ID) && optind == argc)
		return gm_ctl_usage_error("want a job id");
	if ((takes & TAKES_ID) && !parse_id(argv[optind++], &a->id))
		return gm_ctl_usage_error(
		    "job id '%s': want a positive integer", argv[optind - 1]);
	if (optind != argc)
		return gm_ctl_usage_error("unexpected argument '%s'",
					  argv[optind]);
	if ((takes & TAKES_OUT) && a->out_path == NULL)
		return gm_ctl_usage_error("-o OUT.npy is required");
	if (takes & TAKES_OUT)
		return gm_ctl_check_output(a->out_path);
	return 0;
}

/* Reports a failed call about job id (0: none); the exit status. */
static int job_failed(const char *what, uint64_t id, int rv, const char *detail)
{
	int rc = gm_ctl_failed(what, id, rv, detail);

	/* Here ECANCELED is the daemon's word on the job, not a client
	 * closing. */
	return rv == GM_ECANCELED ? EXIT_JOB : rc;
}

static void print_info(const gemmd_job_info *in)
{
	printf("%" PRIu64 "  %s  %" PRIu32 "x%" PRIu32 "x%" PRIu32
	       " %s %s  priority %d",
	       in->id, gemmd_job_state_name(in->state), in->m, in->n, in->k,
	       gm_dtype_name(in->dtype) ? gm_dtype_name(in->dtype) : "?",
	       in->layout == GEMMD_COL_MAJOR ? "col" : "row", in->priority);
	if (in->t.total_us > 0)
		gm_ctl_put_times(&in->t);
	if (in->status != GM_OK)
		printf("  %s: %s", gemmd_errname(in->status), in->message);
	if (in->has_result)
		fputs("  result waiting", stdout);
	putchar('\n');
}

int gm_ctl_status(int argc, char **argv)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_job_info info;
	gemmd_client *cl;
	char req[64], *reply = NULL;
	int rc, rv;

	if ((rc = job_parse(argc, argv, &a, TAKES_ID, status_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_connect(&a.conn, &cl)) != 0)
		return rc;
	snprintf(req, sizeof(req), "{\"op\":\"status\",\"job\":%" PRIu64 "}",
		 a.id);
	rv = gm_ctl_json ? gemmd_ctrl(cl, req, &reply, a.conn.timeout_ms)
			 : gemmd_job_status(cl, a.id, &info, a.conn.timeout_ms);
	gemmd_close(cl);
	if (rv != GM_OK)
		return job_failed("status", a.id, rv, NULL);
	if (gm_ctl_json)
		puts(reply);
	else
		print_info(&info);
	free(reply);
	return 0;
}

int gm_ctl_wait(int argc, char **argv)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_job j = {0};
	gemmd_job_info info;
	gemmd_client *cl;
	cJSON *doc;
	int rc, rv;

	if ((rc = job_parse(argc, argv, &a, TAKES_ID | TAKES_OUT, wait_help)) !=
	    0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_connect(&a.conn, &cl)) != 0)
		return rc;
	rv = gemmd_wait(cl, a.id, &j, a.conn.timeout_ms);
	/* K is not in the result; the status has it, for the rate. */
	if (rv == GM_OK && j.status == GM_OK &&
	    gemmd_job_status(cl, a.id, &info, a.conn.timeout_ms) == GM_OK)
		j.k = info.k;
	gemmd_close(cl);
	if (rv == GM_OK)
		rv = j.status;
	if (rv != GM_OK) {
		rc = job_failed("wait", a.id, rv, j.message);
	} else if (gm_ctl_json) {
		/* A result that cannot be written is the one document. */
		if ((rc = gm_ctl_write_result(a.out_path, &j)) == 0) {
			doc = gm_ctl_job_json(&j);
			gm_ctl_json_id(doc, "id", a.id);
			gm_ctl_put_json(doc);
		}
	} else {
		gm_ctl_print_timings(&j);
		fflush(gm_ctl_out);
		rc = gm_ctl_write_result(a.out_path, &j);
	}
	free(j.out);
	return rc;
}

int gm_ctl_cancel(int argc, char **argv)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_client *cl;
	int rc, rv, state = 0;

	if ((rc = job_parse(argc, argv, &a, TAKES_ID, cancel_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_connect(&a.conn, &cl)) != 0)
		return rc;
	rv = gemmd_cancel(cl, a.id, &state, a.conn.timeout_ms);
	gemmd_close(cl);
	if (rv != GM_OK)
		return job_failed("cancel", a.id, rv, NULL);
	if (gm_ctl_json)
		printf("{\"ok\":true,\"id\":%" PRIu64 ",\"state\":\"%s\"}\n",
		       a.id, gemmd_job_state_name(state));
	else
		printf("%" PRIu64 "  %s%s\n", a.id, gemmd_job_state_name(state),
		       state == GEMMD_JOB_RUNNING
			   ? ": it runs to its end, its result is dropped"
			   : "");
	return 0;
}

/* A string member of o, or "?". */
static const char *str_of(const cJSON *o, const char *key)
{
	const char *v =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	return v != NULL ? v : "?";
}

static double num_of(const cJSON *o, const char *key)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* One line of jobs: what names the job (a detached job's id, else its
 * request's id and index), its state, shape and priority; the owner
 * when the list is everyone's. */
static void print_job(const cJSON *j, bool all)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "job");
	bool detached =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "detached"));
	char name[48];

	if (detached && cJSON_IsNumber(id))
		snprintf(name, sizeof(name), "%.0f", id->valuedouble);
	else
		snprintf(name, sizeof(name), "request %.0f.%.0f",
			 num_of(j, "request"), num_of(j, "index"));
	printf("%-20s  %-8s  %.0fx%.0fx%.0f %s  priority %.0f%s", name,
	       str_of(j, "state"), num_of(j, "m"), num_of(j, "n"),
	       num_of(j, "k"), str_of(j, "dtype"), num_of(j, "priority"),
	       detached ? "  detached" : "");
	if (detached &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "result")))
		fputs("  result waiting", stdout);
	if (all)
		printf("  owner %s", str_of(j, "owner"));
	putchar('\n');
}

static void print_jobs(const cJSON *doc)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "jobs"), *j;
	bool all = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "all"));
	double left_out = num_of(doc, "left_out");

	if (cJSON_GetArraySize(list) == 0)
		puts(all ? "no jobs" : "no jobs of yours");
	cJSON_ArrayForEach(j, list)
	{
		print_job(j, all);
	}
	if (left_out > 0)
		printf("(%.0f more not listed)\n", left_out);
}

int gm_ctl_jobs(int argc, char **argv)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_client *cl;
	char *reply = NULL;
	cJSON *doc;
	int rc, rv;

	if ((rc = job_parse(argc, argv, &a, 0, jobs_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_connect(&a.conn, &cl)) != 0)
		return rc;
	rv = gemmd_ctrl(cl, "{\"op\":\"jobs\"}", &reply, a.conn.timeout_ms);
	gemmd_close(cl);
	if (rv != GM_OK)
		return job_failed("jobs", 0, rv, NULL);
	if (gm_ctl_json) {
		puts(reply);
	} else if (cJSON_IsObject(doc = cJSON_Parse(reply))) {
		print_jobs(doc);
		cJSON_Delete(doc);
	} else {
		rc = gm_ctl_fail("jobs", GM_EJSON, EXIT_DAEMON,
				 "jobs: the daemon's answer is not JSON");
	}
	free(reply);
	return rc;
}

/* Jobs queued and running, from the stats; -1 when they cannot be read. */
static double jobs_left(gemmd_client *cl, int timeout_ms)
{
	char *reply = NULL;
	const cJSON *jobs;
	cJSON *doc;
	double n = -1;

	if (gemmd_stats(cl, &reply, timeout_ms) != GM_OK)
		return -1;
	doc = cJSON_Parse(reply);
	jobs = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(doc, "stats"), "jobs");
	if (cJSON_IsObject(jobs))
		n = cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(jobs, "queued")) +
		    cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(jobs, "inflight"));
	cJSON_Delete(doc);
	free(reply);
	return n;
}

/* The outcome of drain or resume: text, or with --json whether the
 * daemon now drains and, for drain --wait, that it is idle. */
static void say_drain(const char *text, bool draining, bool idle)
{
	if (gm_ctl_json)
		printf("{\"ok\":true,\"draining\":%s%s}\n",
		       draining ? "true" : "false",
		       idle ? ",\"idle\":true" : "");
	else
		puts(text);
}

/* drain --wait: polls until nothing is queued or running. */
static int wait_idle(gemmd_client *cl, int timeout_ms)
{
	double until = gm_ctl_now_ms() + timeout_ms, left;

	while ((left = jobs_left(cl, timeout_ms)) != 0) {
		if (left < 0 || gm_ctl_now_ms() > until)
			return gm_ctl_fail(
			    "drain", left < 0 ? GM_EIO : GM_ETIMEDOUT,
			    EXIT_DAEMON, "drain --wait: %s",
			    left < 0 ? "cannot read the daemon's stats"
				     : "jobs still queued or running at "
				       "--timeout");
		usleep(DRAIN_POLL_US);
	}
	say_drain("drained: no job queued or running", true, true);
	return 0;
}

/* drain (on) and resume. */
static int drain_cmd(int argc, char **argv, bool on)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_client *cl;
	int rc, rv;

	rc = job_parse(argc, argv, &a, on ? TAKES_WAIT : 0,
		       on ? drain_help : resume_help);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_connect(&a.conn, &cl)) != 0)
		return rc;
	rv = on ? gemmd_drain(cl, a.conn.timeout_ms)
		: gemmd_resume(cl, a.conn.timeout_ms);
	if (rv != GM_OK)
		rc = job_failed(on ? "drain" : "resume", 0, rv, NULL);
	else if (!on)
		say_drain("resumed: accepting jobs", false, false);
	else if (a.idle)
		rc = wait_idle(cl, a.conn.timeout_ms);
	else
		say_drain("draining: refusing new jobs", true, false);
	gemmd_close(cl);
	return rc;
}

int gm_ctl_drain(int argc, char **argv)
{
	return drain_cmd(argc, argv, true);
}

int gm_ctl_resume(int argc, char **argv)
{
	return drain_cmd(argc, argv, false);
}
