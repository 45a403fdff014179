/*
 * gm_spin.c - the spin policy of gm_spin.h.
 */
#include "gm_spin.h"

#include <time.h>

void gm_spin_init(gm_spin *s, unsigned spin_us)
{
	s->spin_us = spin_us;
	s->polling = 0;
}

double gm_spin_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

void gm_spin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

bool gm_spin_until(gm_spin *s, bool (*ready)(void *arg), void *arg)
{
	bool got = false;
	double until;

	if (s == NULL || s->spin_us == 0)
		return false;
	if (__atomic_fetch_add(&s->polling, 1, __ATOMIC_ACQ_REL) == 0) {
		until = gm_spin_now_us() + s->spin_us;
		while (!(got = ready(arg)) && gm_spin_now_us() < until)
			gm_spin_relax();
	}
	__atomic_fetch_sub(&s->polling, 1, __ATOMIC_ACQ_REL);
	return got;
}
