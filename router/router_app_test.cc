// The whole router in process, on net_ring ports: a test thread feeds frames
// into a port's RX ring and reads what the router sent from another port's
// TX ring. With two CPUs the EAL gets two lcores, so two workers run and
// packets cross between them (hand-off rings).
#include <catch2/catch.hpp>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "emulator/live/test_eal.h"
#include "router/ipv4.h"
#include "router/eal.h"
#include "router/router_app.h"
#include "tests/temp_dir.h"

using namespace flexplane;
using namespace flexplane::router;
namespace fs = std::filesystem;

namespace {

bool router_eal() {
  static const bool ok = [] {
    // Two lcores when the machine has two CPUs (two workers), else one.
    const std::string lcores = std::thread::hardware_concurrency() >= 2 ? "0,1" : "0";
    static std::vector<std::string> args = {"router_tests", "-l",         lcores,           "--no-huge",  "-m", "768",
                                             "--no-pci",     "--no-shconf", "--no-telemetry", "--log-level=error",
                                             "--file-prefix=" + live::testing::own_file_prefix("fprt")};
    if (eal_init(args) < 0) {
      std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
      return false;
    }
    live::testing::remove_runtime_dir_at_exit();
    return true;
  }();
  return ok;
}

rte_mempool* feeder_pool() {
  static rte_mempool* p = rte_pktmbuf_pool_create("fpr_test_feed", 16383, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  return p;
}

const Mac kSenderMac = {0x02, 0, 0, 0, 0x01, 0x02};

// An Ethernet + IPv4 + UDP frame to `dst_mac` with a sequence number in the payload.
rte_mbuf* udp_frame(const Mac& dst_mac, uint32_t src, uint32_t dst, uint32_t seq, uint8_t ttl = 64) {
  rte_mbuf* m = rte_pktmbuf_alloc(feeder_pool());
  while (!m) {  // all in flight: wait for the reader to free some
    std::this_thread::yield();
    m = rte_pktmbuf_alloc(feeder_pool());
  }
  uint8_t* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, 14 + 20 + 8 + 8));
  std::memcpy(p, dst_mac.data(), 6);
  std::memcpy(p + 6, kSenderMac.data(), 6);
  p[12] = 0x08;
  p[13] = 0x00;
  auto* h = reinterpret_cast<ipv4::Header*>(p + 14);
  h->version_ihl = 0x45;
  h->tos = 0;
  h->total_length = ipv4::be16(36);
  h->id = 0;
  h->fragment = 0;
  h->ttl = ttl;
  h->protocol = 17;
  h->src = ipv4::be32(src);
  h->dst = ipv4::be32(dst);
  h->checksum = 0;
  h->checksum = ipv4::checksum(h, 20);
  uint8_t* udp = p + 34;
  std::memset(udp, 0, 8);
  udp[0] = 0x03;
  udp[1] = static_cast<uint8_t>(seq & 0xFF);  // source port varies: many flows
  udp[2] = 0x07;
  udp[5] = 16;
  std::memcpy(udp + 8, &seq, 4);
  std::memset(udp + 12, 0, 4);
  return m;
}

// Helper threads may run on any CPU (threads started after EAL init inherit
// the main lcore's single CPU).
void any_cpu() {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); ++c) CPU_SET(c, &all);
  pthread_setaffinity_np(pthread_self(), sizeof all, &all);
}

void write_file(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, p);  // atomic: the router never reads half a file
}

}  // namespace

