// ECN (RFC 3168) and DCTCP (RFC 8257) senders over one bottleneck, against
// hand-derived traces. Loop: forward delay 2, reverse delay 2 (an unqueued
// packet sent at t is ACKed at t + 4); ACKs are processed before the NIC
// sends. cwnd in units of 1/1024 packet; alpha in units of 2^-20.
#include <catch2/catch.hpp>

#include "transports/test_loop.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
constexpr uint64_t U = TcpSender::kCwndUnit;

TransportSettings settings(TransportKind kind, uint32_t iw, uint32_t ssthresh) {
  TransportSettings s;
  s.kind = kind;
  s.initial_cwnd_pkts = iw;
  s.initial_ssthresh_pkts = ssthresh;
  s.min_rto = 50;
  s.initial_rto = 50;
  s.max_rto = 1000;
  s.dctcp_g = 1.0 / 16;
  s.dctcp_initial_alpha = 1.0;
  return s;
}

bool first_tx_of(const Segment& seg, uint32_t tx, std::initializer_list<uint32_t> seqs) {
  if (tx != 0) return false;
  for (uint32_t s : seqs)
    if (seg.seq == s) return true;
  return false;
}
}  // namespace

TEST_CASE("ecn: halve once per window on ECE, CWR on the next new data", "[transports][ecn]") {
  // IW 10 = ssthresh, 40 packets; the first transmissions of seq0, 1, 2 are
  // CE-marked, later seq6. The receiver latches ECE from seq0 until the CWR
  // packet arrives.
  // t=4: ACK cum 1 with ECE: ssthresh = cwnd = 10/2 = 5, no more reactions
  //      until an ACK covers data sent after this point (high_tx = 4). seq4,
  //      the next new data, carries CWR.
  // t=5, 6, 7: ACKs cum 2, 3, 4 with ECE (seq3 was not marked, but the latch
  //      holds until seq4's CWR reaches the receiver at 6): no reaction, no
  //      growth. t=8, 9: cum 5, 6 without ECE: congestion avoidance counts 2.
  // t=10: cum 7 with ECE (seq6 marked): seq6 was sent after the reduction, so
  //      cwnd = 5/2 = 2.5 packets (2560 units), ssthresh the same. high_tx = 10,
  //      3 in flight: nothing can go until the ACKs at 11, 12 (cum 8, 9; ECE,
  //      data from before this reduction) leave 1 in flight: seq10 with CWR @12.
  TcpSender s(settings(TransportKind::kEcn, 10, 10), 40);
  Receiver r(EcnEcho::kRfc3168);
  TestLoop loop(s, r);
  loop.mark = [](const Segment& seg, uint32_t tx) { return first_tx_of(seg, tx, {0, 1, 2, 6}); };
  loop.run_until(13);
  REQUIRE(loop.ack_at(4)->ack.ece);
  REQUIRE(loop.ack_at(4)->cwnd_units == 5 * U);
  REQUIRE(loop.ack_at(4)->ssthresh_units == 5 * U);
  for (Timeslot t : {5, 6, 7}) {
    REQUIRE(loop.ack_at(t)->ack.ece);
    REQUIRE(loop.ack_at(t)->cwnd_units == 5 * U);
  }
  REQUIRE_FALSE(loop.ack_at(8)->ack.ece);
  REQUIRE(loop.ack_at(10)->ack.ece);
  REQUIRE(loop.ack_at(10)->cwnd_units == 2560);
  REQUIRE(loop.ack_at(10)->ssthresh_units == 2560);
  REQUIRE(loop.ack_at(12)->cwnd_units == 2560);
  REQUIRE(s.stats().ecn_reductions == 2);
  // CWR exactly on seq4 and seq10; every first transmission ECT.
  for (const auto& e : loop.sent) {
    REQUIRE(e.seg.cwr == (e.seg.seq == 4 || e.seg.seq == 10));
    REQUIRE(e.seg.ect);
  }
  REQUIRE(loop.send_times(10) == std::vector<Timeslot>{12});
  REQUIRE(loop.send_times(11).empty());
  loop.run_until_done(500);
  REQUIRE(s.stats().ecn_reductions == 2);
  REQUIRE(s.stats().retransmits == 0);
}

