/*
 * client_fx.c - the client tests' fixture, jobs and calls; see
 * client_fx.h.
 */
#include "client_fx.h"

#include <math.h>
#include <time.h>

static uint64_t seed;

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int fx_setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	if (seed == 0)
		seed = gm_testref_seed();
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/gemmd-test-client.XXXXXX");
	if (mkdtemp(fx->dir) == NULL) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

int fx_teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	if (fx->call.running)
		async_wait(fx);
	gemmd_close(fx->cl);
	gm_testpeer_free(fx->peer);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fx->dir);
	free(fx);
	return 0;
}

void fx_url(struct fixture *fx)
{
	if (fx->url[0] == '\0')
		snprintf(fx->url, sizeof(fx->url), "ipc://%s/gemmd.sock",
			 fx->dir);
}

void fx_peer(struct fixture *fx)
{
	fx_url(fx);
	assert_int_equal(gm_testpeer_open(fx->url, NULL, &fx->peer), GM_OK);
}

void fx_client_opts(struct fixture *fx, const gemmd_open_opts *opts)
{
	if (fx->peer == NULL)
		fx_peer(fx);
	assert_int_equal(gemmd_open(fx->url, opts, &fx->cl), GM_OK);
}

void fx_client(struct fixture *fx, unsigned flags)
{
	gemmd_open_opts o = {.flags = flags};

	fx_client_opts(fx, &o);
}

void fx_accept(struct fixture *fx)
{
	fx->conn = gm_testpeer_accept(fx->peer, 5000);
	assert_non_null(fx->conn);
}

void fx_free_peer(struct fixture *fx)
{
	gemmd_close(fx->cl);
	fx->cl = NULL;
	gm_testpeer_free(fx->peer);
	fx->peer = NULL;
	fx->conn = NULL;
}

bool fx_pki(struct fixture *fx, gm_tls_ctx **sctx)
{
	gm_tls_files f;
	char msg[256];

	if (gm_testpki_make(&fx->pki, fx->dir) != 0)
		return false;
	f = (gm_tls_files){
	    .cert = fx->pki.cert, .key = fx->pki.key, .ca = fx->pki.ca};
	assert_int_equal(gm_tls_server_ctx(&f, sctx, msg, sizeof(msg)), GM_OK);
	return true;
}

/* ---- jobs ---- */

static void *operand(int dtype, size_t n, double *ref)
{
	void *p = malloc(n * gm_testref_esize(dtype));

	assert_non_null(p);
	gm_testref_fill(dtype, p, n, &seed, ref);
	return p;
}

void tjob_make(tjob *j, int dtype, int layout, uint32_t m, uint32_t n,
	       uint32_t k, int trans_a, int trans_b, int has_c)
{
	size_t es = gm_testref_esize(dtype);

	memset(j, 0, sizeof(*j));
	j->a = operand(dtype, (size_t)m * k, NULL);
	j->b = operand(dtype, (size_t)k * n, NULL);
	j->c = has_c ? operand(dtype, (size_t)m * n, NULL) : NULL;
	j->out_bytes = (size_t)m * n * es;
	j->out = malloc(j->out_bytes);
	assert_non_null(j->out);
	for (size_t i = 0; i < (size_t)m * n; i++)
		gm_testref_put(dtype, j->out, i, NAN);
	j->job = (gemmd_job){.dtype = dtype,
			     .layout = layout,
			     .trans_a = trans_a,
			     .trans_b = trans_b,
			     .m = m,
			     .n = n,
			     .k = k,
			     .alpha = 1.5,
			     .beta = has_c ? -0.5 : 0,
			     .a = j->a,
			     .b = j->b,
			     .c = j->c,
			     .out = j->out};
}

void tjobs_make(tjob *j, gemmd_job *jobs, int n, int dtype, uint32_t m,
		uint32_t nn, uint32_t k)
{
	for (int i = 0; i < n; i++) {
		tjob_make(&j[i], dtype, GEMMD_ROW_MAJOR, m, nn, k, 0, 0, i % 2);
		jobs[i] = j[i].job;
	}
}

void tjobs_check(tjob *j, const gemmd_job *jobs, int n)
{
	for (int i = 0; i < n; i++) {
		j[i].job = jobs[i];
		tjob_check(&j[i]);
		tjob_free(&j[i]);
	}
}

void tjob_check(const tjob *j)
{
	const gemmd_job *g = &j->job;
	gm_testref_gemm r = {g->dtype, g->layout, g->trans_a, g->trans_b, g->m,
			     g->n,     g->k,	  g->alpha,   g->beta,	  j->a,
			     j->b,     j->c,	  j->out};

	if (g->status != GM_OK)
		fprintf(stderr, "job: %s: %s\n", gemmd_errname(g->status),
			g->message);
	assert_int_equal(g->status, GM_OK);
	assert_true(gm_testref_check(&r));
}

void tjob_untouched(const tjob *j)
{
	for (size_t i = 0; i < (size_t)j->job.m * j->job.n; i++)
		assert_true(isnan(gm_testref_get(j->job.dtype, j->out, i)));
}

