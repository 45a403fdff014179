/*
 * gmc_shm.c - a client's shared-memory regions: sealed memfds, and the
 * hand-off connection that gives them to the daemon; see gmc_shm.h.
 */
#include "gmc_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gm_proto_region.h"
#include "gmc_error.h"
#include "gmc_timer.h"

/* Replies a connection may owe: records sent whose caller gave up before
 * their reply came. One more and the connection is closed instead. */
#define OWED_MAX 16

struct gmc_shm {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* "": none */
	pthread_mutex_t mu; /* fd, conn and the records on fd: held for a
			       whole exchange */
	int fd;		    /* the hand-off connection; -1 until needed */
	unsigned conn;	    /* connections dialed: the current one's number */
	uint8_t owed[OWED_MAX]; /* ops of the records on fd whose replies
				   are still to come, oldest first */
	unsigned nowed;
	pthread_mutex_t regions_mu; /* regions: held briefly */
	gemmd_region *regions;
};

int gmc_shm_new(const char *url, const char *socket, gmc_shm **out)
{
	gmc_shm *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (g == NULL)
		return GM_ENOMEM;
	if (pthread_mutex_init(&g->mu, NULL) != 0) {
		free(g);
		return GM_ENOMEM;
	}
	if (pthread_mutex_init(&g->regions_mu, NULL) != 0) {
		pthread_mutex_destroy(&g->mu);
		free(g);
		return GM_ENOMEM;
	}
	g->fd = -1;
	if (socket != NULL) {
		snprintf(g->path, sizeof(g->path), "%s", socket);
	} else if (strncmp(url, "ipc://", 6) == 0) {
		gm_handoff_path(url + 6, g->path, sizeof(g->path));
	}
	*out = g;
	return GM_OK;
}

static void unmap(gemmd_region *r)
{
	munmap(r->base, (size_t)r->size);
	pthread_mutex_destroy(&r->mu);
	free(r->used);
	free(r);
}

