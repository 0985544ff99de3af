// TCP NewReno over one bottleneck, against hand-derived traces.
//
// All loops (transports/test_loop.h): forward delay 2, reverse delay 2, a
// bottleneck as fast as the sender, so a packet sent at t is ACKed at t + 4.
// Within a timeslot ACKs are processed before the NIC sends. cwnd is in units
// of 1/1024 packet (TcpSender::kCwndUnit).
#include <catch2/catch.hpp>

#include "transports/test_loop.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
constexpr uint64_t U = TcpSender::kCwndUnit;

TransportSettings reno(uint32_t iw, uint32_t ssthresh = 0) { return reno_settings(iw, ssthresh); }

std::vector<Timeslot> times_of(const TestLoop& loop) {
  std::vector<Timeslot> t;
  for (const auto& e : loop.sent) t.push_back(e.t);
  return t;
}
}  // namespace

TEST_CASE("reno: slow start adds one packet per ACK; the ACK clock paces the sends", "[transports][reno]") {
  // IW 2, 20 packets. seq0@0, seq1@1; their ACKs at 4, 5 open the window to
  // 3 and 4: seq2@4, seq3@5, then (4 in flight) seq4@6, seq5@7. From t=8 an
  // ACK arrives every timeslot and the window is never the limit again: seq k
  // leaves at k + 2 for k >= 6, so seq19@21 and its ACK at 25. Every one of
  // the 20 ACKs adds one packet: cwnd = 2 + 20 = 22.
  TcpSender s(reno(2), 20);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  REQUIRE(loop.run_until_done(100) == 25);
  std::vector<Timeslot> expect = {0, 1, 4, 5, 6, 7};
  for (Timeslot k = 6; k < 20; ++k) expect.push_back(k + 2);
  REQUIRE(times_of(loop) == expect);
  REQUIRE(loop.acks.size() == 20);
  for (size_t k = 0; k < loop.acks.size(); ++k) REQUIRE(loop.acks[k].cwnd_units == (2 + k + 1) * U);
  REQUIRE(s.cwnd_pkts() == 22);
  REQUIRE(s.stats().retransmits == 0);
  REQUIRE(s.timer_deadline() == kNever);
  // Every sample was 4 timeslots: SRTT = 4 exactly.
  REQUIRE(s.rtt().samples() == 20);
  REQUIRE(s.rtt().srtt_x8() == 32);
}

TEST_CASE("reno: slow start ends at ssthresh, then one packet per window of ACKs", "[transports][reno]") {
  // IW 2, ssthresh 4: ACK 1 -> 3, ACK 2 -> 4 (= ssthresh); then congestion
  // avoidance counts ACKs against the window: 4 more ACKs -> 5, 5 more -> 6,
  // 6 more -> 7 (ACK 17).
  TcpSender s(reno(2, 4), 40);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  loop.run_until_done(200);
  REQUIRE(loop.acks.size() == 40);
  auto cwnd_after = [&](size_t n) { return loop.acks[n - 1].cwnd_units / U; };
  REQUIRE(cwnd_after(1) == 3);
  REQUIRE(cwnd_after(2) == 4);
  REQUIRE(cwnd_after(5) == 4);
  REQUIRE(cwnd_after(6) == 5);
  REQUIRE(cwnd_after(10) == 5);
  REQUIRE(cwnd_after(11) == 6);
  REQUIRE(cwnd_after(16) == 6);
  REQUIRE(cwnd_after(17) == 7);
  REQUIRE(s.ssthresh_units() == 4 * U);
}

