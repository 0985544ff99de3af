// Round robin: one packet from each non-empty queue in turn, resuming after the last served.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

TEST_CASE("round_robin: queues take turns; a queue that fills up joins after the last served",
          "[schemes][round_robin]") {
  TestRouter r(1, {{"by_source", {{"num_queues", "4"}}}, {"droptail"}, {"round_robin"}});
  // Sources 0 (3 packets), 1 (1 packet), 3 (2 packets): turns 0, 1, 3, 0, 3, 0.
  r.input({from_source(0, 0), from_source(0, 1), from_source(0, 2), from_source(1, 0), from_source(3, 0),
           from_source(3, 1)},
          0);
  REQUIRE(r.output(0)[0].second.flow == 0);
  REQUIRE(r.output(1)[0].second.flow == 1);
  // Source 2 becomes backlogged after queue 1 was served: it is next (2 comes after 1), before 3.
  r.input(from_source(2, 0), 2);
  REQUIRE(flow_ids(r.drain(0, 2)) == std::vector<uint32_t>{2, 3, 0, 3, 0});
  r.check_invariants();
}

TEST_CASE("round_robin preset: per-source fairness under a greedy source", "[schemes][round_robin]") {
  // Source 5 offers 3 packets per timeslot, source 9 one: each gets every other timeslot, and
  // source 5's droptail queue (1024) fills and drops its excess.
  TestRouter r(1, preset("round_robin"));
  uint32_t sent5 = 0, sent9 = 0;
  for (Timeslot t = 0; t < 2000; ++t) {
    r.input({from_source(5, 3 * t), from_source(5, 3 * t + 1), from_source(5, 3 * t + 2), from_source(9, t)}, t);
    const auto sent = r.output(t);
    (sent[0].second.flow == 5 ? sent5 : sent9)++;
  }
  REQUIRE(sent5 == 1000);
  REQUIRE(sent9 == 1000);
  REQUIRE(r.drops(0, 5, Reason::kQueueFull) > 0);
  REQUIRE(r.drops(0, 9, Reason::kQueueFull) == 0);
  r.check_invariants();
}
