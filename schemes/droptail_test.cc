// DropTail: accept until capacity_pkts are queued, then drop arrivals (Reason::kQueueFull).
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

TEST_CASE("droptail: tail drop at capacity, per queue and port", "[schemes][droptail]") {
  TestRouter r(2, {{"single"}, {"droptail", {{"capacity_pkts", "4"}}}, {"fifo"}});
  // Six arrivals for port 1 in one timeslot: seqs 0..3 fill the queue, 4 and 5 find it full.
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 6; ++i) burst.push_back(pkt(1, i, /*dst=*/1));
  r.input(burst, 0);
  REQUIRE(r.bank().packets(1, 0) == 4);
  REQUIRE(r.bank().packets(0, 0) == 0);
  REQUIRE(r.drops(1, 0, Reason::kQueueFull) == 2);
  REQUIRE(r.log.drops.size() == 2);
  REQUIRE(r.log.drops[0].p.seq == 4);
  REQUIRE(r.log.drops[1].p.seq == 5);
  // t=0 sends seq 0; at t=1 there is room for one more (seq 6), which goes behind 1, 2, 3.
  auto sent = r.output(0);
  REQUIRE(sent.size() == 1);
  REQUIRE(sent[0].first == 1);
  REQUIRE(sent[0].second.seq == 0);
  r.input(pkt(1, 6, 1), 1);
  std::vector<uint32_t> seqs;
  for (const Packet& p : r.drain(1, 1)) seqs.push_back(p.seq);
  REQUIRE(seqs == std::vector<uint32_t>{1, 2, 3, 6});
  const QueueCounters& c = r.counters(1);
  REQUIRE(c.arrived == 7);
  REQUIRE(c.enqueued == 5);
  REQUIRE(c.dropped_on_arrival == 2);
  REQUIRE(c.dequeued == 5);
  r.check_invariants();
}

TEST_CASE("droptail preset: 1024-packet queues by default; unknown destinations are unrouted",
          "[schemes][droptail]") {
  TestRouter r(2, preset("droptail"));
  // 1030 arrivals in one timeslot: 1024 fit, 6 are dropped.
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 1030; ++i) burst.push_back(pkt(1, i, 0));
  burst.push_back(pkt(2, 0, /*dst=*/7));  // no route: 2 ports
  r.input(burst, 0);
  REQUIRE(r.bank().packets(0, 0) == 1024);
  REQUIRE(r.drops(0, 0, Reason::kQueueFull) == 6);
  REQUIRE(r.log.count(Reason::kNoRoute) == 1);
  r.check_invariants();
  REQUIRE(r.drain(0, 0).size() == 1024);
  r.check_invariants();
}

TEST_CASE("droptail: bad parameters are config errors", "[schemes][droptail]") {
  REQUIRE_THROWS_AS(make_component<QueueManagerBase>({"droptail", {{"capacity_pkts", "0"}}}), ConfigError);
  REQUIRE_THROWS_AS(make_component<QueueManagerBase>({"droptail", {{"capacity", "5"}}}), ConfigError);
}