TEST_CASE("ecn: retransmissions are not ECN-capable; reno never is", "[transports][ecn]") {
  TcpSender ecn(settings(TransportKind::kEcn, 4, 0), 10);
  Receiver r(EcnEcho::kRfc3168);
  TestLoop loop(ecn, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return seg.seq == 1 && tx == 0; };
  loop.run_until_done(500);
  for (const auto& e : loop.sent) REQUIRE(e.seg.ect == !e.seg.retransmit);
  REQUIRE(ecn.stats().retransmits == 1);

  TcpSender reno(settings(TransportKind::kReno, 4, 0), 3);
  while (auto seg = reno.next_send(0)) REQUIRE_FALSE(seg->ect);
}

TEST_CASE("dctcp: alpha after a known marking pattern, and the cut cwnd x (1 - alpha/2)", "[transports][dctcp]") {
  // g = 1/16, alpha starts at 1. IW 8 = ssthresh, 60 packets. Marked: first
  // transmissions of seq0, seq1 and seq8. The receiver echoes each packet's CE.
  //
  // Window 1 = what was sent before the first ACK: seq0..3 (high_tx 4 at t=4).
  //  t=4: cum 1, ECE. alpha is still 1: cwnd = 8 x (1 - 1/2) = 4 (4096 units).
  //       No more reactions until an ACK covers seq >= 4.
  //  t=5: cum 2, ECE (seq1): ignored. t=6: cum 3 no ECE.
  //  t=7: cum 4 ends window 1: F = 2/4 = 1/2,
  //       alpha = 15/16 x 1 + 1/16 x 1/2 = 31/32 (1015808). Next window ends
  //       at high_tx = 7 (seq4..6 were sent at 4, 5, 6).
  //  t=8, 9: cum 5, 6: congestion avoidance counts 1, 2 of 4.
  //  t=10: cum 7 ends window 2: F = 0, alpha = 31/32 x 15/16 = 465/512
  //       (952320). CA count 3. Window 3 ends at high_tx 10.
  //  t=11: cum 8: CA count 4 = cwnd -> cwnd 5.
  //  t=12: cum 9, ECE (seq8): seq8 was sent at 8, after the cut. alpha is
  //       465/512 (window 3 not over): cwnd = 5 x (1 - 465/1024) = 5 - 2325/1024
  //       = 2795 units (2.73 packets); ssthresh the same.
  //  t=13: cum 10 ends window 3: 3 packets ACKed (cum 8, 9, 10), 1 with ECE:
  //       F = floor(2^20 / 3) = 349525; alpha = floor(952320 x 15/16 +
  //       349525 / 16) = floor(892800 + 21845.3125) = 914645.
  TcpSender s(settings(TransportKind::kDctcp, 8, 8), 60);
  Receiver r(EcnEcho::kPerPacket);
  TestLoop loop(s, r);
  loop.mark = [](const Segment& seg, uint32_t tx) { return first_tx_of(seg, tx, {0, 1, 8}); };

  loop.run_until(5);
  REQUIRE(loop.ack_at(4)->cwnd_units == 4 * U);
  REQUIRE(s.dctcp().alpha_fp() == (1u << 20));
  loop.run_until(8);
  REQUIRE(loop.ack_at(5)->ack.ece);
  REQUIRE(loop.ack_at(5)->cwnd_units == 4 * U);
  REQUIRE_FALSE(loop.ack_at(6)->ack.ece);
  REQUIRE(s.dctcp().windows() == 1);
  REQUIRE(s.dctcp().last_fraction_fp() == (1u << 19));
  REQUIRE(s.dctcp().alpha_fp() == 1015808);
  loop.run_until(11);
  REQUIRE(s.dctcp().windows() == 2);
  REQUIRE(s.dctcp().alpha_fp() == 952320);
  REQUIRE(loop.ack_at(10)->cwnd_units == 4 * U);
  loop.run_until(12);
  REQUIRE(loop.ack_at(11)->cwnd_units == 5 * U);
  loop.run_until(13);
  REQUIRE(loop.ack_at(12)->ack.ece);
  REQUIRE(loop.ack_at(12)->cwnd_units == 2795);
  REQUIRE(loop.ack_at(12)->ssthresh_units == 2795);
  REQUIRE(s.cwnd_pkts() == 2);
  loop.run_until(14);
  REQUIRE(s.dctcp().windows() == 3);
  REQUIRE(s.dctcp().last_fraction_fp() == 349525);
  REQUIRE(s.dctcp().alpha_fp() == 914645);
  REQUIRE(s.stats().ecn_reductions == 2);
  loop.run_until_done(1000);
  REQUIRE(s.stats().ecn_reductions == 2);
  REQUIRE(s.stats().retransmits == 0);
  for (const auto& e : loop.sent) REQUIRE(e.seg.ect);
}

