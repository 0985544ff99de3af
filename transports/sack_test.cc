// SACK (RFC 2018) and RFC 6675 loss recovery, against hand-derived traces.
//
// The loops are those of reno_test.cc (transports/test_loop.h): forward and
// reverse delay 2, a bottleneck as fast as the sender, so a packet sent at t
// is ACKed at t + 4; within a timeslot ACKs are processed before the NIC
// sends. cwnd is in units of 1/1024 packet.
#include <catch2/catch.hpp>

#include "transports/sack_scoreboard.h"
#include "transports/test_loop.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
constexpr uint64_t U = TcpSender::kCwndUnit;

TransportSettings sack_reno(uint32_t iw, uint32_t ssthresh = 0, uint32_t blocks = 3) {
  return reno_settings(iw, ssthresh, blocks);
}

std::vector<SackBlock> blocks(const Ack& a) { return {a.sack, a.sack + a.sack_count}; }
Ack sack_ack(uint32_t cum, std::vector<SackBlock> b) {
  Ack a(cum, cum);
  for (const SackBlock& x : b) a.sack[a.sack_count++] = x;
  return a;
}
}  // namespace

namespace Catch {
template <> struct StringMaker<SackBlock> {
  static std::string convert(const SackBlock& b) {
    return "[" + std::to_string(b.left) + "," + std::to_string(b.right) + ")";
  }
};
}  // namespace Catch

TEST_CASE("sack receiver: the block of the triggering packet first, then the most recently reported",
          "[transports][sack]") {
  // RFC 2018 section 4. Packets 0, 2, 4, 6, 8 leave holes at 1, 3, 5, 7.
  Receiver r(EcnEcho::kNone, 1, 1, 3);
  REQUIRE(r.on_data(0, false, false, 0).ack[0].sack_count == 0);  // in order, no hole
  for (uint32_t s : {2u, 4u, 6u}) r.on_data(s, false, false, s);
  Ack a = r.on_data(8, false, false, 8).ack[0];
  REQUIRE(a.cum_ack == 1);
  REQUIRE(blocks(a) == std::vector<SackBlock>{{8, 9}, {6, 7}, {4, 5}});  // three blocks at most
  a = r.on_data(5, false, false, 9).ack[0];                                // joins [4,5) and [6,7)
  REQUIRE(blocks(a) == std::vector<SackBlock>{{4, 7}, {8, 9}, {2, 3}});
  a = r.on_data(1, false, false, 10).ack[0];  // advances the cumulative ACK: no block of its own
  REQUIRE(a.cum_ack == 3);
  REQUIRE(blocks(a) == std::vector<SackBlock>{{4, 7}, {8, 9}});
  REQUIRE(!a.dsack);
  a = r.on_data(8, false, false, 11).ack[0];  // a duplicate above the hole: its block first
  REQUIRE(blocks(a) == std::vector<SackBlock>{{8, 9}, {4, 7}});
  REQUIRE(a.dsack);  // and it says it came twice (RFC 2883)
  a = r.on_data(3, false, false, 12).ack[0];
  REQUIRE(a.cum_ack == 7);
  REQUIRE(blocks(a) == std::vector<SackBlock>{{8, 9}});
  a = r.on_data(7, false, false, 13).ack[0];
  REQUIRE(a.cum_ack == 9);
  REQUIRE(a.sack_count == 0);
  // Without sack_blocks, no blocks at all.
  Receiver plain(EcnEcho::kNone);
  plain.on_data(0, false, false, 0);
  REQUIRE(plain.on_data(2, false, false, 1).ack[0].sack_count == 0);
  REQUIRE(!plain.on_data(0, false, false, 2).ack[0].dsack);  // nor the D-SACK flag
}

