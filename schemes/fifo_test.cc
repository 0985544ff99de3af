// "single" + "fifo": one queue per port, sent in arrival order, one packet per port per timeslot.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

TEST_CASE("fifo: arrival order per port, one packet per port per timeslot", "[schemes][fifo]") {
  TestRouter r(3, {{"single"}, {"droptail"}, {"fifo"}});
  REQUIRE(r.bank().queues_per_port() == 1);
  // Flows 1 and 2 interleave towards port 0; flow 3 goes to port 2; port 1 stays idle.
  r.input({pkt(1, 0, 0), pkt(2, 0, 0), pkt(3, 0, 2), pkt(1, 1, 0), pkt(3, 1, 2), pkt(2, 1, 0)}, 0);
  // t=0 and t=1: ports 0 and 2 each send one packet; t=2, t=3: only port 0 has packets left.
  std::vector<std::pair<uint32_t, uint32_t>> port0, port2;  // (flow, seq)
  for (Timeslot t = 0; t < 4; ++t) {
    const auto sent = r.output(t);
    REQUIRE(sent.size() == (t < 2 ? 2u : 1u));
    for (const auto& [port, p] : sent) {
      REQUIRE(port != 1);
      (port == 0 ? port0 : port2).emplace_back(p.flow, p.seq);
    }
  }
  REQUIRE(port0 == std::vector<std::pair<uint32_t, uint32_t>>{{1, 0}, {2, 0}, {1, 1}, {2, 1}});
  REQUIRE(port2 == std::vector<std::pair<uint32_t, uint32_t>>{{3, 0}, {3, 1}});
  REQUIRE(r.output(4).empty());
  REQUIRE(r.bank().idle_since(0, 0) == 3);  // port 0 sent its last packet at t=3
  r.check_invariants();
}
