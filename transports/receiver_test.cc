// The receiver: cumulative ACKs, immediate ACKs for holes and duplicates,
// delayed ACKs, and the three ECN echo modes.
#include <catch2/catch.hpp>

#include "transports/receiver.h"

using namespace flexplane;

namespace {
struct Got {
  uint32_t cum, trigger;
  bool ece;
  bool operator==(const Got& o) const { return cum == o.cum && trigger == o.trigger && ece == o.ece; }
};
std::vector<Got> got(const Receiver::Acks& a) {
  std::vector<Got> out;
  for (uint32_t i = 0; i < a.n; ++i) out.push_back({a.ack[i].cum_ack, a.ack[i].trigger_seq, a.ack[i].ece});
  return out;
}
using V = std::vector<Got>;
}  // namespace

TEST_CASE("receiver: cumulative ACKs, duplicate ACKs beyond a hole, hole filled", "[transports][receiver]") {
  Receiver r(EcnEcho::kNone);
  REQUIRE(got(r.on_data(0, false, false, 1)) == V{{1, 0, false}});
  REQUIRE(got(r.on_data(2, false, false, 2)) == V{{1, 2, false}});  // hole at 1
  REQUIRE(got(r.on_data(3, false, false, 3)) == V{{1, 3, false}});
  REQUIRE(got(r.on_data(5, false, false, 4)) == V{{1, 5, false}});  // second hole at 4
  REQUIRE(got(r.on_data(1, false, false, 5)) == V{{4, 1, false}});  // fills up to the next hole
  REQUIRE(got(r.on_data(3, false, false, 6)) == V{{4, 3, false}});  // duplicate
  REQUIRE(got(r.on_data(4, false, false, 7)) == V{{6, 4, false}});
  REQUIRE(r.next_expected() == 6);
  REQUIRE(r.stats().out_of_order == 3);
  REQUIRE(r.stats().duplicates == 1);
  REQUIRE(r.stats().acks == 7);
}

TEST_CASE("receiver: a long-lived hole keeps the bitset compact", "[transports][receiver]") {
  // seq 0 missing while 1..9999 arrive, then it arrives: one cumulative jump.
  Receiver r(EcnEcho::kNone);
  for (uint32_t s = 1; s < 10000; ++s) REQUIRE(got(r.on_data(s, false, false, s)) == V{{0, s, false}});
  REQUIRE(got(r.on_data(0, false, false, 10000)) == V{{10000, 0, false}});
  // Repeated holes: every other packet late, 5000 times.
  for (uint32_t s = 10000; s < 20000; s += 2) {
    r.on_data(s + 1, false, false, s);
    REQUIRE(got(r.on_data(s, false, false, s)) == V{{s + 2, s, false}});
  }
  REQUIRE(r.next_expected() == 20000);
}

TEST_CASE("receiver: RFC 3168 echo latches ECE until CWR", "[transports][receiver]") {
  Receiver r(EcnEcho::kRfc3168);
  REQUIRE(got(r.on_data(0, false, false, 0)) == V{{1, 0, false}});
  REQUIRE(got(r.on_data(1, true, false, 1)) == V{{2, 1, true}});
  REQUIRE(got(r.on_data(2, false, false, 2)) == V{{3, 2, true}});   // latched
  REQUIRE(got(r.on_data(3, false, true, 3)) == V{{4, 3, false}});   // CWR clears
  REQUIRE(got(r.on_data(4, true, true, 4)) == V{{5, 4, true}});     // CWR and CE: set again
}

TEST_CASE("receiver: DCTCP echo, one ACK per packet", "[transports][receiver]") {
  Receiver r(EcnEcho::kPerPacket);
  const bool ce[] = {false, true, true, false, true};
  const bool ece[] = {false, true, true, false, true};
  for (uint32_t s = 0; s < 5; ++s) REQUIRE(got(r.on_data(s, ce[s], false, s)) == V{{s + 1, s, ece[s]}});
}