TEST_CASE("sack receiver: long runs across bitset words", "[transports][sack]") {
  Receiver r(EcnEcho::kNone, 1, 1, 4);
  r.on_data(0, false, false, 0);
  for (uint32_t s = 2; s <= 300; ++s) r.on_data(s, false, false, s);
  Ack a = r.on_data(500, false, false, 400).ack[0];
  REQUIRE(blocks(a) == std::vector<SackBlock>{{500, 501}, {2, 301}});
  a = r.on_data(130, false, false, 401).ack[0];  // a duplicate in the middle of a 299-packet run
  REQUIRE(blocks(a) == std::vector<SackBlock>{{2, 301}, {500, 501}});
  for (uint32_t s = 301; s < 500; ++s) r.on_data(s, false, false, 402 + s);
  a = r.on_data(1, false, false, 1000).ack[0];
  REQUIRE(a.cum_ack == 501);
  REQUIRE(a.sack_count == 0);
}

TEST_CASE("sack scoreboard: pipe, IsLost, NextSeg rules 1 and 3, timeout", "[transports][sack]") {
  SackScoreboard sb(3);
  for (uint32_t s = 0; s < 10; ++s) sb.on_send(s, false);
  REQUIRE(sb.pipe() == 10);
  // 2 and 4..5 SACKed: three SACKed above 0 and 1, two above 3.
  REQUIRE(sb.on_sack(sack_ack(0, {{4, 6}, {2, 3}})) == 3);
  REQUIRE(sb.is_lost(0));
  REQUIRE(sb.is_lost(1));
  REQUIRE_FALSE(sb.is_lost(3));
  REQUIRE(sb.pipe() == 10 - 3 - 2);
  REQUIRE(sb.next_lost() == 0u);
  sb.on_send(0, true);  // a lost packet resent counts once again
  REQUIRE(sb.pipe() == 6);
  REQUIRE(sb.next_lost() == 1u);
  sb.on_send(1, true);
  REQUIRE_FALSE(sb.next_lost());
  REQUIRE(sb.next_unsacked() == 3u);  // rule 3: unSACKed, not lost, not resent
  sb.on_send(3, true);                // resent before it is deemed lost: counts twice
  REQUIRE(sb.pipe() == 8);
  REQUIRE(sb.next_unsacked() == 6u);
  // 7 SACKed: now 3 is lost too (three SACKed above it: 4, 5, 7); it was resent already.
  REQUIRE(sb.on_sack(sack_ack(0, {{7, 8}})) == 1);
  REQUIRE(sb.is_lost(3));
  REQUIRE(sb.lost() == 3);
  REQUIRE(sb.pipe() == 10 - 4 - 3 + 3);
  REQUIRE(sb.on_sack(sack_ack(0, {{7, 8}, {4, 6}})) == 0);  // nothing new
  // The cumulative ACK passes 0..2: 0, 1 lost and resent, 2 SACKed leave.
  sb.on_cum_ack(3);
  REQUIRE(sb.sacked() == 3);
  REQUIRE(sb.lost() == 1);
  REQUIRE(sb.resent() == 1);
  REQUIRE(sb.pipe() == 7 - 3 - 1 + 1);
  // A timeout: every unSACKed packet is lost, none counts as resent.
  sb.on_timeout();
  REQUIRE(sb.lost() == 4);  // 3, 6, 8, 9
  REQUIRE(sb.resent() == 0);
  REQUIRE(sb.pipe() == 0);
  std::vector<uint32_t> order;
  while (auto s = sb.next_lost()) {
    order.push_back(*s);
    sb.on_send(*s, true);
  }
  REQUIRE(order == std::vector<uint32_t>{3, 6, 8, 9});  // SACKed 4, 5, 7 skipped
  REQUIRE(sb.pipe() == 4);
  // The ring grows with the window and keeps the flags.
  for (uint32_t s = 10; s < 100; ++s) sb.on_send(s, false);
  REQUIRE(sb.is_sacked(4));
  REQUIRE(sb.is_sacked(7));
  REQUIRE(sb.pipe() == 4 + 90);
  sb.on_cum_ack(100);
  REQUIRE(sb.pipe() == 0);
  REQUIRE(sb.sacked() + sb.lost() + sb.resent() == 0);
}

