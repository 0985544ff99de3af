// TimeslotTimer: quantiles of recorded durations, to the histogram's bucket.
#include "emulator/engine/timeslot_timer.h"

#include <catch2/catch.hpp>

using namespace flexplane;

TEST_CASE("timeslot timer: quantiles of known durations", "[engine][timing]") {
  TimeslotTimer t;
  t.start();
  REQUIRE(t.samples() == 0);
  REQUIRE(t.quantile_ticks(0.5) == 0);
  // 80 timeslots of 100 ticks, 10 of 1000, 10 longer than the histogram.
  for (int i = 0; i < 80; ++i) t.add(100);
  for (int i = 0; i < 10; ++i) t.add(1000);
  for (int i = 0; i < 10; ++i) t.add(10'000'000);
  REQUIRE(t.samples() == 100);
  // Buckets are 8 ticks wide; a quantile is its bucket's middle.
  CHECK(t.quantile_ticks(0.1) == Approx(100).margin(4));
  CHECK(t.quantile_ticks(0.5) == Approx(100).margin(4));
  CHECK(t.quantile_ticks(0.85) == Approx(1000).margin(4));
  CHECK(t.quantile_ticks(0.95) > 60000);  // overflow: the histogram's end
  CHECK(t.quantile_ticks(0.95) < 70000);
}

TEST_CASE("timeslot timer: ticks convert to wall-clock nanoseconds", "[engine][timing]") {
  TimeslotTimer t;
  t.start();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  uint64_t n = 0;
  while (std::chrono::steady_clock::now() < until) {
    t.tick();
    ++n;
  }
  t.stop();
  REQUIRE(t.samples() == n);
  const TimeslotTiming timing = t.timing();
  // n ticks spread over ~20 ms: the median can't exceed the whole span, and
  // the quantiles are ordered.
  CHECK(timing.samples == n);
  CHECK(timing.p50_ns > 0);
  CHECK(timing.p50_ns * static_cast<double>(n) / 2 < 40e6);
  CHECK(timing.p10_ns <= timing.p50_ns);
  CHECK(timing.p50_ns <= timing.p90_ns);
}
