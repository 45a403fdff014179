/*
 * regions_fx.h - what the region tests share: a gemmd per test (the CUDA
 * engine with GM_TEST_CUDA), jobs with operands of any dtype placed in
 * regions, a job sent in a raw frame with its region descriptor, and
 * this program run again as a child (as another user, or to die holding
 * regions): main dispatches --child to child_other_user and child_dies.
 */
#ifndef REGIONS_FX_H
#define REGIONS_FX_H

#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "it_case.h"
#include "gemmd.h"
#include "gm_proto.h"
#include "gm_proto_region.h"
#include "gm_testref.h"

#if GM_TEST_CUDA
#include "gm_engine.h"
#define ENGINE "--engine=cuda"
#else
#define ENGINE "--engine=cpu"
#endif

#define TIMEOUT_MS 30000

extern uint64_t seed;

/* ---- a daemon per test ---- */

void start(it_daemon *d, const char *const *extra);

gemmd_client *open_ipc(const it_daemon *d);

/* Waits up to 10 s for the daemon to have no region mapped. */
void assert_regions_gone(gemmd_client *c);

void stop(it_daemon *d);

/* ---- jobs with operands of any dtype ---- */

/* A job and its operands in malloc'd memory. */
typedef struct tjob {
	gemmd_job j;
	void *a, *b, *c, *out;
	size_t na, nb, nc; /* bytes */
} tjob;

void make(tjob *t, int dtype, int layout, int ta, int tb, uint32_t m,
	  uint32_t n, uint32_t k, int with_c);

void drop(tjob *t);

/* Results x and y of a dtype agree to a few units in the last place of
 * the magnitudes around: the same engine, perhaps another stream. */
int close_enough(int dtype, const void *x, const void *y, size_t bytes);

/* Where one region copy of a job lives: offsets of A, B, C, out. */
typedef struct placed {
	uint64_t a, b, c, out;
} placed;

/* Copies t's inputs into r (those in mask: 1 A, 2 B, 4 C, 8 out) and
 * points a copy of t's job at them; in_place puts out over C. */
gemmd_job in_region(const tjob *t, gemmd_region *r, unsigned mask, int in_place,
		    placed *p);

/* Sends one job d with region descriptor ref (inline operands zeros)
 * over url in a raw frame; returns the code of the ERROR reply, or the
 * job's status. */
int raw(const char *url, const gm_job_desc *d, const gm_region_ref *ref);

/* Runs this program again as a child in role (see main), as nobody
 * with drop; nng cannot be used in a forked child, so it execs. */
pid_t spawn_self(const char *role, const char *url, uint64_t id, int drop);

int wait_child(pid_t pid);

/* As another user: the region of id, root's, is refused; its own work. */
int child_other_user(const char *url, uint64_t id);

/* Makes regions, starts a job on one, and exits without a word. */
int child_dies(const char *url);

/* The main of a region test: as a child (--child ROLE URL ID) runs
 * child_dies or child_other_user; with GM_TEST_CUDA and no device
 * returns 77 (skipped); else it_run. */
int regions_main(int argc, char **argv, const struct CMUnitTest *tests,
		 size_t n);
#define REGIONS_MAIN(argc, argv, tests) \
	regions_main(argc, argv, tests, sizeof(tests) / sizeof((tests)[0]))

#endif
