// HPCC's switch side (schemes/hpcc.cc): tail drop, and each departure stamps
// max(its word, U = qlen / T + txRate) into custom[kTelemetryWord].
#include <catch2/catch.hpp>

#include <cmath>

#include "schemes/scheme_test_util.h"
#include "transports/transport.h"

using namespace flexplane;
using namespace flexplane::test;

TEST_CASE("hpcc: a departing packet carries its port's U = qlen / T + txRate, the path's maximum kept",
          "[schemes][hpcc]") {
  // T = 4. Three packets reach port 1 at t = 0 and leave at t = 0, 1, 2: after n back-to-back
  // departures txRate = 1 - d^n with d = e^(-1/4), and qlen after the departure is 2, 1, 0.
  TestRouter r(2, {{"single"}, {"hpcc", {{"capacity_pkts", "8"}, {"base_rtt_timeslots", "4"}}}, {"fifo"}});
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 3; ++i) burst.push_back(pkt(1, i, /*dst=*/1));
  burst[2].custom[kTelemetryWord] = 60000;  // an earlier hop saw U = 0.92: the larger value stays
  r.input(burst, 0);
  const double d = std::exp(-1.0 / 4);
  for (uint32_t n = 1; n <= 3; ++n) {
    const auto sent = r.output(n - 1);
    REQUIRE(sent.size() == 1);
    const double u = (3.0 - n) / 4 + (1 - std::pow(d, n));
    const uint32_t stamp = static_cast<uint32_t>(u * kTelemetryOne);
    INFO("departure " << n << ", U " << u);
    REQUIRE(sent[0].second.custom[kTelemetryWord] == std::max<uint32_t>(stamp, n == 3 ? 60000 : 0));
  }
  // An idle port forgets its rate: one packet alone 100 timeslots later sees txRate ~ 1 - d.
  r.input(pkt(1, 3, 1), 100);
  const auto sent = r.output(100);
  const double u = (1 - std::pow(d, 3)) * std::pow(d, 98) + (1 - d);  // the old rate decayed over 98, plus one
  REQUIRE(sent[0].second.custom[kTelemetryWord] == static_cast<uint32_t>(u * kTelemetryOne));
  REQUIRE(r.counters(1).dequeued == 4);
  r.check_invariants();
}

TEST_CASE("hpcc: tail drop at capacity", "[schemes][hpcc]") {
  TestRouter r(2, {{"single"}, {"hpcc", {{"capacity_pkts", "2"}}}, {"fifo"}});
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 4; ++i) burst.push_back(pkt(1, i, 0));
  r.input(burst, 0);
  REQUIRE(r.bank().packets(0, 0) == 2);
  REQUIRE(r.drops(0, 0, Reason::kQueueFull) == 2);
  r.check_invariants();
}
