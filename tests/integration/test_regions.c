/*
 * test_regions.c - shared-memory regions against a real gemmd: results
 * through regions equal results through the socket (every dtype the
 * engine runs, both layouts, transposes, C, mixed inline and region
 * operands, C updated in place); out-of-bounds and misaligned offsets,
 * unknown ids, tcp:// requests and another user's region each refused
 * with their code; the hand-off socket refusing an unsealed memfd (a
 * sealed one can never shrink), a short or foreign record, a release on
 * the wrong connection; quotas; a region released while a job uses it;
 * a client that dies holding regions; gemmctl using a region by itself
 * over ipc://. Every test ends with the daemon's mapped and registered
 * bytes back at zero.
 *
 * Built twice: for the integration suite with the CPU engine, and with
 * GM_TEST_CUDA for the gpu suite with the CUDA engine (then also with
 * mapped output and the fp16, bf16 and tf32 dtypes), which exits 77
 * without a device.
 */
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gemmd.h"
#include "gm_proto.h"
#include "gm_proto_region.h"
#include "gm_testref.h"
#include "itest.h"

#if GM_TEST_CUDA
#include "gm_engine.h"
#define ENGINE "--engine=cuda"
#else
#define ENGINE "--engine=cpu"
#endif

#define TIMEOUT_MS 30000

static uint64_t seed = 1; /* operands: the same every run */

/* ---- a daemon per test ---- */

