// Requests per second one communication core handles (emulator/live/comm_core.h).
//
// In-process, no network: a net_ring port (rte_eth_from_rings, EAL --no-huge)
// carries frames between the comm core and a generator of E endpoints, each a
// real fp_ep_conn (window 1024) encoding REQUESTS frames with up to B
// requests per datagram (B = 0: as many as fit, 103). The engine is replaced
// by the emulated endpoints' own code: LiveTraffic's sources are drained and
// every packet is "delivered" at once (one release verdict per request), in
// the same thread, between comm-core polls.
//
// Measured (manual time): only the time spent inside CommCore::poll_once(),
// i.e. rx burst + Ethernet/IPv4/UDP parsing + fp_emu_rx + LiveTraffic::submit
// + collect + token lookup + fp_emu_push_verdict + fp_emu_poll + frame build
// with software IPv4/UDP checksums + tx burst. Not measured: the generator,
// the endpoints' verdict processing, the stand-in engine.
// items_per_second = requests (each answered with one verdict) per second.
#include <benchmark/benchmark.h>

#include <arpa/inet.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "emulator/live/comm_core.h"
#include "emulator/live/test_eal.h"
#include "emulator/topology/topology.h"
#include "fp_endpoint_conn.h"

using namespace flexplane;
using namespace flexplane::live;
using namespace flexplane::live::testing;

