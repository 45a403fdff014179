/*
 * main.c - gemmd's command line: read the configuration, apply the
 * options over it, and run the daemon.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_build.h"
#include "gm_config.h"
#include "gm_daemon.h"
#include "gm_error.h"
#include "gm_log.h"

static const char usage[] =
    "Usage: gemmd [OPTION]...\n"
    "Serve GEMM jobs (C = alpha*op(A)*op(B) + beta*C) over nng sockets,\n"
    "on NVIDIA GPUs through CUDA, or on the CPU through OpenBLAS.\n"
    "\n"
    "  -c, --config FILE      read the configuration from FILE (JSON);\n"
    "                         default " GEMMD_SYSCONFDIR "/gemmd.json "
    "if it exists\n"
    "  -l, --listen URL       listen on URL (ipc://PATH, tcp://HOST:PORT,\n"
    "                         tls+tcp://HOST:PORT); repeatable, replaces\n"
    "                         the configured list\n"
    "  -e, --engine NAME      cpu, cuda or auto (CUDA when a GPU is found)\n"
    "  -L, --log-level LEVEL  error, warn, info or debug\n"
    "  -s, --set KEY=VALUE    set any configuration key (see "
    "gemmd.json(5))\n"
    "  -p, --print-config     print the resulting configuration and exit\n"
    "  -h, --help             show this help and exit\n"
    "  -V, --version          show the version and exit\n"
    "\n"
    "SIGINT or SIGTERM: stop accepting, answer every accepted job, exit 0.\n"
    "SIGUSR1: drain, refusing new jobs while the queued ones finish;\n"
    "'gemmctl resume' undoes it.\n"
    "SIGHUP: read the configuration again (file and options) and apply\n"
    "the keys that may change while running; others need a restart.\n"
    "SIGPIPE, SIGUSR2, SIGALRM and the like are logged and ignored.\n"
    "Exit status: 0 clean stop; 1 bad usage, configuration or startup;\n"
    "3 a GPU fault (restart the daemon).\n"
    "See gemmd(8) and gemmd.json(5).\n";

static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"listen", required_argument, NULL, 'l'},
    {"engine", required_argument, NULL, 'e'},
    {"log-level", required_argument, NULL, 'L'},
    {"set", required_argument, NULL, 's'},
    {"print-config", no_argument, NULL, 'p'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int fail(char *msg, size_t len, const char *why)
{
	snprintf(msg, len, "%s", why);
	return 1;
}

/* The configuration file: the one named, else the default if present. */
static int load_file(gm_config *cfg, int argc, char **argv, char *msg,
		     size_t len)
{
	const char *path = GEMMD_SYSCONFDIR "/gemmd.json";
	int named = 0;
	FILE *f;

	for (int i = 1; i < argc - 1; i++)
		if (strcmp(argv[i], "-c") == 0 ||
		    strcmp(argv[i], "--config") == 0) {
			path = argv[i + 1];
			named = 1;
		}
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--config=", 9) == 0) {
			path = argv[i] + 9;
			named = 1;
		}
	if (!named) {
		if ((f = fopen(path, "r")) == NULL)
			return 0;
		fclose(f);
	}
	return gm_config_load_file(cfg, path, msg, len) != 0;
}

/* "--set KEY=VALUE". argv stays as it was: a reload reads it again. */
static int set_pair(gm_config *cfg, const char *pair, char *msg, size_t len)
{
	const char *eq = strchr(pair, '=');
	char key[128];

	if (eq == NULL)
		return fail(msg, len, "--set takes KEY=VALUE");
	snprintf(key, sizeof(key), "%.*s", (int)(eq - pair), pair);
	return gm_config_set(cfg, key, eq + 1, msg, len) != 0;
}

/* Applies the options over the file; returns -1 to exit 0 at once. */
static int apply_options(gm_config *cfg, int argc, char **argv, int *print,
			 char *msg, size_t len)
{
	int replace_listen = 1, opt;

	optind = 0; /* GNU getopt: start over, as a reload reads them again */
	while ((opt = getopt_long(argc, argv, "c:l:e:L:s:phV", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'c':
			break; /* read first, by load_file */
		case 'l':
			if (gm_config_add_listen(cfg, optarg, replace_listen,
						 msg, len) != 0)
				return 1;
			replace_listen = 0;
			break;
		case 'e':
			if (gm_config_set(cfg, "engine", optarg, msg, len) != 0)
				return 1;
			break;
		case 'L':
			if (gm_config_set(cfg, "log_level", optarg, msg, len) !=
			    0)
				return 1;
			break;
		case 's':
			if (set_pair(cfg, optarg, msg, len) != 0)
				return 1;
			break;
		case 'p':
			*print = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		case 'V':
			printf("gemmd %s\n", GEMMD_VERSION);
			return -1;
		default:
			return fail(msg, len, "bad option; see 'gemmd --help'");
		}
	}
	if (optind < argc)
		return fail(msg, len,
			    "unexpected argument; see 'gemmd --help'");
	return gm_config_check(cfg, msg, len) != 0;
}

/* The command line, kept for a reload. */
typedef struct sources {
	int argc;
	char **argv;
} sources;

/* The configuration from the defaults, the file and the options: 0, -1
 * to exit 0 at once (--help, --version), 1 with msg saying why not. */
static int build(gm_config *cfg, const sources *src, int *print, char *msg,
		 size_t len)
{
	int rv;

	if ((rv = load_file(cfg, src->argc, src->argv, msg, len)) != 0)
		return rv;
	return apply_options(cfg, src->argc, src->argv, print, msg, len);
}

/* SIGHUP: the same sources, read again (gm_config_source_fn). */
static int reread(gm_config *out, void *arg, char *msg, size_t len)
{
	int print = 0;

	return build(out, arg, &print, msg, len) == 0 ? GM_OK : GM_ECONFIG;
}

int main(int argc, char **argv)
{
	sources src = {argc, argv};
	int print = 0, rv;
	char msg[512];
	gm_config cfg;
	char *json;

	gm_config_defaults(&cfg);
	if ((rv = build(&cfg, &src, &print, msg, sizeof(msg))) != 0) {
		if (rv > 0)
			fprintf(stderr, "gemmd: %s\n", msg);
		gm_config_free(&cfg);
		return rv < 0 ? 0 : rv;
	}
	if (print) {
		json = gm_config_to_json(&cfg);
		puts(json ? json : "{}");
		free(json);
		gm_config_free(&cfg);
		return 0;
	}
	gm_log_setup(cfg.log_level, cfg.log_format);
	rv = gm_daemon_run(&cfg, reread, &src);
	gm_config_free(&cfg);
	return rv;
}
