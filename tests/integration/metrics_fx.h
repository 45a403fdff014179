/*
 * metrics_fx.h - what the tests of the HTTP endpoints share: a plain HTTP GET
 * of a loopback port, the gemmd (CPU engine) of the running test with
 * metrics on a free port and the Prometheus scraping it (cleanup() stops
 * what a failed test left running), jobs that succeed and one too big.
 */
#ifndef METRICS_FX_H
#define METRICS_FX_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "it_case.h"

#define WAIT_S 30 /* the longest any wait below may take */

typedef struct http_reply {
	int status;
	char type[128]; /* Content-Type */
	char *body;	/* NUL-terminated; free() it */
} http_reply;

/* GET url with nng's HTTP client; 0 or nng's error. */
int http_get(const char *url, http_reply *r);

/* GET http://127.0.0.1:port/path; the test fails when nothing answers. */
http_reply get(int port, const char *path);

void assert_has(const char *text, const char *line);

/* The gemmd (CPU engine) of the running test, with metrics on a free
 * port, and the Prometheus scraping it; cleanup() stops what a failed
 * test left running. */
struct metrics_fx {
	it_daemon d;
	int port;
	gemmd_client *c;
	pid_t prom;
};

extern struct metrics_fx fx;

extern const gemmd_open_opts socket_only;

void start(const char *const *extra);

/* Stops gemmd, which must exit 0. */
void finish(void);

void stop_prometheus(void);

int cleanup(void **state);

/* Runs n fp64 jobs of 64^3, one request each; all must succeed. */
void run_ok_jobs(gemmd_client *c, int n);

/* One fp64 job larger than a 1 MiB pool, with no pageable memory
 * beyond it: its request is refused whole with ETOOBIG. */
void run_too_big_job(gemmd_client *c);

/* start with a 1 MiB pool and no pageable memory, then ok jobs that
 * succeed (run_ok_jobs) and one refused ETOOBIG (run_too_big_job). */
void start_small_pool(int ok);

#endif