TEST_CASE("router app: routes replaced 40 times under steady load lose no packet", "[router][app]") {
  REQUIRE(router_eal());
  flexplane::testing::TempDir dir("fpr_test");
  const auto in = live::testing::make_ring_port(4096);   // port A: the test sends into it
  const auto out = live::testing::make_ring_port(4096);  // port B: the router sends out of it
  const std::string routes_a = "10.9.0.0/16 port " + std::to_string(out.port) + " mac 02:00:00:00:00:0a\n";
  const std::string routes_b = "10.9.0.0/17 port " + std::to_string(out.port) + " mac 02:00:00:00:00:0b\n" +
                               "10.9.128.0/17 port " + std::to_string(out.port) + " mac 02:00:00:00:00:0b\n";
  write_file(dir.path / "routes.txt", routes_a);
  std::ofstream(dir.path / "r.yaml") << "router: {scheme: droptail, queue_manager: {capacity_pkts: 32768}}\n"
                                     << "ports:\n"
                                     << "  " << in.port << ": {ip: 10.1.0.1/24, mac: \"02:00:00:00:01:01\"}\n"
                                     << "  " << out.port << ": {ip: 10.2.0.1/24, mac: \"02:00:00:00:02:01\"}\n"
                                     << "routes: routes.txt\n"
                                     << "run: {stats_interval_s: 0, idle_sleep_us: 20, watch_routes: false}\n"
                                     << "output: {dir: " << (dir.path / "out").string() << "}\n";
  RouterConfig cfg = load_config((dir.path / "r.yaml").string());
  RouterApp app(cfg);
  const Mac router_mac = {0x02, 0, 0, 0, 0x01, 0x01};

  // Steady load (a burst of 16 every 100 us, 160 kpps) for as long as the
  // reloads take; kMaxPackets bounds the run. The reader thread is the output
  // link: when it is starved of CPU the port's queue absorbs the backlog
  // (capacity above the feeder's 16383 mbufs, so the scheme never drops).
  constexpr uint32_t kMaxPackets = 4000000;
  std::atomic<uint32_t> sent{0};
  std::atomic<bool> fed{false}, reloads_over{false};
  std::atomic<uint64_t> got{0}, bad{0}, seen_a{0}, seen_b{0};
  std::vector<uint8_t> seen(kMaxPackets, 0);
  std::thread feeder([&] {
    any_cpu();
    rte_mbuf* burst[16];
    uint32_t seq = 0;
    uint64_t next = rte_rdtsc();
    const uint64_t gap = rte_get_tsc_hz() / 10000;
    while (seq < kMaxPackets && !reloads_over.load()) {
      while (rte_rdtsc() < next) std::this_thread::sleep_for(std::chrono::microseconds(20));
      next += gap;
      uint32_t n = 0;
      for (; n < 16 && seq < kMaxPackets; ++n, ++seq)
        burst[n] = udp_frame(router_mac, 0x0A010002, 0x0A090000 | (seq & 0xFFFF), seq);
      uint32_t done = 0;
      while (done < n) done += rte_ring_sp_enqueue_burst(in.to_port, reinterpret_cast<void**>(burst + done), n - done, nullptr);
      sent.store(seq);
    }
    fed = true;
  });
  std::atomic<bool> reader_stop{false};
  std::thread reader([&] {
    any_cpu();
    void* objs[64];
    while (!reader_stop.load()) {
      const unsigned n = rte_ring_sc_dequeue_burst(out.from_port, objs, 64, nullptr);
      if (!n) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      for (unsigned i = 0; i < n; ++i) {
        auto* m = static_cast<rte_mbuf*>(objs[i]);
        const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
        const auto* h = reinterpret_cast<const ipv4::Header*>(p + 14);
        uint32_t seq;
        std::memcpy(&seq, p + 42, 4);
        const bool ok = h->ttl == 63 && ipv4::checksum_ok(h, 20) && p[0] == 2 && p[5] != 0 &&
                        std::memcmp(p + 6, "\x02\x00\x00\x00\x02\x01", 6) == 0 && seq < kMaxPackets && !seen[seq];
        if (!ok) ++bad;
        if (seq < kMaxPackets) seen[seq] = 1;
        if (p[5] == 0x0a) ++seen_a;
        if (p[5] == 0x0b) ++seen_b;
        rte_pktmbuf_free(m);
      }
      got += n;
    }
  });
  std::vector<double> reload_ms;
  std::thread reloader([&] {
    any_cpu();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int i = 0; i < 40; ++i) {
      // Each reload under load: wait for the feeder's next 512 packets (3.2 ms at
      // its pace), so that a feeder starved of CPU on a busy 2-core machine
      // cannot let the 40 reloads pass with almost no traffic (seen once: 16).
      while (sent.load() < uint32_t(i + 1) * 512) std::this_thread::sleep_for(std::chrono::microseconds(200));
      write_file(dir.path / "routes.txt", i % 2 ? routes_a : routes_b);
      const uint64_t before = app.reloads_done().load();
      const auto t0 = std::chrono::steady_clock::now();
      app.request_reload();
      while (app.reloads_done().load() == before) std::this_thread::sleep_for(std::chrono::microseconds(200));
      reload_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    reloads_over = true;
    feeder.join();
    while (app.total_rx() < sent.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    app.request_stop();
  });
  app.run();
  reloader.join();
  const uint32_t kPackets = sent.load();
  for (int i = 0; i < 400 && got.load() < kPackets; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  reader_stop = true;
  reader.join();

 std::sort(reload_ms.begin(), reload_ms.end());
  if (!reload_ms.empty())
    std::fprintf(stderr, "route reload: median %.1f ms, max %.1f ms\n", reload_ms[reload_ms.size() / 2], reload_ms.back());
  INFO("reloads " << app.summary().route_reloads << ", sent " << kPackets << ", received " << app.total_rx()
                  << ", drain timed out " << app.summary().drain_timed_out << ", wall " << app.summary().wall_seconds
                  << " s, tx " << app.schedulers()[out.port]->tx_packets() << ", backlog "
                  << app.schedulers()[out.port]->scheme()->bank().port_packets(0));
  CHECK(kPackets > 10000);
  CHECK(app.total_rx() == kPackets);
  CHECK(got.load() == kPackets);
  CHECK(bad.load() == 0);
  CHECK(app.summary().route_reloads == 40);
  CHECK(app.summary().route_reload_failures == 0);
  CHECK(seen_a.load() > 0);
  CHECK(seen_b.load() > 0);
  CHECK(seen_a.load() + seen_b.load() == kPackets);
  uint64_t exceptions = 0, drops = 0;
  for (const auto& w : app.workers()) {
    std::fprintf(stderr, "worker %u: longest stall %.2f ms\n", w->id(), w->counters().max_gap_cycles.get() * 1e3 / rte_get_tsc_hz());
    for (const auto& e : w->counters().exceptions) exceptions += e.get();
    for (const auto& d : w->counters().drops) drops += d.get();
    for (unsigned d = 0; d < static_cast<unsigned>(FastDrop::kCount); ++d)
      if (w->counters().drops[d].get())
        std::fprintf(stderr, "worker %u dropped %llu (%s)\n", w->id(),
                     static_cast<unsigned long long>(w->counters().drops[d].get()), fast_drop_name(static_cast<FastDrop>(d)));
  }
  CHECK(exceptions == 0);
  CHECK(drops == 0);
  const QueueCounters& q = app.schedulers()[out.port]->scheme()->bank().counters(0, 0);
  CHECK(q.arrived == kPackets);
  CHECK(q.dequeued == kPackets);
}

TEST_CASE("router app: ARP resolves a connected host, the held packet follows; ping answered", "[router][app]") {
  REQUIRE(router_eal());
  flexplane::testing::TempDir dir("fpr_test");
  const auto a = live::testing::make_ring_port(1024);
  const auto b = live::testing::make_ring_port(1024);
  std::ofstream(dir.path / "r.yaml") << "router: {scheme: droptail}\n"
                                     << "ports:\n"
                                     << "  " << a.port << ": {ip: 10.1.0.1/24, mac: \"02:00:00:00:01:01\"}\n"
                                     << "  " << b.port << ": {ip: 10.2.0.1/24, mac: \"02:00:00:00:02:01\"}\n"
                                     << "run: {stats_interval_s: 0, idle_sleep_us: 20}\n"
                                     << "output: {dir: " << (dir.path / "out").string() << "}\n";
  RouterApp app(load_config((dir.path / "r.yaml").string()));
  const Mac router_a = {0x02, 0, 0, 0, 0x01, 0x01};
  bool ok = true;
  std::string failure;
  auto expect = [&](bool cond, const char* what) {
    if (!cond && ok) ok = false, failure = what;
  };
  auto next_from = [&](rte_ring* r) -> rte_mbuf* {
    void* obj = nullptr;
    for (int i = 0; i < 4000; ++i) {
      if (rte_ring_sc_dequeue(r, &obj) == 0) return static_cast<rte_mbuf*>(obj);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    return nullptr;
  };
  std::thread driver([&] {
    any_cpu();
    // A packet for 10.2.0.7 (connected to port b, unknown MAC): the router asks by ARP.
    rte_mbuf* m = udp_frame(router_a, 0x0A010002, 0x0A020007, 1);
    rte_ring_sp_enqueue(a.to_port, m);
    rte_mbuf* req = next_from(b.from_port);
    expect(req != nullptr, "no ARP request on port b");
    if (req) {
      const uint8_t* p = rte_pktmbuf_mtod(req, const uint8_t*);
      expect(p[12] == 0x08 && p[13] == 0x06, "not ARP");
      expect(p[21] == 1, "not a request");
      expect(std::memcmp(p + 38, "\x0a\x02\x00\x07", 4) == 0, "asks for the wrong address");
      expect(std::memcmp(p + 28, "\x0a\x02\x00\x01", 4) == 0, "wrong sender address");
      // Answer it.
      rte_mbuf* rep = rte_pktmbuf_alloc(feeder_pool());
      uint8_t* q = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(rep, 42));
      std::memcpy(q, p + 6, 6);                                   // to the router
      std::memcpy(q + 6, "\x02\x00\x00\x00\x02\x07", 6);          // from the host
      std::memcpy(q + 12, "\x08\x06\x00\x01\x08\x00\x06\x04\x00\x02", 10);
      std::memcpy(q + 22, "\x02\x00\x00\x00\x02\x07\x0a\x02\x00\x07", 10);  // sha, spa
      std::memcpy(q + 32, p + 22, 10);                            // tha, tpa = the router
      rte_pktmbuf_free(req);
      rte_ring_sp_enqueue(b.to_port, rep);
      rte_mbuf* held = next_from(b.from_port);
      expect(held != nullptr, "the held packet did not follow");
      if (held) {
        const uint8_t* h = rte_pktmbuf_mtod(held, const uint8_t*);
        expect(std::memcmp(h, "\x02\x00\x00\x00\x02\x07", 6) == 0, "held packet to the wrong MAC");
        expect(h[14 + 8] == 63, "held packet TTL");
        rte_pktmbuf_free(held);
      }
      // Later packets take the fast path through the /32 the resolution installed.
      for (int i = 0; i < 50 && app.fib_publications() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      rte_ring_sp_enqueue(a.to_port, udp_frame(router_a, 0x0A010002, 0x0A020007, 2));
      rte_mbuf* fast = next_from(b.from_port);
      expect(fast != nullptr, "second packet lost");
      if (fast) rte_pktmbuf_free(fast);
    }
    // A ping to the router's address on port a is answered on port a.
    {
      rte_mbuf* e = rte_pktmbuf_alloc(feeder_pool());
      uint8_t* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(e, 14 + 20 + 8 + 4));
      std::memcpy(p, router_a.data(), 6);
      std::memcpy(p + 6, kSenderMac.data(), 6);
      p[12] = 0x08;
      p[13] = 0;
      auto* h = reinterpret_cast<ipv4::Header*>(p + 14);
      *h = ipv4::Header{0x45, 0, ipv4::be16(32), 0, 0, 64, 1, 0, ipv4::be32(0x0A010002), ipv4::be32(0x0A010001)};
      h->checksum = ipv4::checksum(h, 20);
      uint8_t* icmp = p + 34;
      std::memcpy(icmp, "\x08\x00\x00\x00\x00\x07\x00\x01ping", 12);
      const uint16_t c = ipv4::checksum(icmp, 12);
      std::memcpy(icmp + 2, &c, 2);
      rte_ring_sp_enqueue(a.to_port, e);
      rte_mbuf* r = next_from(a.from_port);
      expect(r != nullptr, "no echo reply");
      if (r) {
        const uint8_t* q = rte_pktmbuf_mtod(r, const uint8_t*);
        expect(q[34] == 0, "not an echo reply");
        expect(std::memcmp(q + 26, "\x0a\x01\x00\x01", 4) == 0, "reply source");
        expect(ipv4::checksum_ok(q + 34, 12), "ICMP checksum");
        expect(ipv4::checksum_ok(q + 14, 20), "IP checksum");
        rte_pktmbuf_free(r);
      }
    }
    app.request_stop();
  });
  app.run();
  driver.join();
  INFO(failure);
  CHECK(ok);
  CHECK(app.slow_path().counters().events[static_cast<unsigned>(SlowEvent::kArpRequested)].get() == 1);
  CHECK(app.slow_path().counters().events[static_cast<unsigned>(SlowEvent::kHeldSent)].get() == 1);
  CHECK(app.slow_path().counters().events[static_cast<unsigned>(SlowEvent::kIcmpEchoReplied)].get() == 1);
}
