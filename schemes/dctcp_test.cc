// DCTCP: CE-mark arrivals that find more than k_pkts queued; tail-drop at capacity_pkts.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
std::vector<Packet> burst(uint32_t n, bool ect) {
  std::vector<Packet> pkts;
  for (uint32_t i = 0; i < n; ++i) {
    pkts.push_back(pkt(1, i, 0));
    if (ect) pkts.back().flags = kFlagEct;
  }
  return pkts;
}
}  // namespace

TEST_CASE("dctcp: mark above K, drop at capacity", "[schemes][dctcp]") {
  // K = 3, capacity 6: arrival i of a burst finds i packets queued. i = 0..3: accepted unmarked;
  // i = 4, 5: marked (4 > 3, 5 > 3); i = 6, 7: dropped (queue full).
  TestRouter r(1, {{"single"}, {"dctcp", {{"k_pkts", "3"}, {"capacity_pkts", "6"}}}, {"fifo"}});
  r.input(burst(8, true), 0);
  REQUIRE(r.counters(0).marked == 2);
  REQUIRE(r.marks(0, 0, Reason::kAboveThreshold) == 2);
  REQUIRE(r.drops(0, 0, Reason::kQueueFull) == 2);
  const auto sent = r.drain(0, 0);
  REQUIRE(sent.size() == 6);
  for (uint32_t i = 0; i < 6; ++i) {
    REQUIRE(sent[i].seq == i);
    REQUIRE(sent[i].ce() == (i >= 4));
  }
  r.check_invariants();
}

TEST_CASE("dctcp: packets that are not ECN-capable", "[schemes][dctcp]") {
  SECTION("queued unmarked by default") {
    TestRouter r(1, {{"single"}, {"dctcp", {{"k_pkts", "3"}}}, {"fifo"}});
    r.input(burst(8, false), 0);
    REQUIRE(r.bank().packets(0, 0) == 8);
    REQUIRE(r.counters(0).marked == 0);
    r.check_invariants();
  }
  SECTION("dropped above K with drop_non_ect") {
    // Arrivals 0..3 find <= 3 queued; from then on each finds 4 > K and is dropped.
    TestRouter r(1, {{"single"}, {"dctcp", {{"k_pkts", "3"}, {"drop_non_ect", "true"}}}, {"fifo"}});
    r.input(burst(8, false), 0);
    REQUIRE(r.bank().packets(0, 0) == 4);
    REQUIRE(r.drops(0, 0, Reason::kAboveThreshold) == 4);
    r.check_invariants();
  }
}

TEST_CASE("dctcp preset: K = 65 by default; a steady one-in-one-out flow is never marked",
          "[schemes][dctcp]") {
  TestRouter r(2, preset("dctcp"));
  // Port 1: one ECT packet per timeslot, one sent per timeslot: every arrival finds 0 queued.
  for (Timeslot t = 0; t < 200; ++t) {
    Packet p = pkt(2, uint32_t(t), 1);
    p.flags = kFlagEct;
    r.input(p, t);
    r.output(t);
  }
  REQUIRE(r.counters(1).marked == 0);
  // Port 0: a burst of 100 ECT packets: arrivals 66..99 find more than 65 queued: 34 marks.
  r.input(burst(100, true), 200);
  REQUIRE(r.counters(0).marked == 34);
  r.check_invariants();
}

TEST_CASE("dctcp: a K that could never mark is a config error placed at the field", "[schemes][dctcp][config-errors]") {
  // Arrivals finding more than K queued are marked, those finding capacity_pkts dropped: the
  // largest K that can mark is capacity_pkts - 2.
  auto build = [](const std::string& k, const std::string& capacity, bool placed) {
    ParamValues v;
    v.where = "exp.yaml:4:5: routers.default.queue_manager";
    v.set("capacity_pkts", capacity, placed ? "exp.yaml:5:22: routers.default.queue_manager.capacity_pkts" : "");
    v.set("k_pkts", k, placed ? "exp.yaml:5:41: routers.default.queue_manager.k_pkts" : "");
    return Registry<QueueManagerBase>::instance().get("dctcp", "test").make(v, nullptr);
  };
  REQUIRE_THROWS_WITH(build("100", "64", true),
                      "exp.yaml:5:41: routers.default.queue_manager.k_pkts (queue_manager 'dctcp'): k_pkts (100) must "
                      "be below capacity_pkts - 1 (64 - 1): arrivals that find more than k_pkts queued are marked, "
                      "those that find capacity_pkts are dropped, so nothing would ever be marked");
  REQUIRE_THROWS_WITH(build("63", "64", false),
                      Catch::StartsWith("exp.yaml:4:5: routers.default.queue_manager (queue_manager 'dctcp'): k_pkts "
                                        "(63) must be below capacity_pkts - 1 (64 - 1)"));
  REQUIRE_NOTHROW(build("62", "64", true));
}
