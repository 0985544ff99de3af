#include "emulator/synthetic/synthetic_endpoints.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"

using namespace flexplane;

namespace {

// A real-time run on 2 engine cores fed by `feeders` synthetic-endpoint
// threads: offer for `offer_ms` and at least until the engine has finished
// timeslot `win_end` (under a sanitizer on a loaded 2-core machine it falls
// far behind the clock), drain, stop. Timeslots of 20 us (the default) keep a shared CI
// machine on time (the accounting holds either way).
std::vector<SyntheticStats> run_synthetic(const Topology& topo, SyntheticLoad load, uint32_t feeders,
                                          uint32_t queue_pkts, int offer_ms, Timeslot win_begin, Timeslot win_end,
                                          uint32_t router_capacity = 8, double timeslot_ns = 20000) {
  LiveTrafficOptions lopt;
  lopt.feeders = feeders;
  lopt.endpoint_queue_pkts = queue_pkts;
  LiveTraffic live(topo, 2, lopt);
  EngineOptions opt;
  opt.cores = 2;
  opt.clock = Clock::kRealTime;
  opt.timeslot_ns = timeslot_ns;
  opt.sleep_when_ahead = true;
  opt.sleep_threshold_ns = 5000;
  Engine engine(topo, test::routers_for(topo, "droptail", {{"capacity_pkts", std::to_string(router_capacity)}}), live, opt);
  const HopTable hops(topo);
  std::vector<std::unique_ptr<SyntheticEndpoints>> drivers;
  for (uint32_t f = 0; f < feeders; ++f)
    drivers.push_back(std::make_unique<SyntheticEndpoints>(live, f, topo, hops, load, opt.timeslot_ns, win_begin, win_end));
  std::atomic<int> phase{SyntheticEndpoints::kOffer};
  std::vector<std::thread> threads;
  for (auto& d : drivers) threads.emplace_back([&d, &phase] { d->run(phase); });
  std::atomic<Timeslot> done{0};
  std::thread runner([&] {
    engine.run(~Timeslot{0} >> 2, [&done](const EngineProgress& p) { done.store(p.done); }, 0.002);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(offer_ms));
  const Timeslot must_reach = win_end == (~Timeslot{0} >> 2) ? 0 : win_end;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done.load() < must_reach && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(done.load() >= must_reach);
  phase.store(SyntheticEndpoints::kDrain);
  const auto drain_give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (bool all = false; !all && std::chrono::steady_clock::now() < drain_give_up;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    all = true;
    for (auto& d : drivers) all = all && d->drained();
  }
  engine.request_stop();
  runner.join();
  phase.store(SyntheticEndpoints::kQuit);
  for (auto& t : threads) t.join();
  std::vector<SyntheticStats> out;
  for (auto& d : drivers) out.push_back(d->stats());
  return out;
}

}  // namespace

TEST_CASE("latency histogram: exact below 64 ns, ~1.6 % above, nearest-rank quantiles", "[synthetic]") {
  LatencyHistogram h;
  REQUIRE(h.quantile_ns(0.5) == 0);
  for (uint64_t v = 1; v <= 100; ++v) h.add(v * 1000);  // 1..100 us
  REQUIRE(h.samples() == 100);
  REQUIRE(h.max_ns() == 100000);
  CHECK(h.quantile_ns(0.5) == Approx(50000).epsilon(0.02));
  CHECK(h.quantile_ns(0.99) == Approx(99000).epsilon(0.02));
  CHECK(h.quantile_ns(1.0) == Approx(100000).epsilon(0.02));
  for (uint64_t v : {0ull, 1ull, 63ull}) CHECK(LatencyHistogram::middle(LatencyHistogram::bucket(v)) == v);
  for (uint64_t v : {64ull, 1000ull, 123456ull, 987654321ull, 1ull << 40}) {
    const double m = LatencyHistogram::middle(LatencyHistogram::bucket(v));
    CHECK(std::abs(m - static_cast<double>(v)) <= static_cast<double>(v) / 64);
  }
  LatencyHistogram g;
  g.add(7);
  g.merge(h);
  REQUIRE(g.samples() == 101);
  CHECK(g.quantile_ns(0) == 7);
}

TEST_CASE("hop table: routers crossed between racks of a leaf-spine", "[synthetic]") {
  const Topology topo = make_leaf_spine(3, 4, 2, 1, 1);
  const HopTable hops(topo);
  CHECK(hops.hops(0, 1) == 1);   // same rack: the ToR
  CHECK(hops.hops(0, 4) == 3);   // ToR, spine, ToR
  CHECK(hops.hops(11, 2) == 3);
}

TEST_CASE("synthetic endpoints: every request answered once, from two feeders, Poisson and backlogged",
          "[engine][live][synthetic]") {
  const Topology topo = make_leaf_spine(4, 4, 1, 1, 1);  // 16 endpoints, 4 groups, oversubscribed uplinks
  for (const uint32_t backlog : {0u, 6u}) {
    DYNAMIC_SECTION("backlog " << backlog) {
      SyntheticLoad load;
      load.load = 0.6;  // uplinks 4:1 oversubscribed: queues fill and drop
      load.backlog_pkts = backlog;
      load.seed = 3;
      const std::vector<SyntheticStats> per = run_synthetic(topo, load, 2, 16, 120, 0, ~Timeslot{0} >> 2);
      REQUIRE(per.size() == 2);
      SyntheticStats all;
      for (const SyntheticStats& s : per) {
        CHECK(s.offered > 0);  // both feeders had endpoints and made requests
        CHECK(s.outstanding() == 0);
        CHECK(s.offered == s.submitted + s.refused);
        CHECK(s.offered == s.released + s.marked + s.dropped);
        all.merge(s);
      }
      CHECK(all.released > 0);
      CHECK(all.dropped > all.refused);  // the routers dropped some (a 4:1 uplink at 60 % load)
      uint64_t by_reason = 0;
      for (uint64_t n : all.drop_reasons) by_reason += n;
      CHECK(by_reason == all.dropped - all.refused);  // every engine drop has its reason
      // The window is the whole run: every answered request is in it, and each delivery
      // crossed one router (same rack) or three.
      CHECK(all.window_verdicts == all.released + all.marked + all.dropped - all.refused);
      CHECK(all.window_delivered_bytes == (all.released + all.marked) * 1500);
      CHECK(all.window_router_bytes >= all.window_delivered_bytes);
      CHECK(all.window_router_bytes <= 3 * all.window_delivered_bytes);
      CHECK(all.latency.samples() + all.latency_unmatched == all.window_verdicts);
      CHECK(all.latency.quantile_ns(0.5) >= 2 * 20000);  // at least the two access links of 20 us timeslots
    }
  }
}

TEST_CASE("synthetic endpoints: the window counts only verdicts of its timeslots", "[engine][live][synthetic]") {
  const Topology topo = make_leaf_spine(2, 4, 1, 4, 1);
  SyntheticLoad load;
  load.load = 0.2;
  load.poll_ns = 50000;  // a loop every 50 us: requests and verdicts in bursts
  // Offer ~200 ms of 200 us timeslots (1000), count [250, 750): long enough
  // that the feeder runs in the window even when a loaded machine leaves it
  // off its CPU for ~10 ms (short timeslots let an engine that fell behind
  // race through a window while the feeder waited for a CPU).
  const std::vector<SyntheticStats> per = run_synthetic(topo, load, 1, 64, 200, 250, 750, 64, 200000);
  const SyntheticStats& s = per[0];
  REQUIRE(s.outstanding() == 0);
  REQUIRE(s.offered == s.released + s.marked + s.dropped);
  INFO("offered " << s.offered << ", dropped " << s.dropped << ", generator lag " << s.max_offer_lag_ns << " ns");
  CHECK(s.window_verdicts > 0);
  CHECK(s.window_verdicts < s.released + s.marked + s.dropped - s.refused);
  CHECK(s.latency.samples() + s.latency_unmatched == s.window_verdicts);
}
