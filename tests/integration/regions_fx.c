/*
 * regions_fx.c - what the tests in test_regions.c, test_regions_handoff.c
 * share; see regions_fx.h.
 */
#include "regions_fx.h"

uint64_t seed = 1; /* operands: the same every run */

void start(it_daemon *d, const char *const *extra)
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

gemmd_client *open_ipc(const it_daemon *d)
{
	gemmd_client *c;

	assert_int_equal(gemmd_open(d->ipc, NULL, &c), GM_OK);
	return c;
}

void assert_regions_gone(gemmd_client *c)
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

void stop(it_daemon *d)
{
	gemmd_client *c = open_ipc(d);

	assert_regions_gone(c);
	gemmd_close(c);
	assert_int_equal(it_finish(d), 0);
}

void make(tjob *t, int dtype, int layout, int ta, int tb, uint32_t m,
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

void drop(tjob *t)
{
	free(t->a);
	free(t->b);
	free(t->c);
	free(t->out);
}

int close_enough(int dtype, const void *x, const void *y, size_t bytes)
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

gemmd_job in_region(const tjob *t, gemmd_region *r, unsigned mask, int in_place,
		    placed *p)
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

int raw(const char *url, const gm_job_desc *d, const gm_region_ref *ref)
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

pid_t spawn_self(const char *role, const char *url, uint64_t id, int drop)
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

int wait_child(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st))
		fail_msg("child killed by signal %d", WTERMSIG(st));
	return WEXITSTATUS(st);
}

int child_other_user(const char *url, uint64_t id)
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

int child_dies(const char *url)
{
	static it_waiter dn;
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
	if (gemmd_submit_async(k, &j, 1, NULL, TIMEOUT_MS, it_done, &dn) !=
	    GM_OK)
		return 2;
	usleep(2000);
	_exit(0); /* no release, no close */
}

int regions_main(int argc, char **argv, const struct CMUnitTest *tests,
		 size_t n)
{
	if (argc == 5 && strcmp(argv[1], "--child") == 0) {
		signal(SIGPIPE, SIG_IGN);
		if (strcmp(argv[2], "dies") == 0)
			return child_dies(argv[3]);
		return child_other_user(argv[3], strtoull(argv[4], NULL, 10));
	}
#if GM_TEST_CUDA
	if (getenv("GEMMD") != NULL && gm_engine_cuda_count() == 0) {
		fprintf(stderr, "no CUDA device: skipped\n");
		return 77;
	}
#endif
	return it_run(tests, n);
}
