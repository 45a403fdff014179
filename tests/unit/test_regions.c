/*
 * test_regions.c - unit tests for the daemon's side of shared-memory
 * regions: the region table with its references and quotas' usage (gm_region),
 * and the checks a handed-over descriptor passes (gm_region_fd): a memfd
 * without F_SEAL_SHRINK, one sealed against writing, one of the wrong
 * size and a file that is no memfd are each refused with a message that
 * says what to do; the socket path is derived from the ipc:// URL; a
 * stale socket file is replaced and a live one left alone.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_config.h"
#include "gm_regions.h"
#include "gm_region_fd.h"
#include "gm_slab.h"

#define MSG_LEN 256

/* fp64 4x5x6 with C: A 192, B 240, C 160, out 160 bytes. */
static gm_job job_c(void)
{
	gm_job j = {.d = {.dtype = GM_FP64, .m = 4, .n = 5, .k = 6}};

	j.d.flags = GM_JOB_HAS_C;
	return j;
}

/* ---- the table ---- */

static void *anon(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static gm_region *retiring[8];
static int nretiring;

static void hold_retire(gm_regions *rs, gm_region *r, void *arg)
{
	retiring[nretiring++] = r;
}

static void test_table(void **state)
{
	gm_job_operands ops = {0};
	gm_stats_regions n;
	gm_regions *rs;
	gm_region *r, *r2;
	gm_region_holds *h;
	gm_job j = job_c();
	uint64_t count, bytes;

	assert_int_equal(gm_regions_create(NULL, &rs), GM_OK);
	gm_regions_set_retire(rs, hold_retire, NULL);
	assert_int_equal(gm_regions_add(rs, 1000, &j, anon(4096), 4096, &r),
			 GM_OK);
	assert_true(r->id != 0);
	/* Not findable until published (registered). */
	assert_null(gm_regions_find(rs, r->id));
	gm_regions_publish(rs, r, 0);
	assert_ptr_equal(gm_regions_find(rs, r->id), r);
	assert_int_equal(gm_regions_add(rs, 1000, &n, anon(8192), 8192, &r2),
			 GM_OK);
	assert_true(r2->id != r->id);
	gm_regions_usage(rs, 1000, &count, &bytes);
	assert_int_equal(count, 2);
	assert_int_equal(bytes, 4096 + 8192);
	gm_regions_usage(rs, 1001, &count, &bytes);
	assert_int_equal(count, 0);

	/* A job holds r: released by its owner, r stays mapped. */
	ops.ref[GM_OPND_A] = (gm_region_ref){r->id, 64};
	ops.ref[GM_OPND_OUT] = (gm_region_ref){r->id, 1024};
	h = gm_regions_holds_new(2);
	assert_int_equal(gm_regions_bind(rs, &ops, &j, h),
			 GM_PLACED(GM_OPND_A) | GM_PLACED(GM_OPND_OUT));
	assert_ptr_equal(j.a, r->base + 64);
	assert_ptr_equal(j.out, r->base + 1024);
	gm_regions_release_owner(rs, &j);
	assert_null(gm_regions_find(rs, r->id));
	assert_int_equal(nretiring, 0);
	gm_regions_counts(rs, &n);
	assert_int_equal(n.count, 2);
	assert_int_equal(n.jobs, 1);
	/* The job is back: now r retires. */
	gm_regions_holds_drop(rs, h);
	assert_int_equal(nretiring, 1);
	assert_ptr_equal(retiring[0], r);
	gm_regions_unmap(NULL, r);
	gm_regions_retired(rs, r);
	gm_regions_counts(rs, &n);
	assert_int_equal(n.count, 1);
	assert_int_equal(n.mapped_bytes, 8192);
	assert_int_equal(n.registered_bytes, 0);
	/* r2 is being registered: its owner's closing leaves it alone. */
	gm_regions_release_owner(rs, &n);
	gm_regions_counts(rs, &n);
	assert_int_equal(n.count, 1);
	gm_regions_set_retire(rs, NULL, NULL);
	gm_regions_destroy(rs); /* unmaps r2 */
}

/* Regions are named over ipc:// only, by a peer whose credentials were
 * read; then the ids are looked up. */
static void test_check_req_needs_ipc(void **state)
{
	gm_job_desc d = {.dtype = GM_FP64, .m = 1, .n = 1, .k = 1};
	gm_region_ref ref[GM_OPND_COUNT] = {{7, 0}, {0}, {0}, {0}};
	gm_hdr h = {.type = GM_MSG_GEMM, .count = 1};
	gm_peer tcp = {.kind = GM_URL_TCP}, anon = {.kind = GM_URL_IPC},
		ipc = {.kind = GM_URL_IPC, .has_cred = 1, .uid = 1000};
	gm_batch b = {.priority = 1};
	uint8_t head[16 + 48], desc[64];
	char msg[MSG_LEN] = "";
	gm_regions *rs;
	uint32_t nrefs;

	d.alpha = 1;
	d.flags = GM_JOB_REGIONS;
	assert_int_equal(gm_regions_create(NULL, &rs), GM_OK);
	gm_proto_put_batch(head, &b);
	gm_proto_put_job_refs(head + 16, &d, ref);
	gm_proto_put_refs(desc, ref);
	assert_int_equal(gm_regions_check_req(rs, &tcp, &h, head, desc, &nrefs,
					      msg, sizeof(msg)),
			 GM_EACCES);
	assert_string_equal(msg,
			    "job 0: A: regions can be named over ipc:// only");
	assert_int_equal(gm_regions_check_req(rs, &anon, &h, head, desc, &nrefs,
					      msg, sizeof(msg)),
			 GM_EACCES);
	assert_int_equal(gm_regions_check_req(rs, &ipc, &h, head, desc, &nrefs,
					      msg, sizeof(msg)),
			 GM_ENOTFOUND);
	/* Without regions there is nothing to check. */
	d.flags = 0;
	gm_proto_put_job(head + 16, &d);
	assert_int_equal(gm_regions_check_req(rs, &tcp, &h, head, NULL, &nrefs,
					      msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(nrefs, 0);
	gm_regions_destroy(rs);
}

/* ---- descriptors ---- */

static int memfd(uint64_t size, int seals)
{
	int fd = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	if (seals != 0)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

static void test_fd_checks(void **state)
{
	char msg[MSG_LEN], path[] = "/tmp/gemmd-test-regions.XXXXXX";
	int fd;

	fd = memfd(65536, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	assert_int_equal(gm_region_fd_check(fd, 65536, msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(gm_region_fd_check(fd, 4096, msg, sizeof(msg)),
			 GM_EINVAL);
	assert_string_equal(msg,
			    "memfd holds 65536 bytes, the record says 4096");
	close(fd);

	/* Unsealed: it could shrink under a DMA later. */
	fd = memfd(65536, 0);
	assert_int_equal(gm_region_fd_check(fd, 65536, msg, sizeof(msg)),
			 GM_EINVAL);
	assert_string_equal(msg, "memfd is not sealed against shrinking: add "
				 "F_SEAL_SHRINK with fcntl(F_ADD_SEALS)");
	/* ... and sealing it afterwards makes the shrink impossible. */
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	assert_int_equal(gm_region_fd_check(fd, 65536, msg, sizeof(msg)),
			 GM_OK);
	assert_int_not_equal(ftruncate(fd, 4096), 0);
	close(fd);

	fd = memfd(4096, F_SEAL_SHRINK | F_SEAL_WRITE);
	assert_int_equal(gm_region_fd_check(fd, 4096, msg, sizeof(msg)),
			 GM_EINVAL);
	assert_non_null(strstr(msg, "sealed against writing"));
	close(fd);

	/* A memfd made without MFD_ALLOW_SEALING cannot be sealed. */
	fd = memfd_create("test", MFD_CLOEXEC);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(gm_region_fd_check(fd, 4096, msg, sizeof(msg)),
			 GM_EINVAL);
	assert_string_equal(msg, "memfd is not sealed against shrinking: add "
				 "F_SEAL_SHRINK with fcntl(F_ADD_SEALS)");
	close(fd);

	/* An ordinary file has no seals at all. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(gm_region_fd_check(fd, 4096, msg, sizeof(msg)),
			 GM_EINVAL);
	close(fd);
}

static void test_fd_map(void **state)
{
	char msg[MSG_LEN];
	void *p;
	int fd = memfd(8192, F_SEAL_SHRINK), ro;
	char proc[64];

	assert_int_equal(gm_region_fd_map(fd, 8192, &p, msg, sizeof(msg)),
			 GM_OK);
	memset(p, 1, 8192);
	munmap(p, 8192);
	/* A read-only descriptor cannot be mapped for results. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ro = open(proc, O_RDONLY);
	assert_true(ro >= 0);
	assert_int_equal(gm_region_fd_map(ro, 8192, &p, msg, sizeof(msg)),
			 GM_EACCES);
	close(ro);
	close(fd);
}

static void test_fd_path(void **state)
{
	char *urls[] = {"tcp://127.0.0.1:5555", "ipc:///run/gemmd/gemmd.sock"};
	char path[GM_REGION_PATH_MAX], msg[MSG_LEN];
	gm_config c;

	gm_config_defaults(&c);
	c.listen = urls;
	c.nlisten = 2;
	assert_int_equal(gm_region_fd_path(&c, path, msg, sizeof(msg)), 1);
	assert_string_equal(path, "/run/gemmd/gemmd-regions.sock");
	urls[1] = "ipc:///run/gemmd/b.sock"; /* named after its socket */
	assert_int_equal(gm_region_fd_path(&c, path, msg, sizeof(msg)), 1);
	assert_string_equal(path, "/run/gemmd/b-regions.sock");
	c.nlisten = 1; /* tcp:// only: none */
	assert_int_equal(gm_region_fd_path(&c, path, msg, sizeof(msg)), 0);
	c.region_socket = "/tmp/r.sock";
	assert_int_equal(gm_region_fd_path(&c, path, msg, sizeof(msg)), 1);
	assert_string_equal(path, "/tmp/r.sock");
	c.regions = 0;
	assert_int_equal(gm_region_fd_path(&c, path, msg, sizeof(msg)), 0);
	c.regions = 1;
	c.region_socket =
	    "/tmp/"
	    "0123456789012345678901234567890123456789012345678901"
	    "23456789012345678901234567890123456789012345678.sock";
	assert_int_equal(gm_region_fd_path(&c, path, msg, sizeof(msg)),
			 -GM_ECONFIG);
}

static void test_fd_listen(void **state)
{
	char dir[] = "/tmp/gemmd-test-listen.XXXXXX", path[128], msg[MSG_LEN];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, fd2, stale;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.sock", dir);
	/* A socket file nobody serves on is replaced. */
	stale = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	memcpy(sa.sun_path, path, strlen(path));
	assert_int_equal(bind(stale, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(stale);
	fd = gm_region_fd_listen(path, msg, sizeof(msg));
	assert_true(fd >= 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0660);
	/* One that is served on is not. */
	fd2 = gm_region_fd_listen(path, msg, sizeof(msg));
	assert_int_equal(fd2, -1);
	assert_non_null(strstr(msg, "another process serves on it; set "
				    "region_socket"));
	close(fd);
	unlink(path);
	/* Nor one where a stream socket is served (another daemon's ipc://
	 * socket): the rename would take it from its owner. */
	stale = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(stale, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(stale, 1), 0);
	assert_int_equal(gm_region_fd_listen(path, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "region_socket"));
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	close(stale);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_check_req_needs_ipc),
	    cmocka_unit_test(test_fd_checks),
	    cmocka_unit_test(test_fd_map),
	    cmocka_unit_test(test_fd_path),
	    cmocka_unit_test(test_fd_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
