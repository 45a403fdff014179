/*
 * gemmd_socket_bench - the socket path of gemmd against its bounds, on
 * any engine: jobs shaped to move bytes with little arithmetic (64 x
 * (1024x1024 . 1024x1): 512 MiB in; 64 x (1024x1 . 1x1024): 512 MiB
 * out) and 64 x 1024^2 fp64 (1 GiB in, 0.5 GiB out), each as one
 * request of 64 jobs, over every path a client has:
 *
 *   ipc staged   plain pointers over ipc://, staged by the library
 *                through its shared-memory region (the default)
 *   ipc regions  the jobs' operands in a region the bench made
 *   ipc socket   plain pointers over ipc://, staging off (NO_SHM)
 *   tcp          tcp://127.0.0.1
 *   tls          tls+tcp://127.0.0.1 (gemmd's own TLS)
 *
 * Beside each, measured in the same run: the raw rate of one stream of
 * that kind carrying the same bytes in and out (bench/gm_rawrate.h),
 * memcpy of the same bytes on one thread and on as many as the library
 * copies staged operands on ("copies": a staged job's bytes cross the
 * host's memory once more), and with the CUDA engine built the PCIe
 * bound (the inputs alone to the GPU from pinned memory). The "x"
 * columns are bound time / gemmd time: 1.0 is the bound's rate.
 *
 *   gemmd_socket_bench [--url URL] [--gemmd PATH] [--engine NAME]
 *                      [--reps N] [--case NAME]... [--connections N]
 *                      [--set KEY=VALUE]...
 *
 * Without --url it starts its own gemmd (--gemmd, default the one built
 * beside it) on an ipc:// socket, tcp:// and tls+tcp:// on loopback,
 * with certificates made by the openssl command; with --url it measures
 * the paths of that URL's kind on a running daemon.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gm_net.h"
#include "gmc_stage.h"
#include "gm_pcie.h"
#include "gm_rawrate.h"
#include "gm_sockbench.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gemmd_socket_bench [--url URL] [--gemmd PATH] "
		   "[--engine NAME] [--reps N]\n"
		   "                          [--case gemv|outer|square]... "
		   "[--connections N] [--set KEY=VALUE]...\n");
}

static int parse(int argc, char **argv, gm_sb *b)
{
	static const struct option opts[] = {
	    {"url", required_argument, NULL, 'u'},
	    {"gemmd", required_argument, NULL, 'g'},
	    {"engine", required_argument, NULL, 'e'},
	    {"reps", required_argument, NULL, 'r'},
	    {"case", required_argument, NULL, 'c'},
	    {"connections", required_argument, NULL, 'n'},
	    {"set", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int o;

	while ((o = getopt_long(argc, argv, "u:g:e:r:c:n:s:h", opts, NULL)) !=
	       -1) {
		switch (o) {
		case 'u':
			b->url = optarg;
			break;
		case 'g':
			b->gemmd = optarg;
			break;
		case 'e':
			b->engine = optarg;
			break;
		case 'r':
			b->reps = atoi(optarg);
			break;
		case 'c':
			if (gm_sb_select(b, optarg) != 0)
				return -1;
			break;
		case 'n':
			b->connections = (unsigned)atoi(optarg);
			break;
		case 's':
			if (b->nsets == GM_SB_SETS_MAX)
				return -1;
			b->sets[b->nsets++] = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	return b->reps > 0 && optind == argc ? 0 : -1;
}

/* The bounds of one case on a kind of stream, measured once. */
static double raw_ms(gm_sb *b, int kind, gm_sb_case *c)
{
	static const char *url[] = {NULL, NULL, "tcp://127.0.0.1:0",
				    "tls+tcp://127.0.0.1:0"};
	char ipc[160], msg[256];
	double ms;

	if (c->raw[kind] != 0)
		return c->raw[kind];
	snprintf(ipc, sizeof(ipc), "ipc://%s/raw.sock", b->dir);
	if (gm_rawrate(kind == GM_URL_IPC ? ipc : url[kind], &b->tls, c->in,
		       c->out, b->reps, &ms, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "raw rate: %s\n", msg);
		ms = -1;
	}
	return c->raw[kind] = ms;
}

static void put_ratio(double bound, double ms)
{
	if (bound > 0)
		printf(" %9.1f %6.2f", bound, bound / ms);
	else
		printf(" %9s %6s", "-", "-");
}

static void row(gm_sb *b, gm_sb_case *c, int path)
{
	double ms;
	char why[256];
	int kind = gm_sb_path_kind(path);

	if (gm_sb_run(b, c, path, &ms, why, sizeof(why)) != 0) {
		printf("%-8s %-12s failed: %s\n", c->name,
		       gm_sb_path_name(path), why);
		return;
	}
	printf("%-8s %-12s %9.1f %7.2f", c->name, gm_sb_path_name(path), ms,
	       (double)(c->in + c->out) / ms / 1e6);
	put_ratio(raw_ms(b, kind, c), ms);
	put_ratio(c->memcpy_ms, ms);
	put_ratio(c->copies_ms, ms);
	put_ratio(c->pcie_ms, ms);
	printf("\n");
}

int main(int argc, char **argv)
{
	gm_sb b = {.reps = 3, .engine = "auto", .gemmd = GEMMD_PATH};
	char msg[256];
	int rc = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse(argc, argv, &b) != 0) {
		usage(stderr);
		return 2;
	}
	if (gm_sb_open(&b, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "gemmd_socket_bench: %s\n", msg);
		gm_sb_close(&b);
		return 1;
	}
	gm_sb_describe(&b);
	printf("%-8s %-12s %9s %7s %9s %6s %9s %6s %9s %6s %9s %6s\n", "case",
	       "path", "gemmd ms", "GB/s", "raw ms", "x raw", "memcpy", "x cp",
	       "copies", "x cpN", "pcie ms", "x pcie");
	for (int i = 0; i < GM_SB_CASES; i++) {
		gm_sb_case *c = &b.cases[i];

		if (!c->selected)
			continue;
		if (gm_sb_prepare(&b, c, msg, sizeof(msg)) != 0) {
			fprintf(stderr, "%s: %s\n", c->name, msg);
			rc = 1;
			continue;
		}
		c->memcpy_ms = gm_memcpy_ms(c->in + c->out, 1, b.reps);
		c->copies_ms =
		    gm_memcpy_ms(c->in + c->out, gmc_stage_threads(), b.reps);
		c->pcie_ms = gm_pcie_h2d_ms(c->in, b.reps, msg, sizeof(msg));
		for (int p = 0; p < GM_SB_PATHS; p++)
			if (gm_sb_has_path(&b, p))
				row(&b, c, p);
		gm_sb_release(c);
	}
	if (gm_sb_close(&b) != 0)
		rc = 1;
	return rc;
}
