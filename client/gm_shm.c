/*
 * gm_shm.c - a client's shared-memory regions: sealed memfds, and the
 * hand-off connection that gives them to the daemon; see gm_shm.h.
 */
#include "gm_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gm_client.h"
#include "gm_proto_region.h"

struct gm_shm {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* "": none */
	pthread_mutex_t mu; /* fd, the records on it, and regions */
	int fd;		    /* the hand-off connection; -1 until needed */
	gemmd_region *regions;
};

int gm_shm_new(const char *url, const char *socket, gm_shm **out)
{
	gm_shm *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (g == NULL)
		return GM_ENOMEM;
	if (pthread_mutex_init(&g->mu, NULL) != 0) {
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

void gm_shm_free(gm_shm *g)
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
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/* ---- the hand-off connection ---- */

void gm_shm_hangup(gm_shm *g)
{
	/* Read without the lock: an exchange may hold it, blocked. */
	int fd = __atomic_load_n(&g->fd, __ATOMIC_ACQUIRE);

	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
}

static int dial(gm_shm *g)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (g->fd >= 0)
		return GM_OK;
	if (g->path[0] == '\0')
		return gm_client_seterr(GM_EINVAL,
					"regions need an ipc:// URL or "
					"region_socket");
	memcpy(sa.sun_path, g->path, strlen(g->path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return gm_client_seterr(GM_ETRANSPORT, "region socket %s: %s",
					g->path, strerror(e));
	}
	__atomic_store_n(&g->fd, fd, __ATOMIC_RELEASE);
	return GM_OK;
}

/* The connection failed: regions made on it are gone in the daemon. */
static void drop_fd(gm_shm *g)
{
	close(g->fd);
	__atomic_store_n(&g->fd, -1, __ATOMIC_RELEASE);
}

static int hang_up(gm_shm *g, const char *what)
{
	int e = errno;

	drop_fd(g);
	return gm_client_seterr(GM_ETRANSPORT, "region socket %s: %s: %s",
				g->path, what, e ? strerror(e) : "closed");
}

/* Sends req (with fd when >= 0) and reads the reply. Under g->mu. */
static int exchange(gm_shm *g, const gm_handoff_req *req, int fd,
		    gm_handoff_rep *rep)
{
	uint8_t out[GM_HANDOFF_REQ_SIZE], in[GM_HANDOFF_REP_SIZE + 1];
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {out, sizeof(out)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	char detail[2 * GM_MSG_TEXT];
	ssize_t n;
	int rv;

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
	errno = 0;
	if (sendmsg(g->fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(out))
		return hang_up(g, "send");
	do
		n = recv(g->fd, in, sizeof(in), 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return hang_up(g, "receive");
	rv = gm_handoff_get_rep(in, (size_t)n, rep, detail, sizeof(detail));
	if (rv == GM_OK && rep->op != req->op)
		rv = GM_EFIELD;
	if (rv != GM_OK) {
		drop_fd(g);
		return gm_client_seterr(rv, "region socket %s: bad reply: %s",
					g->path, detail);
	}
	if (rep->status != GM_OK)
		return gm_client_seterr((int)rep->status, "%s", rep->message);
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
		return gm_client_seterr(GM_EINVAL, "%" PRIu64 " bytes", bytes);
	*fd = memfd_create("gemmd-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0 || ftruncate(*fd, (off_t)bytes) != 0 ||
	    fcntl(*fd, F_ADD_SEALS, seals) != 0 ||
	    (*base = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
			  MAP_SHARED, *fd, 0)) == MAP_FAILED) {
		int e = errno;

		if (*fd >= 0)
			close(*fd);
		return gm_client_seterr(GM_ENOMEM,
					"memfd of %" PRIu64 " bytes: %s", bytes,
					strerror(e));
	}
	return GM_OK;
}

int gm_shm_create(gm_shm *g, uint64_t bytes, gemmd_region **out)
{
	gm_handoff_req req = {.op = GM_HANDOFF_REGISTER, .size = bytes};
	gm_handoff_rep rep;
	gemmd_region *r;
	int rv, fd = -1;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return gm_client_seterr(GM_ENOMEM, "out of memory");
	if (pthread_mutex_init(&r->mu, NULL) != 0) {
		rv = gm_client_seterr(GM_ENOMEM, "out of memory");
		goto fail_mutex;
	}
	if ((rv = make_memfd(bytes, &fd, &r->base)) != GM_OK)
		goto fail_memfd;
	pthread_mutex_lock(&g->mu);
	if ((rv = dial(g)) == GM_OK)
		rv = exchange(g, &req, fd, &rep);
	close(fd); /* each side's mapping keeps the memory */
	if (rv == GM_OK) {
		r->next = g->regions;
		g->regions = r;
	}
	pthread_mutex_unlock(&g->mu);
	if (rv != GM_OK)
		goto fail_register;
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

int gm_shm_release(gemmd_region *r)
{
	gm_handoff_req req = {.op = GM_HANDOFF_RELEASE, .region = r->id};
	gm_handoff_rep rep;
	gemmd_region **pp;
	gm_shm *g = r->g;
	int rv;

	pthread_mutex_lock(&g->mu);
	for (pp = &g->regions; *pp != r; pp = &(*pp)->next)
		;
	*pp = r->next;
	rv = g->fd >= 0
		 ? exchange(g, &req, -1, &rep)
		 : gm_client_seterr(GM_ETRANSPORT, "the region socket closed");
	pthread_mutex_unlock(&g->mu);
	unmap(r);
	return rv;
}
