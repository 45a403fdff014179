/*
 * gm_stats.h - the daemon's counters and latency histograms.
 *
 * A plain struct written only on the loop thread and rendered in one
 * place (gm_stats_render). Key names in the rendered document are an API
 * (README.md, "Stats"): add keys, never rename them.
 */
#ifndef GM_STATS_H
#define GM_STATS_H

#include <stdint.h>

#include "gm_clock.h"
#include "gm_engine.h"
#include "gm_hist.h"
#include "gm_pageable.h"
#include "gm_proto.h"
#include "gm_rate.h"

enum gm_phase {
	GM_PHASE_QUEUE,
	GM_PHASE_H2D,
	GM_PHASE_KERNEL,
	GM_PHASE_D2H,
	GM_PHASE_TOTAL,
	GM_PHASE_COUNT
};

#define GM_DTYPE_SLOTS 6 /* indexed by enum gm_dtype, slot 0 unused */

/* Why the HTTP endpoints (gm_http.h) closed a connection: X(NAME, key
 * in the stats document). An idle keep-alive connection closed is the
 * normal end of one; the others are clients that broke a limit. */
#define GM_HTTP_CLOSE_MAP(X)                \
	X(HEADER_TIMEOUT, "header_timeout") \
	X(IDLE_TIMEOUT, "idle_timeout")     \
	X(SEND_TIMEOUT, "send_timeout")     \
	X(TOO_LARGE, "header_too_large")    \
	X(MALFORMED, "malformed")

enum gm_http_close {
#define GM_HTTP_ENUM(name, key) GM_HTTP_CLOSED_##name,
	GM_HTTP_CLOSE_MAP(GM_HTTP_ENUM)
#undef GM_HTTP_ENUM
	    GM_HTTP_CLOSE_COUNT
};

extern const char *const gm_http_close_names[GM_HTTP_CLOSE_COUNT];

/* The HTTP endpoints' connections and requests, counted by gm_http.c. */
typedef struct gm_stats_http {
	uint64_t open;	   /* served now */
	uint64_t accepted; /* since start, refused ones included */
	uint64_t refused;  /* closed at once: http_max_connections open */
	uint64_t closed_by[GM_HTTP_CLOSE_COUNT]; /* closed by the daemon */
	uint64_t requests;			 /* answered */
	uint64_t renders; /* /metrics bodies rendered; others reused one */
} gm_stats_http;

/*
 * Uids whose jobs are counted apart (ipc:// peers): the first ones seen
 * since start, so that the series a scrape shows stay put and their
 * number is bounded; jobs of later uids count as "other".
 */
#define GM_STATS_UIDS 32

typedef struct gm_stats_uid {
	uint64_t uid;
	uint64_t ok, failed; /* finished jobs */
} gm_stats_uid;

typedef struct gm_stats {
	double start_us; /* monotonic clock at start */
	uint64_t requests;
	uint64_t requests_refused; /* malformed, busy, shutting down */
	uint64_t ctrl_requests;
	uint64_t jobs_ok;
	uint64_t jobs_failed;
	uint64_t jobs_rejected; /* in refused requests, never queued */
	uint64_t jobs_by_dtype[GM_DTYPE_SLOTS];
	uint64_t bytes_in;	       /* request bytes received */
	uint64_t bytes_out;	       /* reply bytes sent */
	double flops;		       /* 2*m*n*k of jobs that succeeded */
	uint64_t errors[GM_ERR_COUNT]; /* jobs and refusals by code */
	gm_hist phase[GM_PHASE_COUNT];
	/* The queue phase again, per priority of the job's request. */
	gm_hist queue_prio[GM_BATCH_PRIO_MAX + 1];
	/* Finished jobs by dtype and status (0: ok, else the error code). */
	uint64_t jobs_by[GM_DTYPE_SLOTS][GM_ERR_COUNT];
	/* Of jobs that succeeded, by dtype: FLOPs as in flops, operand
	 * bytes to the device (A, B and C when given), result bytes back. */
	double flops_by_dtype[GM_DTYPE_SLOTS];
	uint64_t h2d_by_dtype[GM_DTYPE_SLOTS];
	uint64_t d2h_by_dtype[GM_DTYPE_SLOTS];
	uint64_t bytes_h2d, bytes_d2h; /* the same, over every dtype */
	gm_rate rate; /* finished jobs, and the above, per second */
	/* Jobs of ipc:// peers by uid: uids[0..nuids-1], then the rest. */
	gm_stats_uid uids[GM_STATS_UIDS];
	unsigned nuids;
	gm_stats_uid other_uids; /* its uid unused */
	/* Requests over the pool, in pageable memory: the admission's own
	 * state and counts (gm_pageable.h), its cap set at start. */
	gm_pageable pageable;
	gm_stats_http http;
} gm_stats;

/* Zeroes s and stamps the start time. */
void gm_stats_init(gm_stats *s);

/* Counts one finished job of priority prio with its timings. */
void gm_stats_job(gm_stats *s, const gm_job_desc *d, unsigned prio, int status,
		  const gm_timings *t);

