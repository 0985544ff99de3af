// DRR: byte-fair turns with a quantum per turn; new queues join the tail of the ring.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
Components drr(std::string quantum_bytes) {
  return {{"by_source", {{"num_queues", "4"}}}, {"droptail"}, {"drr", {{"quantum_bytes", quantum_bytes}}}};
}
}  // namespace

TEST_CASE("drr: a 1500 B quantum sends one 1500 B packet or three 500 B packets per turn", "[schemes][drr]") {
  TestRouter r(1, drr("1500"));
  std::vector<Packet> pkts;
  for (uint32_t i = 0; i < 3; ++i) pkts.push_back(from_source(0, i, 1500));
  for (uint32_t i = 0; i < 9; ++i) pkts.push_back(from_source(1, i, 500));
  r.input(pkts, 0);
  REQUIRE(flow_ids(r.drain(0, 0)) == std::vector<uint32_t>{0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1});
  r.check_invariants();
}

TEST_CASE("drr: a quantum smaller than the packets takes several laps", "[schemes][drr]") {
  // Quantum 500; queue 0 holds two 1500 B packets, queue 1 two 1000 B packets.
  // Call 1: deficits go q0 500, q1 500, q0 1000, q1 1000 -> q1 sends (q1: 0).
  // Call 2: q1's turn ends (1000 > 0); q0 1500 -> q0 sends (q0: 0).
  // Call 3: q0 ends; q1 500; q0 500; q1 1000 -> q1 sends its last and leaves the ring.
  // Call 4: q0 1000, then 1500 -> q0 sends. Order: 1, 0, 1, 0.
  TestRouter r(1, drr("500"));
  r.input({from_source(0, 0, 1500), from_source(0, 1, 1500), from_source(1, 0, 1000), from_source(1, 1, 1000)}, 0);
  REQUIRE(flow_ids(r.drain(0, 0)) == std::vector<uint32_t>{1, 0, 1, 0});
  r.check_invariants();
}

TEST_CASE("drr: a newly backlogged queue joins the tail of the ring", "[schemes][drr]") {
  // Ring [q0, q2]; q0 sends at t=0. Queue 1 becomes backlogged at t=1 and joins behind q2, so
  // the order is 0, 2, 1 -- round robin by index would have served 1 before 2.
  TestRouter r(1, drr("1500"));
  r.input({from_source(0, 0), from_source(0, 1), from_source(2, 0), from_source(2, 1)}, 0);
  REQUIRE(r.output(0)[0].second.flow == 0);
  r.input({from_source(1, 0), from_source(1, 1)}, 1);
  REQUIRE(flow_ids(r.drain(0, 1)) == std::vector<uint32_t>{2, 1, 0, 2, 1});
  r.check_invariants();
}

TEST_CASE("drr presets: byte fairness between small- and large-packet sources", "[schemes][drr]") {
  // drr_by_source: source 1 sends 1500 B packets, source 2 300 B packets, both always backlogged.
  // Each turn gives each 1500 B, so after N timeslots their bytes differ by at most one quantum
  // plus one packet, and source 2 sends five packets per packet of source 1.
  TestRouter r(1, preset("drr_by_source"));
  for (Timeslot t = 0; t < 6000; ++t) {
    r.input({from_source(1, uint32_t(t), 1500), from_source(2, 5 * uint32_t(t), 300),
             from_source(2, 5 * uint32_t(t) + 1, 300)},
            t);
    REQUIRE(r.output(t).size() == 1);
  }
  const uint64_t b1 = r.counters(0, 1).dequeued * 1500, b2 = r.counters(0, 2).dequeued * 300;
  REQUIRE(r.counters(0, 1).dequeued + r.counters(0, 2).dequeued == 6000);
  REQUIRE((b1 > b2 ? b1 - b2 : b2 - b1) <= 3000);
  r.check_invariants();

  // drr (by flow): 32 hashed queues by default, one MTU quantum.
  TestRouter f(1, preset("drr"));
  REQUIRE(f.bank().queues_per_port() == 32);
  f.input({from_source(1, 0), from_source(2, 0), from_source(1, 1)}, 0);
  REQUIRE(f.drain(0, 0).size() == 3);
  f.check_invariants();
  REQUIRE_THROWS_AS(make_component<SchedulerBase>({"drr", {{"quantum_bytes", "0"}}}), ConfigError);
}