static void start(it_daemon *d, const char *const *extra)
{
	const char *args[16] = {ENGINE, "--set", "pool_bytes=64M"};
	int n = 3;

	for (int i = 0; extra != NULL && extra[i] != NULL; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	assert_int_equal(it_setup(d), 0);
	if (it_start(d, args) != 0)
		fail_msg("gemmd did not start; see %s", d->log);
}

static gemmd_client *open_ipc(const it_daemon *d)
{
	gemmd_client *c;

	assert_int_equal(gemmd_open(d->ipc, NULL, &c), GM_OK);
	return c;
}

/* Waits up to 10 s for the daemon to have no region mapped. */
static void assert_regions_gone(gemmd_client *c)
{
	double count = -1, mapped = -1, reg = -1;

	for (int i = 0; i < 500; i++) {
		cJSON *s = it_stats(c);

		count = it_num(s, "regions.count");
		mapped = it_num(s, "regions.mapped_bytes");
		reg = it_num(s, "regions.registered_bytes");
		cJSON_Delete(s);
		if (count == 0 && mapped == 0 && reg == 0)
			return;
		usleep(20000);
	}
	fail_msg("regions still mapped: count %g, mapped %g, registered %g",
		 count, mapped, reg);
}

static void stop(it_daemon *d)
{
	gemmd_client *c = open_ipc(d);

	assert_regions_gone(c);
	gemmd_close(c);
	assert_int_equal(it_stop(d), 0);
	it_cleanup(d);
}

/* ---- jobs with operands of any dtype ---- */

/* A job and its operands in malloc'd memory. */
typedef struct tjob {
	gemmd_job j;
	void *a, *b, *c, *out;
	size_t na, nb, nc; /* bytes */
} tjob;

static void make(tjob *t, int dtype, int layout, int ta, int tb, uint32_t m,
		 uint32_t n, uint32_t k, int with_c)
{
	size_t es = gm_testref_esize(dtype);

	memset(t, 0, sizeof(*t));
	t->na = (size_t)m * k * es;
	t->nb = (size_t)k * n * es;
	t->nc = (size_t)m * n * es;
	t->a = malloc(t->na);
	t->b = malloc(t->nb);
	t->c = malloc(t->nc);
	t->out = malloc(t->nc);
	assert_true(t->a && t->b && t->c && t->out);
	gm_testref_fill(dtype, t->a, t->na / es, &seed, NULL);
	gm_testref_fill(dtype, t->b, t->nb / es, &seed, NULL);
	gm_testref_fill(dtype, t->c, t->nc / es, &seed, NULL);
	memset(t->out, 0xA5, t->nc);
	t->j = (gemmd_job){.dtype = dtype,
			   .layout = layout,
			   .trans_a = ta,
			   .trans_b = tb,
			   .m = m,
			   .n = n,
			   .k = k,
			   .alpha = 1.5,
			   .beta = with_c ? -0.5 : 0,
			   .a = t->a,
			   .b = t->b,
			   .c = with_c ? t->c : NULL,
			   .out = t->out};
}

static void drop(tjob *t)
{
	free(t->a);
	free(t->b);
	free(t->c);
	free(t->out);
}

/* Results x and y of a dtype agree to a few units in the last place of
 * the magnitudes around: the same engine, perhaps another stream. */
static int close_enough(int dtype, const void *x, const void *y, size_t bytes)
{
	size_t n = bytes / gm_testref_esize(dtype);
	double eps = dtype == GEMMD_FP64   ? 1e-12
		     : dtype == GEMMD_FP32 ? 1e-5
					   : 2e-2;

	if (memcmp(x, y, bytes) == 0)
		return 1;
	for (size_t i = 0; i < n; i++) {
		double a = gm_testref_get(dtype, x, i);
		double b = gm_testref_get(dtype, y, i);

		if (fabs(a - b) > eps * (1 + fabs(b)))
			return 0;
	}
	return 1;
}

/* Where one region copy of a job lives: offsets of A, B, C, out. */
typedef struct placed {
	uint64_t a, b, c, out;
} placed;

/* Copies t's inputs into r (those in mask: 1 A, 2 B, 4 C, 8 out) and
 * points a copy of t's job at them; in_place puts out over C. */
static gemmd_job in_region(const tjob *t, gemmd_region *r, unsigned mask,
			   int in_place, placed *p)
{
	uint8_t *base = gemmd_region_ptr(r);
	gemmd_job j = t->j;

	assert_int_equal(gemmd_region_alloc(r, t->na, 0, &p->a), GM_OK);
	assert_int_equal(gemmd_region_alloc(r, t->nb, 0, &p->b), GM_OK);
	assert_int_equal(gemmd_region_alloc(r, t->nc, 0, &p->c), GM_OK);
	assert_int_equal(gemmd_region_alloc(r, t->nc, 0, &p->out), GM_OK);
	if (in_place)
		p->out = p->c;
	memcpy(base + p->a, t->a, t->na);
	memcpy(base + p->b, t->b, t->nb);
	memcpy(base + p->c, t->c, t->nc);
	if (!in_place)
		memset(base + p->out, 0x5A, t->nc);
	if (mask & 1) {
		j.a = NULL;
		j.a_ref = (gemmd_region_ref){r, p->a};
	}
	if (mask & 2) {
		j.b = NULL;
		j.b_ref = (gemmd_region_ref){r, p->b};
	}
	if ((mask & 4) && j.c != NULL) {
		j.c = NULL;
		j.c_ref = (gemmd_region_ref){r, p->c};
	}
	if (mask & 8) {
		j.out = NULL;
		j.out_ref = (gemmd_region_ref){r, p->out};
	} else {
		j.out = malloc(t->nc);
	}
	return j;
}

/* Runs the n jobs t[] through the socket, then again with the operands
 * of mask[i] in region r, one request each way, and compares. */
static void compare_ways(gemmd_client *c, gemmd_region *r, tjob *t,
			 const unsigned *mask, const int *in_place, int n)
{
	gemmd_job sock[16], reg[16];
	placed p[16];

	assert_true(n <= 16);
	gemmd_region_reset(r);
	for (int i = 0; i < n; i++) {
		sock[i] = t[i].j;
		reg[i] = in_region(&t[i], r, mask[i], in_place[i], &p[i]);
	}
	assert_int_equal(gemmd_submit(c, sock, (uint32_t)n, NULL, TIMEOUT_MS),
			 GM_OK);
	assert_int_equal(gemmd_submit(c, reg, (uint32_t)n, NULL, TIMEOUT_MS),
			 GM_OK);
	for (int i = 0; i < n; i++) {
		const uint8_t *got =
		    mask[i] & 8 ? (uint8_t *)gemmd_region_ptr(r) + p[i].out
				: reg[i].out;

		if (sock[i].status != GM_OK || reg[i].status != GM_OK)
			fail_msg(
			    "job %d (%s, mask %u): socket %s, region %s: %s", i,
			    gm_dtype_name(t[i].j.dtype), mask[i],
			    gm_errname(sock[i].status),
			    gm_errname(reg[i].status), reg[i].message);
		if (!close_enough(t[i].j.dtype, sock[i].out, got, t[i].nc))
			fail_msg("job %d (%s %ux%ux%u, mask %u, in place %d): "
				 "region result differs from the socket's",
				 i, gm_dtype_name(t[i].j.dtype), t[i].j.m,
				 t[i].j.n, t[i].j.k, mask[i], in_place[i]);
		if (!(mask[i] & 8))
			free(reg[i].out);
	}
}

static const int dtypes[] = {GEMMD_FP64, GEMMD_FP32,
#if GM_TEST_CUDA
			     GEMMD_TF32, GEMMD_FP16, GEMMD_BF16
#endif
};
#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

static void results_equal(const char *const *extra)
{
	it_daemon d;
	gemmd_client *c;
	gemmd_region *r;
	tjob t[16];
	unsigned mask[16];
	int in_place[16], n = 0;

	start(&d, extra);
	c = open_ipc(&d);
	assert_int_equal(gemmd_region_create(c, 8 << 20, &r), GM_OK);
	assert_int_equal(it_stat(c, "regions.count"), 1);
	assert_int_equal(it_stat(c, "regions.mapped_bytes"), 8 << 20);
	assert_int_equal(it_stat(c, "regions.registered_bytes"), 8 << 20);
	for (size_t di = 0; di < NDTYPES; di++) {
		n = 0;
		for (int v = 0; v < 8; v++) {
			make(&t[n], dtypes[di], v & 1, (v >> 1) & 1,
			     (v >> 2) & 1, 17 + v, 33 - v, 9 + 3 * v,
			     v % 3 != 0);
			mask[n] = 15; /* everything in the region */
			in_place[n++] = 0;
		}
		/* Mixed: each operand alone in the region, the rest inline. */
		for (unsigned m = 1; m <= 8; m <<= 1) {
			make(&t[n], dtypes[di], GEMMD_ROW_MAJOR, 0, 1, 64, 48,
			     40, 1);
			mask[n] = m;
			in_place[n++] = 0;
		}
		/* C updated in place, and an inline job in the same request. */
		make(&t[n], dtypes[di], GEMMD_COL_MAJOR, 1, 0, 31, 29, 27, 1);
		mask[n] = 15;
		in_place[n++] = 1;
		make(&t[n], dtypes[di], GEMMD_ROW_MAJOR, 0, 0, 5, 6, 7, 0);
		mask[n] = 0;
		in_place[n++] = 0;
		compare_ways(c, r, t, mask, in_place, n);
		for (int i = 0; i < n; i++)
			drop(&t[i]);
	}
	assert_true(it_stat(c, "regions.jobs") >= (double)(NDTYPES * 13));
	assert_int_equal(gemmd_region_release(r), GM_OK);
	gemmd_close(c);
	stop(&d);
}

static void test_results_equal(void **state)
{
	(void)state;
	results_equal(NULL);
}

#if GM_TEST_CUDA
/* Results written by the kernel straight into the region. */
static void test_results_equal_mapped(void **state)
{
	const char *const extra[] = {"--set", "mapped_output=true", NULL};

	(void)state;
	results_equal(extra);
}
#endif

/* ---- refusals ---- */

/* Sends one job d with region descriptor ref (inline operands zeros)
 * over url in a raw frame; returns the code of the ERROR reply, or the
 * job's status. */
static int raw(const char *url, const gm_job_desc *d, const gm_region_ref *ref)
{
	static uint8_t zeros[1 << 16];
	rc_job j = {.dtype = d->dtype,
		    .flags = d->flags,
		    .m = d->m,
		    .n = d->n,
		    .k = d->k,
		    .alpha = d->alpha,
		    .beta = d->beta,
		    .a = zeros,
		    .b = zeros,
		    .c = zeros};
	char msg[97];
	uint8_t *req;
	rc_reply rj;
	rc_frame f;
	size_t len;
	int fd, rv;

	for (int op = 0; op < GM_OPND_COUNT; op++) {
		j.refs[2 * op] = ref[op].region;
		j.refs[2 * op + 1] = ref[op].offset;
	}
	assert_non_null(req = rc_gemm(42, 1, 0, 0, &j, 1, &len));
	assert_true((fd = rc_connect(url, NULL)) >= 0);
	assert_int_equal(rc_write(fd, req, len), 0);
	assert_int_equal(rc_read_frame(fd, &f, 10000), 0);
	assert_int_equal(f.id, 42);
	if (f.type == RC_ERROR_T) {
		rv = (int)rc_error(&f, msg);
	} else {
		assert_int_equal(rc_reply_of(&f, &rj), 0);
		rv = (int)rj.status;
	}
	rc_frame_free(&f);
	free(req);
	close(fd);
	return rv;
}

static void test_bad_refs(void **state)
{
	gm_job_desc d = {.dtype = GM_FP64, .m = 16, .n = 16, .k = 16};
	uint64_t id, big = 1 << 20, len = 16 * 16 * 8;
	gm_region_ref ref[GM_OPND_COUNT];
	gemmd_client *c;
	gemmd_region *r;
	it_daemon dm;
	tjob t;

	(void)state;
	start(&dm, NULL);
	c = open_ipc(&dm);
	assert_int_equal(gemmd_region_create(c, big, &r), GM_OK);
	id = gemmd_region_id(r);
	d.alpha = 1;
	d.flags = GM_JOB_REGIONS;
#define SET(op, rid, off) (ref[op] = (gm_region_ref){(rid), (off)})
	memset(ref, 0, sizeof(ref));
	SET(GM_OPND_A, id, 0);
	SET(GM_OPND_B, id, len);
	SET(GM_OPND_OUT, id, 2 * len);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_OK);
	/* The last byte of OUT one past the end; then just inside. */
	SET(GM_OPND_OUT, id, big - len + 8);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EBOUNDS);
	SET(GM_OPND_OUT, id, big - len);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_OK);
	SET(GM_OPND_B, id, UINT64_MAX - 7); /* offset + length overflows */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EBOUNDS);
	SET(GM_OPND_B, id, 1ull << 40);
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EBOUNDS);
	SET(GM_OPND_B, id, len + 4); /* not a multiple of 8 */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EFIELD);
	SET(GM_OPND_B, id, len);
	SET(GM_OPND_OUT, id, len / 2); /* over A */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_EFIELD);
	SET(GM_OPND_OUT, id, 2 * len);
	SET(GM_OPND_A, id ^ 1, 0); /* unknown */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_ENOTFOUND);
	SET(GM_OPND_A, id, 0);
	/* tcp:// cannot name regions, whoever the peer is. */
	assert_int_equal(raw(dm.tcp, &d, ref), GM_EACCES);
	/* The library refuses the same before sending. */
	make(&t, GEMMD_FP64, 0, 0, 0, 16, 16, 16, 0);
	t.j.a = NULL;
	t.j.a_ref = (gemmd_region_ref){r, big - 8};
	assert_int_equal(gemmd_submit(c, &t.j, 1, NULL, TIMEOUT_MS),
			 GM_EBOUNDS);
	t.j.a_ref.offset = 4;
	assert_int_equal(gemmd_submit(c, &t.j, 1, NULL, TIMEOUT_MS), GM_EFIELD);
	t.j.a = t.a; /* both a pointer and a region */
	assert_int_equal(gemmd_submit(c, &t.j, 1, NULL, TIMEOUT_MS), GM_EINVAL);
	drop(&t);
	assert_int_equal(it_stat(c, "errors.EBOUNDS"), 3);
	assert_int_equal(gemmd_region_release(r), GM_OK);
	/* Released: its id is unknown from now on. */
	assert_int_equal(raw(dm.ipc, &d, ref), GM_ENOTFOUND);
	gemmd_close(c);
	stop(&dm);
}

