// LSTF: the packet with the least slack left goes first; the wait is charged against its slack.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
Packet with_slack(uint32_t flow, uint32_t slack_ns) {
  Packet p = pkt(flow, 0, 0);
  p.custom[0] = slack_ns;
  return p;
}
}  // namespace

TEST_CASE("lstf: least slack left first, the wait charged against the slack", "[schemes][lstf]") {
  // One tick = 1 us. A (slack 50 us) and B (30 us) arrive at t=0, C (10 us) at t=5. At t=5 the
  // slack left is A 45, B 25, C 10: C goes first, having waited 0 (slack carried on: 10 us).
  // t=6: B (24 left; waited 6 us: 24000 ns on). t=7: A (43 left: 43000 ns).
  TestRouter r(1, preset("lstf"));
  r.input({with_slack(1, 50000), with_slack(2, 30000)}, 0);
  r.input(with_slack(3, 10000), 5);
  std::vector<std::pair<uint32_t, uint32_t>> sent;  // (flow, slack carried on)
  for (Timeslot t = 5; t <= 7; ++t)
    for (const auto& [port, p] : r.output(t)) sent.emplace_back(p.flow, p.custom[0]);
  REQUIRE(sent == std::vector<std::pair<uint32_t, uint32_t>>{{3, 10000}, {2, 24000}, {1, 43000}});

  // Past its slack: at t=15 D (1 us at t=10) is 4 us late, E (0 at t=14) 1 us late: D goes
  // first, and the slack it carries on stops at 0.
  r.input(with_slack(4, 1000), 10);
  r.input(with_slack(5, 0), 14);
  const auto out = r.output(15);
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].second.flow == 4);
  REQUIRE(out[0].second.custom[0] == 0);
  r.check_invariants();
}

TEST_CASE("lstf preset: endpoints send and get back 4 bytes of scheme data", "[schemes][lstf]") {
  const SchemePreset* p = SchemeRegistry::instance().find("lstf");
  REQUIRE(p != nullptr);
  REQUIRE(p->request_custom_bytes == 4);
  REQUIRE(p->verdict_custom_bytes == 4);
}
