/*
 * spin.h — a lock word for critical sections of a few loads and stores,
 * and the CPU's hint for a spinning wait.
 *
 * Taking the lock costs one atomic exchange and giving it back one release
 * store, where an uncontended pthread mutex costs two library calls with an
 * atomic each.  A waiter reads the word until it looks free (no exchange
 * while it is held: the line stays shared), spins a little, then yields the
 * CPU on every further look, so a holder that lost its CPU gets it back
 * (two threads on two cores with more runnable threads than that is the
 * common case on small machines).  Only for sections that never block and
 * never take a lock that may wait for the holder of this one.
 *
 * No syscalls but sched_yield.
 */
#ifndef RUMA_CORE_SPIN_H
#define RUMA_CORE_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

/* ruma_cpu_relax — tell the CPU this is a spin-wait loop (x86 pause,
 * Arm yield). */
static inline void ruma_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

typedef struct ruma_spin {
	_Atomic bool held;
} ruma_spin; /* zero: free */

/* Spins before a waiter starts yielding the CPU. */
#define RUMA_SPIN_BEFORE_YIELD 64u

static inline void ruma_spin_lock(ruma_spin *s)
{
	unsigned looks = 0;
	while (atomic_exchange_explicit(&s->held, true, memory_order_acquire)) {
		while (atomic_load_explicit(&s->held, memory_order_relaxed)) {
			if (++looks < RUMA_SPIN_BEFORE_YIELD)
				ruma_cpu_relax();
			else
				sched_yield();
		}
	}
}

static inline void ruma_spin_unlock(ruma_spin *s)
{
	atomic_store_explicit(&s->held, false, memory_order_release);
}

#endif
