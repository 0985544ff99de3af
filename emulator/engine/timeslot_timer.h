// How long each timeslot took on one core: a histogram of wall-clock
// durations, read as quantiles.
//
// Why: on shared VMs the engine's throughput swings by ±20 % or more with the
// other tenants' load, but those stalls hit a minority of timeslots. The
// median timeslot time is the engine's own cost per timeslot and barely moves,
// so it compares configurations (1 vs 2 cores, link latencies) where the
// throughput cannot (docs/performance.md). Off by default
// (EngineOptions::time_timeslots); when on it costs one time-stamp read
// (~8 ns with the TSC) and one counter increment per timeslot.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "api/cache_aligned.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace flexplane {

struct TimeslotTiming {
  uint64_t samples = 0;  // timeslots timed
  double p10_ns = 0, p50_ns = 0, p90_ns = 0;
};

class TimeslotTimer {
 public:
  // Durations are counted in ticks of the cheapest clock at hand (the TSC on
  // x86, else nanoseconds); ns_per_tick() is measured against steady_clock
  // over each run.
  static uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

  // Bracket a run on this core; tick() after every timeslot.
  void start() {
    if (hist_.empty()) hist_.assign(kBuckets + 1, 0);  // only for cores that are timed
    run_ticks_ = prev_ = ticks();
    run_start_ = std::chrono::steady_clock::now();
  }
  void tick() {
    const uint64_t now = ticks();
    add(now - prev_);
    prev_ = now;
  }
  void stop() {
    total_ticks_ += ticks() - run_ticks_;
    total_ns_ += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - run_start_).count();
  }

  // One timeslot that took `t` ticks (after start(); tick() calls this, tests call it directly).
  void add(uint64_t t) {
    const uint64_t b = t / kBucketTicks;
    ++hist_[b < kBuckets ? b : kBuckets];
    ++samples_;
  }

  uint64_t samples() const { return samples_; }

  // The q-quantile of the durations in ticks, to kBucketTicks (the middle of
  // its bucket). Durations past the histogram count as its end.
  double quantile_ticks(double q) const {
    if (samples_ == 0) return 0;
    const uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(samples_ - 1));
    uint64_t seen = 0;
    for (uint32_t b = 0; b <= kBuckets; ++b) {
      seen += hist_[b];
      if (seen > rank) return (b + 0.5) * kBucketTicks;
    }
    return (kBuckets + 0.5) * kBucketTicks;
  }

  double ns_per_tick() const { return total_ticks_ ? total_ns_ / static_cast<double>(total_ticks_) : 1.0; }

  TimeslotTiming timing() const {
    const double k = ns_per_tick();
    return TimeslotTiming{samples_, quantile_ticks(0.1) * k, quantile_ticks(0.5) * k, quantile_ticks(0.9) * k};
  }

 private:
  // 8-tick buckets up to 64 Ki ticks (~25 us at 2.5 GHz), then one overflow
  // bucket: a timeslot of the reference workload takes ~1000 ticks.
  static constexpr uint64_t kBucketTicks = 8;
  static constexpr uint32_t kBuckets = 8192;

  cache_vector<uint64_t> hist_;  // written by one core: own cache lines
  uint64_t samples_ = 0;
  uint64_t prev_ = 0, run_ticks_ = 0;
  std::chrono::steady_clock::time_point run_start_{};
  uint64_t total_ticks_ = 0;
  double total_ns_ = 0;
};

}  // namespace flexplane