void tjob_free(tjob *j)
{
	free(j->a);
	free(j->b);
	free(j->c);
	free(j->out);
}

/* ---- calls on their own thread ---- */

static void *bg_main(void *arg)
{
	struct bg *b = arg;

	b->rv = b->fn(b);
	snprintf(b->msg, sizeof(b->msg), "%s", gemmd_last_error());
	return NULL;
}

static void bg_start(struct bg *b, int (*fn)(struct bg *b))
{
	b->fn = fn;
	b->running = true;
	assert_int_equal(pthread_create(&b->thread, NULL, bg_main, b), 0);
}

int bg_end(struct bg *b)
{
	pthread_join(b->thread, NULL);
	b->running = false;
	return b->rv;
}

static int do_submit(struct bg *b)
{
	return gemmd_submit(b->cl, b->jobs, b->n, NULL, b->timeout_ms);
}

void async_submit(struct fixture *fx, gemmd_job *jobs, uint32_t n,
		  int timeout_ms)
{
	fx->call = (struct bg){
	    .cl = fx->cl, .jobs = jobs, .n = n, .timeout_ms = timeout_ms};
	bg_start(&fx->call, do_submit);
}

int async_wait(struct fixture *fx)
{
	int rv = bg_end(&fx->call);

	memcpy(fx->last_error, fx->call.msg, sizeof(fx->last_error));
	return rv;
}

static void on_done(void *arg, int rv)
{
	struct async *a = arg;

	a->rv = rv;
	sem_post(&a->sem);
}

void async_start(gemmd_client *cl, gemmd_job *jobs, uint32_t n, int timeout_ms,
		 struct async *a)
{
	sem_init(&a->sem, 0, 0);
	assert_int_equal(
	    gemmd_submit_async(cl, jobs, n, NULL, timeout_ms, on_done, a),
	    GM_OK);
}

int async_end(struct async *a)
{
	sem_wait(&a->sem);
	sem_destroy(&a->sem);
	return a->rv;
}

static int do_ctrl(struct bg *b)
{
	return gemmd_ctrl(b->cl, b->json, &b->reply, 2000);
}

void ctrl_start(struct fixture *fx, struct bg *b, const char *json)
{
	*b = (struct bg){.cl = fx->cl, .json = json};
	bg_start(b, do_ctrl);
}

static int do_wait(struct bg *b)
{
	return gemmd_wait(b->cl, b->id, b->jobs, 1000);
}

void wait_start(struct fixture *fx, struct bg *b, uint64_t id, gemmd_job *job)
{
	*b = (struct bg){.cl = fx->cl, .id = id, .jobs = job};
	bg_start(b, do_wait);
}

static int do_detach(struct bg *b)
{
	return gemmd_submit_detached(b->cl, b->jobs, b->n, NULL, b->ids, 5000);
}

void detach_start(struct fixture *fx, struct bg *b, gemmd_job *jobs, uint32_t n,
		  uint64_t *ids)
{
	*b = (struct bg){.cl = fx->cl, .jobs = jobs, .n = n, .ids = ids};
	bg_start(b, do_detach);
}

void fx_submit_read(struct fixture *fx, gemmd_job *jobs, uint32_t n,
		    int timeout_ms, gm_testframe *f)
{
	fx_client(fx, 0);
	async_submit(fx, jobs, n, timeout_ms);
	fx_accept(fx);
	assert_int_equal(gm_testconn_read(fx->conn, f, 5000), GM_OK);
}

void serve_pending(struct fixture *fx)
{
	gm_testframe f;

	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(gm_testconn_reply_all(fx->conn, &f), GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(async_wait(fx), GM_OK);
}

void serve_one(struct fixture *fx, gemmd_job *jobs, uint32_t n)
{
	async_submit(fx, jobs, n, 5000);
	serve_pending(fx);
}

void serve_ping(struct fixture *fx)
{
	struct bg b;
	gm_testframe f;

	ctrl_start(fx, &b, "{\"op\":\"ping\"}");
	assert_int_equal(gm_testconn_read(fx->conn, &f, 5000), GM_OK);
	assert_int_equal(f.h.type, GM_MSG_CTRL);
	assert_int_equal(
	    gm_testconn_ctrl_reply(fx->conn, f.h.id, "{\"ok\":true}"), GM_OK);
	gm_testframe_free(&f);
	assert_int_equal(bg_end(&b), GM_OK);
	free(b.reply);
}

void write_cut_reply(gm_testconn *c, uint64_t id, uint32_t index,
		     const gm_reply_job *r, const void *result, size_t cut)
{
	uint8_t head[GM_HDR_SIZE + GM_REPLY_JOB_SIZE];

	gm_proto_put_hdr(head, GM_MSG_GEMM_REPLY, id, index,
			 GM_REPLY_JOB_SIZE + r->result_bytes);
	gm_proto_put_reply_job(head + GM_HDR_SIZE, r);
	assert_int_equal(gm_testconn_write(c, head, sizeof(head)), GM_OK);
	assert_int_equal(gm_testconn_write(c, result, cut), GM_OK);
}