void gmc_shm_free(gmc_shm *g)
{
	gemmd_region *r, *next;

	if (g == NULL)
		return;
	if (g->fd >= 0)
		close(g->fd);
	for (r = g->regions; r != NULL; r = next) {
		next = r->next;
		unmap(r);
	}
	pthread_mutex_destroy(&g->regions_mu);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/* ---- the hand-off connection ---- */

/* When an exchange must be over: a gmc_timer_now() time, 0 for never,
 * and the caller's timeout for its message. */
typedef struct due {
	uint64_t at;
	int ms;
} due;

static due due_in(int timeout_ms)
{
	due d = {0, timeout_ms};

	if (timeout_ms != GEMMD_FOREVER)
		d.at = gmc_timer_now() + (uint64_t)timeout_ms * 1000000u;
	return d;
}

/* Milliseconds left before d, rounded up; -1 for never, 0 once past. */
static int left_ms(due d)
{
	uint64_t now = gmc_timer_now();

	if (d.at == 0)
		return -1;
	return now >= d.at ? 0 : (int)((d.at - now + 999999u) / 1000000u);
}

static int timed_out(gmc_shm *g, due d)
{
	return gmc_error_set(GM_ETIMEDOUT,
			     "region socket %s: no answer within %d ms",
			     g->path, d.ms);
}

/* Takes g->mu by d: another thread's exchange may hold it that long.
 * It polls: ThreadSanitizer does not see a lock taken with a clock
 * (pthread_mutex_clocklock), and two threads making regions at once
 * are rare enough that a millisecond's polling costs nothing. */
static int lock(gmc_shm *g, due d)
{
	if (d.at == 0) {
		pthread_mutex_lock(&g->mu);
		return GM_OK;
	}
	while (pthread_mutex_trylock(&g->mu) != 0) {
		if (left_ms(d) == 0)
			return timed_out(g, d);
		usleep(1000);
	}
	return GM_OK;
}

/* Waits until fd is ready for events, or d: GM_OK or GM_ETIMEDOUT
 * (errno 0). A hang-up counts as ready: the call that follows says. */
static int wait_fd(int fd, short events, due d)
{
	struct pollfd p = {fd, events, 0};
	int ms, n;

	do {
		ms = left_ms(d);
		n = poll(&p, 1, ms);
	} while (n < 0 && errno == EINTR);
	if (n == 0) {
		errno = 0;
		return GM_ETIMEDOUT;
	}
	return GM_OK;
}

void gmc_shm_hangup(gmc_shm *g)
{
	/* Read without the lock: an exchange may hold it, blocked. */
	int fd = __atomic_load_n(&g->fd, __ATOMIC_ACQUIRE);

	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
}

/* connect() on a socket that does not block: a listener whose backlog
 * is full (a daemon that stopped accepting) answers EAGAIN, and the
 * dial is tried again until d. */
static int connect_by(int fd, const struct sockaddr_un *sa, due d)
{
	while (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		if (left_ms(d) == 0) {
			errno = 0;
			return GM_ETIMEDOUT;
		}
		usleep(1000);
	}
	return GM_OK;
}

/* The connection failed, or owes more replies than it may: regions
 * made on it are gone in the daemon. */
static void drop_fd(gmc_shm *g)
{
	close(g->fd);
	__atomic_store_n(&g->fd, -1, __ATOMIC_RELEASE);
	g->nowed = 0;
}

/* The exchange failed in what (errno set, 0 for a closed connection). */
static int hang_up(gmc_shm *g, const char *what)
{
	int e = errno;

	drop_fd(g);
	return gmc_error_set(GM_ETRANSPORT, "region socket %s: %s: %s", g->path,
			     what, e ? strerror(e) : "closed");
}

/* Sends one record by d: GM_OK, GM_ETIMEDOUT (nothing of it sent: a
 * record goes whole or not at all) or GM_ETRANSPORT. */
static int send_by(gmc_shm *g, const gm_handoff_req *req, int fd, due d)
{
	uint8_t out[GM_HANDOFF_REQ_SIZE];
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {out, sizeof(out)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	gm_handoff_put_req(out, req);
	if (fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	for (;;) {
		n = sendmsg(g->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(out))
			return GM_OK;
		if (n >= 0 || (errno != EAGAIN && errno != EINTR))
			return hang_up(g, "send");
		if (wait_fd(g->fd, POLLOUT, d) != GM_OK)
			return GM_ETIMEDOUT;
	}
}

/* Reads the next reply by d into rep: GM_OK, GM_ETIMEDOUT, or an error
 * that closed the connection. */
static int recv_by(gmc_shm *g, gm_handoff_rep *rep, due d)
{
	uint8_t in[GM_HANDOFF_REP_SIZE + 1];
	char detail[2 * GM_MSG_TEXT];
	ssize_t n;
	int rv;

	for (;;) {
		if (wait_fd(g->fd, POLLIN, d) != GM_OK)
			return GM_ETIMEDOUT;
		errno = 0;
		n = recv(g->fd, in, sizeof(in), MSG_DONTWAIT);
		if (n > 0)
			break;
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return hang_up(g, "receive");
	}
	rv = gm_handoff_get_rep(in, (size_t)n, rep, detail, sizeof(detail));
	if (rv != GM_OK) {
		drop_fd(g);
		return gmc_error_set(rv, "region socket %s: bad reply: %s",
				     g->path, detail);
	}
	return GM_OK;
}

/* A record of op went out and its caller gave up on the reply. */
static void owe(gmc_shm *g, uint8_t op)
{
	if (g->nowed == OWED_MAX)
		drop_fd(g);
	else
		g->owed[g->nowed++] = op;
}

static int off_op(gmc_shm *g, const gm_handoff_rep *rep, uint8_t want)
{
	drop_fd(g);
	return gmc_error_set(GM_EFIELD,
			     "region socket %s: a reply to op %u where "
			     "%u was due",
			     g->path, (unsigned)rep->op, (unsigned)want);
}

/* Reads the replies the connection owes, by d: a region the daemon made
 * for a caller that had given up is held by nobody, and is released. */
static int settle(gmc_shm *g, due d)
{
	gm_handoff_rep rep;
	uint8_t op;
	int rv;

	while (g->fd >= 0 && g->nowed > 0) {
		if ((rv = recv_by(g, &rep, d)) != GM_OK)
			return rv == GM_ETIMEDOUT ? timed_out(g, d) : rv;
		op = g->owed[0];
		memmove(g->owed, g->owed + 1, --g->nowed);
		if (rep.op != op)
			return off_op(g, &rep, op);
		if (op == GM_HANDOFF_REGISTER && rep.status == GM_OK) {
			gm_handoff_req req = {.op = GM_HANDOFF_RELEASE,
					      .region = rep.region};

			if ((rv = send_by(g, &req, -1, d)) == GM_ETIMEDOUT)
				return timed_out(g, d);
			if (rv != GM_OK)
				return rv;
			owe(g, GM_HANDOFF_RELEASE);
		}
	}
	return GM_OK;
}

/* A connection ready for a record by d: the one there is, once it owes
 * nothing, else a new one. */
static int dial(gmc_shm *g, due d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, rv;

	if (g->fd >= 0 && (rv = settle(g, d)) != GM_OK && rv != GM_ETRANSPORT)
		return rv;
	if (g->fd >= 0)
		return GM_OK;
	if (g->path[0] == '\0')
		return gmc_error_set(GM_EINVAL, "regions need an ipc:// URL or "
						"region_socket");
	memcpy(sa.sun_path, g->path, strlen(g->path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || (rv = connect_by(fd, &sa, d)) != GM_OK) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		if (fd >= 0 && rv == GM_ETIMEDOUT)
			return timed_out(g, d);
		return gmc_error_set(GM_ETRANSPORT, "region socket %s: %s",
				     g->path, strerror(e));
	}
	g->conn++;
	__atomic_store_n(&g->fd, fd, __ATOMIC_RELEASE);
	return GM_OK;
}

/* Sends req (with fd when >= 0) and reads its reply by d, on a
 * connection that owes nothing. A reply that does not come in time is
 * owed. Under g->mu. */
static int exchange(gmc_shm *g, const gm_handoff_req *req, int fd,
		    gm_handoff_rep *rep, due d)
{
	int rv;

	if ((rv = send_by(g, req, fd, d)) == GM_ETIMEDOUT)
		return timed_out(g, d);
	if (rv != GM_OK)
		return rv;
	if ((rv = recv_by(g, rep, d)) == GM_ETIMEDOUT) {
		owe(g, req->op);
		return timed_out(g, d);
	}
	if (rv != GM_OK)
		return rv;
	if (rep->op != req->op)
		return off_op(g, rep, req->op);
	if (rep->status != GM_OK)
		return gmc_error_set((int)rep->status, "%s", rep->message);
	return GM_OK;
}

/* A memfd of bytes, sealed so that it can neither shrink nor grow, nor
 * be unsealed, mapped here; the daemon refuses one without
 * F_SEAL_SHRINK. */
static int make_memfd(uint64_t bytes, int *fd, void **base)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

	*base = MAP_FAILED;
	if (bytes > SIZE_MAX || bytes > (uint64_t)INT64_MAX)
		return gmc_error_set(GM_EINVAL, "%" PRIu64 " bytes", bytes);
	*fd = memfd_create("gemmd-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0 || ftruncate(*fd, (off_t)bytes) != 0 ||
	    fcntl(*fd, F_ADD_SEALS, seals) != 0 ||
	    (*base = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
			  MAP_SHARED, *fd, 0)) == MAP_FAILED) {
		int e = errno;

		if (*fd >= 0)
			close(*fd);
		return gmc_error_set(GM_ENOMEM,
				     "memfd of %" PRIu64 " bytes: %s", bytes,
				     strerror(e));
	}
	return GM_OK;
}

int gmc_shm_create_ms(uint64_t bytes)
{
	uint64_t ms = 10000 + (bytes >> 18);

	return ms < INT32_MAX ? (int)ms : INT32_MAX;
}

int gmc_shm_create(gmc_shm *g, uint64_t bytes, int timeout_ms,
		   gemmd_region **out)
{
	gm_handoff_req req = {.op = GM_HANDOFF_REGISTER, .size = bytes};
	gm_handoff_rep rep;
	due d = due_in(timeout_ms);
	gemmd_region *r;
	int rv, fd = -1;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return gmc_error_set(GM_ENOMEM, "out of memory");
	if (pthread_mutex_init(&r->mu, NULL) != 0) {
		rv = gmc_error_set(GM_ENOMEM, "out of memory");
		goto fail_mutex;
	}
	if ((rv = make_memfd(bytes, &fd, &r->base)) != GM_OK)
		goto fail_memfd;
	if ((rv = lock(g, d)) != GM_OK) {
		close(fd);
		goto fail_register;
	}
	if ((rv = dial(g, d)) == GM_OK)
		rv = exchange(g, &req, fd, &rep, d);
	close(fd); /* each side's mapping keeps the memory */
	r->conn = g->conn;
	pthread_mutex_unlock(&g->mu);
	if (rv != GM_OK)
		goto fail_register;
	pthread_mutex_lock(&g->regions_mu);
	r->next = g->regions;
	g->regions = r;
	pthread_mutex_unlock(&g->regions_mu);
	r->g = g;
	r->id = rep.region;
	r->size = bytes;
	*out = r;
	return GM_OK;
fail_register:
	munmap(r->base, (size_t)bytes);
fail_memfd:
	pthread_mutex_destroy(&r->mu);
fail_mutex:
	free(r);
	return rv;
}

int gmc_shm_release(gemmd_region *r, int timeout_ms)
{
	gm_handoff_req req = {.op = GM_HANDOFF_RELEASE, .region = r->id};
	gm_handoff_rep rep;
	due d = due_in(timeout_ms);
	gemmd_region **pp;
	gmc_shm *g = r->g;
	int rv;

	/* Out of the set whatever the daemon says: r is freed below. */
	pthread_mutex_lock(&g->regions_mu);
	for (pp = &g->regions; *pp != r; pp = &(*pp)->next)
		;
	*pp = r->next;
	pthread_mutex_unlock(&g->regions_mu);
	if ((rv = lock(g, d)) == GM_OK) {
		if (g->fd >= 0 && r->conn == g->conn)
			rv = settle(g, d);
		if (rv == GM_OK)
			rv = g->fd >= 0 && r->conn == g->conn
				 ? exchange(g, &req, -1, &rep, d)
				 : gmc_error_set(GM_ETRANSPORT,
						 "the region socket "
						 "closed");
		pthread_mutex_unlock(&g->mu);
	}
	unmap(r);
	return rv;
}
