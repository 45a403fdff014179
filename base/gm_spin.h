/*
 * gm_spin.h - the one spin policy: a thread that expects work within
 * microseconds polls for it for spin_us before it sleeps, and at most
 * one thread of a group polls at a time.
 *
 * Waking a sleeping thread costs tens of microseconds (a futex wake,
 * then the scheduler), which is most of a small job's round trip on a
 * GPU; polling costs a core only for spin_us after work, so an idle
 * process sleeps. A group (one gm_spin) bounds what polling costs a busy
 * host: the threads of one kind on one device share a group, and while
 * one polls the others sleep at once. Used by gm_handoff.h for a
 * consumer about to sleep on an empty queue, and directly for what is
 * not a queue (the CUDA engine's completion threads poll their end
 * event). Plain C, no lock: any thread.
 */
#ifndef GM_SPIN_H
#define GM_SPIN_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A policy and the threads that follow it. Fields are the module's. */
typedef struct gm_spin {
	unsigned spin_us; /* 0: never poll */
	int polling;	  /* atomic: threads polling now */
} gm_spin;

/* Sets s up for polls of spin_us. */
void gm_spin_init(gm_spin *s, unsigned spin_us);

/*
 * Polls ready(arg) until it is true or spin_us have passed, unless
 * another thread of s polls now or spin_us is 0 (then ready is not
 * called). Returns whether ready said true: if not, the caller sleeps.
 * s may be NULL: no polling. No lock may be held that ready's answer
 * waits for.
 */
bool gm_spin_until(gm_spin *s, bool (*ready)(void *arg), void *arg);

/* One step of a polling loop: tells the core so (pause), leaving more
 * of it to a hyperthread beside the poller. */
void gm_spin_relax(void);

/* The monotonic clock the policy runs on, in microseconds. */
double gm_spin_now_us(void);

#ifdef __cplusplus
}
#endif
#endif