TEST_CASE("sack: fast retransmit on the third SACKed duplicate, cwnd = ssthresh, pipe paces recovery",
          "[transports][sack]") {
  // As reno_test's first recovery (IW 10 = ssthresh, 30 packets, the first
  // transmission of seq5 lost; seq k leaves at k). Duplicates SACK seq6, 7, 8
  // at 10, 11, 12 and pipe (5 - SACKed) < 10 lets seq10@10, seq11@11 go. On
  // the third (t=12): three SACKed above seq5, so it is lost; flight = 12 - 5
  // = 7, ssthresh = cwnd = 3.5 (no inflation); seq5 resent at once; pipe = 7 -
  // 3 SACKed - 1 lost + 1 resent = 4. At 13 (seq9 SACKed) pipe 3: nothing. At
  // 14 (seq10) pipe 2 -> seq12@14; at 15 (seq11) -> seq13@15. The resend
  // reaches the receiver at 14: the full ACK (cum 12) at 16 ends recovery,
  // cwnd 3.5, pipe 2 -> seq14@16.
  TcpSender s(sack_reno(10, 10), 30);
  Receiver r(EcnEcho::kNone, 1, 1, 3);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return seg.seq == 5 && tx == 0; };
  loop.run_until(12);
  REQUIRE(s.dup_acks() == 2);
  REQUIRE(blocks(loop.ack_at(11)->ack) == std::vector<SackBlock>{{6, 8}});
  REQUIRE(loop.send_times(10) == std::vector<Timeslot>{10});
  REQUIRE(loop.send_times(11) == std::vector<Timeslot>{11});
  loop.run_until(13);
  REQUIRE(s.in_fast_recovery());
  REQUIRE(s.ssthresh_units() == 3584);
  REQUIRE(loop.ack_at(12)->cwnd_units == 3584);
  REQUIRE(loop.send_times(5) == std::vector<Timeslot>{5, 12});
  REQUIRE(s.pipe() == 4);
  loop.run_until(17);
  REQUIRE(loop.ack_at(13)->cwnd_units == 3584);  // duplicates do not inflate the window
  REQUIRE(loop.ack_at(16)->ack.cum_ack == 12);
  REQUIRE_FALSE(s.in_fast_recovery());
  // One hole: the same sends as NewReno's inflated window gives (reno_test), here by pipe.
  for (uint32_t seq : {12u, 13u, 14u}) REQUIRE(loop.send_times(seq) == std::vector<Timeslot>{seq + 2});
  loop.run_until_done(200);
  const SenderStats& st = s.stats();
  REQUIRE((st.fast_retransmits == 1 && st.retransmits == 1 && st.timeouts == 0));
  REQUIRE(s.scoreboard().sacked() + s.scoreboard().lost() + s.scoreboard().resent() == 0);
}

