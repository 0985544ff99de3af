// RED: EWMA average, forced drops at max_th, idle-time decay, count-based spacing, ECN marking.
#include <catch2/catch.hpp>

#include <map>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {
Components red(std::vector<std::pair<std::string, std::string>> params) {
  return {{"single"}, {"red", std::move(params)}, {"fifo"}};
}
Packet ect(uint32_t seq) {
  Packet p = pkt(1, seq, 0);
  p.flags = kFlagEct;
  return p;
}
// Arrivals in one timeslot, in this order (one input() each: a batch would
// be rotated by the timeslot); returns which were accepted (by seq), read off the drop log.
std::vector<bool> offer(TestRouter& r, std::vector<uint32_t> seqs, Timeslot now) {
  const size_t before = r.log.drops.size();
  for (uint32_t s : seqs) r.input({pkt(1, s, 0)}, now);
  std::vector<bool> accepted(seqs.size(), true);
  for (size_t d = before; d < r.log.drops.size(); ++d)
    for (size_t i = 0; i < seqs.size(); ++i)
      if (r.log.drops[d].p.seq == seqs[i]) accepted[i] = false;
  return accepted;
}
}  // namespace

TEST_CASE("red: EWMA average, forced drops above max_th, idle-time decay", "[schemes][red]") {
  // w = 0.5, min_th 1, max_th 2, max_p 0: no early drops, so every drop is a forced one and the
  // outcome is exact. avg <- avg + w (q - avg) when the queue is non-empty; on arrival to an empty
  // queue avg <- avg (1 - w)^m, m = timeslots since it emptied.
  TestRouter r(1, red({{"weight", "0.5"}, {"min_th_pkts", "1"}, {"max_th_pkts", "2"}, {"max_p", "0"}}));
  // t=0: arrivals see q = 0, 1, 2, 3 -> avg = 0, 0.5, 1.25, 2.125: the fourth is forced out.
  REQUIRE(offer(r, {0, 1, 2, 3}, 0) == std::vector<bool>{true, true, true, false});
  REQUIRE(r.log.drops[0].reason == Reason::kAqmForced);
  // Send seqs 0, 1, 2 at t = 0, 1, 2: the queue empties at t=2 with avg still 2.125.
  for (Timeslot t = 0; t < 3; ++t) REQUIRE(r.output(t).size() == 1);
  // Same timeslot (m = 0): no decay, 2.125 >= 2, dropped.
  REQUIRE(offer(r, {4}, 2) == std::vector<bool>{false});
  // One idle timeslot (m = 1): avg = 2.125 / 2 = 1.0625, accepted; then q = 1, 2, 3 give
  // avg = 1.03125, 1.515625, 2.2578125: the last is forced out.
  REQUIRE(offer(r, {5, 6, 7, 8}, 3) == std::vector<bool>{true, true, true, false});
  // Sent at t = 3, 4, 5; empty from t=5. Ten idle timeslots: avg = 2.2578125 / 2^10 ~ 0.002, so a
  // fresh burst again sees avg = 0.002, 0.501, 1.25, 2.125: only the fourth is dropped.
  REQUIRE(r.drain(0, 3).size() == 3);
  REQUIRE(r.bank().idle_since(0, 0) == 5);
  REQUIRE(offer(r, {9, 10, 11, 12}, 15) == std::vector<bool>{true, true, true, false});
  REQUIRE(r.drops(0, 0, Reason::kAqmForced) == 4);
  REQUIRE(r.drops(0, 0, Reason::kAqmEarly) == 0);
  r.check_invariants();
}

