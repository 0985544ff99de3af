// PaceClock: the TSC kept on CLOCK_MONOTONIC. What it returns must lie
// between two clock_gettime() reads around it, to within the rate's error
// over one re-anchoring interval -- in its first interval too, and after
// many re-anchorings. Bounds, not timings: a slow or preempted machine only
// widens the bracket.
#include "emulator/engine/pace_clock.h"

#include <catch2/catch.hpp>

using namespace flexplane;

namespace {

// now() against the bracket [before, after] of CLOCK_MONOTONIC reads.
void check_bracketed(PaceClock& c, int64_t slack_ns) {
  const int64_t before = monotonic_ns();
  const int64_t t = c.now();
  const int64_t after = monotonic_ns();
  CHECK(t >= before - slack_ns);
  CHECK(t <= after + slack_ns);
}

}  // namespace

TEST_CASE("pace clock: follows CLOCK_MONOTONIC across re-anchorings", "[pace_clock]") {
  // A rough first rate (a 0.2 ms calibration) and re-anchoring every 100 us:
  // a rate error of 1e-2 would still be 1 us; 20 us of slack is generous.
  PaceClock c(PaceClock::calibrate(200000), 100000);
  REQUIRE(c.ns_per_tick() > 0);
  const int64_t end = monotonic_ns() + 30000000;  // 30 ms: ~300 anchors
  int64_t prev = c.now();
  uint64_t reads = 0, backwards = 0;
  while (monotonic_ns() < end) {
    check_bracketed(c, 20000);
    const int64_t t = c.now();
    // A new anchor may step back by the rate's error, never by more.
    if (t < prev) {
      ++backwards;
      CHECK(prev - t < 20000);
    }
    prev = t;
    ++reads;
  }
  CHECK(reads > 1000);
  CHECK(backwards <= reads / 100);
}

TEST_CASE("pace clock: a guessed rate far off is corrected at the next anchor", "[pace_clock]") {
  if (!PaceClock::kHasTsc) SUCCEED("no TSC: the clock is clock_gettime() itself");
  const double rate = PaceClock::calibrate(1000000);
  PaceClock c(rate * 1.5, 200000);  // 50 % off: wrong by 100 us after 200 us
  const int64_t end = monotonic_ns() + 5000000;
  // At least one read after 5 ms, however long this thread waited for a CPU
  // (a loaded CI machine once left a while-loop here with no read at all).
  do c.now();
  while (monotonic_ns() < end);
  // The rate it measured since its first anchor, over >= 5 ms: close to the
  // calibrated one, far from the guess (both measurements carry the noise
  // of a shared machine, so 10 %, not 1 %: the guess is 50 % off).
  CHECK(c.ns_per_tick() == Approx(rate).epsilon(0.1));
  check_bracketed(c, 20000);
}