TEST_CASE("sack: two holes in one window are both resent in the first round trip of recovery",
          "[transports][sack]") {
  // As reno_test's partial-ACK case: the first transmissions of seq5 and
  // seq7 are lost. Duplicates SACK seq6, 8, 9 at 10, 12, 13; seq10..12 go at
  // 10..12. At 13 three are SACKed above seq5 (lost), two above seq7: recovery
  // with flight 13 - 5 = 8, ssthresh = cwnd = 4, seq5 resent at 13 (pipe 5).
  // At 14 seq10 is SACKed: now three above seq7 too, pipe = 8 - 4 - 2 + 1 = 3
  // -> NextSeg rule 1 resends seq7 at 14 (NewReno waits for the partial ACK
  // and resends it at 17). 15, 16: seq11, 12 SACKed -> new seq13@15,
  // seq14@16. The partial ACK (cum 7) at 17 -> seq15@17; the resent seq7
  // reached the receiver at 16, so the full ACK (cum 13) comes at 18.
  TcpSender s(sack_reno(10, 10), 30);
  Receiver r(EcnEcho::kNone, 1, 1, 3);
  TestLoop loop(s, r);
  loop.drop = [](const Segment& seg, uint32_t tx) { return (seg.seq == 5 || seg.seq == 7) && tx == 0; };
  loop.run_until(14);
  REQUIRE(s.in_fast_recovery());
  REQUIRE(loop.ack_at(13)->cwnd_units == 4 * U);
  REQUIRE(blocks(loop.ack_at(13)->ack) == std::vector<SackBlock>{{8, 10}, {6, 7}});
  REQUIRE(loop.send_times(5) == std::vector<Timeslot>{5, 13});
  loop.run_until(19);
  REQUIRE(loop.send_times(7) == std::vector<Timeslot>{7, 14});
  REQUIRE(loop.send_times(13) == std::vector<Timeslot>{15});
  REQUIRE(loop.send_times(14) == std::vector<Timeslot>{16});
  REQUIRE(loop.ack_at(17)->ack.cum_ack == 7);
  REQUIRE(loop.send_times(15) == std::vector<Timeslot>{17});
  REQUIRE(loop.ack_at(18)->ack.cum_ack == 13);
  REQUIRE(loop.ack_at(18)->cwnd_units == 4 * U);
  REQUIRE_FALSE(s.in_fast_recovery());
  REQUIRE(loop.send_times(16) == std::vector<Timeslot>{18});
  const Timeslot sack_done = loop.run_until_done(300);
  REQUIRE(s.stats().fast_retransmits == 1);
  REQUIRE(s.stats().partial_acks == 1);
  REQUIRE(s.stats().retransmits == 2);
  REQUIRE(s.stats().timeouts == 0);

  TransportSettings plain = sack_reno(10, 10, 0);
  TcpSender n(plain, 30);
  Receiver nr(EcnEcho::kNone);
  TestLoop newreno(n, nr);
  newreno.drop = loop.drop;
  const Timeslot newreno_done = newreno.run_until_done(300);
  REQUIRE(newreno.send_times(7) == std::vector<Timeslot>{7, 17});
  REQUIRE(sack_done < newreno_done);
}

TEST_CASE("sack: after a timeout only the unSACKed packets are sent again", "[transports][sack]") {
  // IW 4, 12 packets; seq1's first two transmissions are lost and seq3's
  // first. seq0..3 at 0..3, the ACK of seq0 at 4 (cwnd 5) lets seq4@4,
  // seq5@5 go. Duplicates SACK seq2, 4, 5 at 6, 8, 9: recovery at 9 (three
  // SACKed above seq1 and seq3): seq1 resent at once (and lost again), seq3
  // by NextSeg. Its ACK SACKs it; nothing but new data moves until the timer
  // fires: every unSACKed packet is then lost -- seq1 and what was sent
  // after the last SACK -- and those alone are sent again. Without SACK the
  // sender goes back N from seq1 and resends packets the receiver holds.
  auto drop = [](const Segment& seg, uint32_t tx) { return (seg.seq == 1 && tx < 2) || (seg.seq == 3 && tx == 0); };
  TcpSender s(sack_reno(4), 12);
  Receiver r(EcnEcho::kNone, 1, 1, 3);
  TestLoop loop(s, r);
  loop.drop = drop;
  REQUIRE(loop.run_until_done(500) != kNever);
  REQUIRE(loop.timeouts.size() == 1);
  const std::vector<Timeslot> tx1 = loop.send_times(1);
  REQUIRE(tx1.size() == 3);
  REQUIRE(tx1[1] == 9);
  REQUIRE(tx1[2] == loop.timeouts[0]);
  REQUIRE(loop.send_times(3).size() == 2);
  REQUIRE(loop.send_times(3)[1] < loop.timeouts[0]);
  REQUIRE(r.stats().duplicates == 0);  // nothing the receiver held was sent again
  REQUIRE(s.stats().retransmits == 3);

  TcpSender n(sack_reno(4, 0, 0), 12);
  Receiver nr(EcnEcho::kNone);
  TestLoop newreno(n, nr);
  newreno.drop = drop;
  REQUIRE(newreno.run_until_done(500) != kNever);
  REQUIRE(newreno.timeouts.size() == 1);
  REQUIRE(nr.stats().duplicates > 0);
  REQUIRE(n.stats().retransmits > s.stats().retransmits);
}

