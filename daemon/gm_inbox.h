/*
 * gm_inbox.h - the one way from another thread to the loop thread.
 *
 * nng completes stream I/O on its threads, engines complete jobs on
 * theirs; the loop owns everything they complete. Such
 * a thread posts the item to an inbox: a locked list and a uv_async
 * (libuv's wq_async hand-off). uv_async_send coalesces wake-ups, so the
 * loop drains the whole list at each one and hands every item to the
 * owner's callback, oldest first.
 *
 * Items are the owner's structs, chained through a `void *` member of
 * theirs (its offset given at open) that belongs to the inbox from post
 * until the item is handed back; nothing is allocated per item, so a
 * post cannot fail for memory. A post after gm_inbox_close is refused
 * and the poster keeps its item.
 *
 * While the loop polls instead of sleeping (gm_loop_spin), it says so
 * (gm_inbox_polled) and drains the inbox at each turn (gm_inbox_poll):
 * posts then append without waking it, which saves the poster a write
 * to the loop's eventfd and the loop a pass through epoll for each.
 */
#ifndef GM_INBOX_H
#define GM_INBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

typedef struct gm_inbox gm_inbox;

/* Called on the loop thread with each item drained, oldest first; the
 * item is the owner's again. */
typedef void (*gm_inbox_fn)(void *item, void *arg);

/* Called on the loop thread after a drain has handed every item over,
 * for work that is done once per batch. */
typedef void (*gm_inbox_drained_fn)(void *arg);

/*
 * Makes an inbox on loop for items chained through the `void *` member
 * at link_off, handed to fn (drained, which may be NULL, after each
 * drain) with arg. Returns GM_OK, GM_ENOMEM, or GM_EINTERNAL when libuv
 * or pthreads refuse (msg says which). Loop thread.
 */
int gm_inbox_open(uv_loop_t *loop, size_t link_off, gm_inbox_fn fn,
		  gm_inbox_drained_fn drained, void *arg, gm_inbox **out,
		  char *msg, size_t msglen);

/* Appends item and wakes the loop. Returns false, keeping nothing, once
 * the inbox is closed. Any thread. */
bool gm_inbox_post(gm_inbox *b, void *item);

/* Appends items[0..n-1], in that order, under one lock and one wake-up:
 * news that come together cost the loop one wake-up, not n. Returns
 * false, keeping nothing, once the inbox is closed. Any thread. */
bool gm_inbox_post_all(gm_inbox *b, void *const *items, size_t n);

/* Takes back the oldest item posted and not yet drained for which
 * match(item, key) is true, and returns it; NULL when there is none (it
 * may have been drained already). Any thread. */
void *gm_inbox_cancel(gm_inbox *b, bool (*match)(void *item, void *key),
		      void *key);

/* Loop thread: on, the loop polls b from now on and posts no longer wake
 * it; off, they wake it again, and what came before is the caller's to
 * hand over (gm_inbox_poll). */
void gm_inbox_polled(gm_inbox *b, bool on);

/* Loop thread, while b is polled: hands over what has come, as a
 * wake-up would. Returns whether anything had. */
bool gm_inbox_poll(gm_inbox *b);

/*
 * Refuses posts from now on and closes the async handle. Items posted
 * but never drained go to left (with arg), oldest first, or are dropped
 * when left is NULL; the callbacks are not called again. The inbox is
 * freed once the loop has closed the handle.
 * Loop thread; the loop must run afterwards.
 */
void gm_inbox_close(gm_inbox *b, gm_inbox_fn left, void *arg);

#endif
