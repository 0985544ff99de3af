// Strict priority: the lowest-numbered non-empty queue is always served first.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

TEST_CASE("priority: lowest queue first, FIFO within a queue, starvation of the rest", "[schemes][priority]") {
  // Thresholds 10, 100: priority 5 -> queue 0, 50 -> queue 1, 500 -> queue 2.
  TestRouter r(1, {{"by_priority_thresholds", {{"thresholds", "10,100"}}}, {"droptail"}, {"priority"}});
  r.input({with_priority(3, 0, 500), with_priority(2, 0, 50), with_priority(1, 0, 5), with_priority(3, 1, 500),
           with_priority(1, 1, 5), with_priority(2, 1, 50)},
          0);
  // t=0..1: flow 1 (queue 0). A new queue-0 packet (flow 4) at t=2 goes ahead of the waiting
  // queue-1 packets of flow 2; queue 2 (flow 3) goes last.
  std::vector<std::pair<uint32_t, uint32_t>> order;  // (flow, seq)
  for (Timeslot t = 0; t < 3; ++t) {
    if (t == 2) r.input(with_priority(4, 0, 1), 2);
    const auto sent = r.output(t);
    REQUIRE(sent.size() == 1);
    order.emplace_back(sent[0].second.flow, sent[0].second.seq);
  }
  for (const Packet& p : r.drain(0, 3)) order.emplace_back(p.flow, p.seq);
  REQUIRE(order == std::vector<std::pair<uint32_t, uint32_t>>{{1, 0}, {1, 1}, {4, 0}, {2, 0}, {2, 1}, {3, 0}, {3, 1}});
  r.check_invariants();

  // A queue-0 packet every timeslot keeps queue 1 waiting indefinitely.
  TestRouter busy(1, {{"by_priority_thresholds", {{"thresholds", "10"}}}, {"droptail"}, {"priority"}});
  busy.input(with_priority(9, 0, 50), 0);
  for (Timeslot t = 0; t < 100; ++t) {
    busy.input(with_priority(1, uint32_t(t), 1), t);
    REQUIRE(busy.output(t)[0].second.flow == 1);
  }
  REQUIRE(busy.bank().packets(0, 1) == 1);
  busy.check_invariants();
}

TEST_CASE("priority presets: by flow size and by DSCP", "[schemes][priority]") {
  const SchemePreset* by_size = SchemeRegistry::instance().find("priority_by_size");
  REQUIRE(by_size != nullptr);
  REQUIRE(by_size->endpoint_priority == "flow_size");
  // Default thresholds: a 5-packet flow (queue 0) overtakes a 20000-packet flow (queue 4).
  TestRouter r(1, preset("priority_by_size"));
  r.input({with_priority(1, 0, 20000), with_priority(2, 0, 5)}, 0);
  REQUIRE(r.output(0)[0].second.flow == 2);
  r.check_invariants();

  // By DSCP: CS7 (56) before EF (46) before best effort (0), whatever the arrival order.
  TestRouter d(1, preset("priority_by_dscp"));
  std::vector<Packet> pkts;
  for (uint8_t dscp : {0, 46, 56}) {
    pkts.push_back(pkt(dscp, 0, 0));
    pkts.back().dscp = dscp;
  }
  d.input(pkts, 0);
  std::vector<uint32_t> flows;
  for (const Packet& p : d.drain(0, 0)) flows.push_back(p.flow);
  REQUIRE(flows == std::vector<uint32_t>{56, 46, 0});
  d.check_invariants();
}