TEST_CASE("sack: fewer spurious resends and timeouts than NewReno; DCTCP and ECN keep their cuts",
          "[transports][sack]") {
  // 2000 packets through a 20-packet queue served every other timeslot,
  // marking above 10, and every 97th first transmission lost as well: the
  // queue overflows at the top of each sawtooth and recoveries interleave
  // with ECN cuts. Against the same run without SACK: every flow finishes,
  // the scoreboard empties, the receiver gets fewer copies of packets it
  // already had (go-back-N after a timeout resends them), and there are no
  // more timeouts. (Timeouts remain: a tail lost with fewer than three
  // packets SACKed above it waits for the timer in RFC 6675, as in ns-3.)
  struct Outcome {
    uint64_t copies, timeouts, reductions;
  };
  auto run = [](TransportKind kind, uint32_t blocks) {
    TransportSettings st = sack_reno(10, 0, blocks);
    st.kind = kind;
    TcpSender s(st, 2000);
    Receiver r(st);
    LoopConfig c;
    c.service_every = 2;
    c.queue_capacity = 20;
    c.mark_above = 10;
    TestLoop loop(s, r, c);
    loop.drop = [](const Segment& seg, uint32_t tx) { return tx == 0 && seg.seq % 97 == 5; };
    REQUIRE(loop.run_until_done(200000) != kNever);
    REQUIRE(s.stats().fast_retransmits > 0);
    if (blocks) {
      REQUIRE(s.stats().sacked_segments > 0);
      REQUIRE(s.scoreboard().sacked() + s.scoreboard().lost() + s.scoreboard().resent() == 0);
    }
    return Outcome{r.stats().duplicates, s.stats().timeouts, s.stats().ecn_reductions};
  };
  uint64_t copies_sack = 0, copies_newreno = 0;
  for (TransportKind kind : {TransportKind::kReno, TransportKind::kEcn, TransportKind::kDctcp}) {
    INFO(transport_kind_name(kind));
    const Outcome with = run(kind, 3), without = run(kind, 0);
    if (kind != TransportKind::kReno) REQUIRE(with.reductions > 0);
    REQUIRE(with.copies <= without.copies);
    REQUIRE(with.timeouts <= without.timeouts);
    copies_sack += with.copies;
    copies_newreno += without.copies;
  }
  REQUIRE(2 * copies_sack < copies_newreno);
}

TEST_CASE("sack: configuration", "[transports][sack][config]") {
  TransportParams p;
  REQUIRE(resolve_transport(TransportKind::kReno, p, 1000).sack_blocks == 0);
  p.sack = true;
  REQUIRE(resolve_transport(TransportKind::kDctcp, p, 1000).sack_blocks == 3);
  p.sack_blocks = 4;
  REQUIRE(resolve_transport(TransportKind::kEcn, p, 1000).sack_blocks == 4);
  REQUIRE_THROWS_WITH(resolve_transport(TransportKind::kPfabric, p, 1000),
                      Catch::Contains("sack applies to reno, ecn and dctcp"));
  REQUIRE_THROWS_WITH(Receiver(EcnEcho::kNone, 1, 1, kMaxSackBlocks + 1), Catch::Contains("sack_blocks"));
}