TEST_CASE("receiver: DCTCP state machine with delayed ACKs (every 2 packets)", "[transports][receiver]") {
  // RFC 8257 §3.2. CE pattern 0 0 1 1 1 0 0 1:
  //  seq0: pending 1, timer armed.   seq1: 2 pending -> ACK cum 2, ECE 0.
  //  seq2 (CE): state change, nothing pending -> immediate ACK cum 3, ECE 1.
  //  seq3: pending 1.                seq4: 2 pending -> ACK cum 5, ECE 1.
  //  seq5 (no CE): change, nothing pending -> immediate ACK cum 6, ECE 0.
  //  seq6: pending 1.
  //  seq7 (CE): change with seq6 pending -> first ACK cum 7 (trigger 6) with
  //  the old state ECE 0, then the immediate ACK cum 8, ECE 1.
  Receiver r(EcnEcho::kPerPacket, 2, 10);
  REQUIRE(got(r.on_data(0, false, false, 0)).empty());
  REQUIRE(r.timer_deadline() == 10);
  REQUIRE(got(r.on_data(1, false, false, 1)) == V{{2, 1, false}});
  REQUIRE(r.timer_deadline() == kNever);
  REQUIRE(got(r.on_data(2, true, false, 2)) == V{{3, 2, true}});
  REQUIRE(got(r.on_data(3, true, false, 3)).empty());
  REQUIRE(got(r.on_data(4, true, false, 4)) == V{{5, 4, true}});
  REQUIRE(got(r.on_data(5, false, false, 5)) == V{{6, 5, false}});
  REQUIRE(got(r.on_data(6, false, false, 6)).empty());
  REQUIRE(got(r.on_data(7, true, false, 7)) == V{{7, 6, false}, {8, 7, true}});
}

TEST_CASE("receiver: the delayed-ACK timer flushes a lone packet", "[transports][receiver]") {
  Receiver r(EcnEcho::kPerPacket, 2, 10);
  REQUIRE(got(r.on_data(0, true, false, 5)) == V{{1, 0, true}});  // CE change: immediate
  REQUIRE(got(r.on_data(1, true, false, 6)).empty());
  REQUIRE(r.timer_deadline() == 16);
  REQUIRE_FALSE(r.on_timer(15));
  const auto a = r.on_timer(16);
  REQUIRE(a);
  REQUIRE(a->cum_ack == 2);
  REQUIRE(a->trigger_seq == 1);
  REQUIRE(a->ece);
  REQUIRE(r.timer_deadline() == kNever);
  REQUIRE_FALSE(r.on_timer(30));
}

TEST_CASE("receiver: bad configuration is refused", "[transports][receiver]") {
  REQUIRE_THROWS_WITH(Receiver(EcnEcho::kNone, 0), Catch::Contains("ack_every_pkts"));
}

TEST_CASE("receiver: once complete, complete_ack answers late duplicates as the receiver does",
          "[transports][receiver]") {
  // A flow's packets arrive shuffled (holes, duplicates, random CE and CWR), with SACK on;
  // once every one has arrived the receiver is idle and each further duplicate gets the same
  // ACK from the freed state (one latched bit) as from the receiver itself, in every echo mode.
  uint64_t x = 12345;
  auto next = [&](uint32_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>((x >> 33) % n);
  };
  for (EcnEcho echo : {EcnEcho::kNone, EcnEcho::kRfc3168, EcnEcho::kPerPacket}) {
    for (uint32_t trial = 0; trial < 50; ++trial) {
      INFO("echo " << static_cast<int>(echo) << ", trial " << trial);
      const uint32_t size = 1 + next(40);
      Receiver r(echo, 1, 1, 3);
      std::vector<bool> seen(size, false);
      uint32_t left = size;
      Timeslot now = 0;
      while (left) {
        const uint32_t seq = next(size);
        left -= !seen[seq];
        seen[seq] = true;
        r.on_data(seq, next(3) == 0, next(4) == 0, now++);
      }
      REQUIRE(r.next_expected() == size);
      REQUIRE(r.idle());
      bool latched = r.ece_latched();
      for (uint32_t k = 0; k < 20; ++k) {
        const uint32_t seq = next(size);
        const bool ce = next(2), cwr = next(3) == 0;
        const Receiver::Acks a = r.on_data(seq, ce, cwr, now++);
        const Ack b = Receiver::complete_ack(echo, size, seq, ce, cwr, &latched, true);
        REQUIRE(a.n == 1);
        REQUIRE(a.ack[0].cum_ack == b.cum_ack);
        REQUIRE(a.ack[0].trigger_seq == b.trigger_seq);
        REQUIRE(a.ack[0].ece == b.ece);
        REQUIRE(a.ack[0].dsack);  // a duplicate, with SACK on (D-SACK, RFC 2883)
        REQUIRE(b.dsack);
        REQUIRE(a.ack[0].sack_count == 0);
        REQUIRE(b.sack_count == 0);
        REQUIRE(latched == r.ece_latched());
      }
    }
  }
}
