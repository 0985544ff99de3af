// A clock for loops that read the time every microsecond: CLOCK_MONOTONIC
// nanoseconds, read as the TSC scaled by a rate measured against it.
//
// Why: the real-time engine reads the clock once per timeslot and again
// while it waits for the next (1.2 us at 10 Gbit/s), as do the capacity
// experiment's synthetic endpoints. clock_gettime() is a vDSO read of the
// TSC where the kernel's clocksource is `tsc` (22 ns on the project's VM, 41
// on the lent 16-core machine, capacity.yaml's cpu_noise.clock_read_ns), but
// a system call of a microsecond or more where it is not (hpet, acpi_pm, a
// kvm-clock without a stable TSC) -- a timeslot's whole budget. Reading the
// TSC costs ~10 ns here (where it does not trap). (On the lent machine, where the clocksource
// was `tsc`, an A/B of the capacity experiment was inside its noise:
// docs/performance/live.md.)
//
// How: each PaceClock (one per thread: no shared lines) keeps an anchor, a
// (TSC, CLOCK_MONOTONIC) pair, and converts TSC ticks since it. It takes a
// new anchor every `reanchor_ns` (1 ms) of its own time; from the second
// one on it measures the rate over everything since its first anchor, so
// the rate's error shrinks as the run goes and the time it returns never
// strays from CLOCK_MONOTONIC by more than that error times 1 ms (well
// under a timeslot: at a 1e-4 rate error, 0.1 us). Times stay comparable
// with other processes' CLOCK_MONOTONIC stamps (the stage traces).
// Without a TSC (non-x86), now() is clock_gettime().
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace flexplane {

inline int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class PaceClock {
 public:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr bool kHasTsc = true;
  static uint64_t ticks() { return __rdtsc(); }
#else
  static constexpr bool kHasTsc = false;
  static uint64_t ticks() { return 0; }
#endif

  // ns_per_tick: a first guess at the rate (calibrate(), shared by the
  // threads of a run); 0: measure it first (a 1 ms wait).
  explicit PaceClock(double ns_per_tick = 0, int64_t reanchor_ns = 1000000) : reanchor_ns_(reanchor_ns) {
    if (!kHasTsc) return;
    if (ns_per_tick <= 0) ns_per_tick = calibrate(1000000);
    ns_per_tick_ = ns_per_tick;
    anchor();
    first_tsc_ = tsc_;
    first_ns_ = ns_;
  }

  int64_t now() {
    if (!kHasTsc) return monotonic_ns();
    const uint64_t t = ticks();
    const int64_t since = static_cast<int64_t>(static_cast<double>(t - tsc_) * ns_per_tick_);
    if (since < reanchor_ns_) return ns_ + since;
    anchor();
    if (tsc_ > first_tsc_) ns_per_tick_ = static_cast<double>(ns_ - first_ns_) / static_cast<double>(tsc_ - first_tsc_);
    return ns_;
  }

  double ns_per_tick() const { return ns_per_tick_; }

  // The TSC's rate against CLOCK_MONOTONIC over a wait of about `ns`.
  static double calibrate(int64_t ns) {
    if (!kHasTsc) return 1.0;
    const uint64_t t0 = ticks();
    const int64_t n0 = monotonic_ns();
    int64_t n1 = n0;
    while (n1 - n0 < ns) n1 = monotonic_ns();
    const uint64_t t1 = ticks();
    return t1 > t0 ? static_cast<double>(n1 - n0) / static_cast<double>(t1 - t0) : 1.0;
  }

 private:
  void anchor() {
    // The TSC at the clock read: the middle of two TSC reads around it. A
    // thread preempted between them would misplace the anchor by half the
    // gap, so the pair is taken again (up to 8 times) until the two TSC
    // reads lie within ~1 us, keeping the tightest.
    uint64_t best = ~uint64_t{0};
    for (int i = 0; i < 8 && static_cast<double>(best) * ns_per_tick_ > 1000; ++i) {
      const uint64_t a = ticks();
      const int64_t ns = monotonic_ns();
      const uint64_t b = ticks();
      if (b - a < best) {
        best = b - a;
        ns_ = ns;
        tsc_ = a + (b - a) / 2;
      }
    }
  }

  int64_t reanchor_ns_;
  double ns_per_tick_ = 1.0;
  uint64_t tsc_ = 0, first_tsc_ = 0;
  int64_t ns_ = 0, first_ns_ = 0;
};

}  // namespace flexplane