TEST_CASE("red: count-based spacing makes the gap between marks uniform on 1..1/p_b", "[schemes][red]") {
  // w = 1 makes avg the queue length an arrival sees. Holding that at 3 (one in, one out per
  // timeslot) with min_th 2, max_th 4, max_p 0.5 gives p_b = 0.5 (3 - 2) / (4 - 2) = 1/4. After a
  // mark, the k-th packet is marked with p_a = p_b / (1 - (k-1) p_b) = 1/4, 1/3, 1/2, 1, so the gap
  // G between marks has P(G = k) = 1/4 for k = 1..4: never above 4, mean 2.5 (marks = 40%).
  // ECN on and ECT packets: marked packets are still queued, so the queue stays at 3.
  TestRouter r(1, red({{"weight", "1"}, {"min_th_pkts", "2"}, {"max_th_pkts", "4"}, {"max_p", "0.5"},
                       {"ecn", "true"}}));
  r.input({pkt(1, 0, 0), pkt(1, 1, 0), pkt(1, 2, 0)}, 0);
  constexpr uint32_t kArrivals = 40000;
  std::map<uint32_t, uint32_t> gaps;  // gap -> how often
  uint32_t marks = 0, since_mark = 0;
  bool seen_mark = false;
  for (uint32_t i = 0; i < kArrivals; ++i) {
    r.input(ect(3 + i), 1 + i);
    const auto sent = r.output(1 + i);
    REQUIRE(sent.size() == 1);
    ++since_mark;
    if (sent[0].second.ce()) {  // FIFO with the queue at 3: the packet sent is the one offered 3 slots ago
      ++marks;
      if (seen_mark) ++gaps[since_mark];
      seen_mark = true;
      since_mark = 0;
    }
  }
  REQUIRE(r.log.drops.empty());  // ECT packets below max_th are marked, never dropped
  uint32_t queued_marks = 0;      // the last three arrivals are still queued
  for (const Packet& p : r.drain(0, 1 + kArrivals)) queued_marks += p.ce();
  REQUIRE(r.marks(0, 0, Reason::kAqmEarly) == marks + queued_marks);
  REQUIRE(gaps.begin()->first >= 1);
  REQUIRE(gaps.rbegin()->first <= 4);
  uint32_t n = 0;
  for (const auto& [gap, count] : gaps) n += count;
  for (uint32_t k = 1; k <= 4; ++k) REQUIRE(double(gaps[k]) / n == Approx(0.25).margin(0.02));
  REQUIRE(double(marks) / kArrivals == Approx(0.4).margin(0.02));
  r.check_invariants();
}

TEST_CASE("red: with ecn, non-ECT packets are dropped early and ECT packets are dropped when forced",
          "[schemes][red]") {
  const Components c = red({{"weight", "1"}, {"min_th_pkts", "2"}, {"max_th_pkts", "4"}, {"max_p", "0.5"},
                            {"ecn", "true"}});
  SECTION("non-ECT at p_b = 1/4: about 40% early drops, no marks") {
    TestRouter r(1, c);
    r.input({pkt(1, 0, 0), pkt(1, 1, 0), pkt(1, 2, 0)}, 0);
    // Each timeslot offer one non-ECT packet; send only if it was accepted, so arrivals see q = 3.
    for (uint32_t i = 0; i < 10000; ++i) {
      r.input(pkt(1, 3 + i, 0), 1 + i);
      if (r.bank().packets(0, 0) == 4) r.output(1 + i);
    }
    REQUIRE(r.counters(0).marked == 0);
    REQUIRE(r.drops(0, 0, Reason::kAqmEarly) == r.counters(0).dropped_on_arrival);
    REQUIRE(double(r.counters(0).dropped_on_arrival) / 10000 == Approx(0.4).margin(0.03));
    r.check_invariants();
  }
  SECTION("ECT burst: arrivals that see q >= max_th are dropped, not marked") {
    TestRouter r(1, c);
    // Arrivals see q = 0, 1, 2, 3, 4, 4: seqs 0-2 are accepted unmarked (p_b = 0 at q <= 2),
    // seq 3 is accepted (marked or not), seqs 4 and 5 are forced drops.
    std::vector<Packet> burst;
    for (uint32_t i = 0; i < 6; ++i) burst.push_back(ect(i));
    r.input(burst, 0);
    REQUIRE(r.drops(0, 0, Reason::kAqmForced) == 2);
    REQUIRE(r.log.drops[0].p.seq == 4);
    const auto sent = r.drain(0, 0);
    REQUIRE(sent.size() == 4);
    for (uint32_t i = 0; i < 3; ++i) REQUIRE_FALSE(sent[i].ce());
    r.check_invariants();
  }
}

