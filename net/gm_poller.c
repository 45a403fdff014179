/*
 * gm_poller.c - receives a spinning thread takes itself; see
 * gm_poller.h. The poller's lock guards its list of streams, what is
 * parked and every node; tries run under it, callbacks outside it, with
 * the node marked busy so that a stream being freed waits for them.
 */
#include "gm_poller.h"
#include "gm_poller_impl.h"

#include <pthread.h>
#include <stdlib.h>

#include "gm_error.h"

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

void gm_poller_join(gm_poller *p, gm_poll_node *n)
{
	pthread_mutex_lock(&p->mu);
	n->prev = NULL;
	n->next = p->nodes;
	if (p->nodes != NULL)
		p->nodes->prev = n;
	p->nodes = n;
	pthread_mutex_unlock(&p->mu);
}

bool gm_poller_park(gm_poller *p, gm_poll_node *n)
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

bool gm_poller_close_node(gm_poller *p, gm_poll_node *n)
{
	bool was;

	pthread_mutex_lock(&p->mu);
	n->closed = true;
	if ((was = n->parked))
		unlink_parked(p, n);
	pthread_mutex_unlock(&p->mu);
	return was;
}

void gm_poller_leave(gm_poller *p, gm_poll_node *n)
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

void gm_poller_start(gm_poller *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->started++ == 0 && (p->flags & GM_POLLER_TAKE_BACK))
		for (gm_poll_node *n = p->nodes; n != NULL; n = n->next)
			if (!n->closed)
				gm_stream_take_back(n->s);
	pthread_mutex_unlock(&p->mu);
}

static void complete(gm_poll_node *n)
{
	gm_stream_polled(n->s, n->nrv, n->n);
}

int gm_poller_poll(gm_poller *p)
{
	gm_poll_node **pp, *n, *ended = NULL;
	int count = 0;

	pthread_mutex_lock(&p->mu);
	for (pp = &p->parked; (n = *pp) != NULL;) {
		if (!gm_stream_try_recv(n->s, &n->nrv, &n->n)) {
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
	gm_stream_unpark(n->s);
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