namespace {

constexpr uint32_t kEmuIp = 0x0a4d0002, kEp0Ip = 0x0a4d000a;

void BM_CommCoreRequests(benchmark::State& state) {
  if (!eal_ready() || !test_pool()) {
    state.SkipWithError("EAL init failed");
    return;
  }
  const uint32_t eps = static_cast<uint32_t>(state.range(0));
  const uint16_t batch = static_cast<uint16_t>(state.range(1));
  const Topology topo = make_single_rack(eps, 1);
  RingPort rp = make_ring_port(8192);
  if (setup_port(rp.port, test_pool()) != "") {
    state.SkipWithError("port setup failed");
    return;
  }
  LiveTrafficOptions lopt;
  lopt.endpoint_queue_pkts = 1 << 20;
  lopt.ring_entries = 1 << 18;  // > endpoints x window: the stand-in engine never waits on itself
  LiveTraffic traffic(topo, 1, lopt);
  std::vector<std::unique_ptr<TrafficSource>> sources;
  std::vector<std::unique_ptr<TrafficSink>> sinks;
  for (uint32_t r = 0; r < topo.routers.size(); ++r) {
    const auto group = topo.endpoints_of(r);
    if (group.empty()) continue;
    sources.push_back(traffic.make_source(group));
    sinks.push_back(traffic.make_sink(group, nullptr));
  }
  CommCoreConfig cc;
  cc.port_id = rp.port;
  for (uint32_t e = 0; e < eps; ++e) cc.endpoint_ips.push_back(net::Ipv4(kEp0Ip + e));
  cc.window = 1024;
  CommCore core(cc, traffic, test_pool());
  const rte_ether_addr mac = core.mac();

  struct Ep {
    fp_ep_conn conn;
    std::vector<fp_ep_slot> slots = std::vector<fp_ep_slot>(1024);
    uint32_t next = 0;
  };
  std::vector<std::unique_ptr<Ep>> ep(eps);
  uint64_t now = mono_ns();
  for (uint32_t e = 0; e < eps; ++e) {
    ep[e] = std::make_unique<Ep>();
    fp_ep_config cfg;
    fp_ep_config_default(&cfg);
    cfg.instance = 77 + e;
    cfg.window = 1024;
    cfg.max_batch = batch;
    cfg.rto_ns = 1'000'000'000;  // no retransmissions in a lossless bench
    cfg.rto_max_ns = 2'000'000'000;
    cfg.ack_delay_ns = 0;
    fp_ep_conn_init(&ep[e]->conn, &cfg, ep[e]->slots.data(), 1024, now);
  }
  uint8_t buf[2048];
  std::chrono::steady_clock::duration extra{};  // comm-core time spent while the generator waits
  auto send_all = [&] {
    now = mono_ns();
    for (uint32_t e = 0; e < eps; ++e) {
      Ep& x = *ep[e];
      fp_request r{};
      r.flow = e;
      r.dst = static_cast<uint16_t>((e + 1) % eps);
      r.size_bytes = 1500;
      for (;;) {
        r.id = x.next;
        if (fp_ep_submit(&x.conn, &r, 0, now) != 0) break;
        ++x.next;
      }
      int n;
      while ((n = fp_ep_poll(&x.conn, now, buf, sizeof buf)) > 0) {
        rte_mbuf* m = rte_pktmbuf_alloc(test_pool());
        if (!m) break;
        uint8_t* f = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(42 + n)));
        auto* eth = reinterpret_cast<rte_ether_hdr*>(f);
        eth->dst_addr = mac;
        eth->src_addr = mac;
        eth->ether_type = htons(RTE_ETHER_TYPE_IPV4);
        auto* ip = reinterpret_cast<rte_ipv4_hdr*>(f + 14);
        std::memset(ip, 0, 20);
        ip->version_ihl = 0x45;
        ip->total_length = htons(static_cast<uint16_t>(28 + n));
        ip->time_to_live = 64;
        ip->next_proto_id = IPPROTO_UDP;
        ip->src_addr = htonl(kEp0Ip + e);
        ip->dst_addr = htonl(kEmuIp);
        ip->hdr_checksum = rte_ipv4_cksum(ip);
        auto* udp = reinterpret_cast<rte_udp_hdr*>(f + 34);
        udp->src_port = htons(40000);
        udp->dst_port = htons(9977);
        udp->dgram_len = htons(static_cast<uint16_t>(8 + n));
        udp->dgram_cksum = 0;
        std::memcpy(f + 42, buf, n);
        while (rte_ring_enqueue(rp.to_port, m) != 0) {  // ring full: let the core drain it (timed)
          const auto a = std::chrono::steady_clock::now();
          core.poll_once(mono_ns());
          extra += std::chrono::steady_clock::now() - a;
        }
      }
    }
  };
  auto receive_all = [&] {
    void* objs[64];
    unsigned n;
    now = mono_ns();
    while ((n = rte_ring_dequeue_burst(rp.from_port, objs, 64, nullptr)) > 0)
      for (unsigned i = 0; i < n; ++i) {
        auto* m = static_cast<rte_mbuf*>(objs[i]);
        const uint8_t* f = rte_pktmbuf_mtod(m, const uint8_t*);
        const uint32_t dst = ntohl(reinterpret_cast<const rte_ipv4_hdr*>(f + 14)->dst_addr) - kEp0Ip;
        if (dst < eps)
          fp_ep_rx(&ep[dst]->conn, f + 42, rte_pktmbuf_data_len(m) - 42, now,
                   [](void*, const fp_verdict*, const fp_request*, uint64_t) {}, nullptr);
        rte_pktmbuf_free(m);
      }
  };
  auto fake_engine = [&] {  // every queued request delivered at once
    Packet pkts[1024];
    uint32_t local[1024];
    for (size_t g = 0; g < sources.size(); ++g)
      for (int slot = 0; slot < 4096; ++slot) {
        const uint32_t m = sources[g]->emit(0, pkts, local);
        if (!m) break;
        sinks[g]->deliver(pkts, m, 0);
      }
  };
  // Open the sessions.
  for (int i = 0; i < 20; ++i) {
    send_all();
    core.poll_once(mono_ns());
    receive_all();
  }

  const uint64_t req0 = core.stats().requests;
  for (auto _ : state) {
    extra = {};
    send_all();
    const auto t0 = std::chrono::steady_clock::now();
    while (rte_ring_count(rp.to_port) > 0) core.poll_once(mono_ns());
    const auto t1 = std::chrono::steady_clock::now();
    fake_engine();
    const auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) core.poll_once(mono_ns());  // collect, push, send verdicts
    const auto t3 = std::chrono::steady_clock::now();
    receive_all();
    state.SetIterationTime(std::chrono::duration<double>((t1 - t0) + (t3 - t2) + extra).count());
  }
  const CommStats& s = core.stats();
  state.SetItemsProcessed(static_cast<int64_t>(s.requests - req0));
  state.counters["malformed"] = static_cast<double>(s.malformed());
  state.counters["refused"] = static_cast<double>(s.refused_by_engine);
  state.counters["frames_in_per_req"] =
      s.requests ? static_cast<double>(s.rx_frames) / static_cast<double>(s.requests) : 0;
  rte_eth_dev_stop(rp.port);
}

}  // namespace

BENCHMARK(BM_CommCoreRequests)
    ->ArgNames({"endpoints", "batch"})
    ->Args({4, 0})
    ->Args({32, 0})
    ->Args({128, 0})
    ->Args({32, 16})
    ->Args({32, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
