/*
 * gm_region_srv.c - the hand-off socket's connections and records; see
 * gm_region_srv.h. The system calls behind it are in gm_region_fd.c.
 *
 * A connection is a small state machine: polled for its next record, or
 * busy while its REGISTER is pinned on the thread pool (not polled, so
 * records are answered in order), or closing. Its struct outlives the
 * poll handle until the handle is closed and no registration runs for
 * it; the server's struct outlives its connections the same way.
 */
#include "gm_region_srv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gm_log.h"
#include "gm_region_fd.h"
#include "gm_stats.h"

#define MAX_CONNS 1024 /* hand-off connections at once */
#define MAX_FDS	  8    /* descriptors read with one record */

struct conn {
	gm_region_srv *srv;
	uv_poll_t poll;
	int fd;
	uint32_t uid, gid;
	bool busy;	    /* a registration runs on the thread pool */
	bool closing;	    /* the poll handle is closing or closed */
	bool handle_closed; /* ... closed, and fd with it */
	uv_work_t work;	    /* the registration */
	gm_region *reg;	    /* its region, not yet published */
	int reg_rv;	    /* and how it went */
	char reg_msg[GM_MSG_TEXT + 1];
	double reg_start_us;
	struct conn *next;
};

struct gm_region_srv {
	uv_loop_t *loop;
	gm_regions *rs;
	const gm_config *cfg;
	char path[GM_REGION_PATH_MAX];
	int fd;
	uv_poll_t poll;
	struct conn *conns;
	unsigned open; /* connections not closing */
	bool stopping, closed, listen_closed;
};

/* ---- retiring regions off the loop ---- */

struct retire {
	uv_work_t work;
	gm_regions *rs;
	gm_region *r;
};

static void retire_work(uv_work_t *w)
{
	struct retire *t = w->data;

	gm_regions_unmap(gm_regions_engine(t->rs), t->r);
}

static void retire_done(uv_work_t *w, int status)
{
	struct retire *t = w->data;

	(void)status;
	gm_regions_retired(t->rs, t->r);
	free(t);
}

/* cudaHostUnregister may take as long as registering did: not on the
 * loop. arg is the loop. */
static void retire(gm_regions *rs, gm_region *r, void *arg)
{
	struct retire *t = malloc(sizeof(*t));

	if (t != NULL) {
		*t = (struct retire){.rs = rs, .r = r};
		t->work.data = t;
		if (uv_queue_work(arg, &t->work, retire_work, retire_done) == 0)
			return;
		free(t);
	}
	gm_regions_unmap(gm_regions_engine(rs), r);
	gm_regions_retired(rs, r);
}

/* ---- lifetimes ---- */

static void srv_maybe_free(gm_region_srv *s)
{
	if (s->closed && s->listen_closed && s->conns == NULL)
		free(s);
}

static void conn_maybe_free(struct conn *c)
{
	gm_region_srv *s = c->srv;
	struct conn **pp;

	if (!c->handle_closed || c->busy)
		return;
	for (pp = &s->conns; *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	free(c);
	srv_maybe_free(s);
}

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	close(c->fd);
	c->handle_closed = true;
	conn_maybe_free(c);
}

/* The client went away, or broke the protocol: its regions go now, a
 * registration still running for it when that ends. */
static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	c->srv->open--;
	uv_poll_stop(&c->poll);
	gm_regions_release_owner(c->srv->rs, c);
	uv_close((uv_handle_t *)&c->poll, on_conn_closed);
}

/* ---- replies ---- */

__attribute__((format(printf, 5, 6))) static void reply(struct conn *c,
							uint16_t op, int status,
							const gm_region *r,
							const char *fmt, ...)
{
	gm_handoff_rep rep = {.op = op, .status = (uint32_t)status};
	uint8_t buf[GM_HANDOFF_REP_SIZE];
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(rep.message, sizeof(rep.message), fmt, ap);
		va_end(ap);
	}
	if (r != NULL) {
		rep.region = r->id;
		rep.size = r->size;
	}
	if (status != GM_OK) {
		gm_regions_refused(c->srv->rs);
		GM_LOG(GM_LOG_DEBUG, "regions: uid %" PRIu32 " refused: %s: %s",
		       c->uid, gm_errname(status), rep.message);
	}
	gm_handoff_put_rep(buf, &rep);
	/* A client reads each reply before it sends its next record, so
	 * there is room; a client that does not is dropped. */
	if (send(c->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(buf))
		conn_close(c);
}

/* ---- REGISTER ---- */

static void on_readable(uv_poll_t *h, int status, int events);

static void register_work(uv_work_t *w)
{
	struct conn *c = w->data;

	c->reg_rv = gm_engine_register(gm_regions_engine(c->srv->rs),
				       c->reg->base, (size_t)c->reg->size,
				       c->reg_msg, sizeof(c->reg_msg));
}

