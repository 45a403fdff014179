/*
 * test_poller.c - unit tests for net/gm_poller: a receive begun while
 * the poller is started parks and a poll ends it on the polling thread,
 * unless it is for more than a poll takes;
 * stopping hands it to nng; a poller that takes back parks a receive
 * already in nng's hands; closing or a peer gone ends a parked receive
 * once; the cap on parked receives; and every byte of a long stream in
 * order while two threads poll and a third starts and stops the poller.
 */
#include "gm_poller.h"
#include "net_fx.h"

static int use_tcp; /* else ipc:// */

/* ---- helpers ---- */

/* A connected pair (net_fx.h), on a listener of its own (index i). */
static void pair_open_at(struct pair *p, int i)
{
	char url[128];

	if (use_tcp)
		snprintf(url, sizeof(url), "tcp://127.0.0.1:0");
	else
		snprintf(url, sizeof(url),
			 "ipc:///tmp/gemmd-test-poller-%d-%d.sock",
			 (int)getpid(), i);
	pair_open(p, url, NULL, NULL);
}

/* Writes all of buf to s. */
static void send_all(gm_stream *s, const uint8_t *buf, size_t len)
{
	assert_int_equal(gm_teststream_move_all(s, 1, (uint8_t *)buf, len),
			 GM_OK);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Polls p until w's callback ran (10 s at most). */
static void poll_until_called(gm_poller *p, gm_teststream_wait *w)
{
	double until = now_s() + 10;

	while (__atomic_load_n(&w->calls, __ATOMIC_ACQUIRE) == 0 &&
	       now_s() < until)
		gm_poller_poll(p);
	assert_int_equal(w->calls, 1);
}

static void wait_parked(gm_poller *p, unsigned n)
{
	double until = now_s() + 10;

	while (gm_poller_parked(p) != n && now_s() < until)
		usleep(100);
	assert_int_equal(gm_poller_parked(p), n);
}

/* One pair whose client end is in a poller, with a receive ready. */
struct rig {
	struct pair pr;
	gm_teststream_wait w;
	gm_io io;
	gm_poller *p;
	uint8_t in[100];
};

static void rig_open(struct rig *r, unsigned flags)
{
	memset(r, 0, sizeof(*r));
	sem_init(&r->w.sem, 0, 0);
	pair_open_at(&r->pr, 0);
	assert_int_equal(gm_poller_new(flags, &r->p), GM_OK);
	gm_stream_set_poller(r->pr.cli, r->p);
	r->io = (gm_io){.niov = 1, .done = gm_teststream_on_io, .arg = &r->w};
	r->io.iov[0] = (nng_iov){r->in, sizeof(r->in)};
}

static void rig_close(struct rig *r)
{
	pair_close(&r->pr);
	gm_poller_free(r->p);
	sem_destroy(&r->w.sem);
}

/* ---- cases ---- */

static void test_poll_ends_on_this_thread(void **state)
{
	struct rig r;
	uint8_t out[100], *big;

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 3);
	rig_open(&r, 0);
	gm_poller_start(r.p);
	gm_stream_recv(r.pr.cli, &r.io);
	assert_int_equal(gm_poller_parked(r.p), 1);
	assert_int_equal(gm_poller_poll(r.p), 0); /* nothing came */
	assert_int_equal(r.w.calls, 0);
	send_all(r.pr.srv, out, sizeof(out));
	poll_until_called(r.p, &r.w);
	assert_true(pthread_equal(r.w.on, pthread_self()));
	assert_int_equal(r.w.rv, GM_OK);
	assert_true(r.w.n >= 1 && r.w.n <= sizeof(r.in));
	assert_memory_equal(r.in, out, r.w.n);
	assert_int_equal(gm_poller_parked(r.p), 0);
	/* A receive for more than a poll takes is nng's, even started. */
	big = malloc(GM_POLLER_MAX_BYTES + 1);
	assert_non_null(big);
	r.io.iov[0] = (nng_iov){big, GM_POLLER_MAX_BYTES + 1};
	gm_stream_recv(r.pr.cli, &r.io);
	assert_int_equal(gm_poller_parked(r.p), 0);
	send_all(r.pr.srv, out, sizeof(out));
	sem_wait(&r.w.sem); /* the poll's */
	sem_wait(&r.w.sem);
	assert_int_equal(r.w.calls, 2);
	assert_int_equal(r.w.rv, GM_OK);
	assert_memory_equal(big, out, r.w.n);
	gm_poller_stop(r.p);
	rig_close(&r);
	free(big);
}

