/*
 * gm_testpeer_work.c - the scripted peer's hand-off socket for regions
 * and its arithmetic; see gm_testpeer.h.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gm_error.h"
#include "gm_testpeer_impl.h"
#include "gm_testref.h"

#define HANDOFF_CONNS 16

/* ---- the hand-off socket ---- */

static void reply(int fd, const gm_handoff_rep *rep)
{
	uint8_t out[GM_HANDOFF_REP_SIZE];

	gm_handoff_put_rep(out, rep);
	if (send(fd, out, sizeof(out), MSG_NOSIGNAL) < 0)
		perror("testpeer: hand-off reply");
}

static void do_register(gm_testpeer *p, int fd, const gm_handoff_req *req,
			int memfd, gm_handoff_rep *rep)
{
	struct gm_testregion *r;
	void *base;

	if (memfd < 0) {
		rep->status = GM_EINVAL;
		return;
	}
	base = mmap(NULL, (size_t)req->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    memfd, 0);
	close(memfd);
	pthread_mutex_lock(&p->mu);
	if (base == MAP_FAILED || p->nregions == TESTPEER_REGIONS_MAX) {
		rep->status = GM_ETOOBIG;
	} else {
		r = &p->regions[p->nregions++];
		*r = (struct gm_testregion){++p->next_region + 0x1000,
					    req->size, base, fd};
		rep->region = r->id;
		rep->size = r->size;
		base = MAP_FAILED;
	}
	pthread_mutex_unlock(&p->mu);
	if (base != MAP_FAILED)
		munmap(base, (size_t)req->size);
}

