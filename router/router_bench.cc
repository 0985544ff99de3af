// The router's hot path in process (Google Benchmark): bursts of 64 frames
// of 64 bytes (60 in the mbuf + FCS) through Worker::process_burst (RFC 1812
// checks, one rte_lpm_lookup_bulk, TTL + checksum, MAC rewrite) and the
// output port's scheme (classify -> enqueue -> schedule, unpaced), handed to
// a net_null device that frees them. 1024 UDP flows over 256 /24 routes.
//
// Each iteration first refills the burst (rte_pktmbuf_alloc_bulk + a 60-byte
// copy of the next template frame, what an RX driver does); BM_Refill does
// only that and the free, so the router's own cost is the difference.
// cycles/pkt: see report().
//
//   build/router_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// EAL: one lcore, --in-memory when 512+ hugepages are free, else --no-huge
// (4 KiB pages: more TLB misses; the figure names which was used).
#include <benchmark/benchmark.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "router/ipv4.h"
#include "router/eal.h"
#include "router/router_app.h"

using namespace flexplane;
using namespace flexplane::router;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kBurst = 64, kFlows = 1024, kFrame = 60;

bool g_huge = false;

bool eal() {
  static const bool ok = [] {
    g_huge = hugepages_free() >= 512;
    static std::vector<std::string> args = {"router_bench", "-l", "0", "--no-pci", "--no-telemetry", "--log-level=error",
                                      "--vdev", "net_null0", "--vdev", "net_null1"};
    for (const char* a : g_huge ? std::vector<const char*>{"--in-memory"}
                                : std::vector<const char*>{"--no-huge", "-m", "1024", "--no-shconf"})
      args.push_back(a);
    if (eal_init(args) < 0) {
      std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
      return false;
    }
    return true;
  }();
  return ok;
}

// 1024 UDP frames from 10.1.0.2 to 10.100.<i % 256>.<1 + i / 256>, to the router's port-0 MAC.
std::vector<std::array<uint8_t, kFrame>> templates() {
  std::vector<std::array<uint8_t, kFrame>> t(kFlows);
  for (uint32_t i = 0; i < kFlows; ++i) {
    uint8_t* p = t[i].data();
    std::memset(p, 0, kFrame);
    const uint8_t dst_mac[6] = {0x02, 0, 0, 0, 0, 0x10}, src_mac[6] = {0x02, 0, 0, 0, 0x01, 0x10};
    std::memcpy(p, dst_mac, 6);
    std::memcpy(p + 6, src_mac, 6);
    p[12] = 0x08;
    auto* h = reinterpret_cast<ipv4::Header*>(p + 14);
    h->version_ihl = 0x45;
    h->total_length = ipv4::be16(46);
    h->ttl = 64;
    h->protocol = 17;
    h->src = ipv4::be32(0x0A010002);
    h->dst = ipv4::be32((10u << 24) | (100u << 16) | ((i % 256) << 8) | (1 + i / 256));
    h->checksum = ipv4::checksum(h, 20);
    p[34] = static_cast<uint8_t>((1000 + i) >> 8);
    p[35] = static_cast<uint8_t>(1000 + i);
    p[36] = 0x07;
    p[37] = 0xD0;
    p[39] = 26;  // UDP length 8 + 18
  }
  return t;
}

struct Bench {
  fs::path dir;
  std::unique_ptr<RouterApp> app;
  Worker* worker = nullptr;
  PortScheduler* out = nullptr;
  rte_mempool* pool = nullptr;
  std::vector<std::array<uint8_t, kFrame>> frames = templates();
  uint32_t next = 0;