static void test_stop_hands_to_nng(void **state)
{
	struct rig r;
	uint8_t out[16] = "sixteen bytes..";

	rig_open(&r, 0);
	gm_poller_start(r.p);
	gm_poller_start(r.p); /* counted */
	gm_stream_recv(r.pr.cli, &r.io);
	gm_poller_stop(r.p);
	assert_int_equal(gm_poller_parked(r.p), 1);
	gm_poller_stop(r.p);
	assert_int_equal(gm_poller_parked(r.p), 0);
	send_all(r.pr.srv, out, sizeof(out));
	sem_wait(&r.w.sem); /* nng's thread ends it */
	assert_int_equal(r.w.rv, GM_OK);
	assert_memory_equal(r.in, out, r.w.n);
	assert_false(pthread_equal(r.w.on, pthread_self()));
	/* Stopped, a receive goes to nng at once. */
	gm_stream_recv(r.pr.cli, &r.io);
	assert_int_equal(gm_poller_parked(r.p), 0);
	send_all(r.pr.srv, out, sizeof(out));
	sem_wait(&r.w.sem);
	assert_int_equal(r.w.rv, GM_OK);
	assert_int_equal(r.w.calls, 2);
	rig_close(&r);
}

static void test_take_back(void **state)
{
	struct rig r;
	uint8_t out[8] = "taken..";

	rig_open(&r, GM_POLLER_TAKE_BACK);
	gm_stream_recv(r.pr.cli, &r.io); /* in nng's hands */
	gm_poller_start(r.p);
	wait_parked(r.p, 1); /* its cancellation came back */
	assert_int_equal(r.w.calls, 0);
	send_all(r.pr.srv, out, sizeof(out));
	poll_until_called(r.p, &r.w);
	assert_true(pthread_equal(r.w.on, pthread_self()));
	assert_int_equal(r.w.rv, GM_OK);
	assert_memory_equal(r.in, out, r.w.n);
	gm_poller_stop(r.p);
	rig_close(&r);
}

static void test_close_ends_parked_once(void **state)
{
	struct rig r;

	rig_open(&r, 0);
	gm_poller_start(r.p);
	gm_stream_recv(r.pr.cli, &r.io);
	gm_stream_close(r.pr.cli);
	assert_int_equal(gm_poller_parked(r.p), 0);
	sem_wait(&r.w.sem);
	assert_int_not_equal(r.w.rv, GM_OK);
	/* Closed, it never parks again: a receive ends with the close. */
	gm_stream_recv(r.pr.cli, &r.io);
	assert_int_equal(gm_poller_parked(r.p), 0);
	sem_wait(&r.w.sem);
	assert_int_not_equal(r.w.rv, GM_OK);
	assert_int_equal(gm_poller_poll(r.p), 0);
	gm_poller_stop(r.p);
	pair_close(&r.pr);
	r.pr = (struct pair){0};
	assert_int_equal(r.w.calls, 2);
	rig_close(&r);
}

static void test_peer_gone(void **state)
{
	struct rig r;

	rig_open(&r, 0);
	gm_poller_start(r.p);
	gm_stream_recv(r.pr.cli, &r.io);
	gm_stream_free(r.pr.srv);
	r.pr.srv = NULL;
	poll_until_called(r.p, &r.w);
	assert_int_equal(r.w.rv, GM_ETRANSPORT);
	assert_string_not_equal(gm_stream_error(r.pr.cli), "");
	gm_poller_stop(r.p);
	rig_close(&r);
}

static void test_cap(void **state)
{
	enum { N = GM_POLLER_MAX_PARKED + 1 };
	struct pair pr[N];
	gm_teststream_wait w[N];
	gm_io io[N];
	uint8_t in[N][4], out[4] = "cap";
	gm_poller *p;

	assert_int_equal(gm_poller_new(0, &p), GM_OK);
	gm_poller_start(p);
	for (int i = 0; i < N; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		sem_init(&w[i].sem, 0, 0);
		io[i] = (gm_io){
		    .niov = 1, .done = gm_teststream_on_io, .arg = &w[i]};
		io[i].iov[0] = (nng_iov){in[i], sizeof(in[i])};
		pair_open_at(&pr[i], i);
		gm_stream_set_poller(pr[i].cli, p);
		gm_stream_recv(pr[i].cli, &io[i]);
	}
	assert_int_equal(gm_poller_parked(p), GM_POLLER_MAX_PARKED);
	/* The last, past the cap, is nng's: it ends with no poll. */
	send_all(pr[N - 1].srv, out, sizeof(out));
	sem_wait(&w[N - 1].sem);
	assert_int_equal(w[N - 1].rv, GM_OK);
	for (int i = 0; i < N - 1; i++)
		send_all(pr[i].srv, out, sizeof(out));
	for (int i = 0; i < N - 1; i++) {
		poll_until_called(p, &w[i]);
		assert_int_equal(w[i].rv, GM_OK);
	}
	gm_poller_stop(p);
	for (int i = 0; i < N; i++) {
		pair_close(&pr[i]);
		sem_destroy(&w[i].sem);
	}
	gm_poller_free(p);
}

