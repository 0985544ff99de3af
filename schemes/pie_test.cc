// PIE (RFC 8033): the drop probability's periodic update, with its auto-tuning scale; the delay
// measured by timestamps; no early drops while the accumulated probability is small; an empty
// queue brings the probability back to 0.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
// One tick = 1 ms here, so the RFC's units apply directly: target 15 ms = 15 ticks; the
// probability is updated every 60 ticks; no burst allowance.
constexpr double kMsPerTick = 1e6;
Components pie() {
  return {{"single"}, {"pie", {{"target_us", "15000"}, {"tupdate_ms", "60"}, {"max_burst_ms", "0"}}}, {"fifo"}};
}
double drop_prob(const TestRouter& r) { return r.stats(0).at("pie_drop_prob").at(0); }
}  // namespace

TEST_CASE("pie: the drop probability follows alpha (d - target) + beta (d - d_old), auto-tuned", "[schemes][pie]") {
  TestRouter r(1, pie(), 1, 1500, kMsPerTick);
  // 30 packets at t=0, then one in and one out per tick: from t=30 on every packet leaves 30
  // ticks (30 ms) after it came, so the delay measured at each departure is 0.030 s.
  std::vector<Packet> preload;
  for (uint32_t i = 0; i < 30; ++i) preload.push_back(pkt(1, i, 0));
  r.input(preload, 0);
  uint32_t seq = 100;
  auto tick = [&](Timeslot t) {
    r.input(pkt(1, seq++, 0), t);
    REQUIRE(r.output(t).size() == 1);
  };
  for (Timeslot t = 0; t < 60; ++t) tick(t);
  REQUIRE(drop_prob(r) == 0);  // no update before t = 60
  CHECK(r.stats(0).at("pie_qdelay_us").at(0) == Approx(30000));
  // t=60, first update: delay 0.030 s, previous 0:
  //   p = 0.125 (0.030 - 0.015) + 1.25 (0.030 - 0) = 0.039375; probability < 1e-6, so p / 2048.
  tick(60);
  const double p1 = 0.039375 / 2048;
  CHECK(drop_prob(r) == Approx(p1).epsilon(1e-9));
  for (Timeslot t = 61; t < 120; ++t) tick(t);
  // t=120: p = 0.125 (0.030 - 0.015) + 1.25 (0.030 - 0.030) = 0.001875; 1e-5 <= probability < 1e-4: / 128.
  tick(120);
  const double p2 = p1 + 0.001875 / 128;
  CHECK(drop_prob(r) == Approx(p2).epsilon(1e-9));
  for (Timeslot t = 121; t <= 180; ++t) tick(t);
  const double p3 = p2 + 0.001875 / 128;  // still below 1e-4
  CHECK(drop_prob(r) == Approx(p3).epsilon(1e-9));
  // Derandomized early drop: the probability accumulated over ~120 arrivals (~0.003) is far below
  // 0.85, so nothing was dropped although the queue is long and the delay above target.
  REQUIRE(r.log.drops.empty());

  // Stop arrivals: the queue drains by t=210 and the measured delay is then 0. The next arrival
  // (t=300) runs the updates due at 240 (p = (0.125 (0 - 0.015) + 1.25 (0 - 0.030)) / 128 < -p3: the
  // probability is clamped to 0) and 300.
  for (Timeslot t = 181; t <= 210; ++t) REQUIRE(r.output(t).size() == 1);
  REQUIRE(r.bank().empty(0, 0));
  CHECK(r.stats(0).at("pie_qdelay_us").at(0) == 0);
  r.input(pkt(1, seq++, 0), 300);
  CHECK(drop_prob(r) == 0);
  r.check_invariants();
}

TEST_CASE("pie: tail drop at capacity, and no early drops while the delay stays under target / 2",
          "[schemes][pie]") {
  TestRouter r(1, {{"single"}, {"pie", {{"capacity_pkts", "5"}, {"max_burst_ms", "0"}}}, {"fifo"}}, 1, 1500,
               kMsPerTick);
  std::vector<Packet> pkts;
  for (uint32_t i = 0; i < 8; ++i) pkts.push_back(pkt(1, i, 0));
  r.input(pkts, 0);
  REQUIRE(r.drops(0, 0, Reason::kQueueFull) == 3);
  REQUIRE(r.drops(0, 0, Reason::kAqmEarly) == 0);
  r.check_invariants();
}
