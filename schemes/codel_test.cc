// CoDel (RFC 8289): no drop before the sojourn time has been above target for an interval; then
// drops spaced interval / sqrt(count); none while at most one MTU is queued; a dropping state that
// ended recently resumes at the rate it had reached; ECN marks instead of drops.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

// One tick is 1 us in TestRouter: target 3 ticks, interval 20 ticks.
Components codel(bool ecn = false) {
  return {{"single"}, {"codel", {{"target_us", "3"}, {"interval_ms", "0.02"}, {"ecn", ecn ? "true" : "false"}}}, {"fifo"}};
}

// `n` packets of flow 1 (seq from `first`), all arriving at `now`.
void burst(TestRouter& r, uint32_t first, uint32_t n, Timeslot now, bool ect = false) {
  std::vector<Packet> pkts;
  for (uint32_t i = 0; i < n; ++i) {
    pkts.push_back(pkt(1, first + i, 0));
    if (ect) pkts.back().flags = kFlagEct;
  }
  r.input(pkts, now);
}

std::vector<Timeslot> drop_times(const TestRouter& r) {
  std::vector<Timeslot> t;
  for (const auto& d : r.log.drops) {
    REQUIRE(d.reason == Reason::kSojournTime);
    t.push_back(d.now);
  }
  return t;
}

}  // namespace

TEST_CASE("codel: first drop an interval after the sojourn time reaches target, then interval/sqrt(count)",
          "[schemes][codel]") {
  // 200 packets arrive at t=0 and one leaves per tick, so the head sent at t waited t ticks.
  // t=3: sojourn 3 >= target: first_above_time = 3 + 20 = 23. t=23: drop (count 1), next drop at
  // 23 + 20 = 43; then drop k is due 20 / sqrt(k) after drop k-1 was due: 43 + 14.14 = 57.14,
  // + 11.55 = 68.69, + 10 = 78.69, + 8.94 = 87.63, + 8.16 = 95.80, and happens at the first tick
  // at or after that.
  TestRouter r(1, codel());
  burst(r, 0, 200, 0);
  std::vector<Timeslot> sent_at;
  for (Timeslot t = 0; t <= 96; ++t) {
    const auto out = r.output(t);
    REQUIRE(out.size() == 1);  // a drop sends the next packet instead, in the same timeslot
    sent_at.push_back(t);
  }
  REQUIRE(drop_times(r) == std::vector<Timeslot>{23, 43, 58, 69, 79, 88, 96});
  // The first drop is the head at t=23 (seq 23); seqs 0..22 went out untouched.
  REQUIRE(r.log.drops[0].p.seq == 23);
  REQUIRE(r.counters(0).dropped_at_dequeue == 7);
  REQUIRE(r.counters(0).dequeued == 97);
  const auto stats = r.stats(0);
  CHECK(stats.at("codel_dropping").at(0) == 1);
  CHECK(stats.at("codel_count").at(0) == 7);
  CHECK(stats.at("codel_sojourn_us").at(0) == 96);  // the packet sent at t=96 was enqueued at 0
  r.check_invariants();
}

TEST_CASE("codel: never drops with at most one MTU queued; a recent dropping state resumes at its rate",
          "[schemes][codel]") {
  TestRouter r(1, codel());
  // 63 packets at t=0: drops at 23 (seq 23), 43 (seq 44) and 58 (seq 60: count 3). The next
  // head (seq 61) leaves one packet behind: not above target, so the dropping state ends with
  // its next drop due at 57.14; the queue is empty after t=59.
  burst(r, 0, 63, 0);
  for (Timeslot t = 0; t < 60; ++t) REQUIRE(r.output(t).size() == 1);
  REQUIRE(r.bank().empty(0, 0));
  REQUIRE(drop_times(r) == std::vector<Timeslot>{23, 43, 58});
  // A new burst at t=60: sojourn 3 at t=63, so ok to drop from 63 + 20 = 83. The last state
  // ended 83 - 57.14 = 25.9 ticks after its next drop was due (< 16 intervals) and dropped
  // 3 - 1 = 2 more than when it began, so count starts at 2: drops at 83, then due at
  // 83 + 20/sqrt 2 = 97.14 (tick 98) and 97.14 + 20/sqrt 3 = 108.69 (tick 109); a fresh start
  // would drop at 83, 103, 118.
  burst(r, 100, 100, 60);
  for (Timeslot t = 60; t <= 110; ++t) REQUIRE(r.output(t).size() == 1);
  REQUIRE(drop_times(r) == std::vector<Timeslot>{23, 43, 58, 83, 98, 109});
  r.check_invariants();

  // Heads that waited 50 and 100 ticks: with 2 packets queued, what is left behind each is at
  // most one MTU, so neither is above target; with 4, the head at t=50 leaves 3 behind
  // (first_above_time = 70) and the head at t=100 leaves 2 behind: dropped (then seq 2 is sent).
  for (const uint32_t n : {2u, 4u}) {
    TestRouter q(1, codel());
    burst(q, 0, n, 0);
    REQUIRE(q.output(50).size() == 1);
    REQUIRE(q.output(100).size() == 1);
    REQUIRE(q.log.drops.size() == (n == 2 ? 0u : 1u));
    if (n == 4) REQUIRE(q.log.drops[0].p.seq == 1);
  }
}

TEST_CASE("codel: with ECN it marks ECN-capable heads instead of dropping them", "[schemes][codel]") {
  // Same timeline as the first case, but nothing is removed: each mark sends the marked packet,
  // and the marks come at the same ticks as the drops did.
  TestRouter r(1, codel(/*ecn=*/true));
  burst(r, 0, 200, 0, /*ect=*/true);
  std::vector<Timeslot> marked_at;
  for (Timeslot t = 0; t <= 79; ++t) {
    const auto out = r.output(t);
    REQUIRE(out.size() == 1);
    if (out[0].second.ce()) {
      marked_at.push_back(t);
      REQUIRE(out[0].second.seq == t);  // the head itself is marked and sent
    }
  }
  REQUIRE(marked_at == std::vector<Timeslot>{23, 43, 58, 69, 79});
  REQUIRE(r.log.drops.empty());
  REQUIRE(r.marks(0, 0, Reason::kSojournTime) == 5);
  r.check_invariants();
}