TEST_CASE("dctcp: without marks alpha decays by (1 - g) per window and cwnd is never cut", "[transports][dctcp]") {
  // Windows of 3 packets (as above, the RTT is 4 and the window never
  // limits once cwnd > 3); 10 windows: alpha = 1 x (15/16)^10, computed in
  // fixed point step by step: each step floor(alpha x 15/16).
  TcpSender s(settings(TransportKind::kDctcp, 8, 0), 31);
  Receiver r(EcnEcho::kPerPacket);
  TestLoop loop(s, r);
  loop.run_until_done(1000);
  // Windows: seq0..3, then 3 packets each: 4 + 3 x 9 = 31 ACKed in 10 windows.
  REQUIRE(s.dctcp().windows() == 10);
  uint64_t a = 1u << 20;
  for (int i = 0; i < 10; ++i) a = a * 15 / 16;  // (a x (2^20 - 2^16)) >> 20
  REQUIRE(s.dctcp().alpha_fp() == a);
  REQUIRE(a == 549935);  // 2^20 x (15/16)^10 = 549936.67; ten floors lose 1.67 units
  REQUIRE(s.stats().ecn_reductions == 0);
}

TEST_CASE("dctcp: the queue settles around K with one long flow", "[transports][dctcp]") {
  // A bottleneck at half the sender's rate (one packet every 2 timeslots),
  // marking arrivals that find more than K = 10 queued, 200 packets of
  // buffer. Slow start overshoots once (no loss), then DCTCP holds the
  // backlog in a narrow band around K and never lets it drain.
  // Exact: if the bottleneck is never idle, packet k leaves it at 2k, so the
  // last (k = 2999) leaves at 5998 and is ACKed at 5998 + 4 = 6002.
  // Band: in the second half of the run the backlog stays within K - 1 .. K + 2
  // (observed 9..12; a regression guard, not derived by hand).
  TcpSender s(settings(TransportKind::kDctcp, 10, 0), 3000);
  Receiver r(EcnEcho::kPerPacket);
  LoopConfig c;
  c.service_every = 2;
  c.mark_above = 10;
  c.queue_capacity = 200;
  TestLoop loop(s, r, c);
  const Timeslot end = loop.run_until_done(100000);
  REQUIRE(end == 6002);
  REQUIRE(s.stats().retransmits == 0);
  size_t max_late = 0, min_late = ~size_t{0};
  for (size_t t = end / 2; t < end - 100; ++t) {
    max_late = std::max(max_late, loop.queue_len[t]);
    min_late = std::min(min_late, loop.queue_len[t]);
  }
  REQUIRE(max_late <= 12);
  REQUIRE(min_late >= 9);
}
