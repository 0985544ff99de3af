// Engine speed on the reference workload: one rack of 32 endpoints + ToR,
// every port busy every timeslot (backlogged all-to-all), measured as router
// packet-hops per second. On N cores the workload is N such racks joined by a
// spine, each rack on its own core: the traffic stays within racks. Without
// lookahead the cores synchronise every timeslot through the cross-core
// ToR-spine links (which a packet could cross at any time); with it the
// traffic's promise to stay in its rack lets them run apart.
//
// Reported counters:
//   hops_per_s        router packet-hops per second (all cores)
//   hops_per_s_core   the same divided by the number of cores
//   hops_per_cpu_s    router packet-hops per CPU-second of the whole process:
//                     the per-core rate with time spent descheduled (shared,
//                     noisy machines) left out
//   ns_per_ts_p50     median wall-clock time of a timeslot (slowest core):
//                     stalls from other tenants hit few timeslots, so this
//                     barely moves when the machine is noisy
//   hops_per_s_p50    hops per timeslot / ns_per_ts_p50: the throughput the
//                     median timeslot stands for
//   syncs_per_ts      times a core looked at another core's progress, per
//                     timeslot (all cores; lookahead makes this ~0)
// Run: make bench   (see docs/performance.md)
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "emulator/traffic/backlog_traffic.h"
#include "emulator/engine/engine.h"
#include "emulator/config/router_factory.h"

using namespace flexplane;

