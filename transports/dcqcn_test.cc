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
  TransportSettings st = dcqcn_settings();
  st.dcqcn_cnp_deferred = false;  // echoes inside the interval make no CNP at its end (see below for the default)
  TcpSender s(st, 100000, 4);
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

TEST_CASE("dcqcn: echoes inside the CNP interval make one more CNP at its end (the paper's NP)",
          "[transports][dcqcn]") {
  TcpSender s(dcqcn_settings(), 100000, 4);  // dcqcn_cnp_deferred: the default
  Receiver r(EcnEcho::kPerPacket);
  TestLoop loop(s, r);
  // As above: the first 20 packets marked, their ECE ACKs from t = 4 to before t = 40
  // (paced at half rate after the first cut, seq 19 leaves at ~34).
  loop.mark = [](const Segment& seg, uint32_t) { return seg.seq < 20; };
  loop.run_until(43);
  REQUIRE(s.stats().cnps == 1);  // t = 4: Rc 1 -> 0.5, alpha 1; the later echoes wait for the interval's end
  REQUIRE(s.dcqcn_rate() == Approx(0.5));
  // t = 4 + 40: the deferred CNP (applied at the next ACK): RT = 0.5, Rc = 0.5 x (1 - 1/2), alpha 1.
  loop.run_until(44 + 3);
  REQUIRE(s.stats().cnps == 2);
  REQUIRE(s.dcqcn_rate() == Approx(0.25));
  REQUIRE(s.dcqcn_target_rate() == Approx(0.5));
  REQUIRE(s.dcqcn_alpha() == Approx(1.0));
  // No echo after it: the timers restart at 44; at 44 + 50 Rc = (0.5 + 0.25) / 2 (ACKs every
  // 4 timeslots at a quarter of line rate apply it by then + 5).
  loop.run_until(44 + 50 + 5);
  REQUIRE(s.dcqcn_rate() == Approx(0.375));
  loop.run_until(44 + 5 * 50 + 5);  // five fast-recovery steps: 0.5 - 0.25 / 32
  REQUIRE(s.dcqcn_rate() == Approx(0.5 - 0.25 / 32));
  REQUIRE(s.dcqcn_alpha() == Approx(std::pow(1 - 1.0 / 256, 5)));
  REQUIRE(s.stats().cnps == 2);
}

TEST_CASE("dcqcn: parameters and names", "[transports][dcqcn]") {
  REQUIRE(parse_transport_kind("dcqcn", "transport.kind") == TransportKind::kDcqcn);
  REQUIRE(ecn_echo_for(TransportKind::kDcqcn) == EcnEcho::kPerPacket);
  TransportParams p;
  p.dcqcn_rate_timer_us = 55;
  const TransportSettings st = resolve_transport(TransportKind::kDcqcn, p, 1200);
  REQUIRE(st.dcqcn_rate_timer == 46);  // 55 us of 1.2 us timeslots, rounded up
  REQUIRE(st.dcqcn_byte_counter_pkts == 6667);
  REQUIRE(st.dcqcn_window);        // the default: at most the path's BDP in flight (RDMA NICs)
  REQUIRE(st.dcqcn_cnp_deferred);  // the default: the paper's NP
  p.dcqcn_window = false;
  p.dcqcn_cnp_deferred = false;
  const TransportSettings off = resolve_transport(TransportKind::kDcqcn, p, 1200);
  REQUIRE(!off.dcqcn_window);
  REQUIRE(!off.dcqcn_cnp_deferred);
}

TEST_CASE("dcqcn: without the window, only the rate limits what is in flight", "[transports][dcqcn]") {
  TransportSettings nw = dcqcn_settings();
  nw.dcqcn_window = false;
  nw.min_rto = nw.initial_rto = 1000;  // no timeout before the first ACK
  TcpSender s(nw, 1000, 4);  // told the path's RTT is 4, but ACKs take 30 timeslots back
  Receiver r(EcnEcho::kPerPacket);
  LoopConfig lc;
  lc.reverse_delay = 30;
  TestLoop loop(s, r, lc);
  loop.run_until(20);
  REQUIRE(s.in_flight() == 20);  // line rate, no ACK back yet: the window (4) would have stopped it at 4
}