static void register_done(uv_work_t *w, int status)
{
	struct conn *c = w->data;
	gm_regions *rs = c->srv->rs;
	gm_region *r = c->reg;
	int rv = status != 0 ? GM_EINTERNAL : c->reg_rv;

	c->busy = false;
	c->reg = NULL;
	if (rv == GM_OK) /* so that a release from here unregisters it */
		gm_regions_publish(rs, r, 1);
	if (rv == GM_OK && !c->closing) {
		GM_LOG(GM_LOG_DEBUG,
		       "region 0x%016" PRIx64 " of uid %" PRIu32
		       ": %.1f MiB mapped and registered in %.1f ms",
		       r->id, r->uid, (double)r->size / (1 << 20),
		       (gm_clock_now_us() - c->reg_start_us) / 1e3);
		reply(c, GM_HANDOFF_REGISTER, GM_OK, r, NULL);
	} else {
		if (!c->closing)
			reply(c, GM_HANDOFF_REGISTER, rv, NULL,
			      "registering with the engine: %s",
			      status != 0 ? uv_strerror(status) : c->reg_msg);
		gm_regions_release(rs, r);
	}
	if (c->closing)
		conn_maybe_free(c);
	else
		uv_poll_start(&c->poll, UV_READABLE, on_readable);
}

/* Everything that can be refused at once is, before anything is mapped;
 * fd is the caller's to close. */
static int take_fd(struct conn *c, const gm_handoff_req *req, int fd,
		   void **base, char *msg, size_t msglen)
{
	const gm_config *cfg = c->srv->cfg;
	uint64_t count, bytes;
	int rv;

	if (c->srv->stopping) {
		snprintf(msg, msglen, "gemmd is shutting down");
		return GM_ESHUTDOWN;
	}
	if ((rv = gm_region_fd_check(fd, req->size, msg, msglen)) != 0)
		return rv;
	gm_regions_usage(c->srv->rs, c->uid, &count, &bytes);
	if (count + 1 > cfg->region_max_count) {
		snprintf(msg, msglen,
			 "uid %" PRIu32 " has %" PRIu64
			 " regions, region_max_count=%u",
			 c->uid, count, cfg->region_max_count);
		return GM_ETOOBIG;
	}
	if (req->size > cfg->region_max_bytes ||
	    bytes > cfg->region_max_bytes - req->size) {
		char has[GM_SIZE_TEXT], more[GM_SIZE_TEXT], max[GM_SIZE_TEXT];

		snprintf(msg, msglen,
			 "uid %" PRIu32 " has %s of regions, %s more is "
			 "over region_max_bytes=%s",
			 c->uid, gm_size_text(bytes, has),
			 gm_size_text(req->size, more),
			 gm_size_text(cfg->region_max_bytes, max));
		return GM_ETOOBIG;
	}
	return gm_region_fd_map(fd, req->size, base, msg, msglen);
}

static void do_register(struct conn *c, const gm_handoff_req *req, int fd)
{
	char msg[GM_MSG_TEXT + 1];
	void *base;
	int rv;

	rv = take_fd(c, req, fd, &base, msg, sizeof(msg));
	close(fd); /* the mapping keeps the memory */
	if (rv == GM_OK && (rv = gm_regions_add(c->srv->rs, c->uid, c, base,
						req->size, &c->reg)) != GM_OK) {
		munmap(base, (size_t)req->size);
		snprintf(msg, sizeof(msg), "no room for the region: %s",
			 gm_strerror(rv));
	}
	if (rv != GM_OK) {
		reply(c, GM_HANDOFF_REGISTER, rv, NULL, "%s", msg);
		return;
	}
	c->busy = true;
	c->reg_start_us = gm_clock_now_us();
	c->work.data = c;
	uv_poll_stop(&c->poll);
	if (uv_queue_work(c->srv->loop, &c->work, register_work,
			  register_done) != 0) {
		register_work(&c->work);
		register_done(&c->work, 0);
	}
}

/* ---- RELEASE, and reading records ---- */

static void do_release(struct conn *c, const gm_handoff_req *req)
{
	gm_region *r = gm_regions_find(c->srv->rs, req->region);
	gm_region copy;

	if (r == NULL) {
		reply(c, GM_HANDOFF_RELEASE, GM_ENOTFOUND, NULL,
		      "no region 0x%016" PRIx64, req->region);
		return;
	}
	if (r->owner != c) {
		reply(c, GM_HANDOFF_RELEASE, GM_EACCES, NULL,
		      "region 0x%016" PRIx64
		      " was registered on another connection",
		      req->region);
		return;
	}
	copy = *r; /* r may be freed by the release */
	gm_regions_release(c->srv->rs, r);
	reply(c, GM_HANDOFF_RELEASE, GM_OK, &copy, NULL);
}

/* Descriptors that came with a record; any beyond MAX_FDS were dropped
 * by the kernel (MSG_CTRUNC). */