namespace {

constexpr uint32_t kEndpointsPerRack = 32;
constexpr Timeslot kTimeslotsPerIteration = 100000;  // long enough to hide thread start-up

std::vector<std::unique_ptr<Router>> make_routers(const Topology& t, const std::string& scheme) {
  std::vector<std::unique_ptr<Router>> out;
  for (size_t i = 0; i < t.routers.size(); ++i) {
    RouterSpec spec;
    spec.where = "bench";
    spec.scheme = scheme;
    out.push_back(build_router(spec));
  }
  return out;
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// range(0): cores; range(1): latency of the cross-core (ToR-spine) links in
// timeslots; range(2): racks (0: one per core; 2 on 1 core measures what the
// 2-core topology itself costs); range(3): lookahead on (1) or off (0). With
// lookahead off, latency 1 makes neighbouring cores run in lockstep and more
// latency gives them slack; with it on, the racks' traffic promises never to
// leave the rack, so the cores need not look at each other at all (see
// docs/performance.md).
void run(benchmark::State& state, const std::string& scheme) {
  const uint32_t cores = static_cast<uint32_t>(state.range(0));
  const uint32_t cross_latency = static_cast<uint32_t>(state.range(1));
  const uint32_t racks = state.range(2) ? static_cast<uint32_t>(state.range(2)) : cores;
  const bool lookahead = state.range(3) != 0;
  Topology topo = racks == 1 ? make_single_rack(kEndpointsPerRack, 1)
                             : make_leaf_spine(racks, kEndpointsPerRack, 1, 1, 1);
  for (auto& link : topo.router_links) link.latency_timeslots = cross_latency;
  BacklogTraffic traffic;
  EngineOptions opt;
  opt.cores = cores;
  opt.time_timeslots = true;
  opt.lookahead = lookahead;
  if (racks > 1) {  // rack r on core r % cores; the (idle) spine shares core 0
    for (uint32_t r = 0; r < racks; ++r) opt.router_core.push_back(r % cores);
    opt.router_core.push_back(0);
  }
  Engine engine(topo, make_routers(topo, scheme), traffic, opt);
  engine.run(1000);  // warm up: queues, caches, page faults
  const uint64_t hops0 = engine.router_packet_hops();
  const Timeslot ts0 = engine.now();
  const double wall0 = engine.wall_seconds();
  const double cpu0 = process_cpu_seconds();
  Timeslot end = engine.now();
  for (auto _ : state) {
    end += kTimeslotsPerIteration;
    engine.run(end);
  }
  const double hops = static_cast<double>(engine.router_packet_hops() - hops0);
  const double secs = engine.wall_seconds() - wall0;
  const double cpu = process_cpu_seconds() - cpu0;
  state.counters["hops_per_s"] = hops / secs;
  state.counters["hops_per_s_core"] = hops / secs / cores;
  state.counters["ns_per_hop_core"] = secs * 1e9 * cores / hops;
  state.counters["hops_per_cpu_s"] = hops / cpu;
  double p50 = 0;
  for (const TimeslotTiming& t : engine.timeslot_timing()) p50 = std::max(p50, t.p50_ns);
  state.counters["ns_per_ts_p50"] = p50;
  state.counters["hops_per_s_p50"] = hops / static_cast<double>(engine.now() - ts0) / (p50 * 1e-9);
  uint64_t syncs = 0;
  for (const CoreSyncStats& c : engine.sync_stats()) syncs += c.syncs;
  state.counters["syncs_per_ts"] = static_cast<double>(syncs) / static_cast<double>(engine.now());
  state.SetItemsProcessed(static_cast<int64_t>(hops));
}

void BM_Engine_DropTail(benchmark::State& s) { run(s, "droptail"); }
void BM_Engine_Dctcp(benchmark::State& s) { run(s, "dctcp"); }

// Runs a core's loop on the calling thread.
struct InlineLauncher final : CoreLauncher {
  void run(std::vector<std::function<void()>> jobs, const std::function<void()>&) override {
    for (auto& j : jobs) j();
  }
};

// The scaling baseline: range(0) unconnected single-rack engines, each on its
// own pinned thread, at the same time. Nothing is shared, so this is what N
// cores of this (shared, noisy) machine give when no core ever waits for
// another: the 2-core runs above are judged against it, not against 2x one core.
void BM_Engine_Independent(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  std::vector<std::unique_ptr<BacklogTraffic>> traffic;
  std::vector<std::unique_ptr<Engine>> engines;
  for (uint32_t i = 0; i < n; ++i) {
    Topology topo = make_single_rack(kEndpointsPerRack, 1);
    traffic.push_back(std::make_unique<BacklogTraffic>());
    EngineOptions opt;
    opt.time_timeslots = true;
    engines.push_back(std::make_unique<Engine>(topo, make_routers(topo, "droptail"), *traffic.back(), opt));
    engines.back()->run(1000);
  }
  uint64_t hops0 = 0;
  for (auto& e : engines) hops0 += e->router_packet_hops();
  double secs = 0;
  Timeslot end = engines[0]->now();
  for (auto _ : state) {
    end += kTimeslotsPerIteration;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        InlineLauncher inline_launcher;
        engines[i]->run(end, {}, 1.0, &inline_launcher);
      });
      pin_to_cpu(threads.back(), static_cast<int>(i));
    }
    for (auto& t : threads) t.join();
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  uint64_t hops = 0;
  double rate_p50 = 0, p50_max = 0;
  for (auto& e : engines) {
    hops += e->router_packet_hops();
    const double p50 = e->timeslot_timing()[0].p50_ns;
    p50_max = std::max(p50_max, p50);
    rate_p50 += static_cast<double>(e->router_packet_hops()) / static_cast<double>(e->now()) / (p50 * 1e-9);
  }
  state.counters["ns_per_ts_p50"] = p50_max;
  state.counters["hops_per_s_p50"] = rate_p50;
  state.counters["hops_per_s"] = static_cast<double>(hops - hops0) / secs;
  state.counters["hops_per_s_core"] = static_cast<double>(hops - hops0) / secs / n;
  state.SetItemsProcessed(static_cast<int64_t>(hops - hops0));
}

}  // namespace

BENCHMARK(BM_Engine_DropTail)
    ->ArgNames({"cores", "xlat", "racks", "lookahead"})
    ->Args({1, 1, 0, 1})->Args({1, 1, 2, 1})->Args({2, 1, 0, 1})->Args({2, 1, 0, 0})->Args({2, 4, 0, 0})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Engine_Dctcp)
    ->ArgNames({"cores", "xlat", "racks", "lookahead"})->Args({1, 1, 0, 1})->Args({2, 1, 0, 1})->Args({2, 1, 0, 0})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Engine_Independent)->ArgNames({"engines"})->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
