/*
 * gm_ctl_info.c - what the daemon says about itself: gemmctl ping (the
 * round trip, its version, engine and state), gemmctl version (the
 * client's, and the daemon's when it answers) and gemmctl stats (its
 * statistics as a table by gm_statview, or raw JSON, once or refreshed
 * with --watch).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gm_build.h"
#include "gm_ctl.h"
#include "gm_proto.h"
#include "gm_statview.h"

static const char ping_help[] =
    "Usage: gemmctl ping [options]\n"
    "Send the daemon a ping; print the round-trip time and the version,\n"
    "engine, state (ready, warming, draining or faulted) and\n"
    "dtypes it reports (--json: the daemon's document, with the URL and\n"
    "rtt_ms added).\n"
    "\n" CONN_HELP;

static const char stats_help[] =
    "Usage: gemmctl stats [--json] [--wide] [--watch [SECONDS]] [options]\n"
    "Print the daemon's statistics as a table: requests, jobs, queue and\n"
    "pool; rates over the last 1, 10 and 60 s; latency percentiles per\n"
    "phase; one line per device (busy share, copy/compute overlap, each\n"
    "stream's busy share); jobs per dtype; errors. Lines fit 80 columns:\n"
    "long device names are abbreviated, and the streams summed up as\n"
    "their number and the least and most busy share.\n"
    "--json prints the daemon's document instead, one line per refresh.\n"
    "\n"
    "      --wide          device names whole and every stream's share,\n"
    "                      in lines as long as they need\n"
    "  -w, --watch [SECONDS]\n"
    "                      refresh every SECONDS (default 2) until\n"
    "                      interrupted, in place on a terminal; device\n"
    "                      shares are then over the last interval\n" CONN_HELP;

#define DEFAULT_WATCH_S 2.0

/* What stats takes beside the connection options. */
struct stats_opts {
	double watch_s; /* 0: print once */
	unsigned flags; /* GM_STATVIEW_WIDE */
};

/* A --watch interval: seconds, at least 0.1. */
static bool parse_watch(const char *s, double *out)
{
	return gm_ctl_parse_double(s, out) && *out >= 0.1 && *out <= 86400;
}

/* Handles --watch and --wide; false for another option. */
static bool stats_opt(struct stats_opts *so, int opt, int *rc)
{
	if (so != NULL && opt == 'W') {
		so->flags |= GM_STATVIEW_WIDE;
		return true;
	}
	if (so == NULL || opt != 'w')
		return false;
	so->watch_s = DEFAULT_WATCH_S;
	if (optarg != NULL && !parse_watch(optarg, &so->watch_s))
		*rc = gm_ctl_usage_error("--watch '%s': want seconds >= 0.1",
					 optarg);
	return true;
}