static int take_fds(struct msghdr *mh, int *fds)
{
	int n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm != NULL;
	     cm = CMSG_NXTHDR(mh, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && n < MAX_FDS; i++)
			memcpy(&fds[n++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	}
	return n;
}

static void handle(struct conn *c, const uint8_t *rec, size_t len, int flags,
		   int *fds, int nfds)
{
	char msg[2 * GM_MSG_TEXT];
	gm_handoff_req req;
	int rv, want;

	rv = gm_handoff_get_req(rec, len, &req, msg, sizeof(msg));
	want = req.op == GM_HANDOFF_REGISTER ? 1 : 0;
	if (rv == GM_OK && (nfds != want || (flags & MSG_CTRUNC))) {
		rv = GM_EINVAL;
		snprintf(msg, sizeof(msg),
			 "%s carries %d descriptor(s), must carry %d",
			 want ? "register" : "release", nfds, want);
	}
	if (rv != GM_OK) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		reply(c, req.op, rv, NULL, "%s", msg);
	} else if (req.op == GM_HANDOFF_REGISTER) {
		do_register(c, &req, fds[0]);
	} else {
		do_release(c, &req);
	}
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	struct conn *c = h->data;
	uint8_t rec[GM_HANDOFF_REQ_SIZE + 1]; /* one more: too long */
	char cbuf[CMSG_SPACE(MAX_FDS * sizeof(int))];
	struct iovec iov = {rec, sizeof(rec)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	int fds[MAX_FDS], nfds;
	ssize_t n;

	(void)events;
	if (status < 0) {
		conn_close(c);
		return;
	}
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		conn_close(c);
		return;
	}
	nfds = take_fds(&mh, fds);
	if (n == 0) { /* the client closed */
		while (nfds > 0)
			close(fds[--nfds]);
		conn_close(c);
		return;
	}
	handle(c, rec, (size_t)n, mh.msg_flags, fds, nfds);
}

/* ---- accepting ---- */

static void accept_one(gm_region_srv *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct conn *c;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    !gm_config_allows(s->cfg, cred.uid, cred.gid) ||
	    s->open >= MAX_CONNS || (c = calloc(1, sizeof(*c))) == NULL) {
		GM_LOG(GM_LOG_DEBUG,
		       "regions: refused a connection (not allowed, or %u "
		       "open)",
		       s->open);
		close(fd);
		return;
	}
	c->srv = s;
	c->fd = fd;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->poll.data = c;
	if (uv_poll_init(s->loop, &c->poll, fd) != 0) {
		close(fd);
		free(c);
		return;
	}
	c->next = s->conns;
	s->conns = c;
	s->open++;
	uv_poll_start(&c->poll, UV_READABLE, on_readable);
}

static void on_listen(uv_poll_t *h, int status, int events)
{
	gm_region_srv *s = h->data;
	int fd;

	(void)events;
	if (status < 0)
		return;
	while ((fd = accept4(s->fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
		accept_one(s, fd);
	if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
		GM_LOG(GM_LOG_WARN, "regions: accept on %s: %s", s->path,
		       strerror(errno));
}

int gm_region_srv_open(uv_loop_t *loop, const gm_config *cfg, gm_regions *rs,
		       gm_region_srv **out, char *msg, size_t msglen)
{
	gm_region_srv *s;
	int rv;

	*out = NULL;
	gm_regions_set_retire(rs, retire, loop);
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(msg, msglen, "region socket: out of memory");
		return GM_ENOMEM;
	}
	if ((rv = gm_region_fd_path(cfg, s->path, msg, msglen)) <= 0) {
		free(s);
		return -rv;
	}
	s->loop = loop;
	s->rs = rs;
	s->cfg = cfg;
	s->poll.data = s;
	if ((s->fd = gm_region_fd_listen(s->path, msg, msglen)) < 0) {
		free(s);
		return GM_EIO;
	}
	if ((rv = uv_poll_init(loop, &s->poll, s->fd)) != 0)
		goto fail_poll;
	if ((rv = uv_poll_start(&s->poll, UV_READABLE, on_listen)) != 0)
		goto fail_start;
	GM_LOG(GM_LOG_INFO,
	       "regions: hand-off socket %s (at most %u regions, %" PRIu64
	       " MiB per uid)",
	       s->path, cfg->region_max_count, cfg->region_max_bytes >> 20);
	*out = s;
	return GM_OK;
fail_start:
	snprintf(msg, msglen, "region socket %s: cannot poll it: %s", s->path,
		 uv_strerror(rv));
	gm_region_srv_close(s); /* the handle's close frees s */
	return GM_EINTERNAL;
fail_poll:
	snprintf(msg, msglen, "region socket %s: cannot poll it: %s", s->path,
		 uv_strerror(rv));
	close(s->fd);
	unlink(s->path);
	free(s);
	return GM_EINTERNAL;
}

void gm_region_srv_stop(gm_region_srv *s)
{
	if (s != NULL)
		s->stopping = true;
}

static void on_listen_closed(uv_handle_t *h)
{
	gm_region_srv *s = h->data;

	close(s->fd);
	s->listen_closed = true;
	srv_maybe_free(s);
}

void gm_region_srv_close(gm_region_srv *s)
{
	if (s == NULL || s->closed)
		return;
	s->closed = true;
	unlink(s->path);
	for (struct conn *c = s->conns; c != NULL; c = c->next)
		conn_close(c);
	uv_close((uv_handle_t *)&s->poll, on_listen_closed);
}

unsigned gm_region_srv_conns(const gm_region_srv *s)
{
	return s != NULL ? s->open : 0;
}