/* Runs this program again as a child in role (see main), as nobody
 * with drop; nng cannot be used in a forked child, so it execs. */
static pid_t spawn_self(const char *role, const char *url, uint64_t id,
			int drop)
{
	char idtext[24];
	pid_t pid;

	snprintf(idtext, sizeof(idtext), "%llu", (unsigned long long)id);
	if ((pid = fork()) != 0)
		return pid;
	/* nobody keeps root's group, to reach the sockets through it. */
	if (drop &&
	    (setgroups(0, NULL) != 0 || setgid(0) != 0 || setuid(65534) != 0))
		_exit(10);
	execl("/proc/self/exe", "test_regions", "--child", role, url, idtext,
	      (char *)NULL);
	_exit(127);
}

static int wait_child(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st))
		fail_msg("child killed by signal %d", WTERMSIG(st));
	return WEXITSTATUS(st);
}

/* As another user: the region of id, root's, is refused; its own work. */
static int child_other_user(const char *url, uint64_t id)
{
	gm_job_desc jd = {.dtype = GM_FP64, .m = 4, .n = 4, .k = 4};
	gm_region_ref ref[GM_OPND_COUNT] = {{id, 0}, {id, 128}, {0}, {id, 256}};
	gemmd_client *c;
	gemmd_region *r;

	if (geteuid() != 65534)
		return 10;
	jd.alpha = 1;
	jd.flags = GM_JOB_REGIONS;
	if (raw(url, &jd, ref) != GM_EACCES)
		return 11;
	if (gemmd_open(url, NULL, &c) != GM_OK)
		return 12;
	/* Its own regions work, under its own quota. */
	if (gemmd_region_create(c, 4096, &r) != GM_OK)
		return 13;
	ref[0].region = ref[1].region = ref[3].region = gemmd_region_id(r);
	if (raw(url, &jd, ref) != GM_OK)
		return 14;
	gemmd_close(c);
	return 0;
}

