// pFabric: when full, drop the least urgent packet; send the earliest packet of the most urgent flow.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
Components pfabric(std::string capacity_pkts) {
  return {{"single"}, {"pfabric", {{"capacity_pkts", capacity_pkts}}}, {"pfabric"}};
}
}  // namespace

TEST_CASE("pfabric: a full buffer drops its least urgent packet, arrival included", "[schemes][pfabric]") {
  TestRouter r(1, pfabric("3"));
  // Fill with flows 1 (prio 5), 2 (9), 3 (3). Flow 4 (7) evicts flow 2 (9, the largest);
  // flow 5 (8) is itself the least urgent (> 7): dropped; flow 6 (7) ties the worst queued
  // packet: the arrival loses ties, dropped.
  r.input({with_priority(1, 0, 5), with_priority(2, 0, 9), with_priority(3, 0, 3), with_priority(4, 0, 7),
           with_priority(5, 0, 8), with_priority(6, 0, 7)},
          0);
  REQUIRE(r.log.drops.size() == 3);
  REQUIRE(r.log.drops[0].p.flow == 2);
  REQUIRE(r.log.drops[1].p.flow == 5);
  REQUIRE(r.log.drops[2].p.flow == 6);
  REQUIRE(r.counters(0).evicted == 1);
  REQUIRE(r.counters(0).dropped_on_arrival == 2);
  REQUIRE(r.drops(0, 0, Reason::kLowestPriority) == 3);
  // Remaining 1 (5), 3 (3), 4 (7) leave in priority order.
  REQUIRE(flow_ids(r.drain(0, 0)) == std::vector<uint32_t>{3, 1, 4});
  r.check_invariants();

  // Ties among queued packets: the latest of them is evicted.
  TestRouter t(1, pfabric("2"));
  t.input({with_priority(1, 0, 9), with_priority(2, 0, 9), with_priority(3, 0, 1)}, 0);
  REQUIRE(t.log.drops[0].p.flow == 2);
  REQUIRE(flow_ids(t.drain(0, 0)) == std::vector<uint32_t>{3, 1});
  t.check_invariants();
}

TEST_CASE("pfabric: the most urgent flow's earliest packet goes first", "[schemes][pfabric]") {
  // Queue: A0 (10), B0 (5), A1 (2), C0 (2). The most urgent packet is A1 (2; C0 ties but is
  // later), so flow A's earliest packet A0 goes first, then A1; then C0 (2), then B0 (5).
  TestRouter r(1, pfabric("24"));
  r.input({with_priority(1, 0, 10), with_priority(2, 0, 5), with_priority(1, 1, 2), with_priority(3, 0, 2)}, 0);
  std::vector<std::pair<uint32_t, uint32_t>> order;
  for (const Packet& p : r.drain(0, 0)) order.emplace_back(p.flow, p.seq);
  REQUIRE(order == std::vector<std::pair<uint32_t, uint32_t>>{{1, 0}, {1, 1}, {3, 0}, {2, 0}});
  r.check_invariants();
}

TEST_CASE("pfabric preset: 24-packet buffers keep the 24 most urgent packets", "[schemes][pfabric]") {
  REQUIRE(SchemeRegistry::instance().find("pfabric")->endpoint_priority == "remaining_size");
  // 30 single-packet flows with priorities 30, 29, ..., 1: the first 24 (30..7) fill the buffer;
  // each of the last six (6..1) evicts the largest queued (30, 29, ..., 25). Sent: 1, 2, ..., 24.
  TestRouter r(1, preset("pfabric"));
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 30; ++i) burst.push_back(with_priority(30 - i, 0, 30 - i));
  r.input(burst, 0);
  REQUIRE(r.counters(0).evicted == 6);
  for (size_t i = 0; i < 6; ++i) REQUIRE(r.log.drops[i].p.priority == 30 - i);
  std::vector<uint32_t> expected;
  for (uint32_t p = 1; p <= 24; ++p) expected.push_back(p);
  REQUIRE(flow_ids(r.drain(0, 0)) == expected);
  r.check_invariants();
}
