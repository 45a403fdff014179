/*
 * gm_poller.c - receives a spinning thread takes itself (gm_poller.h),
 * and the read ahead of a plain stream a listener accepts, which tries
 * a receive at once in the same way. The poller's lock guards its list
 * of streams, what is parked and every node; tries run under it,
 * callbacks outside it, with the node marked busy so that a stream
 * being freed waits for them. Lock order: the poller's lock, then the
 * stream's; a stream never calls into its poller with its own lock
 * held.
 *
 * A plain stream put in a poller runs on the ops here: its receives
 * park, its close and free take it out of the poller. gm_stream.c, under
 * them, knows nothing of pollers.
 */
#include "gm_poller.h"
#include "gm_poller_impl.h"

#include <pthread.h>
#include <stdlib.h>

#include "gm_error.h"
#include "gm_stream_impl.h"

struct gm_poller {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a node stopped being busy */
	unsigned flags;
	unsigned started; /* gm_poller_start calls not yet stopped */
	gm_poll_node *nodes;
	gm_poll_node *parked;
	unsigned nparked;
};

int gm_poller_new(unsigned flags, gm_poller **out)
{
	gm_poller *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return GM_ENOMEM;
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return GM_ENOMEM;
	}
	if (pthread_cond_init(&p->cv, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return GM_ENOMEM;
	}
	p->flags = flags;
	*out = p;
	return GM_OK;
}

