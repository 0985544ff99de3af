// End-to-end over simulated lossy channels: loss, duplication and reordering
// in both directions (control messages included), emulator restarts, and
// sequence-number wrap. Every request must get exactly one verdict, the right
// one, and both sides must go quiet afterwards (nothing hangs, no endless
// retransmission). Seeded: every run is the same.
#include <catch2/catch.hpp>

#include <cstdio>

#include "fp_test_sim.h"

using fptest::Sim;
using fptest::SimConfig;

namespace {

void report(const char* name, Sim& s) {
  fp_emu_stats es = s.emu_stats();
  std::printf(
      "[%s] t=%.1f ms dgrams=%llu lost=%llu duped=%llu | ep: sent=%llu resent=%llu "
      "timeouts=%llu naks=%llu probes=%llu resets=%llu dups=%llu gaps=%llu | emu: "
      "requests=%llu dups=%llu gaps=%llu full=%llu resent=%llu timeouts=%llu sessions=%llu\n",
      name, (double)s.now_ / 1e6, (unsigned long long)s.dgrams_sent_,
      (unsigned long long)s.dgrams_lost_, (unsigned long long)s.dgrams_duped_,
      (unsigned long long)s.ep_.stats.requests_sent,
      (unsigned long long)s.ep_.stats.requests_resent,
      (unsigned long long)s.ep_.stats.timeouts, (unsigned long long)s.ep_.stats.naks,
      (unsigned long long)s.ep_.stats.probes, (unsigned long long)s.ep_.stats.resets,
      (unsigned long long)s.ep_.stats.verdict_dups, (unsigned long long)s.ep_.stats.verdict_gaps,
      (unsigned long long)es.requests, (unsigned long long)es.request_dups,
      (unsigned long long)es.request_gaps, (unsigned long long)es.request_full,
      (unsigned long long)es.verdicts_resent, (unsigned long long)es.timeouts,
      (unsigned long long)es.sessions);
}

// Every request exactly one verdict (the Sim checks content and duplicates
// as they happen); without restarts the engine also saw each request once.
void check_exactly_once(Sim& s, bool engine_exactly_once) {
  INFO(s.error);
  REQUIRE(s.error.empty());
  REQUIRE(s.delivered_ == s.cfg_.nreq);
  for (uint32_t i = 0; i < s.cfg_.nreq; i++) {
    if (s.verdicts_[i] != 1) FAIL("request " << i << " got " << s.verdicts_[i] << " verdicts");
  }
  CHECK(fp_ep_pending(&s.ep_) == 0);
  CHECK(s.ep_.stats.verdict_mismatch == 0);
  if (engine_exactly_once) {
    CHECK(s.engine_requests_ == s.cfg_.nreq);
    for (const auto& kv : s.engine_seen_)
      if (kv.second != 1) FAIL("engine saw a request " << kv.second << " times");
  }
}

}  // namespace

TEST_CASE("lossy: clean channel baseline") {
  SimConfig c;
  c.nreq = 5000;
  Sim s(c);
  REQUIRE(s.run());
  report("clean", s);
  check_exactly_once(s, true);
  CHECK(s.ep_.stats.requests_resent == 0);
  CHECK(s.emu_stats().verdicts_resent == 0);
}

TEST_CASE("lossy: 5% loss + 5% duplication + reordering, both directions") {
  for (uint64_t seed : {1, 2, 3}) {
    SimConfig c;
    c.seed = seed;
    c.nreq = 20000;
    c.loss_ppm = 50000;
    c.dup_ppm = 50000;
    c.jitter_ns = 20000;  // 5..25 us one way: datagrams overtake each other
    Sim s(c);
    INFO("seed " << seed);
    bool ok = s.run();
    report("5% loss", s);
    INFO(s.error);
    REQUIRE(ok);
    check_exactly_once(s, true);
    CHECK(s.dgrams_lost_ > 0);
    CHECK(s.dgrams_duped_ > 0);
  }
}

TEST_CASE("lossy: 20% loss + 10% duplication + reordering, both directions") {
  for (uint64_t seed : {11, 12}) {
    SimConfig c;
    c.seed = seed;
    c.nreq = 10000;
    c.loss_ppm = 200000;
    c.dup_ppm = 100000;
    c.jitter_ns = 30000;
    Sim s(c);
    INFO("seed " << seed);
    bool ok = s.run();
    report("20% loss", s);
    INFO(s.error);
    REQUIRE(ok);
    check_exactly_once(s, true);
  }
}

TEST_CASE("lossy: small windows, priority and maximum custom data, heavy reordering") {
  SimConfig c;
  c.seed = 5;
  c.nreq = 5000;
  c.loss_ppm = 100000;
  c.dup_ppm = 100000;
  c.jitter_ns = 100000;
  c.ep_slots = 16;
  c.ep_window = 16;
  c.emu_ring = 8;
  c.req_custom = FP_MAX_CUSTOM;
  c.verdict_custom = FP_MAX_CUSTOM;
  c.features = FP_FEAT_PRIO;
  Sim s(c);
  bool ok = s.run();
  report("small windows", s);
  INFO(s.error);
  REQUIRE(ok);
  check_exactly_once(s, true);
}

TEST_CASE("lossy: sequence numbers wrap during a lossy run") {
  SimConfig c;
  c.seed = 9;
  c.nreq = 5000;
  c.loss_ppm = 50000;
  c.dup_ppm = 50000;
  c.jitter_ns = 20000;
  c.initial_rseq = 0xffffffffu - 2000;
  c.initial_vseq = 0xffffffffu - 3000;
  Sim s(c);
  bool ok = s.run();
  report("wrap", s);
  INFO(s.error);
  REQUIRE(ok);
  check_exactly_once(s, true);
}

TEST_CASE("lossy: emulator restarts mid-run - endpoint resynchronises, nothing hangs") {
  for (uint32_t loss : {0u, 50000u, 200000u}) {
    SimConfig c;
    c.seed = 21 + loss;
    c.nreq = 8000;
    c.loss_ppm = loss;
    c.dup_ppm = loss / 2;
    c.jitter_ns = 20000;
    c.long_service_ppm = 20000;  // some requests sit in the engine for 5 ms
    c.restarts = {2000000, 9000000, 30000000};  // at 2 ms, 9 ms, 30 ms
    Sim s(c);
    INFO("loss ppm " << loss);
    bool ok = s.run();
    report("restarts", s);
    INFO(s.error);
    REQUIRE(ok);
    check_exactly_once(s, false);
    CHECK(s.ep_.stats.resets >= 1);
    CHECK(s.emu_stats().sessions >= 2);
    CHECK(s.ep_.state == FP_EP_ESTABLISHED);
  }
}

TEST_CASE("lossy: restart while every request is acked and waiting in the engine") {
  SimConfig c;
  c.seed = 77;
  c.nreq = 300;
  c.submit_gap_ns = 0;
  c.service_min_ns = 20000000;  // 20 ms in the engine: restart hits them all
  c.service_max_ns = 20000000;
  c.restarts = {5000000};
  Sim s(c);
  bool ok = s.run();
  report("idle restart", s);
  INFO(s.error);
  REQUIRE(ok);
  check_exactly_once(s, false);
  CHECK(s.ep_.stats.probes >= 1);  // found out by probing
  CHECK(s.ep_.stats.resets == 1);
}