TEST_CASE("reno: fast retransmit on the third duplicate ACK, full ACK ends recovery", "[transports][reno]") {
  // IW 10 = ssthresh (congestion avoidance from the start), 30 packets, the
  // first transmission of seq5 is lost. seq k leaves at k (window never full).
  // ACKs for seq0..4 at 4..8; seq6, 7, 8 produce duplicate ACKs (cum 5) at
  // 10, 11, 12. On the third (t=12): flight = high_tx 12 - snd_una 5 = 7,
  // ssthresh = 7/2 = 3.5 packets, cwnd = 3.5 + 3 = 6.5, seq5 resent at 12.
  // Duplicates at 13, 14, 15 inflate cwnd to 7.5, 8.5, 9.5: 7 in flight, so
  // seq12@14 and seq13@15. The resent seq5 fills the hole at the receiver
  // (t=14), whose ACK (cum 12 = recover) at 16 ends recovery: cwnd = 3.5.
  TcpSender s(reno(10, 10), 30);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return seg.seq == 5 && tx == 0; };
  loop.run_until(12);
  REQUIRE(s.dup_acks() == 2);
  REQUIRE_FALSE(s.in_fast_recovery());
  loop.run_until(13);
  REQUIRE(s.in_fast_recovery());
  REQUIRE(s.ssthresh_units() == 3584);
  REQUIRE(loop.ack_at(12)->cwnd_units == 6656);
  REQUIRE(loop.send_times(5) == std::vector<Timeslot>{5, 12});
  REQUIRE(loop.sent.back().seg.retransmit);
  loop.run_until(17);
  REQUIRE(loop.ack_at(13)->cwnd_units == 7680);
  REQUIRE(loop.ack_at(15)->cwnd_units == 9728);
  REQUIRE(loop.send_times(12) == std::vector<Timeslot>{14});
  REQUIRE(loop.send_times(13) == std::vector<Timeslot>{15});
  REQUIRE(loop.ack_at(16)->ack.cum_ack == 12);
  REQUIRE(loop.ack_at(16)->cwnd_units == 3584);
  REQUIRE_FALSE(s.in_fast_recovery());
  REQUIRE(loop.send_times(14) == std::vector<Timeslot>{16});
  loop.run_until_done(200);
  REQUIRE(s.stats().fast_retransmits == 1);
  REQUIRE(s.stats().retransmits == 1);
  REQUIRE(s.stats().timeouts == 0);
}

TEST_CASE("reno: NewReno partial ACK retransmits the next hole without a new recovery", "[transports][reno]") {
  // As above, but the first transmissions of seq5 and seq7 are lost.
  // ACKs for seq0..4 at 4..8; duplicates (cum 5) from seq6, 8, 9 at 10, 12,
  // 13. On the third (t=13): flight = 13 - 5 = 8, ssthresh 4, cwnd 7, recover
  // 13, seq5 resent at 13. Duplicates at 14, 15, 16 (seq10..12): cwnd 8, 9,
  // 10 -> seq13@15, seq14@16. The resent seq5 reaches the receiver at 15:
  // cum 7 (seq7 still missing), a partial ACK at 17: 2 packets ACKed, cwnd =
  // 10 - 2 + 1 = 9, seq7 resent at 17. Duplicates at 18, 19 (seq13, 14):
  // cwnd 10, 11 -> seq15@18, seq16@19, and seq17@20 (10 in flight < 11).
  // The resent seq7 arrives at 19: cum 15 >= recover, the full ACK at 21
  // sets cwnd = ssthresh = 4 -> seq18@21 (3 in flight).
  TcpSender s(reno(10, 10), 30);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return (seg.seq == 5 || seg.seq == 7) && tx == 0; };
  loop.run_until(22);
  REQUIRE(loop.send_times(5) == std::vector<Timeslot>{5, 13});
  REQUIRE(s.stats().fast_retransmits == 1);
  REQUIRE(loop.ack_at(13)->cwnd_units == 7 * U);
  REQUIRE(loop.ack_at(17)->ack.cum_ack == 7);
  REQUIRE(loop.ack_at(17)->cwnd_units == 9 * U);
  REQUIRE(loop.send_times(7) == std::vector<Timeslot>{7, 17});
  REQUIRE(loop.send_times(15) == std::vector<Timeslot>{18});
  REQUIRE(loop.send_times(16) == std::vector<Timeslot>{19});
  REQUIRE(loop.send_times(17) == std::vector<Timeslot>{20});
  REQUIRE(loop.ack_at(21)->ack.cum_ack == 15);
  REQUIRE(loop.ack_at(21)->cwnd_units == 4 * U);
  REQUIRE(loop.send_times(18) == std::vector<Timeslot>{21});
  REQUIRE_FALSE(s.in_fast_recovery());
  REQUIRE(s.stats().partial_acks == 1);
  loop.run_until_done(300);
  REQUIRE(s.stats().fast_retransmits == 1);
  REQUIRE(s.stats().retransmits == 2);
  REQUIRE(s.stats().timeouts == 0);
}

