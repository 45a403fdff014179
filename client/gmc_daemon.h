/*
 * gmc_daemon.h - private to the client library: a daemon the client
 * dialed (gemmd_open's, and each of gemmd_dial's), its connection slots
 * (gmc_conn.h), its hand-off socket for regions and, over ipc://, the
 * staging of plain pointers (gmc_stage.h, made and freed with the daemon
 * by gemmd_client.c: staging is routed through the daemon, not below).
 *
 * Routing. A call goes to one daemon: the one that made the regions its
 * jobs name, else the daemon with the least outstanding work among those
 * with a connection up (all of them when none is), ties taken in turn.
 * Outstanding work is what the daemon's parts in flight move and
 * compute: bytes of request and result plus FLOPs / GMC_DAEMON_FLOPS_PER_BYTE.
 * Within the daemon a part goes to the slot that is up with the least
 * work (gmc_conn_pick). A GEMM request of at least GMC_DAEMON_STRIPE_BYTES
 * whose daemon has several slots is striped: split by job ranges of about equal
 * bytes into one part per slot (at most one per job), all in flight at once.
 * A TCP daemon has GEMMD_TCP_CONNECTIONS_DEFAULT slots unless the caller
 * said how many, all but the first dialed on demand (gmc_conn.h): by
 * the first part a striped request queues on them.
 *
 * Functions say whether they run under the client's lock.
 */
#ifndef GMC_DAEMON_H
#define GMC_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "gm_proto.h"
#include "gm_tls.h"
#include "gmc_call.h"
#include "gmc_client.h"
#include "gmc_conn.h"

#define GMC_DAEMON_CONNS_MAX	  64
#define GMC_DAEMON_STRIPE_BYTES	  (64ull << 20)
#define GMC_DAEMON_FLOPS_PER_BYTE 64

typedef struct gmc_shm gmc_shm;
struct gmc_stage;

struct gmc_daemon {
	gemmd_client *cl;
	char url[256];
	int kind; /* enum gm_url_kind */
	gm_tls_ctx *tls;
	gmc_slots sl; /* its connection slots, their work and state */
	gmc_shm *shm; /* its hand-off socket and the regions made on it */
	struct gmc_stage *stage; /* NULL: plain pointers take the socket */
};

/* The frames of a call, built before they are queued. */
typedef struct gmc_plan {
	unsigned nparts;
	struct gmc_plan_part {
		uint32_t first, njobs;
		uint64_t id, work;
		gmc_frame f;
	} part[GMC_DAEMON_CONNS_MAX];
} gmc_plan;

/* A daemon at url with options o (connections, TLS files, hand-off
 * socket, staging), its dialers made, nothing dialed. Not under the
 * lock. Error with gemmd_last_error() set. */
int gmc_daemon_new(gemmd_client *cl, const char *url, const gemmd_open_opts *o,
		   gmc_daemon **out);

/* Dials every slot. Under the lock. */
void gmc_daemon_start(gmc_daemon *dm, gmc_todo *t);

/* Waits up to timeout_ms (or GEMMD_FOREVER) for the first dial of the
 * first slot: GM_OK when it connected, else GM_ETRANSPORT, or
 * GM_ETIMEDOUT when it has not ended, with gemmd_last_error() set. Not
 * under the lock. */
int gmc_daemon_await(gmc_daemon *dm, int timeout_ms);

/* Marks dm stopping (under the lock, with gmc_daemon_shutdown to
 * follow). */
void gmc_daemon_stopping(gmc_daemon *dm);

/* With dm stopping: ends every slot's dials and streams and waits for
 * them (gmc_conn_shutdown); hangs up its hand-off socket. Not under the
 * lock. */
void gmc_daemon_shutdown(gmc_daemon *dm);

/* Stops, shuts down and frees a daemon no call was routed to. Not under
 * the lock. */
void gmc_daemon_stop(gmc_daemon *dm);

/* Frees dm after gmc_daemon_shutdown (or never started). */
void gmc_daemon_free(gmc_daemon *dm);

/* The daemon for jobs[0..n-1] (none for a control call), as above.
 * Under the lock. */
gmc_daemon *gmc_daemon_pick(gemmd_client *cl, const gemmd_job *jobs,
			    uint32_t n);

/* Builds k's frames for dm: the jobs of a GEMM or detached call with
 * their descriptions d and batch b, or the JSON of a control call or a
 * wait. Not under the lock. Error with gemmd_last_error() set. */
int gmc_daemon_plan(gmc_daemon *dm, gmc_call *k, const gm_job_desc *d,
		    const gm_batch *b, const char *json, gmc_plan *pl);

/* Makes k's parts from pl (which gives up its frames) and queues them.
 * Under the lock, with k started. */
void gmc_daemon_queue(gmc_daemon *dm, gmc_call *k, gmc_plan *pl, gmc_todo *t);

/* Frees the frames pl still owns. */
void gmc_plan_free(gmc_plan *pl);

/* Why a call found no connection in ms ("no connection to the daemon
 * within N ms", with the last dial's failure). Under the lock. */
void gmc_daemon_no_connection(const gmc_daemon *dm, int ms, char *msg,
			      size_t len);

/* The work a part moving bytes and computing flops adds. */
uint64_t gmc_daemon_cost(uint64_t bytes, double flops);

#endif
