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
    "config/README.md)\n"
    "  -p, --print-config     print the resulting configuration and exit\n"
    "  -h, --help             show this help and exit\n"
    "  -V, --version          show the version and exit\n"
    "\n"
    "SIGINT or SIGTERM: stop accepting, answer every accepted job, exit 0.\n"
    "SIGUSR1: drain, refusing new jobs while the queued ones finish;\n"
    "'gemmctl resume' undoes it.\n"
    "Exit status: 0 clean stop; 1 bad usage, configuration or startup;\n"
    "3 a GPU fault (restart the daemon).\n";

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

static int fail(const char *msg)
{
	fprintf(stderr, "gemmd: %s\n", msg);
	return 1;
}

/* The configuration file: the one named, else the default if present. */
static int load_file(gm_config *cfg, int argc, char **argv)
{
	const char *path = GEMMD_SYSCONFDIR "/gemmd.json";
	int named = 0;
	char msg[512];
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
	if (gm_config_load_file(cfg, path, msg, sizeof(msg)) != 0)
		return fail(msg);
	return 0;
}

static int set_key(gm_config *cfg, const char *key, const char *value)
{
	char msg[512];

	if (gm_config_set(cfg, key, value, msg, sizeof(msg)) != 0)
		return fail(msg);
	return 0;
}

/* Applies the options over the file; returns -1 to exit 0 at once. */
static int apply_options(gm_config *cfg, int argc, char **argv, int *print)
{
	int replace_listen = 1, opt;
	char msg[512];
	char *eq;

	while ((opt = getopt_long(argc, argv, "c:l:e:L:s:phV", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'c':
			break; /* read first, by load_file */
		case 'l':
			if (gm_config_add_listen(cfg, optarg, replace_listen,
						 msg, sizeof(msg)) != 0)
				return fail(msg);
			replace_listen = 0;
			break;
		case 'e':
			if (set_key(cfg, "engine", optarg))
				return 1;
			break;
		case 'L':
			if (set_key(cfg, "log_level", optarg))
				return 1;
			break;
		case 's':
			if ((eq = strchr(optarg, '=')) == NULL)
				return fail("--set takes KEY=VALUE");
			*eq = '\0';
			if (set_key(cfg, optarg, eq + 1))
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
			fputs("Try 'gemmd --help'.\n", stderr);
			return 1;
		}
	}
	if (optind < argc)
		return fail("unexpected argument; see 'gemmd --help'");
	if (gm_config_check(cfg, msg, sizeof(msg)) != 0)
		return fail(msg);
	return 0;
}

int main(int argc, char **argv)
{
	gm_config cfg;
	int print = 0, rv;
	char *json;

	gm_config_defaults(&cfg);
	if ((rv = load_file(&cfg, argc, argv)) != 0 ||
	    (rv = apply_options(&cfg, argc, argv, &print)) != 0) {
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
	rv = gm_daemon_run(&cfg);
	gm_config_free(&cfg);
	return rv;
}
