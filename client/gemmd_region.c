/*
 * gemmd_region.c - shared-memory regions on the client side: making a
 * sealed memfd, handing it to the daemon over the hand-off socket, the
 * allocator over a region, and checking the jobs that name regions.
 *
 * A client opens one hand-off connection, at its first region, and
 * keeps it: the daemon ties the client's regions to it, so that a
 * process that dies without a word still gets its regions released. One
 * record is in flight on it at a time, under the client's lock.
 */
#include "gm_client.h"
#include "gm_creg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define ALIGN_DEFAULT 256

struct block {
	uint64_t off, len;
};

struct gemmd_region {
	gm_creg *g;
	uint64_t id, size;
	void *base;
	pthread_mutex_t mu; /* the blocks */
	struct block *used; /* sorted by offset */
	size_t nused, cap;
	gemmd_region *next; /* the client's, under g->mu */
};

struct gm_creg {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* "": none */
	pthread_mutex_t mu; /* fd, the records on it, and regions */
	int fd;		    /* the hand-off connection; -1 until needed */
	gemmd_region *regions;
};

int gm_creg_new(const char *url, const char *socket, gm_creg **out)
{
	gm_creg *g = calloc(1, sizeof(*g));
	const char *slash;

	*out = g;
	if (g == NULL)
		return GM_ENOMEM;
	g->fd = -1;
	pthread_mutex_init(&g->mu, NULL);
	if (socket != NULL) {
		snprintf(g->path, sizeof(g->path), "%s", socket);
	} else if (strncmp(url, "ipc://", 6) == 0) {
		url += 6;
		if ((slash = strrchr(url, '/')) == NULL)
			snprintf(g->path, sizeof(g->path), "%s",
				 GM_HANDOFF_SOCKET_NAME);
		else
			snprintf(g->path, sizeof(g->path), "%.*s/%s",
				 (int)(slash - url), url,
				 GM_HANDOFF_SOCKET_NAME);
	}
	return GM_OK;
}

static void unmap(gemmd_region *r)
{
	munmap(r->base, (size_t)r->size);
	pthread_mutex_destroy(&r->mu);
	free(r->used);
	free(r);
}

void gm_creg_free(gm_creg *g)
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

static int dial(gm_creg *g)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (g->fd >= 0)
		return GM_OK;
	if (g->path[0] == '\0')
		return gm_client_seterr(GM_EINVAL,
					"regions need an ipc:// URL or "
					"region_socket");
	memcpy(sa.sun_path, g->path, strlen(g->path));
	g->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (g->fd < 0 || connect(g->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		if (g->fd >= 0)
			close(g->fd);
		g->fd = -1;
		return gm_client_seterr(GM_ETRANSPORT, "region socket %s: %s",
					g->path, strerror(e));
	}
	return GM_OK;
}

/* The connection failed: regions made on it are gone in the daemon. */
static int hang_up(gm_creg *g, const char *what)
{
	int e = errno;

	close(g->fd);
	g->fd = -1;
	return gm_client_seterr(GM_ETRANSPORT, "region socket %s: %s: %s",
				g->path, what, e ? strerror(e) : "closed");
}

/* Sends req (with fd when >= 0) and reads the reply. Under g->mu. */
static int exchange(gm_creg *g, const gm_handoff_req *req, int fd,
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
		close(g->fd);
		g->fd = -1;
		return gm_client_seterr(rv, "region socket %s: bad reply: %s",
					g->path, detail);
	}
	if (rep->status != GM_OK)
		return gm_client_seterr((int)rep->status, "%s", rep->message);
	return GM_OK;
}

/* ---- making and releasing regions ---- */

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

int gemmd_region_create(gemmd_client *c, uint64_t bytes, gemmd_region **out)
{
	gm_handoff_req req = {.op = GM_HANDOFF_REGISTER, .size = bytes};
	gm_handoff_rep rep;
	gemmd_region *r;
	gm_creg *g;
	int rv, fd = -1;

	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL || bytes == 0)
		return gm_client_seterr(GM_EINVAL, "no client, no place for "
						   "the region, or 0 bytes");
	g = gm_client_creg(c);
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return gm_client_seterr(GM_ENOMEM, "out of memory");
	if ((rv = make_memfd(bytes, &fd, &r->base)) != GM_OK) {
		free(r);
		return rv;
	}
	pthread_mutex_lock(&g->mu);
	if ((rv = dial(g)) == GM_OK)
		rv = exchange(g, &req, fd, &rep);
	close(fd); /* each side's mapping keeps the memory */
	if (rv == GM_OK) {
		r->next = g->regions;
		g->regions = r;
	}
	pthread_mutex_unlock(&g->mu);
	if (rv != GM_OK) {
		munmap(r->base, (size_t)bytes);
		free(r);
		return rv;
	}
	r->g = g;
	r->id = rep.region;
	r->size = bytes;
	pthread_mutex_init(&r->mu, NULL);
	*out = r;
	gm_client_seterr(GM_OK, "%s", "");
	return GM_OK;
}