TEST_CASE("reno: only the first partial ACK restarts the timer (RFC 6582 Impatient)", "[transports][reno]") {
  // As above, with the first transmissions of seq5, 7, 9 and 11 lost. RTT
  // samples of 4 from seq0..4 bring the RTO to min_rto = 10 (see the timeout
  // test below). Duplicates (cum 5) from seq6, 8, 10 at 10, 12, 14: seq5
  // resent at 14, which reaches the receiver at 16: a partial ACK (cum 7)
  // at 18, the first, restarts the timer: deadline 28; seq7 resent at 18.
  // Partial ACKs at 22 (cum 9) and 26 (cum 11) resend seq9 and seq11 but
  // leave the deadline at 28, before the ACK of seq11's resend (30): a
  // timeout at 28, go-back-N from seq11. With rto_every_partial_ack the ACK
  // at 26 moves the deadline to 36, and the ACK at 30 (cum 17) ends the
  // recovery without a timeout.
  auto run = [](bool every, std::vector<Timeslot>* timeouts) {
    TransportSettings st = reno(10, 10);
    st.rto_every_partial_ack = every;
    TcpSender s(st, 40);
    Receiver r(EcnEcho::kNone);
    TestLoop loop(s, r);
    loop.drop = [](const Segment& seg, uint32_t tx) {
      return (seg.seq == 5 || seg.seq == 7 || seg.seq == 9 || seg.seq == 11) && tx == 0;
    };
    const Timeslot done = loop.run_until_done(300);
    REQUIRE(loop.send_times(5) == std::vector<Timeslot>{5, 14});
    REQUIRE(loop.ack_at(18)->ack.cum_ack == 7);
    REQUIRE(loop.send_times(7) == std::vector<Timeslot>{7, 18});
    REQUIRE(loop.ack_at(22)->ack.cum_ack == 9);
    REQUIRE(loop.ack_at(26)->ack.cum_ack == 11);
    REQUIRE(s.stats().fast_retransmits == 1);
    REQUIRE(s.stats().partial_acks == 3);
    *timeouts = loop.timeouts;
    return std::pair{done, loop.send_times(11)};
  };
  std::vector<Timeslot> timeouts;
  const auto [impatient_done, impatient_11] = run(false, &timeouts);
  REQUIRE(timeouts == std::vector<Timeslot>{28});
  REQUIRE(impatient_11 == std::vector<Timeslot>{11, 26, 28});  // resent by recovery, then by go-back-N
  const auto [steady_done, steady_11] = run(true, &timeouts);
  REQUIRE(timeouts.empty());
  REQUIRE(steady_11 == std::vector<Timeslot>{11, 26});
  REQUIRE(steady_done < impatient_done);
}

TEST_CASE("reno: timeout with exponential backoff, reset by a fresh RTT sample", "[transports][reno]") {
  // IW 4, window cap 7, min RTO 10, 14 packets; seq3's first two
  // transmissions are lost. The duplicate-ACK threshold is out of reach, so
  // only the timer can recover.
  // seq0..3 at 0..3; ACKs at 4, 5, 6 (slow start: cwnd 5, 6, 7) let seq4..6
  // go at 4..6, then seq7@7, seq8@8, seq9@9 fill the cap of 7 in flight.
  // RTT samples of 4: after the first RTO = 4 + 4·2 = 12, after the second
  // ceil(4 + 4·1.5) = 10, after the third ceil(4 + 4·1.125) = 9 -> min 10;
  // the timer restarts at 6 + 10 = 16. seq4..9 give 6 duplicate ACKs (8..13).
  // t=16: timeout. ssthresh = flight (10 - 3) / 2 = 3.5, cwnd 1, RTO 20, seq3
  // resent (lost again). t=36: second timeout, ssthresh kept at 3.5, RTO 40,
  // seq3 resent and delivered: the receiver has 4..9 -> cum 10 at 40. No RTT
  // sample (Karn: seq3 was retransmitted), so the RTO stays 40. Slow start
  // 1 -> 3.5 takes 3 of the 7 packets ACKed, congestion avoidance counts the
  // other 4 against a window of 3: cwnd 4.5 -> seq10..13 at 40..43. The
  // ACK of seq10 at 44 is a fresh sample of 4: SRTT 4, RTTVAR 0.75,
  // RTO = max(7, 10) = 10, the backoff is gone. Last ACK (seq13) at 47.
  TransportSettings st = reno(4);
  st.max_cwnd_pkts = 7;
  st.dupack_threshold = 1000;
  TcpSender s(st, 14);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return seg.seq == 3 && tx < 2; };
  loop.run_until(16);
  REQUIRE(s.rto() == 10);
  REQUIRE(s.timer_deadline() == 16);
  REQUIRE(s.stats().dup_acks == 6);
  REQUIRE(loop.send_times(9) == std::vector<Timeslot>{9});
  loop.run_until(17);
  REQUIRE(loop.timeouts == std::vector<Timeslot>{16});
  REQUIRE(s.cwnd_units() == 1 * U);
  REQUIRE(s.ssthresh_units() == 3584);
  REQUIRE(s.rto() == 20);
  REQUIRE(s.timer_deadline() == 36);
  loop.run_until(37);
  REQUIRE(loop.timeouts == std::vector<Timeslot>{16, 36});
  REQUIRE(s.ssthresh_units() == 3584);
  REQUIRE(s.rto() == 40);
  REQUIRE(s.consecutive_timeouts() == 2);
  REQUIRE(loop.send_times(3) == std::vector<Timeslot>{3, 16, 36});
  loop.run_until(41);
  REQUIRE(loop.ack_at(40)->ack.cum_ack == 10);
  REQUIRE(s.cwnd_units() == 4608);
  REQUIRE(s.rto() == 40);
  REQUIRE(s.timer_deadline() == 80);
  REQUIRE(s.consecutive_timeouts() == 0);
  loop.run_until(45);
  REQUIRE(s.rto() == 10);
  REQUIRE(s.timer_deadline() == 54);
  REQUIRE(loop.send_times(10) == std::vector<Timeslot>{40});
  REQUIRE(loop.send_times(13) == std::vector<Timeslot>{43});
  REQUIRE(loop.run_until_done(200) == 47);
  REQUIRE(s.stats().timeouts == 2);
  REQUIRE(s.stats().retransmits == 2);
  REQUIRE(s.stats().fast_retransmits == 0);
}

