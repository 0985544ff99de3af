// Per-packet cost of the pattern-API pieces in isolation (no engine, no
// links): a push+pop through the queue bank, and one PatternRouter timeslot
// (route, classify, enqueue, schedule) with 32 ports each receiving and
// sending one packet. Compare with BM_Engine_* (engine_bench.cc) to see what
// the engine adds around the router.
#include <benchmark/benchmark.h>

#include "api/pattern_router.h"
#include "api/queue_bank.h"
#include "emulator/config/router_factory.h"

using namespace flexplane;

namespace {

void BM_QueueBank_PushPop(benchmark::State& state) {
  QueueBank bank(32, 1, 1024);
  Packet p{};
  p.size_bytes = 1500;
  uint64_t sum = 0;
  for (auto _ : state) {
    for (PortId port = 0; port < 32; ++port) bank.push(port, 0, p);
    for (PortId port = 0; port < 32; ++port) sum += bank.pop(port, 0).size_bytes;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_QueueBank_PushPop);

void router_timeslot(benchmark::State& state, const std::string& scheme) {
  constexpr uint16_t kPorts = 32;
  RoutingTable routes(kPorts, 1);
  for (EndpointId e = 0; e < kPorts; ++e) routes.set(e, {static_cast<PortId>(e)});
  RouterSpec spec;
  spec.where = "bench";
  spec.scheme = scheme;
  auto router = build_router(spec);
  RouterEnv env;
  env.num_ports = kPorts;
  env.routes = &routes;
  router->bind(env);
  Packet in[kPorts], out[kPorts];
  PortId out_ports[kPorts];
  Timeslot t = 0;
  for (auto _ : state) {
    const uint32_t shift = 1 + static_cast<uint32_t>(t % (kPorts - 1));
    for (uint32_t i = 0; i < kPorts; ++i) {
      in[i] = Packet{};
      in[i].src = static_cast<EndpointId>(i);
      in[i].dst = static_cast<EndpointId>((i + shift) % kPorts);
      in[i].size_bytes = 1500;
      in[i].flags = kFlagEct;
    }
    router->input(in, kPorts, t);
    benchmark::DoNotOptimize(router->output(t, out, out_ports));
    ++t;
  }
  state.SetItemsProcessed(state.iterations() * kPorts);
}
void BM_Router_DropTail(benchmark::State& s) { router_timeslot(s, "droptail"); }
void BM_Router_Dctcp(benchmark::State& s) { router_timeslot(s, "dctcp"); }
void BM_Router_Pfabric(benchmark::State& s) { router_timeslot(s, "pfabric"); }
void BM_Router_Drr(benchmark::State& s) { router_timeslot(s, "drr"); }
// Reads every head's enqueue time at dequeue (QueueBank::enqueue_time's check).
void BM_Router_Codel(benchmark::State& s) { router_timeslot(s, "codel"); }
BENCHMARK(BM_Router_DropTail);
BENCHMARK(BM_Router_Dctcp);
BENCHMARK(BM_Router_Pfabric);
BENCHMARK(BM_Router_Drr);
BENCHMARK(BM_Router_Codel);

}  // namespace
