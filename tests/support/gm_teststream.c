/*
 * gm_teststream.c - synchronous helpers over the byte streams; see
 * gm_teststream.h.
 */
#include "gm_teststream.h"

#include <stdio.h>

#include "gm_error.h"

void gm_teststream_on_io(gm_io *io, int rv, size_t n)
{
	gm_teststream_wait *w = io->arg;

	w->rv = rv;
	w->n = n;
	w->on = pthread_self();
	__atomic_add_fetch(&w->calls, 1, __ATOMIC_RELEASE);
	sem_post(&w->sem);
}

void gm_teststream_on_accept(void *arg, int rv, int nng_rv, gm_stream *s)
{
	gm_teststream_wait *w = arg;

	w->rv = rv;
	w->s = s;
	sem_post(&w->sem);
}

void gm_teststream_on_dial(void *arg, int rv, gm_stream *s, const char *msg)
{
	gm_teststream_wait *w = arg;

	snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
	gm_teststream_on_accept(arg, rv, 0, s);
}

int gm_teststream_connect(gm_listener *l, gm_dialer *d, gm_stream **srv,
			  gm_stream **cli)
{
	gm_teststream_wait a = {0}, c = {0};

	sem_init(&a.sem, 0, 0);
	sem_init(&c.sem, 0, 0);
	gm_listener_accept(l, gm_teststream_on_accept, &a);
	gm_dialer_dial(d, gm_teststream_on_dial, &c);
	sem_wait(&a.sem);
	sem_wait(&c.sem);
	sem_destroy(&a.sem);
	sem_destroy(&c.sem);
	*srv = a.s;
	*cli = c.s;
	return a.rv != GM_OK ? a.rv : c.rv;
}

int gm_teststream_op(gm_stream *s, int send, void *p, size_t len, size_t *n)
{
	gm_teststream_wait w = {0};
	gm_io io = {.niov = 1, .done = gm_teststream_on_io, .arg = &w};

	sem_init(&w.sem, 0, 0);
	io.iov[0] = (nng_iov){p, len};
	if (send)
		gm_stream_send(s, &io);
	else
		gm_stream_recv(s, &io);
	sem_wait(&w.sem);
	sem_destroy(&w.sem);
	*n = w.n;
	return w.rv;
}

int gm_teststream_move_all(gm_stream *s, int send, uint8_t *p, size_t len)
{
	size_t done = 0, n;
	int rv;

	while (done < len)
		if ((rv = gm_teststream_op(s, send, p + done, len - done,
					   &n)) != 0)
			return rv;
		else
			done += n;
	return GM_OK;
}
