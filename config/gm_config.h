/*
 * gm_config.h - the daemon's configuration: defaults, the JSON file,
 * command-line overrides, and a dump back to JSON.
 *
 * Every key is one row of a table in gm_config.c that gives its type,
 * bounds, default and the field it is stored in; config/README.md
 * documents the same keys for operators. Unknown keys are errors, and
 * every error message names the key and the bad value. A gm_config owns
 * its strings: start it with gm_config_defaults(), end it with
 * gm_config_free(). Nothing here is thread-safe; main() builds the
 * configuration before the loop starts and it is read-only afterwards.
 */
#ifndef GM_CONFIG_H
#define GM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_engine.h"

/* Log levels, the values of "log_level": the daemon's log line filter
 * (gm_log.h) reads them from here. */
enum gm_log_level {
	GM_LOG_ERROR = 0,
	GM_LOG_WARN = 1,
	GM_LOG_INFO = 2,
	GM_LOG_DEBUG = 3,
};

/* How log lines are written, the values of "log_format": auto is the
 * journal's form when stderr is the systemd journal, text otherwise. */
enum gm_log_format {
	GM_LOG_FORMAT_AUTO = 0,
	GM_LOG_FORMAT_TEXT = 1,	   /* timestamp, pid, level, message */
	GM_LOG_FORMAT_JOURNAL = 2, /* "<N>" syslog priority, no timestamp */
	GM_LOG_FORMAT_JSON = 3,	   /* one JSON object a line */
};

/* Larger config files are refused before anything is allocated. */
#define GM_CONFIG_MAX_FILE (1u << 20)

/* Most "listen" URLs one daemon binds. */
#define GM_CONFIG_MAX_LISTEN 16

/* Most entries in "allow_uids", "allow_gids", "admin_uids" and
 * "admin_subjects". */
#define GM_CONFIG_MAX_IDS 64

typedef struct gm_config {
	char **listen;	      /* "listen": URLs to serve on */
	unsigned nlisten;     /* 1..GM_CONFIG_MAX_LISTEN */
	unsigned queue_depth; /* "queue_depth": most jobs queued */
	/* "queue_depth_per_priority": most jobs queued at each priority;
	 * 0: only queue_depth applies */
	unsigned queue_depth_prio[GM_BATCH_PRIO_MAX + 1];
	unsigned detach_keep_s;	    /* "detach_keep_s": results kept, s */
	uint64_t detach_max_bytes;  /* "detach_max_bytes": all kept results */
	uint64_t max_message_bytes; /* "max_message_bytes": GEMM frame body */
	uint64_t max_ctrl_bytes;    /* "max_ctrl_bytes": CTRL frame body */
	unsigned max_jobs;	    /* "max_jobs_per_request" */
	unsigned max_dim;	    /* "max_dim": largest m, n or k */
	int log_level;		    /* "log_level": enum gm_log_level */
	int log_format;		    /* "log_format": enum gm_log_format */
	char *tls_cert;		    /* "tls_cert": PEM path, or NULL */
	char *tls_key;		    /* "tls_key": PEM path, or NULL */
	char *tls_ca;		    /* "tls_ca": PEM path, or NULL */
	uint32_t *allow_uids;	    /* "allow_uids": ipc peers let in by uid */
	unsigned nallow_uids;	    /* 0: no uid check */
	uint32_t *allow_gids;	    /* "allow_gids": ipc peers let in by gid */
	unsigned nallow_gids;	    /* 0: no gid check */
	uint32_t *admin_uids;	    /* "admin_uids": ipc peers that are admin */
	unsigned nadmin_uids;
	char **admin_subjects; /* "admin_subjects": TLS subjects that are
				  admin, RFC 2253 */
	unsigned nadmin_subjects;
	int allow_plain_tcp;  /* "allow_plain_tcp": tcp:// may be listed */
	char *metrics_listen; /* "metrics_listen": HOST:PORT, or NULL */
	/* HTTP on metrics_listen (gm_http.h). */
	unsigned metrics_cache_ms;  /* "metrics_cache_ms": a render reused */
	unsigned http_max_conns;    /* "http_max_connections" */
	unsigned http_header_ms;    /* "http_header_timeout_ms" */
	unsigned http_idle_ms;	    /* "http_idle_timeout_ms" */
	uint64_t http_header_bytes; /* "http_max_header_bytes" */
	/* Connections (PROTOCOL.md 2.1, 2.2). */
	unsigned max_conns;	    /* "max_connections" */
	unsigned max_conns_peer;    /* "max_connections_per_peer" */
	unsigned max_conns_anon;    /* "max_connections_anonymous" */
	unsigned admin_conns;	    /* "admin_connections": past max_conns */
	unsigned handshake_ms;	    /* "handshake_timeout_ms" */
	unsigned stall_ms;	    /* "stall_timeout_ms" */
	unsigned send_ms;	    /* "send_timeout_ms" */
	unsigned conn_inflight;	    /* "conn_max_inflight" */
	uint64_t conn_unsent_bytes; /* "conn_max_unsent_bytes" */
	gm_engine_config engine;    /* "engine", "pool_bytes", "streams", ... */
	int regions;		    /* "regions": take shared-memory regions */
	char *region_socket;	    /* "region_socket": hand-off socket path;
				       NULL: named after the first ipc://
				       one (gm_handoff_path) */
	unsigned region_max_count;  /* "region_max_count": per uid */
	uint64_t region_max_bytes;  /* "region_max_bytes": per uid */

	/* "pageable_max_bytes": requests larger than the pool, received
	 * into pageable memory, all at once; 0: refused. The daemon uses at
	 * most half of the host's memory, whatever it says. */
	uint64_t pageable_max_bytes;

	/* A payload being read must come at payload_min_rate bytes a
	 * second on average, from payload_grace_ms after it began (0: no
	 * minimum). */
	uint64_t payload_min_rate; /* "payload_min_rate" */
	unsigned payload_grace_ms; /* "payload_grace_ms" */
	/* Pool waiters that fit passing one that does not (gm_poolq.h). */
	unsigned pool_bypass_max; /* "pool_bypass_max" */
	unsigned pool_bypass_ms;  /* "pool_bypass_ms" */
	/* "principal_share_percent": of the pool, pageable memory and unsent
	 * reply bytes (gm_share.h). */
	unsigned principal_share_pct;
} gm_config;