/* Counts one finished job, ok or not, of an ipc:// peer with uid. */
void gm_stats_uid_job(gm_stats *s, uint64_t uid, int status);

/* Detached jobs (gm_detach.h), as the stats document shows them. */
typedef struct gm_stats_detach {
	uint64_t jobs;	  /* recorded since start */
	uint64_t pending; /* queued or running */
	uint64_t results; /* finished, result kept */
	uint64_t records; /* finished, result gone, status kept */
	uint64_t waits;	  /* waits parked on a job */
	uint64_t dropped; /* results dropped unclaimed: expired or for room */
	uint64_t bytes;	  /* counted against detach_max_bytes */
	uint64_t limit;	  /* detach_max_bytes */
} gm_stats_detach;

/* Shared-memory regions (gm_regions.h), as the stats document shows
 * them. */
typedef struct gm_stats_regions {
	uint64_t count;		   /* mapped now, released ones in use too */
	uint64_t mapped_bytes;	   /* their bytes */
	uint64_t registered_bytes; /* of those, registered with the engine */
	uint64_t created;	   /* registered since start */
	uint64_t refused;	   /* hand-off requests refused */
	uint64_t jobs;		   /* jobs that named a region */
	uint64_t connections;	   /* hand-off connections open */
} gm_stats_regions;

/* Why the daemon refused a connection as it came (PROTOCOL.md 2.1):
 * X(NAME, key in the stats document). */
#define GM_CONN_REFUSAL_MAP(X)                      \
	X(ALLOW_LIST, "allow_list")                 \
	X(MAX_CONNECTIONS, "max_connections")       \
	X(MAX_PER_PEER, "max_connections_per_peer") \
	X(MAX_ANONYMOUS, "max_connections_anonymous")

/* Why the daemon closed a connection it had taken: its deadlines, a
 * frame it cannot read past (a bad header, a length over a limit), a
 * client of protocol version 1, a payload that came too slowly. */
#define GM_CONN_DROP_MAP(X)               \
	X(HANDSHAKE, "handshake_timeout") \
	X(STALL, "stall_timeout")         \
	X(SEND, "send_timeout")           \
	X(PROTOCOL, "protocol")           \
	X(V1_CLIENT, "v1_client")         \
	X(PAYLOAD_RATE, "payload_rate")

enum gm_conn_refusal {
#define GM_CONN_ENUM(name, key) GM_CONN_REFUSED_##name,
	GM_CONN_REFUSAL_MAP(GM_CONN_ENUM)
#undef GM_CONN_ENUM
	    GM_CONN_REFUSAL_COUNT
};

enum gm_conn_drop {
#define GM_CONN_ENUM(name, key) GM_CONN_DROPPED_##name,
	GM_CONN_DROP_MAP(GM_CONN_ENUM)
#undef GM_CONN_ENUM
	    GM_CONN_DROP_COUNT
};

/* The names of the reasons, as the stats document writes them. */
extern const char *const gm_conn_refusal_names[GM_CONN_REFUSAL_COUNT];
extern const char *const gm_conn_drop_names[GM_CONN_DROP_COUNT];

/* Connections (the daemon's transport), as the stats document shows
 * them. */
typedef struct gm_stats_conns {
	uint64_t open;	   /* served now (refused ones not counted) */
	uint64_t accepted; /* since start, refused ones included */
	uint64_t refused;  /* sent one ERROR at accept and closed */
	uint64_t refused_by[GM_CONN_REFUSAL_COUNT];
	uint64_t dropped; /* closed by the daemon */
	uint64_t dropped_by[GM_CONN_DROP_COUNT];
	uint64_t accept_pauses; /* accepting paused: out of descriptors */
	uint64_t paused;	/* not read now: back-pressure, pool room */
	uint64_t unsent_bytes;	/* reply bytes waiting to be written */
} gm_stats_conns;

/* Live values the stats document shows beside the counters. */
typedef struct gm_stats_live {
	const char *engine;
	uint64_t queue_depth, queue_limit;
	uint64_t inflight; /* jobs on the engine */
	uint64_t pool_used, pool_size, pool_slabs;
	uint64_t pool_waiting; /* requests waiting for pool room */
	uint64_t contexts;     /* requests all connections may have in flight */
	uint64_t requests_inflight; /* read, not yet fully answered */
	gm_stats_conns conns;
	uint64_t
	    queued_prio[GM_BATCH_PRIO_MAX + 1]; /* jobs waiting, by priority */
	uint64_t limit_prio[GM_BATCH_PRIO_MAX + 1]; /* 0: queue_limit only */
	int draining; /* refusing new jobs: drained, or stopping */
	int stopping; /* a stop signal came: exiting once all is answered */
	gm_stats_detach detached;
	gm_stats_regions regions;
	gm_engine *eng; /* for per-device counters; may be NULL */
} gm_stats_live;

/* Renders the whole document as JSON text (malloc'd, caller frees), or
 * NULL when out of memory. Loop thread. */
char *gm_stats_render(const gm_stats *s, const gm_stats_live *live);

#endif
