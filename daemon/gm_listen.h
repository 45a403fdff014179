/*
 * gm_listen.h - gemmd's listeners: one byte-stream listener
 * (net/gm_stream.h) per configured URL, and their accept loops.
 *
 * ipc:// sockets get mode 0660 in a directory made 0750; tls+tcp://
 * presents tls_cert/tls_key and requires client certificates signed by
 * tls_ca (the files are read and checked once, by gm_tls_server_ctx,
 * which names a bad one); plain tcp:// off the loopback is logged as a
 * warning. Each listener accepts one connection at a time: nng
 * completes the accept on its thread, which hands the stream to the
 * loop and accepts the next, and the loop gives it to the connection
 * set (gm_conns_accept: caps and allow-lists). At most 16 connections
 * of a listener are pending (on their way to the loop, or refused and
 * not yet closed): past that it accepts the next once one of them is
 * admitted or gone, and a flood waits in the kernel's backlog. When
 * accepting fails for
 * want of descriptors or memory (or anything else), that listener stops
 * for a while, 100 ms doubling up to 1 s, instead of spinning, and the
 * episode is logged once. Loop thread only.
 */
#ifndef GM_LISTEN_H
#define GM_LISTEN_H

#include <stddef.h>

#include "gm_loop.h"

/* Opens every listener of l->cfg and starts accepting. On failure
 * nothing is left open and msg names the URL or the file. */
int gm_listen_open(gm_loop *l, gm_listen **out, char *msg, size_t msglen);

/* Stops accepting and closes every listener (connections live on); ls
 * is freed once the loop has closed its timers, so the loop must run
 * afterwards. */
void gm_listen_close(gm_listen *ls);

/* The TCP port the first tcp:// or tls+tcp:// listener is bound to, 0
 * when there is none. */
int gm_listen_port(const gm_listen *ls);

#endif