/* Options of ping and stats; so is NULL for ping. */
static int conn_parse(int argc, char **argv, struct gm_ctl_conn *c,
		      struct stats_opts *so, const char *help)
{
	static const struct option longopts[] = {
	    {"watch", optional_argument, NULL, 'w'},
	    {"wide", no_argument, NULL, 'W'},
	    CONN_OPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt, rc = 0;
	double v;

	while (rc == 0 && (opt = getopt_long(argc, argv, so ? "hw" : "h",
					     longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(help, stdout);
			return -1;
		}
		if (opt == '?' ||
		    (!stats_opt(so, opt, &rc) && !gm_ctl_conn_opt(c, opt, &rc)))
			return gm_ctl_try_help();
	}
	/* "--watch 5": getopt leaves an optional argument's separate word
	 * among the operands. */
	if (rc == 0 && so != NULL && so->watch_s > 0 && optind < argc &&
	    gm_ctl_parse_double(argv[optind], &v)) {
		if (!parse_watch(argv[optind], &so->watch_s))
			return gm_ctl_usage_error(
			    "--watch '%s': want seconds >= 0.1", argv[optind]);
		optind++;
	}
	if (rc == 0 && optind != argc)
		return gm_ctl_usage_error("unexpected argument '%s'",
					  argv[optind]);
	return rc;
}

static void print_field(const cJSON *doc, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
	char *text;

	if (cJSON_IsString(v)) {
		printf("  %s %s", key, v->valuestring);
	} else if (v != NULL && (text = cJSON_PrintUnformatted(v)) != NULL) {
		printf("  %s %s", key, text);
		free(text);
	}
}

/* Sends a ping; *reply is the document on success, *ms its time. */
static int ping(const struct gm_ctl_conn *c, char **reply, double *ms)
{
	gemmd_client *cl;
	double t0;
	int rc, rv;

	if ((rc = gm_ctl_connect(c, &cl)) != 0)
		return rc;
	t0 = gm_ctl_now_ms();
	rv = gemmd_ping(cl, reply, c->timeout_ms);
	*ms = gm_ctl_now_ms() - t0;
	gemmd_close(cl);
	return rv == GM_OK ? 0 : gm_ctl_failed("ping", 0, rv, NULL);
}

int gm_ctl_ping(int argc, char **argv)
{
	struct gm_ctl_conn c = {.timeout_ms = DEFAULT_TIMEOUT_MS};
	char *reply = NULL;
	cJSON *doc;
	double ms;
	int rc;

	if ((rc = conn_parse(argc, argv, &c, NULL, ping_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = ping(&c, &reply, &ms)) != 0)
		return rc;
	doc = cJSON_Parse(reply);
	free(reply);
	if (gm_ctl_json && cJSON_IsObject(doc)) {
		cJSON_AddStringToObject(doc, "url", gm_ctl_conn_url(&c));
		cJSON_AddNumberToObject(doc, "rtt_ms", ms);
		gm_ctl_put_json(doc);
		return 0;
	}
	printf("pong from %s: %.3f ms", gm_ctl_conn_url(&c), ms);
	print_field(doc, "version");
	print_field(doc, "engine");
	print_field(doc, "state");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "stopping")))
		printf(" (stopping: gemmd exits once its jobs are done)");
	/* A daemon from before "state" says only that it is not ready. */
	if (!cJSON_HasObjectItem(doc, "state") &&
	    cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "ready")))
		printf("  not ready (warming up, draining or faulted)");
	print_field(doc, "dtypes");
	putchar('\n');
	cJSON_Delete(doc);
	return 0;
}

/* ---- version ---- */

static const char version_help[] =
    "Usage: gemmctl version [--json] [options]\n"
    "Print this client's version and, when the daemon answers a ping\n"
    "within --timeout (here 2000 ms unless given), the daemon's version\n"
    "and engine. Exit 0 either way: the client's version is always known;\n"
    "'gemmctl ping' is the check that the daemon answers.\n"
    "\n" CONN_HELP;

#define VERSION_TIMEOUT_MS 2000

/* The daemon's ping document, or NULL with why in msg; quiet, since a
 * daemon that does not answer is no failure of this command. */
static cJSON *daemon_ping(const struct gm_ctl_conn *c, char *msg, size_t len)
{
	gemmd_client *cl;
	char *reply = NULL;
	cJSON *doc = NULL;
	int rv;

	if ((rv = gemmd_open(c->url, &c->tls, &cl)) == GM_OK) {
		rv = gemmd_ping(cl, &reply, c->timeout_ms);
		if (rv != GM_OK)
			snprintf(msg, len, "%s", gemmd_last_error());
		gemmd_close(cl);
	} else {
		snprintf(msg, len, "%s", gemmd_last_error());
	}
	if (rv == GM_OK && !cJSON_IsObject(doc = cJSON_Parse(reply))) {
		snprintf(msg, len, "its ping answer is not a JSON object");
		cJSON_Delete(doc);
		doc = NULL;
	}
	free(reply);
	return doc;
}

/* A string member of doc, or "?". */
static const char *str_of(const cJSON *doc, const char *key)
{
	const char *v =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, key));

	return v != NULL ? v : "?";
}

