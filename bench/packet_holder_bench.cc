// The NFQUEUE endpoint's per-packet work, without the kernel: parse a real
// 1500-byte TCP packet, classify it, make its request, and apply the verdict
// (release, or CE mark with the incremental IPv4 checksum update, which also
// hands the rewritten packet back). The endpoint also pays, per packet, a
// netlink copy in and a verdict out (batched), and the protocol (batched
// requests and verdicts): see docs/performance.md for the whole path.
// items_per_second = packets held and decided per second.
#include <benchmark/benchmark.h>

#include <deque>

#include "endpoint/nfqueue/packet_holder.h"
#include "net/ecn.h"
#include "net/ip_packet.h"
#include "net/test_packets.h"

using namespace flexplane;
using namespace flexplane::endpoint::nfq;

namespace {

struct CountingSink : VerdictSink {
  uint64_t n = 0, bytes = 0;
  void verdict(uint32_t, Action, const uint8_t*, size_t len) override {
    ++n;
    bytes += len;
  }
};

HolderConfig bench_config() {
  HolderConfig c;
  c.endpoint_id = 1;
  net::IpAddress a;
  for (uint32_t i = 0; i < 32; ++i) {
    net::IpAddress::parse("10.77.0." + std::to_string(10 + i), &a);
    c.peers.emplace_back(a, i);
  }
  net::IpAddress::parse("10.77.0.2", &c.emulator);
  return c;
}

// arg 0: verdict (0 release, 1 mark); arg 1: flows the packets rotate over.
void BM_HolderHoldAndDecide(benchmark::State& state) {
  const bool mark = state.range(0) == 1;
  const uint32_t flows = static_cast<uint32_t>(state.range(1));
  CountingSink sink;
  PacketHolder h(bench_config(), &sink);
  std::vector<std::vector<uint8_t>> pkts;
  for (uint32_t f = 0; f < flows; ++f) {
    net::testing::PacketSpec s;
    s.src = "10.77.0.11";
    s.dst = "10.77.0.1" + std::to_string(2 + f % 8);
    s.sport = static_cast<uint16_t>(40000 + f);
    s.payload = 1460;
    s.tos = 2;
    pkts.push_back(net::testing::build_packet(s));
  }
  std::deque<OutRequest> out;
  uint32_t id = 0;
  for (auto _ : state) {
    const auto& p = pkts[id % flows];
    h.on_packet(id, p.data(), p.size(), id, &out);
    ++id;
    const OutRequest r = out.front();
    out.pop_front();
    h.on_verdict(r.cookie, mark ? FP_ACT_MARK : FP_ACT_RELEASE, id);
  }
  benchmark::DoNotOptimize(sink.n);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HolderHoldAndDecide)->Args({0, 1})->Args({1, 1})->Args({0, 1000});

void BM_ParseIpv4Tcp(benchmark::State& state) {
  net::testing::PacketSpec s;
  s.payload = 1460;
  const auto p = net::testing::build_packet(s);
  net::PacketInfo info;
  for (auto _ : state) {
    benchmark::DoNotOptimize(net::parse_ip_packet(p.data(), p.size(), &info));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseIpv4Tcp);

}  // namespace
