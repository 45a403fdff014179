/*
 * gm_rawc.c - gemmd's wire from the specification, on plain sockets;
 * see gm_rawc.h.
 */
#include "gm_rawc.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAGIC	 0x4D4D4547u
#define MAX_BODY (1ull << 30)
/* The longest a connect may take before it fails. */
#define RC_CONNECT_MS 20000

void rc_put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t rc_get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_f64(uint8_t *p, double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	rc_put_le(p, u, 8);
}

static double get_f64(const uint8_t *p)
{
	uint64_t u = rc_get_le(p, 8);
	double d;

	memcpy(&d, &u, 8);
	return d;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Connects fd to sa within RC_CONNECT_MS, then makes it blocking: a
 * listener that stopped accepting fails the caller, never hangs it (a
 * Unix socket's connect would wait for room in the backlog forever, a
 * TCP one retries its SYN for minutes). */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len,
			  const char *url)
{
	double until = now_ms() + RC_CONNECT_MS;
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int err = 0;
	socklen_t elen = sizeof(err);

	while (connect(fd, sa, len) != 0) {
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && now_ms() < until) { /* Unix: full */
			usleep(1000);
			continue;
		}
		if (errno != EINPROGRESS)
			goto fail;
		while ((err = poll(&p, 1, (int)(until - now_ms()) + 1)) < 0 &&
		       errno == EINTR)
			;
		if (err <= 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 ||
		    err != 0)
			goto fail;
		break;
	}
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
fail:
	if (now_ms() >= until)
		fprintf(stderr, "connect to %s: no answer in %d ms\n", url,
			RC_CONNECT_MS);
	return -1;
}

int rc_connect(const char *url, const char *src)
{
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	struct sockaddr_in si = {.sin_family = AF_INET},
			   ss = {.sin_family = AF_INET};
	char host[64];
	int fd, port;

	if (strncmp(url, "ipc://", 6) == 0) {
		snprintf(su.sun_path, sizeof(su.sun_path), "%s", url + 6);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0);
		if (fd >= 0 && connect_within(fd, (struct sockaddr *)&su,
					      sizeof(su), url) == 0)
			return fd;
	} else {
		if (sscanf(url, "tcp://%63[^:]:%d", host, &port) != 2 ||
		    inet_pton(AF_INET, host, &si.sin_addr) != 1)
			return -1;
		si.sin_port = htons((uint16_t)port);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0);
		if (fd >= 0 && src != NULL &&
		    (inet_pton(AF_INET, src, &ss.sin_addr) != 1 ||
		     bind(fd, (struct sockaddr *)&ss, sizeof(ss)) != 0)) {
			close(fd);
			return -1;
		}
		/* As gemmd's clients do: no write waits for the ACK of the
		 * one before (Nagle's algorithm against delayed ACKs costs
		 * 40 ms a small request). */
		if (fd >= 0 &&
		    connect_within(fd, (struct sockaddr *)&si, sizeof(si),
				   url) == 0 &&
		    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1},
			       sizeof(int)) == 0)
			return fd;
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

int rc_admitted(const char *url, const char *src, int ms)
{
	int fd = rc_connect(url, src), rv;
	char *doc = NULL;

	if (fd < 0)
		return -1;
	if ((rv = rc_ctrl(fd, 0, "{\"op\":\"ping\"}", &doc, ms)) == 0) {
		free(doc);
		return fd;
	}
	close(fd);
	return rv == -4 ? -2 : -1;
}