int gm_ctl_version(int argc, char **argv)
{
	struct gm_ctl_conn c = {.timeout_ms = 0};
	char why[512] = "";
	cJSON *doc, *out;
	int rc;

	if ((rc = conn_parse(argc, argv, &c, NULL, version_help)) != 0)
		return rc < 0 ? 0 : rc;
	if (c.timeout_ms == 0)
		c.timeout_ms = VERSION_TIMEOUT_MS;
	doc = daemon_ping(&c, why, sizeof(why));
	if (gm_ctl_json) {
		out = cJSON_CreateObject();
		cJSON_AddTrueToObject(out, "ok");
		cJSON_AddStringToObject(out, "client", GEMMD_VERSION);
		cJSON_AddStringToObject(out, "url", gm_ctl_conn_url(&c));
		if (doc != NULL) {
			cJSON_AddStringToObject(out, "daemon",
						str_of(doc, "version"));
			cJSON_AddStringToObject(out, "engine",
						str_of(doc, "engine"));
		} else {
			cJSON_AddNullToObject(out, "daemon");
			cJSON_AddStringToObject(out, "daemon_error", why);
		}
		gm_ctl_put_json(out);
	} else {
		puts("gemmctl " GEMMD_VERSION);
		if (doc != NULL)
			printf("gemmd %s (%s engine) at %s\n",
			       str_of(doc, "version"), str_of(doc, "engine"),
			       gm_ctl_conn_url(&c));
		else
			printf("gemmd: no answer (%s)\n", why);
	}
	cJSON_Delete(doc);
	return 0;
}

/* ---- stats ---- */

/* Ctrl-C ends --watch; it is how a watch is meant to end, so with 0. */
static void on_sigint(int sig)
{
	(void)sig;
	_exit(0);
}

/* One refresh: the table (or the raw reply) into a buffer first, so
 * that a terminal gets it in one write, right after the clear. */
static void show(const char *reply, const struct stats_opts *so,
		 const cJSON *stats, const cJSON *prev, bool tty)
{
	char *frame = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&frame, &len);

	if (f == NULL)
		return;
	if (gm_ctl_json || !cJSON_IsObject(stats))
		fprintf(f, "%s\n", reply);
	else
		gm_statview_print(f, stats, prev, so->flags);
	fclose(f);
	if (so->watch_s > 0 && tty && !gm_ctl_json)
		fputs("\033[H\033[2J", stdout); /* home, clear the screen */
	else if (so->watch_s > 0 && prev != NULL && !gm_ctl_json)
		putchar('\n');
	fwrite(frame, 1, len, stdout);
	fflush(stdout);
	free(frame);
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s,
			      .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int gm_ctl_stats(int argc, char **argv)
{
	struct gm_ctl_conn c = {.timeout_ms = DEFAULT_TIMEOUT_MS};
	struct stats_opts so = {0};
	bool tty = isatty(STDOUT_FILENO);
	cJSON *doc, *prev = NULL;
	gemmd_client *cl;
	char *reply;
	int rc, rv;

	if ((rc = conn_parse(argc, argv, &c, &so, stats_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_connect(&c, &cl)) != 0)
		return rc;
	if (so.watch_s > 0)
		signal(SIGINT, on_sigint);
	for (;;) {
		if ((rv = gemmd_stats(cl, &reply, c.timeout_ms)) != GM_OK) {
			rc = gm_ctl_failed("stats", 0, rv, NULL);
			break;
		}
		doc = cJSON_Parse(reply);
		/* {"ok":true,"stats":{...}}: the document is the inner one. */
		show(reply, &so, cJSON_GetObjectItemCaseSensitive(doc, "stats"),
		     cJSON_GetObjectItemCaseSensitive(prev, "stats"), tty);
		free(reply);
		cJSON_Delete(prev);
		prev = doc;
		if (so.watch_s <= 0)
			break;
		sleep_s(so.watch_s);
	}
	cJSON_Delete(prev);
	gemmd_close(cl);
	return rc;
}