TEST_CASE("sack scoreboard: reordering seen in SACKs and D-SACKs raises the loss threshold (max_reordering)",
          "[transports][sack][reordering]") {
  auto sent = [](SackScoreboard& sb, uint32_t n) {
    for (uint32_t s = 0; s < n; ++s) sb.on_send(s, false);
  };
  SECTION("a late packet under the cumulative ACK: the distance to the highest SACKed") {
    SackScoreboard sb(3, 16, 300), fixed(3, 16, 0);
    for (SackScoreboard* b : {&sb, &fixed}) {
      sent(*b, 10);
      b->on_sack(sack_ack(0, {{3, 5}}));  // two SACKed above 0, 1, 2: none lost yet
      REQUIRE(b->lost() == 0);
      b->on_cum_ack(1);                  // 0 arrives late: 3 and 4 overtook it
    }
    CHECK(sb.dupthresh() == 4);  // 3 and 4 lie above 0, and 1, 2 were sent between: seqs 1..4
    CHECK(sb.reorder_raises() == 1);
    CHECK(fixed.dupthresh() == 3);
    for (SackScoreboard* b : {&sb, &fixed}) b->on_sack(sack_ack(1, {{3, 6}}));  // 3 SACKed above 1 and 2
    CHECK(fixed.lost() == 2);  // dupthresh 3: 1 and 2 lost
    CHECK(sb.lost() == 0);     // dupthresh 4: not yet
    sb.on_sack(sack_ack(1, {{3, 7}}));
    CHECK(sb.lost() == 2);
  }
  SECTION("a late packet SACKed below the highest SACKed") {
    SackScoreboard sb(3, 16, 300);
    sent(sb, 10);
    sb.on_sack(sack_ack(0, {{4, 6}}));
    sb.on_sack(sack_ack(0, {{1, 2}, {4, 6}}));  // 1 came after 4 and 5
    CHECK(sb.dupthresh() == 4);                  // seqs 2..5 above it
  }
  SECTION("capped at max_reordering; resent packets teach nothing, even after a timeout") {
    SackScoreboard sb(3, 16, 5);
    sent(sb, 12);
    sb.on_sack(sack_ack(0, {{10, 12}}));
    sb.on_send(0, true);  // resent (say, by a timeout's go-back)
    sb.on_timeout();      // clears "resent since the last timeout", not "ever resent"
    sb.on_cum_ack(1);     // 0: ambiguous, the original or the copy
    CHECK(sb.dupthresh() == 3);
    sb.on_cum_ack(2);     // 1: never resent, 10 above it: distance 10, capped at 5
    CHECK(sb.dupthresh() == 5);
  }
  SECTION("a D-SACK: the retransmission was spurious, the original reordered") {
    SackScoreboard sb(3, 16, 300), off(3, 16, 0);
    for (SackScoreboard* b : {&sb, &off}) {
      sent(*b, 12);
      b->on_sack(sack_ack(0, {{3, 9}}));  // 0, 1, 2 lost (6 SACKed above)
      for (uint32_t s = 0; s < 3; ++s) b->on_send(s, true);
      b->on_cum_ack(9);                  // the originals of 0-2 arrive: ambiguous, nothing learned
      REQUIRE(b->dupthresh() == 3);
      b->on_dsack(0);                    // then the copy of 0: it came twice
    }
    CHECK(sb.dupthresh() == 8);  // seqs 1..8 lie between it and the highest SACKed
    CHECK(off.dupthresh() == 3);
    sb.on_dsack(20);             // above everything SACKed: nothing to learn
    CHECK(sb.reorder_raises() == 1);
  }
  SECTION("off (0): the threshold never moves") {
    SackScoreboard sb(3, 16, 0);
    sent(sb, 10);
    sb.on_sack(sack_ack(0, {{5, 7}}));
    sb.on_cum_ack(3);
    CHECK(sb.dupthresh() == 3);
    CHECK(sb.reorder_raises() == 0);
  }
}

TEST_CASE("max_reordering_pkts needs sack and is at least dupack_threshold", "[transports][sack][reordering]") {
  TransportParams p;
  p.max_reordering_pkts = 300;
  CHECK_THROWS_WITH(p.validate("transport"), Catch::Contains("max_reordering_pkts needs sack: true"));
  p.sack = true;
  p.validate("transport");
  p.max_reordering_pkts = 2;
  CHECK_THROWS_WITH(p.validate("transport"), Catch::Contains("below dupack_threshold 3"));
  p.max_reordering_pkts = 300;
  CHECK(resolve_transport(TransportKind::kDctcp, p, 1200).max_reordering_pkts == 300);
  p.sack = false;
  p.max_reordering_pkts = 0;
  CHECK(resolve_transport(TransportKind::kDctcp, p, 1200).max_reordering_pkts == 0);
}