/* Forgets region id (0: every region of connection fd). */
static void forget(gm_testpeer *p, int fd, uint64_t id)
{
	pthread_mutex_lock(&p->mu);
	for (unsigned i = 0; i < p->nregions;) {
		struct gm_testregion *r = &p->regions[i];

		if (r->fd == fd && (id == 0 || r->id == id)) {
			munmap(r->base, (size_t)r->size);
			*r = p->regions[--p->nregions];
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&p->mu);
}

/* One record from fd; false when the connection is over. */
static bool serve_one(gm_testpeer *p, int fd)
{
	uint8_t in[GM_HANDOFF_REQ_SIZE + 1];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {in, sizeof(in)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm;
	gm_handoff_req req;
	gm_handoff_rep rep = {0};
	int memfd = -1;
	ssize_t n = recvmsg(fd, &mh, 0);

	if (n <= 0)
		return false;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_type == SCM_RIGHTS)
			memcpy(&memfd, CMSG_DATA(cm), sizeof(int));
	rep.status = (uint32_t)gm_handoff_get_req(in, (size_t)n, &req, NULL, 0);
	rep.op = req.op;
	if (rep.status == GM_OK && req.op == GM_HANDOFF_REGISTER) {
		do_register(p, fd, &req, memfd, &rep);
		memfd = -1;
	} else if (rep.status == GM_OK) {
		forget(p, fd, req.region);
		rep.region = req.region;
	}
	if (memfd >= 0)
		close(memfd);
	reply(fd, &rep);
	return true;
}

static void *handoff_main(void *arg)
{
	gm_testpeer *p = arg;
	struct pollfd pf[HANDOFF_CONNS + 1];
	nfds_t n = 1;

	pf[0] = (struct pollfd){.fd = p->handoff_fd, .events = POLLIN};
	while (!__atomic_load_n(&p->handoff_stop, __ATOMIC_ACQUIRE)) {
		if (poll(pf, n, 50) <= 0)
			continue;
		for (nfds_t i = n; i-- > 1;)
			if (pf[i].revents && !serve_one(p, pf[i].fd)) {
				forget(p, pf[i].fd, 0);
				close(pf[i].fd);
				pf[i] = pf[--n];
			}
		if ((pf[0].revents & POLLIN) && n <= HANDOFF_CONNS) {
			int fd = accept(p->handoff_fd, NULL, NULL);

			if (fd >= 0)
				pf[n++] = (struct pollfd){fd, POLLIN, 0};
		}
	}
	for (nfds_t i = 1; i < n; i++) {
		forget(p, pf[i].fd, 0);
		close(pf[i].fd);
	}
	return NULL;
}

int gm_testpeer_handoff(gm_testpeer *p, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(p->handoff_path, sizeof(p->handoff_path), "%s", path);
	p->handoff_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (p->handoff_fd < 0 ||
	    bind(p->handoff_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(p->handoff_fd, 16) != 0 ||
	    pthread_create(&p->handoff_thread, NULL, handoff_main, p) != 0) {
		perror("testpeer: hand-off socket");
		if (p->handoff_fd >= 0)
			close(p->handoff_fd);
		p->handoff_fd = -1;
		return GM_EIO;
	}
	return GM_OK;
}

void gm_testpeer_handoff_stop(gm_testpeer *p)
{
	if (p->handoff_fd < 0)
		return;
	__atomic_store_n(&p->handoff_stop, true, __ATOMIC_RELEASE);
	pthread_join(p->handoff_thread, NULL);
	close(p->handoff_fd);
	unlink(p->handoff_path);
	p->handoff_fd = -1;
}

unsigned gm_testpeer_regions(gm_testpeer *p)
{
	unsigned n;

	pthread_mutex_lock(&p->mu);
	n = p->nregions;
	pthread_mutex_unlock(&p->mu);
	return n;
}

/* ---- frames and arithmetic ---- */

static const gm_limits hard = {GM_MAX_JOBS, GM_MAX_DIM, UINT64_MAX, UINT64_MAX,
			       UINT64_MAX};

int gm_testframe_check(const gm_testframe *f, gm_batch *b)
{
	gm_batch own;
	gm_hdr h;

	return gm_proto_check_gemm(f->buf, f->len, &hard, &h, b ? b : &own,
				   NULL, 0);
}

void gm_testframe_job(const gm_testframe *f, uint32_t index, gm_job_desc *d,
		      gm_job_operands *ops)
{
	const uint8_t *head = f->buf + GM_HDR_SIZE;
	const uint8_t *desc = head + gm_proto_head_size(&f->h);
	uint32_t ndesc = 0;
	gm_batch b;
	gm_job_iter it;

	gm_proto_check_head(&f->h, head, &hard, &b, &ndesc, NULL, 0);
	gm_proto_jobs_begin(&it, &f->h, head, desc,
			    desc + (size_t)ndesc * GM_REGION_DESC_SIZE);
	for (uint32_t i = 0; i <= index; i++)
		gm_proto_jobs_next(&it, d, ops);
}

/* Where operand op of a job is: inline, or in a region of p. */
static uint8_t *where(gm_testpeer *p, const gm_job_operands *ops, int op)
{
	if (!gm_ref_in_region(ops->ref, op))
		return op < GM_OPND_OUT ? (uint8_t *)ops->data[op] : NULL;
	for (unsigned i = 0; i < p->nregions; i++)
		if (p->regions[i].id == ops->ref[op].region)
			return p->regions[i].base + ops->ref[op].offset;
	return NULL;
}

int gm_testpeer_compute(gm_testpeer *p, const gm_testframe *f, uint32_t index,
			gm_reply_job *r, void **result)
{
	gm_job_operands ops;
	gm_job_desc d;
	gm_job_sizes z;
	uint8_t *x[GM_OPND_COUNT];

	gm_testframe_job(f, index, &d, &ops);
	gm_job_sizes_of(&d, &z);
	*r = (gm_reply_job){.dtype = d.dtype,
			    .layout = d.layout,
			    .m = d.m,
			    .n = d.n,
			    .t = {1, 2, 3, 4, 5}};
	*result = NULL;
	pthread_mutex_lock(&p->mu);
	for (int op = 0; op < GM_OPND_COUNT; op++)
		x[op] = where(p, &ops, op);
	if (x[GM_OPND_OUT] == NULL)
		x[GM_OPND_OUT] = *result = malloc(z.out);
	if (x[GM_OPND_A] == NULL || x[GM_OPND_B] == NULL ||
	    x[GM_OPND_OUT] == NULL ||
	    (d.dtype != GM_FP64 && d.dtype != GM_FP32)) {
		pthread_mutex_unlock(&p->mu);
		free(*result);
		*result = NULL;
		r->status = GM_EUNSUPPORTED;
		snprintf(r->message, sizeof(r->message), "testpeer: no");
		return GM_OK;
	}
	for (uint32_t i = 0; i < d.m; i++)
		for (uint32_t j = 0; j < d.n; j++) {
			long double s = 0;

			for (uint32_t l = 0; l < d.k; l++)
				s += (long double)gm_testref_get(
					 d.dtype, x[GM_OPND_A],
					 gm_testref_at(d.layout, d.trans_a, i,
						       l, d.m, d.k)) *
				     gm_testref_get(d.dtype, x[GM_OPND_B],
						    gm_testref_at(d.layout,
								  d.trans_b, l,
								  j, d.k, d.n));
			s *= d.alpha;
			if (d.flags & GM_JOB_HAS_C)
				s += d.beta * (long double)gm_testref_get(
						  d.dtype, x[GM_OPND_C],
						  gm_testref_at(d.layout, 0, i,
								j, d.m, d.n));
			gm_testref_put(
			    d.dtype, x[GM_OPND_OUT],
			    gm_testref_at(d.layout, 0, i, j, d.m, d.n),
			    (double)s);
		}
	pthread_mutex_unlock(&p->mu);
	r->result_bytes = *result != NULL ? z.out : 0;
	return GM_OK;
}