void gm_poller_free(gm_poller *p)
{
	if (p == NULL || p->nodes != NULL)
		return; /* streams still in it: left for the process's exit */
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* Takes n out of the parked list. mu held. */
static void unlink_parked(gm_poller *p, gm_poll_node *n)
{
	gm_poll_node **pp = &p->parked;

	while (*pp != n)
		pp = &(*pp)->park_next;
	*pp = n->park_next;
	n->parked = false;
	p->nparked--;
}

/* Ends the busy marks of the nodes on list (through park_next, read
 * before each callback may park its node again), running fn on each
 * first. mu not held. */
static void run_busy(gm_poller *p, gm_poll_node *list,
		     void (*fn)(gm_poll_node *n))
{
	gm_poll_node *n, *next;

	for (n = list; n != NULL; n = next) {
		next = n->park_next;
		fn(n);
		pthread_mutex_lock(&p->mu);
		if (--n->busy == 0)
			pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

/* Puts n, of a stream just made, in p. */
static void join(gm_poller *p, gm_poll_node *n)
{
	pthread_mutex_lock(&p->mu);
	n->prev = NULL;
	n->next = p->nodes;
	if (p->nodes != NULL)
		p->nodes->prev = n;
	p->nodes = n;
	pthread_mutex_unlock(&p->mu);
}

/* Parks the receive n's stream has just begun, when p is started and
 * has room: true, and a poll or the stop ends it; false: the stream
 * hands it to nng. */
static bool park(gm_poller *p, gm_poll_node *n)
{
	bool parked = false;

	pthread_mutex_lock(&p->mu);
	if (p->started > 0 && !n->closed && p->nparked < GM_POLLER_MAX_PARKED) {
		n->parked = parked = true;
		n->park_next = p->parked;
		p->parked = n;
		p->nparked++;
	}
	pthread_mutex_unlock(&p->mu);
	return parked;
}

/* n's stream is closing: it never parks again. Returns whether its
 * receive was parked, which the stream then hands to nng (where the
 * close ends it). */
static bool close_node(gm_poller *p, gm_poll_node *n)
{
	bool was;

	pthread_mutex_lock(&p->mu);
	n->closed = true;
	if ((was = n->parked))
		unlink_parked(p, n);
	pthread_mutex_unlock(&p->mu);
	return was;
}

/* n's stream is being freed: out of p, once no poll or stop runs its
 * receive any more. */
static void leave(gm_poller *p, gm_poll_node *n)
{
	pthread_mutex_lock(&p->mu);
	n->closed = true;
	while (n->busy > 0)
		pthread_cond_wait(&p->cv, &p->mu);
	if (n->prev != NULL)
		n->prev->next = n->next;
	else
		p->nodes = n->next;
	if (n->next != NULL)
		n->next->prev = n->prev;
	pthread_mutex_unlock(&p->mu);
}

/* ---- a plain stream, for its poller ---- */

/* Whether s's receive io is one for its poller to take. */
static bool pollable(const gm_stream *s, const gm_io *io)
{
	size_t len = 0;

	for (unsigned i = 0; i < io->niov; i++)
		len += io->iov[i].iov_len;
	return len <= GM_POLLER_MAX_BYTES;
}

/* Starts a receive on aio, which has no callback, and takes it back at
 * once: it reads what has come, on this thread, or nothing
 * (NNG_ECANCELED). Returns nng's code, the bytes read in *n. */
static int try_now(nng_stream *ns, nng_aio *aio, unsigned niov,
		   const nng_iov *iov, size_t *n)
{
	nng_aio_set_iov(aio, niov, iov);
	nng_stream_recv(ns, aio);
	nng_aio_cancel(aio);
	nng_aio_wait(aio);
	*n = nng_aio_count(aio);
	return nng_aio_result(aio);
}

/* Tries the parked receive of s once: true when it ended, with nng's
 * code and the bytes it brought. Under the poller's lock. */
static bool try_recv(gm_stream *s, int *nrv, size_t *n)
{
	*nrv = try_now(s->ns, s->paio, s->rio->niov, s->rio->iov, n);
	return *nrv != NNG_ECANCELED;
}

/* Cancels the receive of s in nng's hands, if one is: when the
 * cancellation comes back, the receive parks (taken_back). Under the
 * poller's lock (nng runs no callback inside the cancel); the cancel
 * under the stream's, as the start: the receive it cancels is the one
 * marked, not a later one begun after this one ended. */
static void take_back(gm_stream *s)
{
	pthread_mutex_lock(&s->mu);
	if (s->rarmed && !s->pulling && !s->closed && pollable(s, s->rio)) {
		s->pulling = true;
		nng_aio_cancel(s->raio);
	}
	pthread_mutex_unlock(&s->mu);
}

void gm_poller_start(gm_poller *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->started++ == 0 && (p->flags & GM_POLLER_TAKE_BACK))
		for (gm_poll_node *n = p->nodes; n != NULL; n = n->next)
			if (!n->closed)
				take_back(n->s);
	pthread_mutex_unlock(&p->mu);
}

static void complete(gm_poll_node *n)
{
	gm_stream_end(n->s, &n->s->rio, n->nrv, n->n);
}

int gm_poller_poll(gm_poller *p)
{
	gm_poll_node **pp, *n, *ended = NULL;
	int count = 0;

	pthread_mutex_lock(&p->mu);
	for (pp = &p->parked; (n = *pp) != NULL;) {
		if (!try_recv(n->s, &n->nrv, &n->n)) {
			pp = &n->park_next;
			continue;
		}
		*pp = n->park_next;
		n->parked = false;
		p->nparked--;
		n->busy++;
		n->park_next = ended;
		ended = n;
		count++;
	}
	pthread_mutex_unlock(&p->mu);
	run_busy(p, ended, complete);
	return count;
}

static void unpark(gm_poll_node *n)
{
	gm_stream_arm_recv(n->s);
}

void gm_poller_stop(gm_poller *p)
{
	gm_poll_node *list;

	pthread_mutex_lock(&p->mu);
	if (--p->started > 0) {
		pthread_mutex_unlock(&p->mu);
		return;
	}
	list = p->parked;
	p->parked = NULL;
	p->nparked = 0;
	for (gm_poll_node *n = list; n != NULL; n = n->park_next) {
		n->parked = false;
		n->busy++;
	}
	pthread_mutex_unlock(&p->mu);
	run_busy(p, list, unpark);
}

unsigned gm_poller_parked(gm_poller *p)
{
	unsigned n;

	pthread_mutex_lock(&p->mu);
	n = p->nparked;
	pthread_mutex_unlock(&p->mu);
	return n;
}

/* ---- a plain stream in a poller: its ops ---- */

/* raio's receive ended: whether it was taken back for the poller with
 * nothing read, in which case it parks (or goes to nng again when the
 * poller stopped meanwhile) instead of completing. */
static bool taken_back(gm_stream *s)
{
	bool pulled, closed;

	pthread_mutex_lock(&s->mu);
	s->rarmed = false;
	pulled = s->pulling;
	s->pulling = false;
	closed = s->closed;
	pthread_mutex_unlock(&s->mu);
	if (!pulled || nng_aio_result(s->raio) != NNG_ECANCELED)
		return false;
	/* Closed meanwhile: it ends here, as the close would have ended
	 * it; raio may be stopped already (gm_stream_free). */
	if (closed)
		gm_stream_end(s, &s->rio, NNG_ECLOSED, 0);
	else if (!park(s->poller, &s->pnode))
		gm_stream_arm_recv(s);
	return true;
}

static void polled_recv(gm_stream *s, gm_io *io)
{
	if (gm_stream_hand_ahead(s, io))
		return;
	s->rio = io;
	if (!pollable(s, io) || !park(s->poller, &s->pnode))
		gm_stream_arm_recv(s);
}

static void polled_close(gm_stream *s)
{
	gm_stream_mark_closed(s);
	/* A parked receive goes to nng, which ends it with the close. */
	if (close_node(s->poller, &s->pnode))
		gm_stream_arm_recv(s);
	nng_stream_close(s->ns);
}

static void polled_leave(gm_stream *s)
{
	leave(s->poller, &s->pnode);
}

static const struct gm_stream_ops polled_ops = {
    .recv = polled_recv,
    .send = gm_stream_plain_send,
    .close = polled_close,
    .taken_back = taken_back,
    .leave = polled_leave,
};

void gm_stream_set_poller(gm_stream *s, gm_poller *p)
{
	if (s->kind == GM_URL_TLS)
		return;
	/* Its callback completes in the thread that ends it: the poll's
	 * own, inside the try. */
	if (s->paio == NULL && nng_aio_alloc(&s->paio, NULL, NULL) != 0)
		return; /* not polled: a cost, not a failure */
	s->poller = p;
	s->pnode.s = s;
	s->ops = &polled_ops;
	join(p, &s->pnode);
}

/* ---- the read ahead ---- */

/*
 * nng 1.5.2 adds an accepted connection's descriptor to its epoll set
 * with no events asked for, which still reports a hang-up (EPOLLHUP,
 * and a UNIX-domain socket's peer closing is one), over and over until
 * the first read arms the descriptor one-shot: nng's poller thread
 * spins on it until then. So a plain stream accepted by a listener
 * tries one read at once, on the thread that accepted it, with an aio
 * of the listener's that has no callback: nng completes such an aio on
 * the thread that finishes it. A read that finds nothing is taken back
 * at once, and leaves the descriptor armed one-shot, which stops the
 * spin; one that brought bytes leaves them in ahead_buf for the first
 * receive; one that found the peer gone closes the stream there and
 * then, so its descriptor leaves the set without waiting for another
 * thread. The first receive takes what the read ahead brought through
 * raio, as any receive completes (its callback, never inside
 * gm_stream_recv; gm_stream_hand_ahead).
 */
void gm_stream_read_ahead(gm_stream *s, nng_aio *aio)
{
	size_t n;
	int nrv = 0;

	while (nrv == 0 && s->ahead_len < GM_STREAM_AHEAD_BYTES) {
		nng_iov iov = {s->ahead_buf + s->ahead_len,
			       GM_STREAM_AHEAD_BYTES - s->ahead_len};

		if ((nrv = try_now(s->ns, aio, 1, &iov, &n)) == 0)
			s->ahead_len += n;
	}
	if (nrv == NNG_ECANCELED)
		nrv = 0;
	s->ahead = s->ahead_len > 0 || nrv != 0;
	s->ahead_nrv = nrv;
	if (nrv != 0) {
		gm_stream_set_error(s, "connection", nrv);
		s->closed = true;
		nng_stream_close(s->ns);
	}
}
