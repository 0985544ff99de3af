// DCQCN's reaction point on the paced sender (transport.h). Timers here in
// timeslots: alpha and rate timers 50, CNP interval 40; one flow through the
// test loop (base RTT 4).
#include <cmath>

#include <catch2/catch.hpp>

#include "transports/test_loop.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

TransportSettings dcqcn_settings() {
  TransportSettings s = reno_settings(10);
  s.kind = TransportKind::kDcqcn;
  s.dcqcn_alpha_timer = 50;
  s.dcqcn_rate_timer = 50;
  s.dcqcn_cnp_interval = 40;
  s.dcqcn_byte_counter_pkts = 1u << 30;  // timer events only
  return s;
}

}  // namespace

TEST_CASE("dcqcn: starts at line rate, paced, at most the path's BDP in flight", "[transports][dcqcn]") {
  TcpSender s(dcqcn_settings(), 1000, 4);
  Receiver r(EcnEcho::kPerPacket);
  TestLoop loop(s, r);
  loop.run_until(20);
  REQUIRE(s.dcqcn_rate() == 1.0);
  // One segment per timeslot (line rate), never more than 4 in flight.
  for (size_t i = 0; i < loop.sent.size(); ++i) REQUIRE(loop.sent[i].t == i);
  for (const auto& e : loop.sent) REQUIRE(e.seg.ect);
  REQUIRE(s.in_flight() <= 4);
  REQUIRE_THROWS_WITH(TcpSender(dcqcn_settings(), 10, 0), Catch::Contains("dcqcn: the path's base RTT is unknown"));
}

TEST_CASE("dcqcn: a CNP cuts the rate by alpha / 2, at most one per interval, then timers recover it",
          "[transports][dcqcn]") {
  TcpSender s(dcqcn_settings(), 100000, 4);
  Receiver r(EcnEcho::kPerPacket);
  TestLoop loop(s, r);
  // Mark the first 20 packets sent: ECE ACKs from t = 4 to ~24.
  loop.mark = [](const Segment& seg, uint32_t) { return seg.seq < 20; };
  loop.run_until(5);
  REQUIRE(s.stats().cnps == 1);
  REQUIRE(s.dcqcn_rate() == Approx(0.5));  // alpha starts at 1: Rc x (1 - 1/2)
  REQUIRE(s.dcqcn_target_rate() == 1.0);
  REQUIRE(s.dcqcn_alpha() == Approx(1.0));  // (1 - g) + g
  loop.run_until(40);
  REQUIRE(s.stats().cnps == 1);  // later ECEs fell within the 40-timeslot interval
  // Paced at the new rate: two timeslots apart.
  const auto& last = loop.sent.back();
  const auto& before = loop.sent[loop.sent.size() - 2];
  REQUIRE(last.t - before.t == 2);
  // Rate timer: at t = 4 + 50 the first fast-recovery step, Rc = (1 + 0.5) / 2.
  loop.run_until(4 + 50 + 1);
  REQUIRE(s.dcqcn_rate() == Approx(0.75));
  loop.run_until(4 + 5 * 50 + 1);  // five fast-recovery steps: 1 - 0.5^6
  REQUIRE(s.dcqcn_rate() == Approx(1 - 1.0 / 64));
  // Alpha decayed once per 50 timeslots without a CNP.
  REQUIRE(s.dcqcn_alpha() == Approx(std::pow(1 - 1.0 / 256, 5)));
  REQUIRE(s.stats().cnps == 1);
}

TEST_CASE("dcqcn: parameters and names", "[transports][dcqcn]") {
  REQUIRE(parse_transport_kind("dcqcn", "transport.kind") == TransportKind::kDcqcn);
  REQUIRE(ecn_echo_for(TransportKind::kDcqcn) == EcnEcho::kPerPacket);
  TransportParams p;
  p.dcqcn_rate_timer_us = 55;
  const TransportSettings st = resolve_transport(TransportKind::kDcqcn, p, 1200);
  REQUIRE(st.dcqcn_rate_timer == 46);  // 55 us of 1.2 us timeslots, rounded up
  REQUIRE(st.dcqcn_byte_counter_pkts == 6667);
}
