// DropTail: accept until capacity_pkts are queued, then drop arrivals (Reason::kQueueFull).
#include <catch2/catch.hpp>

#include <map>

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

TEST_CASE("droptail: inputs that arrive in the same timeslot share the last free slot in turn",
          "[schemes][droptail]") {
  // One departure per timeslot from a full queue of 4, three arrivals per
  // timeslot (one per source, in source order in the batch): one arrival
  // fits, two are dropped. PatternRouter takes the batch from a start that
  // rotates with the timeslot, so each source gets the slot a third of the
  // time; a fixed order would give it to source 0 every time.
  TestRouter r(4, {{"single"}, {"droptail", {{"capacity_pkts", "4"}}}, {"fifo"}});
  for (uint32_t i = 0; i < 4; ++i) r.input(pkt(9, i, 3), 0);
  std::map<EndpointId, int> accepted;
  for (Timeslot t = 1; t <= 300; ++t) {
    REQUIRE(r.output(t - 1).size() == 1);
    std::vector<Packet> batch;
    for (EndpointId s = 0; s < 3; ++s) {
      Packet p = pkt(s, uint32_t(t), 3);
      p.src = s;
      batch.push_back(p);
    }
    const size_t drops_before = r.log.drops.size();
    r.input(batch, t);
    REQUIRE(r.log.drops.size() == drops_before + 2);
    for (const Packet& p : batch) {
      bool dropped = false;
      for (size_t d = drops_before; d < r.log.drops.size(); ++d) dropped |= r.log.drops[d].p.src == p.src;
      if (!dropped) ++accepted[p.src];
    }
  }
  REQUIRE(accepted[0] == 100);
  REQUIRE(accepted[1] == 100);
  REQUIRE(accepted[2] == 100);
  r.check_invariants();
}

TEST_CASE("droptail: a sequence given in order keeps the first capacity_pkts (router mode's bursts)",
          "[schemes][droptail]") {
  // input_in_order is not rotated: of 10 packets into a queue of 4 at any
  // timeslot, seq 0..3 are queued and 4..9 dropped, and they leave in order.
  for (Timeslot now : {Timeslot{0}, Timeslot{3}, Timeslot{7}}) {
    TestRouter r(1, {{"single"}, {"droptail", {{"capacity_pkts", "4"}}}, {"fifo"}});
    std::vector<Packet> burst;
    for (uint32_t i = 0; i < 10; ++i) burst.push_back(pkt(1, i, 0));
    r.input_in_order(burst, now);
    REQUIRE(r.log.drops.size() == 6);
    for (size_t d = 0; d < 6; ++d) CHECK(r.log.drops[d].p.seq == 4 + d);
    for (uint32_t i = 0; i < 4; ++i) {
      const auto out = r.output(now + i);
      REQUIRE(out.size() == 1);
      CHECK(out[0].second.seq == i);
    }
    r.check_invariants();
  }
}
