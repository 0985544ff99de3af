// Stock classifiers: the queue each packet joins, read off the bank after input.
#include <catch2/catch.hpp>

#include <set>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
// The queue of port 0 that `p` joins (the router is left holding it).
QueueId queue_of(TestRouter& r, Packet p) {
  std::vector<uint32_t> before(r.bank().queues_per_port());
  for (QueueId q = 0; q < before.size(); ++q) before[q] = r.bank().packets(0, q);
  p.dst = 0;
  r.input(p, 0);
  for (QueueId q = 0; q < before.size(); ++q)
    if (r.bank().packets(0, q) == before[q] + 1) return q;
  FAIL("packet was not queued");
  return 0;
}
Components with(Spec cls) { return {std::move(cls), {"droptail"}, {"fifo"}}; }
}  // namespace

TEST_CASE("by_priority_thresholds: queue = number of thresholds below the priority", "[schemes][classifiers]") {
  // Defaults 10, 100, 1000, 10000 -> 5 queues holding priorities <=10, <=100, <=1000, <=10000, more.
  TestRouter r(1, with({"by_priority_thresholds"}));
  REQUIRE(r.bank().queues_per_port() == 5);
  const std::vector<std::pair<uint32_t, QueueId>> cases = {
      {0, 0}, {10, 0}, {11, 1}, {100, 1}, {101, 2}, {1000, 2}, {10000, 3}, {10001, 4}, {UINT32_MAX, 4}};
  for (const auto& [prio, q] : cases) {
    Packet p = pkt(1, 0);
    p.priority = prio;
    INFO("priority " << prio);
    REQUIRE(queue_of(r, p) == q);
  }
  r.check_invariants();

  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(make_component<ClassifierBase>({"by_priority_thresholds", {{"thresholds", "5,5"}}}),
                      Contains("strictly ascending"));
  std::string t63 = "1";  // 63 thresholds -> 64 queues, the most a port has
  for (int i = 2; i <= 63; ++i) t63 += "," + std::to_string(i);
  const std::string t64 = t63 + ",64";
  REQUIRE(make_component<ClassifierBase>({"by_priority_thresholds", {{"thresholds", t63}}})->num_queues() == 64);
  REQUIRE_THROWS_WITH(make_component<ClassifierBase>({"by_priority_thresholds", {{"thresholds", t64}}}),
                      Contains("at most 63"));
}

TEST_CASE("by_dscp: queue 0 holds the highest class", "[schemes][classifiers]") {
  // num_queues 8, dscp_shift 3: class = dscp >> 3 (0..7), queue = 7 - class.
  TestRouter r(1, with({"by_dscp"}));
  REQUIRE(r.bank().queues_per_port() == 8);
  const std::vector<std::pair<uint8_t, QueueId>> cases = {{0, 7}, {7, 7}, {8, 6}, {46, 2}, {48, 1}, {63, 0}};
  for (const auto& [dscp, q] : cases) {
    Packet p = pkt(1, 0);
    p.dscp = dscp;
    INFO("dscp " << int(dscp));
    REQUIRE(queue_of(r, p) == q);
  }
  // Two queues: class 0 (dscp 0..7) -> queue 1; any higher class is clamped to 1 -> queue 0.
  TestRouter two(1, with({"by_dscp", {{"num_queues", "2"}}}));
  Packet p = pkt(1, 0);
  p.dscp = 5;
  REQUIRE(queue_of(two, p) == 1);
  p.dscp = 8;
  REQUIRE(queue_of(two, p) == 0);
  p.dscp = 63;
  REQUIRE(queue_of(two, p) == 0);
  // Shift 0, 64 queues: queue = 63 - dscp.
  TestRouter all(1, with({"by_dscp", {{"num_queues", "64"}, {"dscp_shift", "0"}}}));
  p.dscp = 20;
  REQUIRE(queue_of(all, p) == 43);
  REQUIRE_THROWS_AS(make_component<ClassifierBase>({"by_dscp", {{"dscp_shift", "6"}}}), ConfigError);
}

TEST_CASE("by_source and by_flow", "[schemes][classifiers]") {
  TestRouter r(1, with({"by_source", {{"num_queues", "4"}}}));
  REQUIRE(r.bank().queues_per_port() == 4);
  for (EndpointId src = 0; src < 10; ++src) {
    Packet p = pkt(1, 0);
    p.src = src;
    REQUIRE(queue_of(r, p) == src % 4);
  }
  REQUIRE(TestRouter(1, with({"by_source"})).bank().queues_per_port() == 32);
  REQUIRE_THROWS_AS(make_component<ClassifierBase>({"by_source", {{"num_queues", "65"}}}), ConfigError);
  REQUIRE_THROWS_AS(make_component<ClassifierBase>({"by_flow", {{"num_queues", "0"}}}), ConfigError);

  // by_flow: every packet of a flow joins one queue; 800 flows over 8 queues land about 100 per
  // queue (binomial, sd ~ 9.4; we allow +-50).
  TestRouter f(1, with({"by_flow", {{"num_queues", "8"}}}));
  std::vector<uint32_t> per_queue(8);
  for (uint32_t flow = 0; flow < 800; ++flow) {
    const QueueId q = queue_of(f, pkt(flow, 0));
    REQUIRE(queue_of(f, pkt(flow, 1)) == q);
    ++per_queue[q];
  }
  for (uint32_t n : per_queue) REQUIRE((n > 50 && n < 150));
  f.check_invariants();
}