int rc_write(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int rc_read(int fd, void *p, size_t n, int ms)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	double end = now_ms() + ms;
	uint8_t *b = p;

	while (n > 0) {
		int left = (int)(end - now_ms());
		ssize_t k;

		if (left <= 0 || poll(&pf, 1, left) == 0)
			return -2;
		k = read(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int rc_closed(int fd, int ms)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	double end = now_ms() + ms;
	char buf[4096];

	while (now_ms() < end) {
		if (poll(&pf, 1, 20) <= 0)
			continue;
		if (read(fd, buf, sizeof(buf)) <= 0)
			return 1;
	}
	return 0;
}

void rc_put_hdr(uint8_t *p, uint16_t type, uint64_t id, uint32_t count,
		uint64_t length)
{
	rc_put_le(p, MAGIC, 4);
	rc_put_le(p + 4, 2, 2);
	rc_put_le(p + 6, type, 2);
	rc_put_le(p + 8, id, 8);
	rc_put_le(p + 16, count, 4);
	rc_put_le(p + 20, 0, 4);
	rc_put_le(p + 24, length, 8);
}

int rc_read_frame(int fd, rc_frame *f, int ms)
{
	uint8_t h[RC_HDR];
	int rv;

	memset(f, 0, sizeof(*f));
	if ((rv = rc_read(fd, h, RC_HDR, ms)) != 0)
		return rv;
	f->magic = (uint32_t)rc_get_le(h, 4);
	f->version = (uint16_t)rc_get_le(h + 4, 2);
	f->type = (uint16_t)rc_get_le(h + 6, 2);
	f->id = rc_get_le(h + 8, 8);
	f->count = (uint32_t)rc_get_le(h + 16, 4);
	f->flags = (uint32_t)rc_get_le(h + 20, 4);
	f->length = rc_get_le(h + 24, 8);
	if (f->length > MAX_BODY)
		return -3;
	if ((f->body = malloc(f->length + 1)) == NULL)
		return -3;
	if ((rv = rc_read(fd, f->body, f->length, ms)) != 0) {
		rc_frame_free(f);
		return rv;
	}
	f->body[f->length] = '\0';
	return 0;
}

void rc_frame_free(rc_frame *f)
{
	free(f->body);
	f->body = NULL;
}

uint32_t rc_error(const rc_frame *f, char msg[97])
{
	msg[0] = '\0';
	if (f->type != RC_ERROR_T || f->length != RC_ERROR)
		return 0;
	memcpy(msg, f->body + 8, 96);
	msg[96] = '\0';
	return (uint32_t)rc_get_le(f->body, 4);
}

int rc_reply_of(const rc_frame *f, rc_reply *r)
{
	const uint8_t *b = f->body;

	if (f->type != RC_GEMM_REPLY || f->length < RC_REPLY)
		return -1;
	r->status = (uint32_t)rc_get_le(b, 4);
	r->dtype = b[4];
	r->layout = b[5];
	r->m = (uint32_t)rc_get_le(b + 8, 4);
	r->n = (uint32_t)rc_get_le(b + 12, 4);
	r->queue_us = get_f64(b + 16);
	r->h2d_us = get_f64(b + 24);
	r->kernel_us = get_f64(b + 32);
	r->d2h_us = get_f64(b + 40);
	r->total_us = get_f64(b + 48);
	r->result_bytes = rc_get_le(b + 56, 8);
	r->start_seq = rc_get_le(b + 64, 8);
	memcpy(r->message, b + 80, 96);
	r->message[96] = '\0';
	r->result = b + RC_REPLY;
	return f->length == RC_REPLY + r->result_bytes ? 0 : -1;
}

size_t rc_esize(int dtype)
{
	static const size_t sz[] = {0, 8, 4, 4, 2, 2};

	return dtype >= 1 && dtype <= 5 ? sz[dtype] : 0;
}

void rc_sizes(const rc_job *j, uint64_t *a, uint64_t *b, uint64_t *c,
	      uint64_t *out)
{
	uint64_t e = rc_esize(j->dtype);

	*a = (uint64_t)j->m * j->k * e;
	*b = (uint64_t)j->k * j->n * e;
	*out = (uint64_t)j->m * j->n * e;
	*c = (j->flags & 1) ? *out : 0;
}

/* Bytes of j's inline operands. */
static uint64_t inline_bytes(const rc_job *j)
{
	uint64_t a, b, c, out, n = 0;

	rc_sizes(j, &a, &b, &c, &out);
	if (!(j->flags & 2) || j->refs[0] == 0)
		n += a;
	if (!(j->flags & 2) || j->refs[2] == 0)
		n += b;
	if (!(j->flags & 2) || j->refs[4] == 0)
		n += c;
	return n;
}

uint8_t *rc_gemm(uint64_t id, uint8_t prio, uint32_t deadline_ms,
		 uint32_t bflags, const rc_job *j, uint32_t n, size_t *len)
{
	uint64_t body = RC_BATCH + (uint64_t)RC_JOB * n, out;
	uint8_t *p, *q;

	for (uint32_t i = 0; i < n; i++)
		body += inline_bytes(&j[i]) + ((j[i].flags & 2) ? RC_DESC : 0);
	if ((p = calloc(1, RC_HDR + body)) == NULL)
		return NULL;
	rc_put_hdr(p, RC_GEMM, id, n, body);
	q = p + RC_HDR;
	q[0] = prio;
	rc_put_le(q + 4, deadline_ms, 4);
	rc_put_le(q + 8, bflags, 4);
	q += RC_BATCH;
	for (uint32_t i = 0; i < n; i++, q += RC_JOB) {
		q[0] = j[i].dtype;
		q[1] = j[i].trans_a;
		q[2] = j[i].trans_b;
		q[3] = j[i].layout;
		q[4] = j[i].kernel;
		q[5] = j[i].flags;
		rc_put_le(q + 8, j[i].m, 4);
		rc_put_le(q + 12, j[i].n, 4);
		rc_put_le(q + 16, j[i].k, 4);
		put_f64(q + 24, j[i].alpha);
		put_f64(q + 32, j[i].beta);
		rc_put_le(q + 40,
			  inline_bytes(&j[i]) + (uint64_t)j[i].payload_delta,
			  8);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!(j[i].flags & 2))
			continue;
		for (int k = 0; k < 8; k++)
			rc_put_le(q + 8 * k, j[i].refs[k], 8);
		q += RC_DESC;
	}
	for (uint32_t i = 0; i < n; i++) {
		const void *src[3] = {j[i].a, j[i].b, j[i].c};
		uint64_t sz[3];

		rc_sizes(&j[i], &sz[0], &sz[1], &sz[2], &out);
		for (int k = 0; k < 3; k++) {
			if (sz[k] == 0 ||
			    ((j[i].flags & 2) && j[i].refs[2 * k] != 0))
				continue;
			if (src[k] != NULL)
				memcpy(q, src[k], sz[k]);
			q += sz[k];
		}
	}
	*len = RC_HDR + body;
	return p;
}

rc_job rc_job_on(uint32_t m, uint32_t n, uint32_t k, const void *a,
		 const void *b)
{
	return (rc_job){
	    .dtype = 1, .m = m, .n = n, .k = k, .alpha = 1.0, .a = a, .b = b};
}

void rc_job_fp64(rc_job *j, uint32_t m, uint32_t n, uint32_t k, unsigned seed,
		 double **a, double **b)
{
	size_t na = (size_t)m * k, nb = (size_t)k * n;

	*a = malloc(na * sizeof(double));
	*b = malloc(nb * sizeof(double));
	for (size_t i = 0; *a != NULL && i < na; i++)
		(*a)[i] = (double)rand_r(&seed) / RAND_MAX * 2 - 1;
	for (size_t i = 0; *b != NULL && i < nb; i++)
		(*b)[i] = (double)rand_r(&seed) / RAND_MAX * 2 - 1;
	*j = rc_job_on(m, n, k, *a, *b);
}

int rc_check_fp64(const rc_job *j, const uint8_t *result)
{
	const double *a = j->a, *b = j->b;

	for (size_t r = 0; r < j->m; r++)
		for (size_t col = 0; col < j->n; col++) {
			double s = 0, mag = 0, got;

			for (size_t p = 0; p < j->k; p++) {
				s += a[r * j->k + p] * b[p * j->n + col];
				mag +=
				    fabs(a[r * j->k + p] * b[p * j->n + col]);
			}
			memcpy(&got, result + 8 * (r * j->n + col), 8);
			if (fabs(got - s) > 4e-16 * (double)j->k * mag + 1e-300)
				return 0;
		}
	return 1;
}

int rc_send_ctrl(int fd, uint64_t id, const char *json)
{
	size_t n = strlen(json);
	uint8_t *p = malloc(RC_HDR + n);
	int rv;

	/* One write: header and body in one segment, not two. */
	if (p == NULL)
		return -1;
	rc_put_hdr(p, RC_CTRL, id, 0, n);
	memcpy(p + RC_HDR, json, n);
	rv = rc_write(fd, p, RC_HDR + n);
	free(p);
	return rv;
}

int rc_ctrl(int fd, uint64_t id, const char *json, char **out, int ms)
{
	rc_frame f;
	int rv;

	*out = NULL;
	if (rc_send_ctrl(fd, id, json) != 0)
		return -1;
	if ((rv = rc_read_frame(fd, &f, ms)) != 0)
		return rv;
	if (f.type != RC_CTRL_REPLY || f.id != id) {
		rc_frame_free(&f);
		return -4;
	}
	*out = (char *)f.body; /* NUL-terminated by rc_read_frame */
	return 0;
}

double rc_stat_fd(int fd, const char *path)
{
	const cJSON *o;
	char key[64], *doc;
	cJSON *root;
	double v = -1;

	if (rc_ctrl(fd, 1, "{\"op\":\"stats\"}", &doc, 5000) != 0)
		return -1;
	root = cJSON_Parse(doc);
	free(doc);
	o = cJSON_GetObjectItemCaseSensitive(root, "stats");
	while (o != NULL && *path != '\0') {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + (path[n] == '.');
	}
	if (cJSON_IsNumber(o))
		v = o->valuedouble;
	cJSON_Delete(root);
	return v;
}

double rc_stat(const char *url, const char *path)
{
	int fd = rc_connect(url, NULL);
	double v;

	if (fd < 0)
		return -1;
	v = rc_stat_fd(fd, path);
	close(fd);
	return v;
}