  // `scheme`: the router: key; empty = run.queueing false (no scheme).
  explicit Bench(const std::string& scheme) {
    dir = fs::temp_directory_path() / ("fp-router-bench-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::ofstream routes(dir / "routes.txt");
    for (int i = 0; i < 256; ++i) {
      char line[64];
      std::snprintf(line, sizeof line, "10.100.%d.0/24 port 1 mac 02:00:00:00:09:%02x\n", i, i);
      routes << line;
    }
    routes << "10.100.7.0/25 port 1 mac 02:00:00:00:09:fe\n";  // some lookups need a second level
    routes.close();
    std::ofstream(dir / "r.yaml") << "router: " << (scheme.empty() ? "{scheme: droptail}" : scheme) << "\n"
                                  << "ports:\n  0: {ip: 10.1.0.1/24, mac: \"02:00:00:00:00:10\"}\n"
                                  << "  1: {ip: 10.2.0.1/24, mac: \"02:00:00:00:00:11\"}\n"
                                  << "routes: routes.txt\n"
                                  << "run: {burst: " << kBurst << ", stats_interval_s: 0, watch_routes: false, queueing: "
                                  << (scheme.empty() ? "false" : "true") << "}\n"
                                  << "output: {dir: " << (dir / "out").string() << "}\n";
    app = std::make_unique<RouterApp>(load_config((dir / "r.yaml").string()));
    worker = app->workers().at(0).get();
    for (const auto& s : app->all_schedulers())
      if (s->port() == 1) out = s.get();
    pool = app->shared().pool;
  }
  ~Bench() {
    app.reset();  // closes the ports: plug fresh ones in for the next Bench
    for (const char* name : {"net_null0", "net_null1"}) {
      rte_vdev_uninit(name);
      if (rte_vdev_init(name, "") != 0) std::fprintf(stderr, "router_bench: cannot re-create %s\n", name);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  // What an RX driver does: fresh mbufs holding the next frames.
  bool refill(rte_mbuf** m) {
    if (rte_pktmbuf_alloc_bulk(pool, m, kBurst) != 0) return false;
    for (uint32_t i = 0; i < kBurst; ++i) {
      std::memcpy(rte_pktmbuf_mtod(m[i], uint8_t*), frames[next].data(), kFrame);
      m[i]->data_len = m[i]->pkt_len = kFrame;
      next = (next + 1) % kFlows;
    }
    return true;
  }
};

// cycles/pkt: the median over bursts of rte_rdtsc around the measured part
// (the router: process_burst + drain; BM_Refill: the refill + free), / 64.
// A median, because this machine is shared: a burst during which the thread
// was descheduled counts once, not by its length. all_cycles/pkt: rdtsc
// around the whole loop / packets (refill and preemptions included).
void report(benchmark::State& state, std::vector<uint64_t>& bursts, uint64_t all_cycles, uint64_t packets) {
  state.SetItemsProcessed(static_cast<int64_t>(packets));
  if (!bursts.empty()) {
    std::nth_element(bursts.begin(), bursts.begin() + bursts.size() / 2, bursts.end());
    state.counters["cycles/pkt"] = static_cast<double>(bursts[bursts.size() / 2]) / kBurst;
  }
  state.counters["all_cycles/pkt"] = packets ? static_cast<double>(all_cycles) / static_cast<double>(packets) : 0;
  state.counters["hugepages"] = g_huge;
}

void BM_Refill(benchmark::State& state) {
  if (!eal()) return state.SkipWithError("EAL init failed");
  Bench b("");
  rte_mbuf* m[kBurst];
  uint64_t packets = 0;
  std::vector<uint64_t> bursts;
  bursts.reserve(1 << 20);
  const uint64_t t0 = rte_rdtsc();
  for (auto _ : state) {
    const uint64_t t1 = rte_rdtsc();
    if (!b.refill(m)) return state.SkipWithError("mbuf pool empty");
    rte_pktmbuf_free_bulk(m, kBurst);
    if (bursts.size() < bursts.capacity()) bursts.push_back(rte_rdtsc() - t1);
    packets += kBurst;
  }
  report(state, bursts, rte_rdtsc() - t0, packets);
}

void run_router(benchmark::State& state, const std::string& scheme) {
  if (!eal()) return state.SkipWithError("EAL init failed");
  Bench b(scheme);
  rte_mbuf* m[kBurst];
  uint64_t packets = 0;
  std::vector<uint64_t> bursts;
  bursts.reserve(1 << 20);
  const uint64_t fwd0 = b.worker->counters().forwarded.get();
  const uint64_t t0 = rte_rdtsc();
  for (auto _ : state) {
    if (!b.refill(m)) return state.SkipWithError("mbuf pool empty");
    const uint64_t now = rte_rdtsc();
    b.worker->process_burst(0, m, kBurst, now);
    b.out->drain(now);
    if (bursts.size() < bursts.capacity()) bursts.push_back(rte_rdtsc() - now);
    packets += kBurst;
  }
  report(state, bursts, rte_rdtsc() - t0, packets);
  if (b.worker->counters().forwarded.get() - fwd0 != packets)
    state.SkipWithError("not every packet was forwarded (routes or neighbours wrong)");
  if (!b.out->idle()) state.SkipWithError("the port kept a backlog");
}

void BM_Router_Lpm(benchmark::State& state) { run_router(state, ""); }
void BM_Router_LpmDropTail(benchmark::State& state) { run_router(state, "{scheme: droptail}"); }
void BM_Router_LpmRedDrr(benchmark::State& state) {
  run_router(state, "{classifier: {name: by_flow, num_queues: 32}, queue_manager: red, scheduler: drr}");
}

}  // namespace

BENCHMARK(BM_Refill);
BENCHMARK(BM_Router_Lpm);
BENCHMARK(BM_Router_LpmDropTail);
BENCHMARK(BM_Router_LpmRedDrr);