TEST_CASE("red: with mark_above_max, ECT packets above max_th are marked, non-ECT still dropped", "[schemes][red]") {
  TestRouter r(1, red({{"weight", "1"}, {"min_th_pkts", "2"}, {"max_th_pkts", "4"}, {"max_p", "0.5"},
                       {"ecn", "true"}, {"mark_above_max", "true"}, {"capacity_pkts", "7"}}));
  // Arrivals see q = 0..6 then 7: seqs 4-6 arrive above max_th (marked, kept), seq 7 at capacity (dropped).
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 8; ++i) burst.push_back(ect(i));
  r.input_in_order(burst, 0);
  CHECK(r.drops(0, 0, Reason::kAqmForced) == 0);
  CHECK(r.marks(0, 0, Reason::kAqmForced) == 3);
  CHECK(r.drops(0, 0, Reason::kQueueFull) == 1);
  std::vector<Packet> sent;
  for (Timeslot t = 0; t < 2; ++t) sent.push_back(r.output(t).at(0).second);
  r.input(pkt(1, 8, 0), 2);  // not ECN-capable, at q = 5: dropped as before
  CHECK(r.drops(0, 0, Reason::kAqmForced) == 1);
  for (const Packet& p : r.drain(0, 2)) sent.push_back(p);
  REQUIRE(sent.size() == 7);
  for (uint32_t i = 4; i < 7; ++i) CHECK(sent[i].ce());
  r.check_invariants();
}

TEST_CASE("red: tail drop at capacity_pkts below the thresholds", "[schemes][red]") {
  // Defaults keep avg far below min_th = 150 after 8 arrivals (avg < 8), so only the capacity acts.
  TestRouter r(1, red({{"capacity_pkts", "5"}}));
  std::vector<Packet> burst;
  for (uint32_t i = 0; i < 8; ++i) burst.push_back(pkt(1, i, 0));
  r.input(burst, 0);
  REQUIRE(r.bank().packets(0, 0) == 5);
  REQUIRE(r.drops(0, 0, Reason::kQueueFull) == 3);
  r.check_invariants();
}

TEST_CASE("red: same seed, same drops; preset and parameter errors", "[schemes][red]") {
  auto run = [](uint64_t seed) {
    TestRouter r(1, red({{"weight", "1"}, {"min_th_pkts", "2"}, {"max_th_pkts", "40"}}), seed);
    std::vector<uint32_t> dropped;
    for (uint32_t t = 0; t < 2000; ++t) {
      r.input({pkt(1, 2 * t, 0), pkt(1, 2 * t + 1, 0)}, t);  // two in, one out: the queue builds
      r.output(t);
    }
    for (const auto& d : r.log.drops) dropped.push_back(d.p.seq);
    r.check_invariants();
    return dropped;
  };
  REQUIRE(run(7) == run(7));
  REQUIRE_FALSE(run(7).empty());

  TestRouter r(1, preset("red"));
  r.check_invariants();
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(make_component<QueueManagerBase>({"red", {{"min_th_pkts", "300"}}}),
                      Contains("min_th_pkts (300) must be below max_th_pkts (300)"));
  REQUIRE_THROWS_AS(make_component<QueueManagerBase>({"red", {{"weight", "0"}}}), ConfigError);
  REQUIRE_THROWS_AS(make_component<QueueManagerBase>({"red", {{"max_p", "1.5"}}}), ConfigError);
}
