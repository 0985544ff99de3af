// HULL: a per-port phantom queue drained at gamma x line rate marks arrivals above a threshold.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
Packet ect(uint32_t seq, EndpointId dst = 0) {
  Packet p = pkt(1, seq, dst);
  p.flags = kFlagEct;
  return p;
}
}  // namespace

TEST_CASE("hull: the phantom queue fills at line rate and drains at gamma x line rate", "[schemes][hull]") {
  // Defaults: gamma 0.95, threshold 15000 B, 1500 B packets, line rate 1500 B per timeslot, so the
  // phantom drains 1425 B per timeslot (0.95 x 1500 is exactly 1425.0 in binary floating point).
  // One packet per timeslot: after the n-th arrival the phantom holds 1500 + 75 (n - 1) bytes,
  // which exceeds 15000 from n = 182 on: packets 0..180 go unmarked, 181 onwards are marked,
  // although the real queue never holds more than one packet.
  TestRouter r(1, preset("hull"));
  for (uint32_t n = 0; n < 300; ++n) {
    r.input(ect(n), n);
    const auto sent = r.output(n);
    REQUIRE(sent.size() == 1);
    INFO("seq " << n);
    REQUIRE(sent[0].second.ce() == (n >= 181));
  }
  REQUIRE(r.marks(0, 0, Reason::kPhantomQueue) == 300 - 181);
  r.check_invariants();
}

TEST_CASE("hull: bursts, lazy drain and per-port phantoms", "[schemes][hull]") {
  TestRouter r(2, preset("hull"));
  // A burst of 11 at t=0: the k-th arrival brings the phantom to 1500 k bytes, > 15000 only for k = 11.
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 11; ++i) burst.push_back(ect(i));
  r.input(burst, 0);
  REQUIRE(r.counters(0).marked == 1);
  // Port 1 has its own (empty) phantom: not marked.
  r.input(ect(100, 1), 0);
  REQUIRE(r.counters(1).marked == 0);
  // t=1: 16500 - 1425 + 1500 = 16575 > 15000: marked.
  r.input(ect(11), 1);
  REQUIRE(r.counters(0).marked == 2);
  // t=20: 16575 - 19 x 1425 < 0, so the phantom restarts from 0: 1500, not marked.
  r.input(ect(12), 20);
  REQUIRE(r.counters(0).marked == 2);
  r.check_invariants();
}

TEST_CASE("hull: drop_non_ect drops instead of marking, and dropped packets do not fill the phantom",
          "[schemes][hull]") {
  TestRouter r(1, {{"single"}, {"hull", {{"drop_non_ect", "true"}}}, {"fifo"}});
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 10; ++i) burst.push_back(ect(i));
  burst.push_back(pkt(1, 10, 0));  // not ECT: 15000 + 1500 > 15000, dropped
  r.input(burst, 0);
  REQUIRE(r.drops(0, 0, Reason::kPhantomQueue) == 1);
  // t=2: 15000 - 2 x 1425 + 1500 = 13650: not marked (it would be 15150 had the drop counted).
  r.input(ect(11), 2);
  REQUIRE(r.counters(0).marked == 0);
  r.check_invariants();
  REQUIRE_THROWS_AS(make_component<QueueManagerBase>({"hull", {{"gamma", "0"}}}), ConfigError);
  REQUIRE_THROWS_AS(make_component<QueueManagerBase>({"hull", {{"gamma", "1.5"}}}), ConfigError);
}
