/*
 * gemmctl.c - the command-line client of gemmd.
 *
 * Subcommands: submit (one job from .npy files, with an optional check
 * of the result against a reference computed here, or detached), ping,
 * stats, status, wait and cancel of detached jobs, jobs (the caller's
 * jobs listed), drain and resume,
 * rand (random .npy matrices, since a fresh host may have no NumPy),
 * bench (a load generator) and version.
 * Each subcommand parses its own options with getopt_long and has its
 * own --help. Errors go to stderr as "gemmctl: ..."; the exit status says
 * which kind of failure it was (see main_help). This file holds main,
 * the command table and the top-level help; the subcommands and what
 * they share are behind gm_ctl.h.
 */
#include <stdio.h>
#include <string.h>

#include "gm_build.h"
#include "gm_ctl.h"

static const char main_help[] =
    "Usage: gemmctl COMMAND [options]\n"
    "Client of the gemmd GEMM daemon.\n"
    "\n"
    "Commands:\n"
    "  submit A.npy B.npy -o OUT.npy  compute alpha*op(A)*op(B) + beta*C\n"
    "  ping                           check that the daemon answers\n"
    "  stats                          show the daemon's statistics\n"
    "  status ID                      show a detached job's state\n"
    "  wait ID -o OUT.npy             wait for a detached job's result\n"
    "  cancel ID                      cancel a detached job\n"
    "  jobs                           list your queued, running and\n"
    "                                 detached jobs\n"
    "  drain                          refuse new jobs, finish the queued\n"
    "  resume                         accept jobs again after a drain\n"
    "  rand ROWSxCOLS -o FILE.npy     write a random matrix\n"
    "  bench                          load the daemon, report throughput\n"
    "                                 and latency\n"
    "  version                        this client's version, and the\n"
    "                                 daemon's when it answers\n"
    "'gemmctl COMMAND --help' describes each one; 'gemmctl -V' (or\n"
    "--version) prints the client's version alone.\n"
    "\n"
    "The daemon is at --url, else $GEMMD_URL, else\n" GEMMD_DEFAULT_URL ".\n"
    "A .npy argument of '-' is stdin (an input) or stdout (-o -); every\n"
    "command that talks to the daemon takes --json.\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  the job failed or the daemon refused the request\n"
    "  2  usage error (options, or shapes that do not fit together)\n"
    "  3  the daemon cannot be reached, timed out or dropped the "
    "connection\n"
    "  4  a .npy file cannot be read or written\n"
    "  5  --verify found the result outside its tolerance\n"
    "\n"
    "See gemmctl(1), and gemmd(8) and gemmd.json(5) for the daemon.\n";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
    {"submit", gm_ctl_submit},	 {"ping", gm_ctl_ping},
    {"stats", gm_ctl_stats},	 {"status", gm_ctl_status},
    {"wait", gm_ctl_wait},	 {"cancel", gm_ctl_cancel},
    {"drain", gm_ctl_drain},	 {"resume", gm_ctl_resume},
    {"rand", gm_ctl_rand},	 {"bench", gm_ctl_bench},
    {"version", gm_ctl_version}, {"jobs", gm_ctl_jobs},
};

int main(int argc, char **argv)
{
	static char name[64];
	size_t i;

	gm_ctl_out = stdout;
	if (argc < 2) {
		fputs(main_help, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(main_help, stdout);
		return 0;
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
		puts("gemmctl " GEMMD_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		/* getopt's own messages then name the subcommand. */
		snprintf(name, sizeof(name), "gemmctl %s", argv[1]);
		gm_ctl_cmd = name;
		argv[1] = name;
		return commands[i].fn(argc - 1, argv + 1);
	}
	return gm_ctl_usage_error("unknown command '%s'", argv[1]);
}
