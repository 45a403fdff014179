/*
 * gm_sockbench.h - what gemmd_socket_bench runs: its cases, the paths a
 * client has to a daemon, the daemon it starts (or the one it is pointed
 * at), and one timed run of a case over a path.
 */
#ifndef GM_SOCKBENCH_H
#define GM_SOCKBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"
#include "gm_rawrate.h"

#define GM_SB_JOBS     64
#define GM_SB_CASES    3
#define GM_SB_PATHS    5
#define GM_SB_SETS_MAX 16

/* 64 fp64 jobs of one shape, all in one request. */
typedef struct gm_sb_case {
	const char *name, *label;
	uint32_t m, n, k;
	bool selected;
	uint64_t in, out; /* bytes of the request's operands, of its results */
	double *a, *b, *res; /* every job's, back to back */
	double raw[4];	     /* the raw rate's time by URL kind; 0: not yet */
	double memcpy_ms, copies_ms, pcie_ms; /* < 0: not measured */
} gm_sb_case;

typedef struct gm_sb {
	const char *url, *gemmd, *engine; /* url: attach instead of start */
	int reps;
	unsigned connections;
	char *sets[GM_SB_SETS_MAX];
	int nsets;
	gm_sb_case cases[GM_SB_CASES];
	char dir[64];	    /* certificates, sockets */
	gm_rawrate_tls tls; /* certificates */
	int pid;	    /* the daemon started, or 0 */
	char ipc[160], tcp[64], tlsurl[64];
} gm_sb;

/* Selects case name (gemv, outer, square); -1 for another name. */
int gm_sb_select(gm_sb *b, const char *name);

/* Makes the directory and certificates, starts the daemon (or checks
 * the one at b->url). -1 with msg. */
int gm_sb_open(gm_sb *b, char *msg, size_t msglen);

/* Prints the host, the engine and the daemon's settings. */
void gm_sb_describe(gm_sb *b);

/* Stops the daemon (its exit status: -1 unless 0) and removes the
 * directory. */
int gm_sb_close(gm_sb *b);

/* The case's operands (random) and results. -1 with msg. */
int gm_sb_prepare(gm_sb *b, gm_sb_case *c, char *msg, size_t msglen);
void gm_sb_release(gm_sb_case *c);

/* Paths: their names, the URL kind each goes over, and whether this run
 * has them. */
const char *gm_sb_path_name(int path);
int gm_sb_path_kind(int path);
bool gm_sb_has_path(const gm_sb *b, int path);

/* The median time of b->reps runs of c over path (after one warm-up),
 * every result checked. -1 with why. */
int gm_sb_run(gm_sb *b, gm_sb_case *c, int path, double *ms, char *why,
	      size_t whylen);

#endif
