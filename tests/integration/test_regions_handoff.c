/*
 * test_regions_handoff.c - shared-memory regions against a real gemmd
 * (regions_fx.h): the hand-off socket refusing an unsealed memfd (a
 * sealed one can never shrink), a short or foreign record, a release on
 * the wrong connection; quotas; a region released while a job uses it; a
 * client that dies holding regions; gemmctl using a region by itself
 * over ipc://; regions turned off. Every test ends with the daemon's
 * mapped and registered bytes back at zero. Built twice, as
 * test_regions.c is.
 */
#include "regions_fx.h"

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

/* A region released while a job still uses it stays mapped until the
 * job is back, and the job succeeds. It is released once gemmd holds
 * the request (requests.total), which found the region then: released
 * before, the job would rightly fail ENOTFOUND. */
static void test_release_in_use(void **state)
{
	it_waiter dn = {0};
	gemmd_client *c;
	gemmd_region *r;
	it_daemon d;
	placed p;
	tjob t;
	gemmd_job j;
	double before;

	start(&d, NULL);
	c = open_ipc(&d);
	make(&t, GEMMD_FP64, 0, 0, 0, 512, 512, 512, 1);
	assert_int_equal(gemmd_region_create(c, 8 << 20, &r), GM_OK);
	j = in_region(&t, r, 15, 0, &p);
	before = it_rstat(&d, "requests.total");
	assert_int_equal(
	    gemmd_submit_async(c, &j, 1, NULL, TIMEOUT_MS, it_done, &dn),
	    GM_OK);
	assert_int_equal(
	    it_wait_stat(&d, "requests.total", before + 1, TIMEOUT_MS),
	    before + 1);
	assert_int_equal(gemmd_region_release(r), GM_OK);
	it_wait_done(&dn, -1);
	assert_int_equal(dn.rv, GM_OK);
	assert_int_equal(j.status, GM_OK);
	drop(&t);
	assert_regions_gone(c);
	gemmd_close(c);
	stop(&d);
}

/* A client that dies holding regions, one with a job in flight: gemmd
 * unmaps and unregisters them all and keeps serving. */
static void test_client_dies(void **state)
{
	gemmd_client *c;
	it_daemon d;

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
	    cmocka_unit_test(test_handoff),
	    cmocka_unit_test(test_quota),
	    cmocka_unit_test(test_release_in_use),
	    cmocka_unit_test(test_client_dies),
	    cmocka_unit_test(test_gemmctl),
	    cmocka_unit_test(test_regions_off),
	};

	return REGIONS_MAIN(argc, argv, tests);
}
