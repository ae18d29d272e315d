/*
 * counter.h — a count many threads change and few read (open transactions,
 * for the check at close), spread over cache-line lanes so that threads
 * changing it do not write one line: a thread adds to its own lane (chosen
 * once per thread, round-robin), and a reader sums the lanes.  The sum is
 * exact whenever no thread is changing the count; while one is, it is some
 * value the count had or is about to have, as a single atomic's would be.
 * Lanes may go negative (a count raised on one thread and lowered on
 * another); only the sum means anything.
 *
 * No syscalls.
 */
#ifndef RUMA_CORE_COUNTER_H
#define RUMA_CORE_COUNTER_H

#include <stdatomic.h>

#define RUMA_COUNTER_LANES 16u

typedef struct ruma_counter {
	struct {
		_Alignas(64) _Atomic long v;
	} lane[RUMA_COUNTER_LANES];
} ruma_counter;

/* This thread's lane. */
static inline unsigned ruma_counter_lane(void)
{
	static _Atomic unsigned next;
	static _Thread_local unsigned mine; /* lane + 1; 0: not chosen yet */
	if (__builtin_expect(!mine, 0))
		mine = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % RUMA_COUNTER_LANES + 1;
	return mine - 1;
}

/* ruma_counter_add — add d (relaxed: a count, not a flag that orders). */
static inline void ruma_counter_add(ruma_counter *c, long d)
{
	atomic_fetch_add_explicit(&c->lane[ruma_counter_lane()].v, d, memory_order_relaxed);
}

/* ruma_counter_sum — the count. */
static inline long ruma_counter_sum(ruma_counter *c)
{
	long s = 0;
	for (unsigned i = 0; i < RUMA_COUNTER_LANES; i++)
		s += atomic_load_explicit(&c->lane[i].v, memory_order_relaxed);
	return s;
}

#endif
