/*
 * detach_fx.c - what the tests in test_detach.c, test_detach_room.c share; see
 * detach_fx.h.
 */
#include "detach_fx.h"

struct answer ans;
gm_sched_request *reqs[MAXREQ];
int nreqs;

gm_principal *me, *other, *anon;

gm_principal *principal(int kind, uint64_t uid)
{
	gm_peer p = {.kind = kind, .has_cred = 1, .uid = uid};
	gm_principal *pr = gm_principal_new(&p);

	assert_non_null(pr);
	return pr;
}

void on_answer(void *w, uint64_t id, uint8_t *result, uint64_t len, int code,
	       const char *text, void *arg)
{
	free(ans.result);
	ans.n++;
	ans.w = w;
	ans.id = id;
	ans.result = result;
	ans.len = len;
	ans.code = code;
	snprintf(ans.text, sizeof(ans.text), "%s", text ? text : "");
}

gm_detach *open_t(unsigned keep_s, uint64_t max_bytes)
{
	gm_detach *t;

	memset(&ans, 0, sizeof(ans));
	me = principal(GM_URL_IPC, 1000);
	other = principal(GM_URL_IPC, 1001);
	anon = principal(GM_URL_TCP, 1000);
	assert_int_equal(
	    gm_detach_create(NULL, keep_s, max_bytes, on_answer, NULL, &t),
	    GM_OK);
	return t;
}

void close_t(gm_detach *t)
{
	gm_detach_destroy(t);
	free(ans.result);
	ans.result = NULL;
	for (int i = 0; i < nreqs; i++)
		gm_sched_free_request(reqs[i]);
	nreqs = 0;
	gm_principal_release(me);
	gm_principal_release(other);
	gm_principal_release(anon);
}

gm_sched_request *req(uint32_t m)
{
	gm_sched_request *r = gm_sched_alloc_request(1);

	assert_non_null(r);
	assert_true(nreqs < MAXREQ);
	reqs[nreqs++] = r;
	r->batch.priority = 2;
	r->jobs[0].req = r;
	r->jobs[0].state = GM_SCHED_JOB_QUEUED;
	r->jobs[0].job.d = (gm_job_desc){
	    .dtype = GM_FP64, .m = m, .n = m, .k = m, .alpha = 1.0};
	return r;
}

uint64_t reply_bytes(uint32_t m)
{
	return GM_HDR_SIZE + GM_REPLY_JOB_SIZE + (uint64_t)m * m * 8;
}

uint64_t add(gm_detach *t, gm_sched_request *r)
{
	uint32_t m = r->jobs[0].job.d.m;

	assert_int_equal(gm_detach_room(t, 1, gm_detach_cost(reply_bytes(m))),
			 GM_OK);
	return gm_detach_add(t, r, reply_bytes(m), me);
}

uint8_t *reply(const gm_sched_request *r, int status, uint64_t *len)
{
	const gm_job_desc *d = &r->jobs[0].job.d;
	uint64_t out = status == 0 ? (uint64_t)d->m * d->n * 8 : 0;
	gm_reply_job rj = {.status = (uint32_t)status,
			   .dtype = d->dtype,
			   .m = d->m,
			   .n = d->n,
			   .t = {1.5, 0, 2.5, 0, 4.0},
			   .result_bytes = out};
	uint8_t *m;

	*len = GM_HDR_SIZE + GM_REPLY_JOB_SIZE + out;
	assert_non_null(m = malloc(*len));
	if (status != 0)
		snprintf(rj.message, sizeof(rj.message), "it failed");
	gm_proto_put_hdr(m, GM_MSG_GEMM_REPLY, 77, 3, GM_REPLY_JOB_SIZE + out);
	gm_proto_put_reply_job(m + GM_HDR_SIZE, &rj);
	memset(m + GM_HDR_SIZE + GM_REPLY_JOB_SIZE, 0x5a, (size_t)out);
	return m;
}

void finish(gm_detach *t, gm_sched_request *r, uint64_t id, int status)
{
	uint64_t len;
	uint8_t *m = reply(r, status, &len);

	r->jobs[0].state = GM_SCHED_JOB_DONE;
	gm_detach_done(t, id, m, len);
}

char said[128];

int wait_job(gm_detach *t, const gm_principal *who, uint64_t id, int64_t ms,
	     void *w, uint64_t req_id)
{
	return gm_detach_wait(t, who, id, ms, w, req_id, said, sizeof(said));
}

cJSON *status_doc(gm_detach *t, uint64_t id)
{
	char *json = NULL;
	cJSON *doc;

	assert_int_equal(gm_detach_status(t, me, id, &json), GM_OK);
	assert_non_null(json);
	doc = cJSON_Parse(json);
	free(json);
	assert_non_null(doc);
	return doc;
}

const char *state_of(gm_detach *t, uint64_t id)
{
	static char state[16];
	cJSON *doc = status_doc(t, id);

	snprintf(state, sizeof(state), "%s",
		 cJSON_GetStringValue(
		     cJSON_GetObjectItemCaseSensitive(doc, "state")));
	cJSON_Delete(doc);
	return state;
}

gm_stats_detach counts(gm_detach *t)
{
	gm_stats_detach c;

	gm_detach_counts(t, &c);
	return c;
}

void check_result(uint64_t req_id, int status)
{
	gm_hdr h;
	char msg[128];
	gm_reply_job r;

	assert_non_null(ans.result);
	assert_int_equal(ans.id, req_id);
	assert_int_equal(
	    gm_proto_get_hdr(ans.result, ans.len, &h, msg, sizeof(msg)), GM_OK);
	assert_int_equal(h.type, GM_MSG_GEMM_REPLY);
	assert_int_equal(h.id, req_id);
	assert_int_equal(h.count, 0);
	assert_int_equal(h.length + GM_HDR_SIZE, ans.len);
	assert_int_equal(gm_proto_get_reply_job(&h, ans.result + GM_HDR_SIZE,
						&r, msg, sizeof(msg)),
			 GM_OK);
	assert_int_equal(r.status, status);
}

void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

double status_num(gm_detach *t, uint64_t id, const char *key)
{
	cJSON *doc = status_doc(t, id);
	double v = cJSON_GetObjectItemCaseSensitive(doc, key)->valuedouble;

	cJSON_Delete(doc);
	return v;
}
