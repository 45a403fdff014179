/*
 * soak_fx.h - the hostile processes of the soak test, each run in a child of
 * its own for a bounded time: malformed frames, connect and close
 * storms, clients that send and never read, control bodies at and over
 * the cap, probing for other principals' job ids, and admin operations
 * from an unprivileged uid. Each returns 0, or the step that went wrong.
 */
#ifndef SOAK_FX_H
#define SOAK_FX_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "it_case.h"

#define WAIT_MS 10000

#define SOAK_S 8 /* how long the hostile processes run */

#define IDLE_JOBS 2000 /* unloaded: enough for a steady p99 */

#define NOBODY 65534

#define MAX_CTRL 65536

#define MAX_JOBS 16

/* What each hostile process waits between two of its moves (a storm
 * a quarter of it): together some 5,000 moves a second. */
#define PAUSE_US 2000

/* The client's p99 under load may reach 5x its p99 unloaded. On a host
 * of 2 cores the ipc:// connect storm weighed most: nng 1.5.2's poller
 * spun on the hang-up of each connection closed before its first read
 * (gm_poller.c), and every such connection was made, armed and torn down
 * on the loop. A stream accepted now reads ahead at once and one whose
 * peer is gone is freed where it was accepted (gm_listen.c), which took
 * the soak from 5-19x, then 5-6x, to 1.4-2.5x (0.37-0.54 ms against
 * 0.19-0.28, unloaded p99 over IDLE_JOBS).
 * Beyond that the tail is the host's, not gemmd's: six hostile
 * processes, gemmd's threads and the client share 2 cores, and a
 * wake-up queued behind them waits a scheduler slice or two whatever
 * gemmd does. Under AddressSanitizer, which slows the hostile processes
 * too, six rounds gave 3.1-5.7x (0.64-1.58 ms against 0.21-0.28), so
 * SCHED_SLACK_US is added to the bound. A client held behind a hostile
 * connection would wait out one of its deadlines (500 ms here). */
#define SCHED_SLACK_US 2000.0

/* Error codes of PROTOCOL.md 9. */
enum { W_EMAGIC = 2, W_ETOOMANY = 11, W_ETOOBIG = 13, W_EBUSY = 14 };

/* What every hostile process knows. */
typedef struct soak {
	const it_daemon *d;
	double until_us;
	bool as_nobody; /* on ipc://; else the test's own uid */
	uint64_t owned; /* the client's detached job's id */
} soak;

/* ---- the hostile processes: each returns 0, or the step that went
 * other than the protocol says; *ops counts what it did ---- */

bool running(const soak *s);

/* Connects to ipc:// (as the hostile uid) or tcp:// by turns. */
int connect_any(const soak *s, unsigned long i);

/* Connections refused at once (EBUSY, id 0: a cap was reached), in
 * this process. */
extern unsigned long refused;

/* Reads one frame on fd: an ERROR with code want, or the refusal of
 * the connection (then *was_refused). */
bool got_error(int fd, uint32_t want, bool *was_refused);

/* A connection to url that gemmd admitted, retried while it is refused
 * for a cap; -1 when there is none before the end. */
int connect_admitted(const soak *s, const char *url);

/* One small fp64 job, answered right, on fd. */
bool one_job(int fd, unsigned seed);

/* Frames that break the protocol: a bad magic and a length over the
 * limit (answered, then the connection closes); garbage, then gone; a
 * count over max_jobs_per_request (answered, and the connection serves
 * the next request). */
int malformed(const soak *s, unsigned long *ops);

/* Connections opened and closed at once, some after half a header. */
int storms(const soak *s, unsigned long *ops);

/* Connections that send requests, results of 32 KiB each, as long as
 * the socket takes them and never read: held until gemmd gives up on
 * them (send_timeout_ms) or a second has passed. */
int non_readers(const soak *s, unsigned long *ops);

/* Control bodies over max_ctrl_bytes (refused, then closed) and at it,
 * full of garbage (refused; the connection serves on). */
int big_ctrl(const soak *s, unsigned long *ops);

/* status, wait and cancel of id on fd, each answered as an id that
 * names nothing is; false otherwise. */
bool unknown(int fd, uint64_t id, uint64_t *req);

/* Another principal's job id, those around it and random ones, from
 * tcp:// (anonymous) and, as nobody, from ipc://: never known. */
int probes(const soak *s, unsigned long *ops);

/* drain and resume from a uid not in admin_uids: refused, naming the
 * key. */
int admin(const soak *s, unsigned long *ops);

/* The hostile processes, by name. */
#define NHOSTILE 6
struct hostile_proc {
	const char *name;
	int (*run)(const soak *s, unsigned long *ops);
};
extern const struct hostile_proc hostile[NHOSTILE];

/* In a child: becomes nobody when asked, runs hostile[i], writes its
 * count to out and exits with its status. */
void hostile_child(const soak *s, size_t i, int out);

#endif
