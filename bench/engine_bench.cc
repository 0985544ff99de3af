// Engine speed on the reference workload: one rack of 32 endpoints + ToR,
// every port busy every timeslot (backlogged all-to-all), measured as router
// packet-hops per second. On N cores the workload is N such racks joined by a
// spine (so cores really exchange packets) with each rack on its own core.
//
// Reported counters:
//   hops_per_s        router packet-hops per second (all cores)
//   hops_per_s_core   the same divided by the number of cores
//   hops_per_cpu_s    router packet-hops per CPU-second of the whole process:
//                     the per-core rate with time spent descheduled (shared,
//                     noisy machines) left out
// Run: make bench   (see docs/performance.md)
#include <benchmark/benchmark.h>

#include <ctime>

#include "emulator/backlog_traffic.h"
#include "emulator/engine.h"
#include "emulator/router_factory.h"

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
// timeslots. Latency 1 makes neighbouring cores run in lockstep; more latency
// gives them slack (see docs/performance.md).
void run(benchmark::State& state, const std::string& scheme) {
  const uint32_t cores = static_cast<uint32_t>(state.range(0));
  const uint32_t cross_latency = static_cast<uint32_t>(state.range(1));
  Topology topo = cores == 1 ? make_single_rack(kEndpointsPerRack, 1)
                             : make_leaf_spine(cores, kEndpointsPerRack, 1, 1, 1);
  for (auto& link : topo.router_links) link.latency_timeslots = cross_latency;
  BacklogTraffic traffic;
  EngineOptions opt;
  opt.cores = cores;
  if (cores > 1) {  // rack r on core r; the (idle) spine shares core 0
    for (uint32_t r = 0; r < cores; ++r) opt.router_core.push_back(r);
    opt.router_core.push_back(0);
  }
  Engine engine(topo, make_routers(topo, scheme), traffic, opt);
  engine.run(1000);  // warm up: queues, caches, page faults
  const uint64_t hops0 = engine.router_packet_hops();
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
  state.SetItemsProcessed(static_cast<int64_t>(hops));
}

void BM_Engine_DropTail(benchmark::State& s) { run(s, "droptail"); }
void BM_Engine_Dctcp(benchmark::State& s) { run(s, "dctcp"); }

}  // namespace

BENCHMARK(BM_Engine_DropTail)
    ->ArgNames({"cores", "xlat"})->Args({1, 1})->Args({2, 1})->Args({2, 4})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Engine_Dctcp)
    ->ArgNames({"cores", "xlat"})->Args({1, 1})->Args({2, 1})->Args({2, 4})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