/* Fills c with the default of every key. Cannot fail: defaults live in
 * static storage, so c owns nothing until a key is set. */
void gm_config_defaults(gm_config *c);

/*
 * Reads the JSON object in the file at path (at most GM_CONFIG_MAX_FILE
 * bytes) and sets each of its keys in c; keys the file leaves out keep
 * their value in c. All or nothing: on error c is unchanged and msg says
 * why, prefixed with path. Returns GM_EIO when the file cannot be read,
 * GM_EJSON (with line and column) when it is not JSON, GM_ECONFIG for an
 * unknown, repeated, mistyped or out-of-range key or a file that is too
 * large, GM_ENOMEM. Blocks on the read.
 */
int gm_config_load_file(gm_config *c, const char *path, char *msg,
			size_t msglen);

/* As gm_config_load_file, on the len bytes at text (no file, no prefix). */
int gm_config_load_string(gm_config *c, const char *text, size_t len, char *msg,
			  size_t msglen);

/*
 * Sets one key from command-line text ("--set key=value"): numbers in
 * decimal, sizes also with a K, M, G or T suffix, booleans "true" or
 * "false", enums by name, "" for a null path, id lists as decimal ids
 * separated by commas ("" for none). For "listen" the value is one URL
 * that replaces the whole list. Returns GM_ECONFIG with a message
 * naming the key and value, or GM_ENOMEM; c is unchanged on error.
 */
int gm_config_set(gm_config *c, const char *key, const char *value, char *msg,
		  size_t msglen);

/*
 * Adds url to "listen" ("--listen URL", repeatable). With replace set,
 * the list becomes just url: main passes it for the first --listen so
 * that the command line replaces the file's list rather than adding to
 * it. Returns GM_ECONFIG for a bad or repeated URL or a full list, or
 * GM_ENOMEM; c is unchanged on error.
 */
int gm_config_add_listen(gm_config *c, const char *url, int replace, char *msg,
			 size_t msglen);

/*
 * Checks rules that span keys, once every source has been applied:
 * tls_cert and tls_key come together, and a tls+tcp:// URL needs them
 * and tls_ca (clients must show a certificate it signed); a tcp:// URL
 * needs allow_plain_tcp; and the form of metrics_listen (HOST:PORT). Returns
 * GM_ECONFIG with a message naming the keys.
 */
int gm_config_check(const gm_config *c, char *msg, size_t msglen);

/* Builds a configuration from the sources the running one came from
 * (main's file and command line), for a reload: GM_OK, or an error code
 * with msg saying why. out starts as gm_config_defaults left it; the
 * caller frees it either way. */
typedef int (*gm_config_source_fn)(gm_config *out, void *arg, char *msg,
				   size_t msglen);

/* What gm_config_reload says of a key whose value differs: its name,
 * whether c took the new value, and both values as JSON text. */
typedef void (*gm_config_change_fn)(void *arg, const char *key, bool taken,
				    const char *was, const char *now);

/*
 * SIGHUP's reload: c takes next's value of every key that may change
 * while the daemon runs (rows marked reloadable; config/README.md lists
 * them) and keeps its own value of every other key, which needs a
 * restart. change is called for each key whose value differs, taken or
 * not, in table order. Returns GM_OK, or GM_ENOMEM with the keys before
 * the one that failed taken. Does not run gm_config_check: next must
 * have passed it.
 */
int gm_config_reload(gm_config *c, const gm_config *next,
		     gm_config_change_fn change, void *arg);

/* Whether SIGHUP takes a new value of key (gm_config_reload); false for
 * an unknown key. Any thread. */
bool gm_config_reloadable(const char *key);

/* Whether the allow-lists let a local peer with this uid and gid in: yes
 * when both lists are empty, or when allow_uids names uid or allow_gids
 * names gid. Reads only, so any thread may call it once the
 * configuration is built. */
bool gm_config_allows(const gm_config *c, uint64_t uid, uint64_t gid);

/* Whether admin_uids names uid / admin_subjects names subject exactly
 * (gm_principal.h). Read only: any thread. */
bool gm_config_admin_uid(const gm_config *c, uint64_t uid);
bool gm_config_admin_subject(const gm_config *c, const char *subject);

/* The name of a log level as "log_level" takes it ("error", "warn",
 * "info", "debug"); "?" for another value. Any thread. */
const char *gm_config_log_level_name(int level);

/* Frees what c owns and leaves the defaults in it. */
void gm_config_free(gm_config *c);

/*
 * Renders every key, in table order, as an indented JSON object that
 * gm_config_load_string accepts back (sizes as byte counts). Returns a
 * malloc'd string the caller frees, or NULL when out of memory. Used by
 * --print-config and the stats document.
 */
char *gm_config_to_json(const gm_config *c);

#endif