static void test_other_user(void **state)
{
	gemmd_client *c;
	gemmd_region *r;
	it_daemon d;
	int rv;

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "other_user: not root, cannot become another "
				"user; skipped\n");
		return;
	}
	start(&d, NULL);
	/* nobody reaches the sockets through their group, root's. */
	assert_int_equal(chmod(d.dir, 0755), 0);
	c = open_ipc(&d);
	assert_int_equal(gemmd_region_create(c, 1 << 16, &r), GM_OK);
	rv = wait_child(spawn_self("other-user", d.ipc, gemmd_region_id(r), 1));
	if (rv == 127)
		fprintf(stderr, "other_user: nobody cannot run this test's "
				"binary here; skipped\n");
	else
		assert_int_equal(rv, 0);
	assert_int_equal(gemmd_region_release(r), GM_OK);
	gemmd_close(c);
	stop(&d);
}

/* ---- the hand-off socket by hand ---- */

static int handoff_dial(const it_daemon *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/run/gemmd-regions.sock",
		 d->dir);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Sends a record of len bytes with fds[0..nfds-1]; returns the reply. */
static gm_handoff_rep handoff(int sock, const void *rec, size_t len,
			      const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))] = {0};
	struct iovec iov = {(void *)rec, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	uint8_t in[GM_HANDOFF_REP_SIZE];
	char msg[GM_MSG_TEXT + 1];
	gm_handoff_rep rep;

	if (nfds > 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	assert_int_equal(sendmsg(sock, &mh, 0), (ssize_t)len);
	assert_int_equal(recv(sock, in, sizeof(in), 0), GM_HANDOFF_REP_SIZE);
	assert_int_equal(
	    gm_handoff_get_rep(in, sizeof(in), &rep, msg, sizeof(msg)), GM_OK);
	return rep;
}

static gm_handoff_rep reg(int sock, int fd, uint64_t size)
{
	gm_handoff_req q = {.op = GM_HANDOFF_REGISTER, .size = size};
	uint8_t rec[GM_HANDOFF_REQ_SIZE];

	gm_handoff_put_req(rec, &q);
	return handoff(sock, rec, sizeof(rec), &fd, 1);
}

static gm_handoff_rep release(int sock, uint64_t id)
{
	gm_handoff_req q = {.op = GM_HANDOFF_RELEASE, .region = id};
	uint8_t rec[GM_HANDOFF_REQ_SIZE];

	gm_handoff_put_req(rec, &q);
	return handoff(sock, rec, sizeof(rec), NULL, 0);
}

static int memfd(uint64_t size, int seals)
{
	int fd = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	if (seals)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

static void test_handoff(void **state)
{
	uint8_t rec[GM_HANDOFF_REQ_SIZE];
	gm_handoff_rep rep;
	gemmd_client *c;
	gemmd_region *lib;
	it_daemon d;
	int s, fd, fds[2];

	(void)state;
	start(&d, NULL);
	c = open_ipc(&d);
	s = handoff_dial(&d);

	/* Unsealed: refused, and said why. */
	fd = memfd(1 << 16, 0);
	rep = reg(s, fd, 1 << 16);
	assert_int_equal(rep.status, GM_EINVAL);
	assert_non_null(strstr(rep.message, "F_SEAL_SHRINK"));
	/* Sealed: taken. Shrinking it now is impossible, so no job can
	 * ever find its pages gone. */
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	rep = reg(s, fd, 1 << 16);
	assert_int_equal(rep.status, GM_OK);
	assert_true(rep.region != 0);
	assert_int_equal(rep.size, 1 << 16);
	assert_int_not_equal(ftruncate(fd, 4096), 0);
	close(fd);
	assert_int_equal(it_stat(c, "regions.count"), 1);

	/* The wrong size, two descriptors, none, a foreign record. */
	fd = memfd(8192, F_SEAL_SHRINK);
	assert_int_equal(reg(s, fd, 4096).status, GM_EINVAL);
	fds[0] = fds[1] = fd;
	gm_handoff_put_req(
	    rec, &(gm_handoff_req){.op = GM_HANDOFF_REGISTER, .size = 8192});
	assert_int_equal(handoff(s, rec, sizeof(rec), fds, 2).status,
			 GM_EINVAL);
	assert_int_equal(handoff(s, rec, sizeof(rec), NULL, 0).status,
			 GM_EINVAL);
	assert_int_equal(handoff(s, rec, sizeof(rec) - 1, &fd, 1).status,
			 GM_ETRUNC);
	rec[0] = 'X';
	assert_int_equal(handoff(s, rec, sizeof(rec), NULL, 0).status,
			 GM_EMAGIC);
	close(fd);

	/* A region of the library's connection cannot be released from
	 * this one; this one's own can, once. */
	assert_int_equal(gemmd_region_create(c, 4096, &lib), GM_OK);
	assert_int_equal(release(s, gemmd_region_id(lib)).status, GM_EACCES);
	assert_int_equal(release(s, rep.region).status, GM_OK);
	assert_int_equal(release(s, rep.region).status, GM_ENOTFOUND);
	assert_int_equal(gemmd_region_release(lib), GM_OK);
	assert_true(it_stat(c, "regions.refused") >= 7);

	/* Closing the connection releases what it holds. */
	fd = memfd(1 << 20, F_SEAL_SHRINK);
	assert_int_equal(reg(s, fd, 1 << 20).status, GM_OK);
	close(fd);
	close(s);
	assert_regions_gone(c);
	gemmd_close(c);
	stop(&d);
}

static void test_quota(void **state)
{
	const char *const extra[] = {"--set", "region_max_count=2", "--set",
				     "region_max_bytes=1M", NULL};
	gemmd_region *r1, *r2, *r3;
	gemmd_client *c;
	it_daemon d;

	(void)state;
	start(&d, extra);
	c = open_ipc(&d);
	assert_int_equal(gemmd_region_create(c, 2 << 20, &r1), GM_ETOOBIG);
	assert_non_null(strstr(gemmd_last_error(), "region_max_bytes"));
	assert_int_equal(gemmd_region_create(c, 512 << 10, &r1), GM_OK);
	assert_int_equal(gemmd_region_create(c, 600 << 10, &r2), GM_ETOOBIG);
	assert_int_equal(gemmd_region_create(c, 256 << 10, &r2), GM_OK);
	assert_int_equal(gemmd_region_create(c, 4096, &r3), GM_ETOOBIG);
	assert_non_null(strstr(gemmd_last_error(), "region_max_count"));
	assert_int_equal(gemmd_region_release(r1), GM_OK);
	assert_int_equal(gemmd_region_create(c, 4096, &r3), GM_OK);
	/* gemmd_close releases the rest. */
	gemmd_close(c);
	stop(&d);
}

/* ---- lifetimes ---- */

struct done {
	volatile int fired, rv;
};

static void on_done(void *arg, int rv)
{
	struct done *d = arg;

	d->rv = rv;
	__atomic_store_n(&d->fired, 1, __ATOMIC_RELEASE);
}

/* A region released while a job still uses it stays mapped until the
 * job is back, and the job succeeds. It is released once gemmd holds
 * the request (requests.total), which found the region then: released
 * before, the job would rightly fail ENOTFOUND. */
static void test_release_in_use(void **state)
{
	struct done dn = {0};
	gemmd_client *c;
	gemmd_region *r;
	it_daemon d;
	placed p;
	tjob t;
	gemmd_job j;
	double before;

	(void)state;
	start(&d, NULL);
	c = open_ipc(&d);
	make(&t, GEMMD_FP64, 0, 0, 0, 512, 512, 512, 1);
	assert_int_equal(gemmd_region_create(c, 8 << 20, &r), GM_OK);
	j = in_region(&t, r, 15, 0, &p);
	before = it_rstat(&d, "requests.total");
	assert_int_equal(
	    gemmd_submit_async(c, &j, 1, NULL, TIMEOUT_MS, on_done, &dn),
	    GM_OK);
	assert_int_equal(
	    it_wait_stat(&d, "requests.total", before + 1, TIMEOUT_MS),
	    before + 1);
	assert_int_equal(gemmd_region_release(r), GM_OK);
	while (!__atomic_load_n(&dn.fired, __ATOMIC_ACQUIRE))
		usleep(1000);
	assert_int_equal(dn.rv, GM_OK);
	assert_int_equal(j.status, GM_OK);
	drop(&t);
	assert_regions_gone(c);
	gemmd_close(c);
	stop(&d);
}

/* Makes regions, starts a job on one, and exits without a word. */
static int child_dies(const char *url)
{
	static struct done dn;
	gemmd_client *k;
	gemmd_region *r[3];
	placed p;
	tjob t;
	gemmd_job j;

	if (gemmd_open(url, NULL, &k) != GM_OK ||
	    gemmd_region_create(k, 1 << 20, &r[0]) != GM_OK ||
	    gemmd_region_create(k, 4 << 20, &r[1]) != GM_OK ||
	    gemmd_region_create(k, 40 << 20, &r[2]) != GM_OK)
		return 1;
	make(&t, GEMMD_FP64, 0, 0, 0, 1024, 1024, 1024, 0);
	j = in_region(&t, r[2], 15, 0, &p);
	if (gemmd_submit_async(k, &j, 1, NULL, TIMEOUT_MS, on_done, &dn) !=
	    GM_OK)
		return 2;
	usleep(2000);
	_exit(0); /* no release, no close */
}

/* A client that dies holding regions, one with a job in flight: gemmd
 * unmaps and unregisters them all and keeps serving. */
static void test_client_dies(void **state)
{
	gemmd_client *c;
	it_daemon d;

	(void)state;
	start(&d, NULL);
	c = open_ipc(&d);
	assert_int_equal(wait_child(spawn_self("dies", d.ipc, 0, 0)), 0);
	assert_int_equal(it_stat(c, "regions.created"), 3);
	assert_regions_gone(c);
	assert_int_equal(it_stat(c, "regions.connections"), 0);
	/* Still serving. */
	assert_int_equal(gemmd_ping(c, NULL, TIMEOUT_MS), GM_OK);
	gemmd_close(c);
	stop(&d);
}

/* gemmctl submit over ipc:// goes through a region unless --no-shm
 * (the library stages calls of 1 MiB and more: these move 2 MiB). */
static void test_gemmctl(void **state)
{
	const char *ctl = getenv("GEMMCTL");
	char cmd[1024];
	gemmd_client *c;
	it_daemon d;

	(void)state;
	if (ctl == NULL) {
		fprintf(stderr, "GEMMCTL not set; skipped\n");
		return;
	}
	start(&d, NULL);
	c = open_ipc(&d);
	snprintf(
	    cmd, sizeof(cmd),
	    "cd %s && %s rand 500x400 -o A.npy && %s rand 400x300 -o B.npy "
	    "&& %s rand 500x300 -o C.npy && %s submit A.npy B.npy --c C.npy "
	    "--beta 2 -o O.npy --verify --url %s >/dev/null && %s submit "
	    "A.npy B.npy -o O2.npy --verify --no-shm --url %s >/dev/null",
	    d.dir, ctl, ctl, ctl, ctl, d.ipc, ctl, d.ipc);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(it_stat(c, "regions.created"), 1);
	assert_int_equal(it_stat(c, "regions.jobs"), 1);
	assert_int_equal(it_stat(c, "jobs.ok"), 2);
	gemmd_close(c);
	stop(&d);
}

/* regions=false: no hand-off socket, and ids are unknown. */
static void test_regions_off(void **state)
{
	const char *const extra[] = {"--set", "regions=false", NULL};
	gm_job_desc jd = {.dtype = GM_FP64, .m = 1, .n = 1, .k = 1};
	gm_region_ref ref[GM_OPND_COUNT] = {{1, 0}, {0}, {0}, {0}};
	gemmd_client *c;
	gemmd_region *r;
	it_daemon d;

	(void)state;
	start(&d, extra);
	c = open_ipc(&d);
	assert_int_equal(gemmd_region_create(c, 4096, &r), GM_ETRANSPORT);
	jd.alpha = 1;
	jd.flags = GM_JOB_REGIONS;
	assert_int_equal(raw(d.ipc, &jd, ref), GM_ENOTFOUND);
	gemmd_close(c);
	stop(&d);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_results_equal),
#if GM_TEST_CUDA
		cmocka_unit_test(test_results_equal_mapped),
#endif
		cmocka_unit_test(test_bad_refs),
		cmocka_unit_test(test_other_user),
		cmocka_unit_test(test_handoff),
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_release_in_use),
		cmocka_unit_test(test_client_dies),
		cmocka_unit_test(test_gemmctl),
		cmocka_unit_test(test_regions_off),
	};

	if (argc == 5 && strcmp(argv[1], "--child") == 0) {
		signal(SIGPIPE, SIG_IGN);
		if (strcmp(argv[2], "dies") == 0)
			return child_dies(argv[3]);
		return child_other_user(argv[3], strtoull(argv[4], NULL, 10));
	}
	if (getenv("GEMMD") == NULL) {
		fprintf(stderr, "GEMMD is not set\n");
		return 77;
	}
#if GM_TEST_CUDA
	if (gm_engine_cuda_count() == 0) {
		fprintf(stderr, "no CUDA device: skipped\n");
		return 77;
	}
#endif
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
