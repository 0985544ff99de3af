// How an engine core waits for another: spin briefly, then back off so a
// core that shares its CPU lets the other run (see back_off). Used by the
// cores' run loop and the nodes that wait for cross-core links.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>

#include "api/packet.h"

namespace flexplane::spin {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Push a line another core is about to read out to the shared cache, so that
// core's miss is served by L3 instead of by a snoop into ours (CLDEMOTE; a
// no-op hint on CPUs without it). Measured for the watermark: see
// docs/performance.md.
inline void hand_off(const void* line) {
#if defined(__x86_64__)
  asm volatile("cldemote %0" ::"m"(*static_cast<const char*>(line)));
#else
  (void)line;
#endif
}

// What a waiting core does meanwhile, on this thread (null: nothing). A run
// across processes with one core per rank runs that core on the thread that
// moves state between the ranks (partition.h); the core then moves it while
// it waits, since what it waits for may be in a message not yet taken in.
// Called from the slow paths below only (after the first spins).
inline thread_local const std::function<void()>* wait_hook = nullptr;

// One wait of a core for another. Plain re-reads first: `pause` alone costs
// ~40 ns on recent Xeons, a third of a cross-core hand-off. A core with a CPU
// of its own then only spins; one that shares (more engine threads than
// CPUs, e.g. small CI machines) yields soon, or the core it waits for may
// not get to run at all.
inline void back_off(unsigned& spins, bool may_yield) {
  if (++spins < 64) return;
  if (wait_hook) (*wait_hook)();
  if (spins < 256 || !may_yield)
    cpu_relax();
  else
    std::this_thread::yield();
}

// Waiting for a core that is many timeslots short of `need`: re-read its
// watermark about once per timeslot it still has to run instead of in a
// tight loop (each read takes the line away from the core writing it, which
// would slow the very core being waited for).
inline Timeslot wait_until_far(const std::atomic<Timeslot>& value, Timeslot need, bool may_yield) {
  unsigned rounds = 0;
  for (;;) {
    const Timeslot v = value.load(std::memory_order_acquire);
    if (v >= need) return v;
    if (wait_hook) (*wait_hook)();
    if (may_yield && ++rounds > 256) {
      std::this_thread::yield();
      continue;
    }
    for (Timeslot i = std::min<Timeslot>(need - v, 64) * 4; i > 0; --i) cpu_relax();  // ~40 ns each
  }
}

}  // namespace flexplane::spin