TEST_CASE("reno: the RTO never goes below min_rto nor above max_rto", "[transports][reno]") {
  // min 10, max 25. RTT 4 gives 12 > 10 first; every timeout doubles up to 25.
  TransportSettings st = reno(1);
  st.max_rto = 25;
  TcpSender s(st, 2);
  Receiver r(EcnEcho::kNone);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return seg.seq == 1; };  // seq1 never arrives
  loop.run_until(5);
  REQUIRE(s.rto() == 12);  // 4 + 4 * 2
  // seq1 sent at 4 -> deadline 4 + 12 = 16; then 16 + 24, then 40 + 25, 65 + 25.
  loop.run_until(91);
  REQUIRE(loop.timeouts == std::vector<Timeslot>{16, 40, 65, 90});
  REQUIRE(s.rto() == 25);
}

TEST_CASE("reno: a base RTT seeds the estimator like a handshake sample", "[transports][reno]") {
  // base RTT 4: RTO = 4 + 4 * 2 = 12 before any data; without it, initial_rto.
  TcpSender seeded(reno(10), 5, 4);
  REQUIRE(seeded.rto() == 12);
  TcpSender plain(reno(10), 5);
  REQUIRE(plain.rto() == 10);
}

TEST_CASE("reno: ACKs that make no sense are counted and ignored", "[transports][reno]") {
  TcpSender s(reno(4), 10);
  for (Timeslot t = 0; t < 4; ++t) REQUIRE(s.next_send(t));
  s.on_ack({7, 6, false}, 5);  // beyond anything sent
  REQUIRE(s.stats().invalid_acks == 1);
  s.on_ack({2, 1, false}, 5);
  s.on_ack({1, 0, false}, 6);  // reordered, below snd_una
  REQUIRE(s.stats().stale_acks == 1);
  REQUIRE(s.snd_una() == 2);
}

TEST_CASE("reno: a full ACK that overtakes a pending fast retransmission cancels it", "[transports][reno]") {
  // seq0..9 sent; three duplicates of cum 0 (flight 10): ssthresh 5, cwnd 8,
  // seq0 due for retransmission. Before the NIC takes it, cum 10 arrives (seq0
  // was only late): recovery ends, cwnd = 5, and the next segment is new data.
  TcpSender s(reno(10), 20);
  for (Timeslot t = 0; t < 10; ++t) REQUIRE(s.next_send(t)->seq == t);
  for (uint32_t trigger = 1; trigger <= 3; ++trigger) s.on_ack({0, trigger, false}, 10 + trigger);
  REQUIRE(s.in_fast_recovery());
  REQUIRE(s.cwnd_units() == 8 * U);
  s.on_ack({10, 0, false}, 14);
  REQUIRE_FALSE(s.in_fast_recovery());
  REQUIRE(s.cwnd_units() == 5 * U);
  const auto seg = s.next_send(14);
  REQUIRE(seg->seq == 10);
  REQUIRE_FALSE(seg->retransmit);
  REQUIRE(s.stats().retransmits == 0);
}

TEST_CASE("reno: lookahead promise", "[transports][reno]") {
  // IW 2: after two sends the sender is window-limited; it promises quiet
  // until the earlier of the RTO (10 after the first send) and the first ACK.
  TcpSender s(reno(2), 10);
  REQUIRE(s.quiet_until(0, kNever) == 0);
  REQUIRE(s.next_send(0));
  REQUIRE(s.next_send(1));
  REQUIRE_FALSE(s.can_send());
  REQUIRE(s.quiet_until(2, 5) == 5);
  REQUIRE(s.quiet_until(2, kNever) == 10);
  REQUIRE_FALSE(s.next_send(2));
}
