// pFabric's minimal rate control against hand-derived traces. Loop: forward
// delay 2, reverse delay 2; the path's base RTT is 4 timeslots, so the
// initial window is the BDP (4 packets) and the fixed RTO is 3 x 4 = 12.
#include <catch2/catch.hpp>

#include "transports/test_loop.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
constexpr uint64_t U = TcpSender::kCwndUnit;

TransportSettings pfabric() {
  TransportSettings s;
  s.kind = TransportKind::kPfabric;
  s.min_rto = 1000;  // unused by pfabric: its RTO is fixed
  s.initial_rto = 1000;
  s.max_rto = 100000;
  return s;
}
}  // namespace

TEST_CASE("pfabric: BDP window, no fast retransmit, fixed RTO, slow start from 1", "[transports][pfabric]") {
  // 8 packets; seq1's first transmission is lost.
  // seq0..3 at 0..3 (window 4). t=4: cum 1, slow start -> 5, seq4@4, the
  // timer restarts at 4 + 12 = 16; seq5@5 (4 in flight < 5). Duplicate ACKs
  // (cum 1) at 6, 7, 8, 9 are ignored: no fast retransmit.
  // t=16: timeout: ssthresh = max(flight 5 / 2, 2) = 2.5 packets, cwnd 1,
  // RTO still 12, seq1 resent; delivered at 18 the receiver jumps to cum 6,
  // ACKed at 20: 5 packets ACKed, slow start 1 -> 2.5 takes 2 of them
  // (capped at ssthresh), congestion avoidance counts the other 3 against
  // a window of 2: cwnd 3.5 (3584 units), 1 counted. seq6@20, seq7@21, last
  // ACK at 25.
  TcpSender s(pfabric(), 8, 4);
  REQUIRE(s.cwnd_pkts() == 4);
  REQUIRE(s.rto() == 12);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return seg.seq == 1 && tx == 0; };
  loop.run_until(16);
  REQUIRE(s.stats().dup_acks == 4);
  REQUIRE(s.stats().fast_retransmits == 0);
  REQUIRE(s.timer_deadline() == 16);
  loop.run_until(17);
  REQUIRE(loop.timeouts == std::vector<Timeslot>{16});
  REQUIRE(s.cwnd_units() == 1 * U);
  REQUIRE(s.ssthresh_units() == 2560);
  REQUIRE(s.rto() == 12);
  REQUIRE(s.timer_deadline() == 28);
  REQUIRE(loop.send_times(1) == std::vector<Timeslot>{1, 16});
  loop.run_until(21);
  REQUIRE(loop.ack_at(20)->ack.cum_ack == 6);
  REQUIRE(loop.ack_at(20)->cwnd_units == 3584);
  REQUIRE(loop.send_times(6) == std::vector<Timeslot>{20});
  REQUIRE(loop.run_until_done(100) == 25);
  REQUIRE(loop.send_times(7) == std::vector<Timeslot>{21});
  for (const auto& e : loop.sent) REQUIRE_FALSE(e.seg.ect);
}

TEST_CASE("pfabric: consecutive timeouts do not back off", "[transports][pfabric]") {
  // seq1 lost twice: timeouts at 16 and 16 + 12 = 28 (a reno sender would
  // wait 24); ssthresh is set by the first only; the third transmission
  // (28) is ACKed at 32.
  TcpSender s(pfabric(), 8, 4);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return seg.seq == 1 && tx < 2; };
  loop.run_until(33);
  REQUIRE(loop.timeouts == std::vector<Timeslot>{16, 28});
  REQUIRE(loop.send_times(1) == std::vector<Timeslot>{1, 16, 28});
  REQUIRE(loop.ack_at(32)->ack.cum_ack == 6);
  REQUIRE(s.ssthresh_units() == 2560);
  REQUIRE(s.rto() == 12);
}

TEST_CASE("pfabric: explicit window and RTO; without a base RTT they are required", "[transports][pfabric]") {
  TransportSettings st = pfabric();
  st.pfabric_initial_cwnd_pkts = 20;
  st.pfabric_rto = 40;
  TcpSender s(st, 100);
  REQUIRE(s.cwnd_pkts() == 20);
  REQUIRE(s.rto() == 40);
  REQUIRE_THROWS_WITH(TcpSender(pfabric(), 100), Catch::Contains("pfabric_initial_cwnd_pkts"));
}