int gemmd_region_release(gemmd_region *r)
{
	gm_handoff_req req = {.op = GM_HANDOFF_RELEASE};
	gm_handoff_rep rep;
	gemmd_region **pp;
	gm_creg *g;
	int rv;

	if (r == NULL)
		return gm_client_seterr(GM_EINVAL, "no region");
	g = r->g;
	req.region = r->id;
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

void *gemmd_region_ptr(const gemmd_region *r)
{
	return r->base;
}

uint64_t gemmd_region_size(const gemmd_region *r)
{
	return r->size;
}

uint64_t gemmd_region_id(const gemmd_region *r)
{
	return r->id;
}

/* ---- the allocator ---- */

/* Whether a block of bytes fits between at and end at a multiple of
 * align; *off is then its offset. */
static int fits(uint64_t at, uint64_t end, uint64_t bytes, uint64_t align,
		uint64_t *off)
{
	uint64_t o;

	if (__builtin_add_overflow(at, align - 1, &o))
		return 0;
	o &= ~(align - 1);
	if (o > end || bytes > end - o)
		return 0;
	*off = o;
	return 1;
}

static int insert(gemmd_region *r, size_t i, uint64_t off, uint64_t len)
{
	if (r->nused == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct block *b = realloc(r->used, cap * sizeof(*b));

		if (b == NULL)
			return GM_ENOMEM;
		r->used = b;
		r->cap = cap;
	}
	memmove(&r->used[i + 1], &r->used[i],
		(r->nused - i) * sizeof(*r->used));
	r->used[i] = (struct block){off, len};
	r->nused++;
	return GM_OK;
}

int gemmd_region_alloc(gemmd_region *r, uint64_t bytes, uint64_t align,
		       uint64_t *offset)
{
	uint64_t at = 0, off = 0;
	size_t i;
	int rv = GM_ENOMEM;

	if (align == 0)
		align = ALIGN_DEFAULT;
	if (r == NULL || offset == NULL || bytes == 0 ||
	    (align & (align - 1)) != 0)
		return gm_client_seterr(GM_EINVAL, "bad region allocation");
	pthread_mutex_lock(&r->mu);
	for (i = 0; i <= r->nused; i++) {
		uint64_t end = i < r->nused ? r->used[i].off : r->size;

		if (fits(at, end, bytes, align, &off)) {
			rv = insert(r, i, off, bytes);
			break;
		}
		if (i < r->nused)
			at = r->used[i].off + r->used[i].len;
	}
	pthread_mutex_unlock(&r->mu);
	if (rv != GM_OK)
		return gm_client_seterr(rv,
					"no %" PRIu64 " free bytes in the "
					"region",
					bytes);
	*offset = off;
	return GM_OK;
}

int gemmd_region_free(gemmd_region *r, uint64_t offset)
{
	int rv = GM_ENOTFOUND;

	if (r == NULL)
		return GM_EINVAL;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nused; i++) {
		if (r->used[i].off != offset)
			continue;
		memmove(&r->used[i], &r->used[i + 1],
			(r->nused - i - 1) * sizeof(*r->used));
		r->nused--;
		rv = GM_OK;
		break;
	}
	pthread_mutex_unlock(&r->mu);
	return rv;
}

void gemmd_region_reset(gemmd_region *r)
{
	pthread_mutex_lock(&r->mu);
	r->nused = 0;
	pthread_mutex_unlock(&r->mu);
}

/* ---- jobs naming regions ---- */

int gm_creg_refs(const gemmd_job *j, gm_region_ref ref[GM_OPND_COUNT])
{
	const gemmd_region_ref *in[GM_OPND_COUNT] = {&j->a_ref, &j->b_ref,
						     &j->c_ref, &j->out_ref};
	int any = 0;

	for (int op = 0; op < GM_OPND_COUNT; op++) {
		ref[op].region = in[op]->region ? in[op]->region->id : 0;
		ref[op].offset = in[op]->region ? in[op]->offset : 0;
		any |= in[op]->region != NULL;
	}
	return any;
}

int gm_creg_given(const gemmd_job *j, int need_out, char *detail, size_t len)
{
	const gemmd_region *r[GM_OPND_COUNT] = {
	    j->a_ref.region, j->b_ref.region, j->c_ref.region,
	    j->out_ref.region};
	const void *ptr[GM_OPND_COUNT] = {j->a, j->b, j->c, j->out};

	for (int op = 0; op < GM_OPND_COUNT; op++) {
		if (r[op] != NULL && ptr[op] != NULL) {
			snprintf(detail, len,
				 "%s given twice: a pointer and a region",
				 gm_operand_name(op));
			return GM_EINVAL;
		}
		if (r[op] == NULL && ptr[op] == NULL && op != GM_OPND_C &&
		    (op != GM_OPND_OUT || need_out)) {
			snprintf(detail, len, "%s",
				 need_out ? "a, b and out are required"
					  : "a and b are required");
			return GM_EINVAL;
		}
	}
	return GM_OK;
}

int gm_creg_check(const gemmd_job *j, const gm_job_desc *d, char *detail,
		  size_t len)
{
	const gemmd_region_ref *in[GM_OPND_COUNT] = {&j->a_ref, &j->b_ref,
						     &j->c_ref, &j->out_ref};
	gm_region_ref ref[GM_OPND_COUNT];
	gm_job_sizes z;
	int rv;

	if (!gm_creg_refs(j, ref))
		return GM_OK;
	gm_job_sizes_of(d, &z);
	if ((rv = gm_proto_check_refs(d, &z, ref, detail, len)) != GM_OK)
		return rv;
	for (int op = 0; op < GM_OPND_COUNT; op++) {
		const gemmd_region *r = in[op]->region;
		uint64_t bytes = gm_operand_bytes(&z, op);

		if (r != NULL && (in[op]->offset > r->size ||
				  bytes > r->size - in[op]->offset)) {
			snprintf(detail, len,
				 "%s: offset %" PRIu64 " + %" PRIu64
				 " bytes, the region has %" PRIu64,
				 gm_operand_name(op), in[op]->offset, bytes,
				 r->size);
			return GM_EBOUNDS;
		}
	}
	return GM_OK;
}