/* ---- every byte in order, while the poller starts and stops ---- */

#define STREAM_BYTES (8u << 20)

struct reader {
	gm_io io;
	gm_stream *s;
	uint8_t buf[3000];
	uint64_t got;
	uint32_t bad; /* bytes not as sent */
	int rv;
	sem_t end;
	gm_poller *p;
	int stop;	 /* atomic */
	unsigned polled; /* receives ended by a poll */
};

static uint8_t byte_at(uint64_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13);
}

static void reader_done(gm_io *io, int rv, size_t n)
{
	struct reader *r = io->arg;

	if (rv != 0) {
		r->rv = rv;
		sem_post(&r->end);
		return;
	}
	for (size_t i = 0; i < n; i++)
		r->bad += r->buf[i] != byte_at(r->got + i);
	r->got += n;
	if (r->got == STREAM_BYTES) {
		sem_post(&r->end);
		return;
	}
	/* Odd sizes: the frames fall anywhere in the reads. */
	io->iov[0] = (nng_iov){r->buf, 1 + (r->got * 31) % sizeof(r->buf)};
	gm_stream_recv(r->s, io);
}

static void *poll_thread(void *arg)
{
	struct reader *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED))
		__atomic_add_fetch(&r->polled, (unsigned)gm_poller_poll(r->p),
				   __ATOMIC_RELAXED);
	return NULL;
}

static void *toggle_thread(void *arg)
{
	struct reader *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		gm_poller_start(r->p);
		usleep(200);
		gm_poller_stop(r->p);
		usleep(50);
	}
	return NULL;
}

static void *write_thread(void *arg)
{
	gm_stream *s = arg;
	uint8_t *buf = malloc(STREAM_BYTES);
	size_t off = 0;

	assert_non_null(buf);
	for (uint64_t i = 0; i < STREAM_BYTES; i++)
		buf[i] = byte_at(i);
	/* Frames of varied sizes, with pauses, as requests come. */
	for (unsigned k = 0; off < STREAM_BYTES; k++) {
		size_t len = 1 + (k * 7919u) % 65536u;

		if (len > STREAM_BYTES - off)
			len = STREAM_BYTES - off;
		send_all(s, buf + off, len);
		off += len;
		if (k % 64 == 0)
			usleep(100);
	}
	free(buf);
	return NULL;
}

static void test_every_byte_in_order(void **state)
{
	struct pair pr;
	struct reader *r = calloc(1, sizeof(*r));
	pthread_t pollers[2], toggler, writer;

	assert_non_null(r);
	sem_init(&r->end, 0, 0);
	pair_open_at(&pr, 0);
	assert_int_equal(gm_poller_new(GM_POLLER_TAKE_BACK, &r->p), GM_OK);
	gm_stream_set_poller(pr.cli, r->p);
	r->s = pr.cli;
	r->io = (gm_io){.niov = 1, .done = reader_done, .arg = r};
	r->io.iov[0] = (nng_iov){r->buf, sizeof(r->buf)};
	gm_stream_recv(r->s, &r->io);
	for (int i = 0; i < 2; i++)
		assert_int_equal(
		    pthread_create(&pollers[i], NULL, poll_thread, r), 0);
	assert_int_equal(pthread_create(&toggler, NULL, toggle_thread, r), 0);
	assert_int_equal(pthread_create(&writer, NULL, write_thread, pr.srv),
			 0);
	sem_wait(&r->end);
	pthread_join(writer, NULL);
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
	pthread_join(toggler, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(pollers[i], NULL);
	assert_int_equal(r->rv, 0);
	assert_int_equal(r->got, STREAM_BYTES);
	assert_int_equal(r->bad, 0);
	assert_true(r->polled > 0); /* the polls took some */
	assert_int_equal(gm_poller_parked(r->p), 0);
	pair_close(&pr);
	gm_poller_free(r->p);
	sem_destroy(&r->end);
	free(r);
}

static int setup_ipc(void **state)
{
	use_tcp = 0;
	return 0;
}

static int setup_tcp(void **state)
{
	use_tcp = 1;
	return 0;
}

#define BOTH(fn)                               \
	cmocka_unit_test_setup(fn, setup_ipc), \
	    cmocka_unit_test_setup(fn, setup_tcp)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    BOTH(test_poll_ends_on_this_thread),
	    BOTH(test_stop_hands_to_nng),
	    BOTH(test_take_back),
	    BOTH(test_close_ends_parked_once),
	    BOTH(test_peer_gone),
	    cmocka_unit_test_setup(test_cap, setup_ipc),
	    BOTH(test_every_byte_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
