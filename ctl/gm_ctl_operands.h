/*
 * gm_ctl_operands.h - private to gemmctl submit: a job's operands from
 * .npy files (or stdin), either read into memory of their own and
 * converted there (the plain path: the library sends them), or read
 * straight into a shared-memory region of the job's own over ipc://,
 * where the daemon reads them and writes the result. Every input is
 * checked as far as it can be before anything is allocated from it: a
 * file's header and size, stdin by reading it whole. Failures are
 * reported here (gm_ctl_fail) and returned as gemmctl's exit status.
 * gemmctl's main thread; the calls block on file I/O.
 */
#ifndef GM_CTL_OPERANDS_H
#define GM_CTL_OPERANDS_H

#include <stdbool.h>

#include "gemmd.h"
#include "gm_npy.h"

/* One input: its file open at the data (a regular file, whose header and
 * size are checked), or its data read whole (stdin, which can only be
 * checked by reading it all, or a file once the plain path needs it). */
struct gm_ctl_operand {
	gm_npy_in in; /* in.m: dtype, order and shape */
	gm_npy m;     /* the data in memory, when read there */
	void *packed; /* m converted to the job's dtype, when it differs */
};

struct gm_ctl_operands {
	struct gm_ctl_operand a, b, c;
	bool has_c;
	void *out;
	gemmd_region *region; /* the job's, when it has one */
};

/* Opens A, B and C (c NULL: none) into o, zeroed by the caller; sets
 * j's M, N, K, layout (A's order) and, unless dtype_set, dtype (A's).
 * 0, or the exit status after saying why not; either way o is for
 * gm_ctl_operands_free. */
int gm_ctl_operands_open(struct gm_ctl_operands *o, const char *a,
			 const char *b, const char *c, bool dtype_set,
			 gemmd_job *j);

/* The plain path: the data read into memory, B and C in A's order,
 * everything in the job's dtype; pointers in j (out, too). 0 or the
 * exit status. */
int gm_ctl_operands_plain(struct gm_ctl_operands *o, gemmd_job *j);

/* gm_ctl_operands_region found no region to use. */
#define GM_CTL_NO_REGION (-1)

/* The region path: makes a region on cl for A, B, C and the result,
 * reads each input into its place there (converted there when its dtype
 * or order is not the job's) and sets j's refs. The result overwrites C
 * in place unless keep_c. GM_CTL_NO_REGION when the daemon takes no
 * region from cl (no hand-off socket, regions off, a quota): call
 * gm_ctl_operands_drop_region, then the plain path runs as if none had
 * been asked for. Else 0, or the exit status (a region call timed out:
 * the job would too; a read failed). Blocks while the daemon registers
 * the region, up to timeout_ms. */
int gm_ctl_operands_region(struct gm_ctl_operands *o, gemmd_client *cl,
			   gemmd_job *j, bool keep_c, int timeout_ms);

/* Forgets a region the job is not to use: j's refs cleared, the region
 * released. */
void gm_ctl_operands_drop_region(struct gm_ctl_operands *o, gemmd_job *j);

/* After a job ran in o's region: its operands and result as pointers
 * there in j, for the result file and --verify. Valid until the client
 * that made the region is closed. */
void gm_ctl_operands_view(const struct gm_ctl_operands *o, gemmd_job *j);

/* Closes and frees what o holds (not its region: the client's close
 * releases that). o may be zeroed. */
void gm_ctl_operands_free(struct gm_ctl_operands *o);

#endif
