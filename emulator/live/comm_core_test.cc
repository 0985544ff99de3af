#include "emulator/live/comm_core.h"

#include <arpa/inet.h>
#include <rte_arp.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "emulator/engine/engine.h"
#include "emulator/live/test_eal.h"
#include "emulator/config/router_factory.h"
#include "fp_endpoint_conn.h"

using namespace flexplane;
using namespace flexplane::live;
using namespace flexplane::live::testing;

namespace {

const rte_ether_addr kEpMac = {{0x02, 0, 0, 0, 0, 0x10}};
constexpr uint32_t kEmuIp = 0x0a4d0002;  // 10.77.0.2
constexpr uint32_t kEp0Ip = 0x0a4d000a;  // 10.77.0.10 (endpoint i: .10 + i)
constexpr uint16_t kPort = 9977;

CommCoreConfig core_config(uint16_t port, uint32_t endpoints) {
  CommCoreConfig c;
  c.port_id = port;
  c.emulator_ip = net::Ipv4(kEmuIp);
  c.udp_port = kPort;
  for (uint32_t e = 0; e < endpoints; ++e) c.endpoint_ips.push_back(net::Ipv4(kEp0Ip + e));
  c.window = 256;
  return c;
}

std::vector<std::unique_ptr<Router>> routers_for(const Topology& t) {
  std::vector<std::unique_ptr<Router>> out;
  for (size_t i = 0; i < t.routers.size(); ++i) {
    RouterSpec spec;
    spec.where = "test";
    spec.scheme = "dctcp";
    spec.queue_manager.params.set("capacity_pkts", "8");
    spec.queue_manager.params.set("k_pkts", "3");
    out.push_back(build_router(spec));
  }
  return out;
}

// Ethernet + IPv4 + UDP with correct checksums; callers then break fields.
std::vector<uint8_t> udp_frame(const rte_ether_addr& dst_mac, uint32_t src_ip, uint32_t dst_ip, uint16_t sport,
                               uint16_t dport, const uint8_t* payload, size_t len) {
  std::vector<uint8_t> f(42 + len);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(f.data());
  eth->dst_addr = dst_mac;
  eth->src_addr = kEpMac;
  eth->ether_type = htons(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(f.data() + 14);
  ip->version_ihl = 0x45;
  ip->total_length = htons(static_cast<uint16_t>(28 + len));
  ip->time_to_live = 64;
  ip->next_proto_id = IPPROTO_UDP;
  ip->src_addr = htonl(src_ip);
  ip->dst_addr = htonl(dst_ip);
  auto* udp = reinterpret_cast<rte_udp_hdr*>(f.data() + 34);
  udp->src_port = htons(sport);
  udp->dst_port = htons(dport);
  udp->dgram_len = htons(static_cast<uint16_t>(8 + len));
  if (len) std::memcpy(f.data() + 42, payload, len);
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
  return f;
}

void fix_ip_checksum(std::vector<uint8_t>& f) {
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(f.data() + 14);
  ip->hdr_checksum = 0;
  const uint32_t ihl = (ip->version_ihl & 0xf) * 4;
  if (ihl >= 20 && f.size() >= 14 + ihl) ip->hdr_checksum = static_cast<uint16_t>(~rte_raw_cksum(ip, ihl));
}

void inject(const RingPort& rp, const std::vector<uint8_t>& frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(test_pool());
  REQUIRE(m);
  char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
  REQUIRE(d);
  std::memcpy(d, frame.data(), frame.size());
  REQUIRE(rte_ring_enqueue(rp.to_port, m) == 0);
}

// Frames the port sent, as bytes (mbufs freed).
std::vector<std::vector<uint8_t>> drain(const RingPort& rp) {
  std::vector<std::vector<uint8_t>> out;
  void* objs[64];
  unsigned n;
  while ((n = rte_ring_dequeue_burst(rp.from_port, objs, 64, nullptr)) > 0)
    for (unsigned i = 0; i < n; ++i) {
      auto* m = static_cast<rte_mbuf*>(objs[i]);
      const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
      out.emplace_back(p, p + rte_pktmbuf_data_len(m));
      rte_pktmbuf_free(m);
    }
  return out;
}

// Checks a frame the emulator sent and returns its UDP payload.
std::vector<uint8_t> check_reply(const std::vector<uint8_t>& f, uint32_t* dst_ip) {
  REQUIRE(f.size() >= 42);
  auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(f.data() + 14);
  REQUIRE(ntohs(reinterpret_cast<const rte_ether_hdr*>(f.data())->ether_type) == RTE_ETHER_TYPE_IPV4);
  REQUIRE(rte_raw_cksum(ip, 20) == 0xffff);  // IPv4 header checksum valid
  REQUIRE(ntohl(ip->src_addr) == kEmuIp);
  REQUIRE(ntohs(ip->total_length) == f.size() - 14);
  auto* udp = reinterpret_cast<const rte_udp_hdr*>(f.data() + 34);
  REQUIRE(udp->dgram_cksum != 0);
  REQUIRE(rte_ipv4_udptcp_cksum_verify(ip, udp) == 0);  // UDP checksum valid
  REQUIRE(ntohs(udp->src_port) == kPort);
  *dst_ip = ntohl(ip->dst_addr);
  return std::vector<uint8_t>(f.begin() + 42, f.end());
}

std::vector<uint8_t> hello_bytes(uint32_t instance) {
  fp_hello h{};
  h.instance = instance;
  h.attempt = 1;
  h.window = 64;
  std::vector<uint8_t> b(FP_HELLO_LEN);
  REQUIRE(fp_encode_hello(b.data(), b.size(), &h) == FP_HELLO_LEN);
  return b;
}

struct Rig {
  Topology topo = make_single_rack(4, 1);
  RingPort rp = make_ring_port();
  LiveTraffic traffic{topo, 1, LiveTrafficOptions{}};
  CommCore core;
  Rig() : core(core_config(rp.port, 4), traffic, test_pool()) {}
};

void start_port(const RingPort& rp) { REQUIRE(setup_port(rp.port, test_pool()) == ""); }

}  // namespace

TEST_CASE("comm core answers ARP for its address only", "[live]") {
  REQUIRE(eal_ready());
  Topology topo = make_single_rack(4, 1);
  RingPort rp = make_ring_port();
  start_port(rp);
  LiveTraffic traffic(topo, 1);
  CommCore core(core_config(rp.port, 4), traffic, test_pool());

  auto arp = [&](uint32_t target) {
    std::vector<uint8_t> f(14 + sizeof(rte_arp_hdr) + 18);  // padded to 60 bytes like a real frame
    auto* eth = reinterpret_cast<rte_ether_hdr*>(f.data());
    std::memset(&eth->dst_addr, 0xff, 6);
    eth->src_addr = kEpMac;
    eth->ether_type = htons(RTE_ETHER_TYPE_ARP);
    auto* a = reinterpret_cast<rte_arp_hdr*>(f.data() + 14);
    a->arp_hardware = htons(RTE_ARP_HRD_ETHER);
    a->arp_protocol = htons(RTE_ETHER_TYPE_IPV4);
    a->arp_hlen = 6;
    a->arp_plen = 4;
    a->arp_opcode = htons(RTE_ARP_OP_REQUEST);
    a->arp_data.arp_sha = kEpMac;
    a->arp_data.arp_sip = htonl(kEp0Ip);
    a->arp_data.arp_tip = htonl(target);
    return f;
  };
  inject(rp, arp(kEmuIp));
  inject(rp, arp(kEmuIp + 1));  // someone else's address
  core.poll_once(mono_ns());
  const auto out = drain(rp);
  REQUIRE(out.size() == 1);
  const auto& r = out[0];
  REQUIRE(r.size() == 14 + sizeof(rte_arp_hdr));
  auto* eth = reinterpret_cast<const rte_ether_hdr*>(r.data());
  auto* a = reinterpret_cast<const rte_arp_hdr*>(r.data() + 14);
  REQUIRE(rte_is_same_ether_addr(&eth->dst_addr, &kEpMac));
  REQUIRE(rte_is_same_ether_addr(&eth->src_addr, &core.mac()));
  REQUIRE(ntohs(a->arp_opcode) == RTE_ARP_OP_REPLY);
  REQUIRE(rte_is_same_ether_addr(&a->arp_data.arp_sha, &core.mac()));
  REQUIRE(ntohl(a->arp_data.arp_sip) == kEmuIp);
  REQUIRE(ntohl(a->arp_data.arp_tip) == kEp0Ip);
  REQUIRE(core.stats().arp_replies == 1);
  REQUIRE(core.stats().rx_drops[static_cast<unsigned>(RxDrop::kArpIgnored)] == 1);
  REQUIRE(core.stats().malformed() == 0);
  rte_eth_dev_stop(rp.port);
}

TEST_CASE("comm core: real endpoints get exactly one verdict per request from a real-time engine", "[live]") {
  REQUIRE(eal_ready());
  const Topology topo = make_single_rack(4, 1);
  RingPort rp = make_ring_port();
  start_port(rp);
  LiveTrafficOptions lopt;
  lopt.endpoint_queue_pkts = 32;  // bursts overflow it: endpoint_overflow drops
  LiveTraffic traffic(topo, 1, lopt);
  EngineOptions opt;
  opt.clock = Clock::kRealTime;
  opt.timeslot_ns = 20000;  // 20 us: a shared CI machine keeps up
  opt.sleep_when_ahead = true;
  opt.sleep_threshold_ns = 5000;
  Engine engine(topo, routers_for(topo), traffic, opt);
  std::thread runner([&] { engine.run(~Timeslot{0} >> 2); });

  CommCore core(core_config(rp.port, 4), traffic, test_pool());
  std::vector<StageRecord> stages;
  core.trace_stages(&stages);

  // Three endpoints (0, 1, 2) send to endpoint 3 (congestion: marks, drops)
  // and to each other; endpoint 0 also names an unknown and its own address.
  constexpr uint32_t kEps = 3, kPerEp = 300;
  struct Ep {
    fp_ep_conn conn;
    std::vector<fp_ep_slot> slots = std::vector<fp_ep_slot>(128);
    uint32_t next = 0;
  };
  std::vector<Ep> eps(kEps);
  const uint64_t t_start = mono_ns();
  for (uint32_t e = 0; e < kEps; ++e) {
    fp_ep_config cfg;
    fp_ep_config_default(&cfg);
    cfg.instance = 0x1000 + e;
    cfg.window = 64;
    cfg.rto_ns = 5'000'000;  // generous: the engine thread shares the CPU
    cfg.rto_max_ns = 50'000'000;
    REQUIRE(fp_ep_conn_init(&eps[e].conn, &cfg, eps[e].slots.data(), 128, t_start) == 0);
  }
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, int> verdicts;  // (ep, flow, id) -> count
  std::map<uint8_t, int> actions;
  struct Ctx {
    uint32_t ep;
    decltype(verdicts)* v;
    decltype(actions)* a;
  };
  auto on_verdict = [](void* ctx, const fp_verdict* v, const fp_request* req, uint64_t) {
    auto* c = static_cast<Ctx*>(ctx);
    ++(*c->v)[{c->ep, v->flow, v->id}];
    ++(*c->a)[v->action];
    if (req->dst >= 4 || req->dst == c->ep) REQUIRE(v->action == FP_ACT_DROP);
  };
  uint8_t buf[2048];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (verdicts.size() < kEps * kPerEp && std::chrono::steady_clock::now() < deadline) {
    uint64_t now = mono_ns();
    for (uint32_t e = 0; e < kEps; ++e) {
      Ep& ep = eps[e];
      while (ep.next < kPerEp) {
        fp_request r{};
        r.flow = 100 + e;
        r.id = ep.next;
        r.dst = static_cast<uint16_t>(ep.next % 5 == 0 ? 3 : (e + 1 + ep.next % 3) % 4);
        if (e == 0 && ep.next == 7) r.dst = 999;  // unknown
        if (e == 0 && ep.next == 8) r.dst = 0;    // itself
        r.size_bytes = 1500;
        r.flags = FP_REQ_ECT;
        if (fp_ep_submit(&ep.conn, &r, ep.next, now) != 0) break;
        ++ep.next;
      }
      int n;
      while ((n = fp_ep_poll(&ep.conn, now, buf, sizeof buf)) > 0)
        inject(rp, udp_frame(core.mac(), kEp0Ip + e, kEmuIp, 40000 + e, kPort, buf, n));
    }
    core.poll_once(mono_ns());
    now = mono_ns();
    for (const auto& f : drain(rp)) {
      uint32_t dst;
      const auto payload = check_reply(f, &dst);
      const uint32_t e = dst - kEp0Ip;
      REQUIRE(e < kEps);
      Ctx ctx{e, &verdicts, &actions};
      fp_ep_rx(&eps[e].conn, payload.data(), payload.size(), now, on_verdict, &ctx);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  engine.request_stop();
  runner.join();

  REQUIRE(verdicts.size() == kEps * kPerEp);
  for (const auto& [key, count] : verdicts) REQUIRE(count == 1);
  for (uint32_t e = 0; e < kEps; ++e) {
    REQUIRE(eps[e].conn.state == FP_EP_ESTABLISHED);
    REQUIRE(eps[e].conn.stats.verdicts == kPerEp);
    REQUIRE(eps[e].conn.stats.verdict_mismatch == 0);
    REQUIRE(fp_ep_pending(&eps[e].conn) == 0);
    REQUIRE(eps[e].conn.endpoint_id == e);
  }
  const CommStats& s = core.stats();
  REQUIRE(s.requests == kEps * kPerEp);
  REQUIRE(s.bad_dst == 2);
  REQUIRE(s.submitted + s.bad_dst + s.refused_by_engine == s.requests);
  REQUIRE(s.verdicts_collected == s.submitted);
  REQUIRE(s.verdicts_pushed == s.requests);
  REQUIRE(s.verdicts_orphan == 0);
  REQUIRE(s.verdicts_stale == 0);
  REQUIRE(s.malformed() == 0);
  REQUIRE(core.pending() == 0);
  REQUIRE(actions[FP_ACT_RELEASE] > 0);
  REQUIRE(actions[FP_ACT_MARK] + actions[FP_ACT_DROP] > 2);
  REQUIRE(core.proto_stats().sessions == kEps);
  // The stage trace: one record per request the engine took, each with its
  // verdict, stamped in order (rx <= collect <= tx), in the timeslots the run
  // had, with the verdict's action.
  REQUIRE(stages.size() == s.submitted);
  std::map<std::string, uint64_t> by_action;
  for (const StageRecord& r : stages) {
    REQUIRE(r.rx_ns >= t_start);
    REQUIRE(r.collect_ns >= r.rx_ns);
    REQUIRE(r.tx_ns >= r.collect_ns);
    REQUIRE(r.verdict_time < engine.now());
    REQUIRE(engine.timeslot_due_ns(r.verdict_time) >= static_cast<int64_t>(t_start) - 2'000'000);
    ++by_action[r.action == LiveVerdict::kRelease ? "release" : r.action == LiveVerdict::kMark ? "mark" : "drop"];
  }
  REQUIRE(by_action["release"] == s.releases);
  REQUIRE(by_action["mark"] == s.marks);
  REQUIRE(by_action["drop"] == s.drops);
  rte_eth_dev_stop(rp.port);
}

TEST_CASE("comm core counts malformed and forged frames by reason and keeps serving", "[live]") {
  REQUIRE(eal_ready());
  Rig rig;
  start_port(rig.rp);
  CommCore& core = rig.core;
  const auto hello = hello_bytes(0xabc);
  auto good = [&](uint32_t src = kEp0Ip) {
    return udp_frame(core.mac(), src, kEmuIp, 5555, kPort, hello.data(), hello.size());
  };
  auto expect = [&](const std::vector<uint8_t>& f, RxDrop why, size_t replies = 0) {
    INFO("reason " << rx_drop_name(why));
    const uint64_t before = core.stats().rx_drops[static_cast<unsigned>(why)];
    const uint64_t total = core.stats().rx_dropped();
    inject(rig.rp, f);
    core.poll_once(mono_ns());
    REQUIRE(core.stats().rx_drops[static_cast<unsigned>(why)] == before + 1);
    REQUIRE(core.stats().rx_dropped() == total + 1);
    REQUIRE(drain(rig.rp).size() == replies);
  };
  auto ip_of = [](std::vector<uint8_t>& f) { return reinterpret_cast<rte_ipv4_hdr*>(f.data() + 14); };

  expect(std::vector<uint8_t>(10, 0xee), RxDrop::kRunt);
  { auto f = good(); f[12] = 0x86; f[13] = 0xdd; expect(f, RxDrop::kNonIpv4); }
  {  // IPv6 link control on the segment (multicast): not malformed, not for us
    auto ipv6 = [](uint8_t next, std::vector<uint8_t> payload) {
      std::vector<uint8_t> f = {0x33, 0x33, 0xff, 0, 0, 0x12, 0x52, 0x54, 0, 0x77, 0, 0x11, 0x86, 0xdd,
                                0x60, 0, 0, 0, 0, static_cast<uint8_t>(payload.size()), next, 255};
      f.resize(14 + 40);  // addresses: zero (irrelevant here)
      f.insert(f.end(), payload.begin(), payload.end());
      return f;
    };
    std::vector<uint8_t> ns(24, 0);  // neighbour solicitation
    ns[0] = 135;
    std::vector<uint8_t> mld = {58, 0, 5, 2, 0, 0, 1, 0};  // hop-by-hop: router alert, PadN
    mld.resize(8 + 8);
    mld[8] = 143;  // MLDv2 report
    std::vector<uint8_t> echo(8, 0);
    echo[0] = 128;
    const uint64_t malformed = core.stats().malformed();
    expect(ipv6(58, ns), RxDrop::kIpv6Ctrl);
    expect(ipv6(0, mld), RxDrop::kIpv6Ctrl);
    REQUIRE(core.stats().malformed() == malformed);
    expect(ipv6(58, echo), RxDrop::kNonIpv4);  // other IPv6: still not ours to parse
    { auto f = ipv6(0, mld); f.resize(14 + 40 + 4); expect(f, RxDrop::kNonIpv4); }  // truncated
  }
  { auto f = good(); f.resize(14 + 10); f[12] = 0x08; f[13] = 0x06; expect(f, RxDrop::kArpMalformed); }
  { auto f = good(); f[0] = 0x02; f[5] = 0x99; expect(f, RxDrop::kEthWrongDst); }
  { auto f = good(); f.resize(14 + 12); expect(f, RxDrop::kIpTruncated); }
  { auto f = good(); ip_of(f)->version_ihl = 0x65; fix_ip_checksum(f); expect(f, RxDrop::kIpBadVersion); }
  { auto f = good(); ip_of(f)->version_ihl = 0x43; expect(f, RxDrop::kIpBadIhl); }
  { auto f = good(); f.resize(14 + 40); ip_of(f)->version_ihl = 0x4f; expect(f, RxDrop::kIpTruncated); }
  { auto f = good(); ip_of(f)->total_length = 0xffff; fix_ip_checksum(f); expect(f, RxDrop::kIpBadLength); }
  { auto f = good(); ip_of(f)->total_length = htons(10); fix_ip_checksum(f); expect(f, RxDrop::kIpBadLength); }
  { auto f = good(); ip_of(f)->hdr_checksum ^= 0x0101; expect(f, RxDrop::kIpBadChecksum); }
  { auto f = good(); ip_of(f)->fragment_offset = htons(RTE_IPV4_HDR_MF_FLAG); fix_ip_checksum(f); expect(f, RxDrop::kIpFragment); }
  { auto f = good(); ip_of(f)->fragment_offset = htons(185); fix_ip_checksum(f); expect(f, RxDrop::kIpFragment); }
  { auto f = good(); ip_of(f)->next_proto_id = IPPROTO_TCP; fix_ip_checksum(f); expect(f, RxDrop::kIpNotUdp); }
  { auto f = good(); ip_of(f)->dst_addr = htonl(kEmuIp + 7); fix_ip_checksum(f); expect(f, RxDrop::kIpWrongDst); }
  { auto f = good(); ip_of(f)->total_length = htons(24); fix_ip_checksum(f); expect(f, RxDrop::kUdpTruncated); }
  { auto f = good(); f[38] = 0xff; f[39] = 0xff; expect(f, RxDrop::kUdpBadLength); }
  { auto f = good(); f[38] = 0; f[39] = 4; expect(f, RxDrop::kUdpBadLength); }
  { auto f = good(); f[36] = 0x11; f[37] = 0x11; expect(f, RxDrop::kUdpWrongPort); }
  {  // unknown source: garbage is dropped silently, a HELLO gets REJECT(UNKNOWN_ENDPOINT)
    const uint8_t junk[5] = {1, 2, 3, 4, 5};
    expect(udp_frame(core.mac(), 0x0a4d0063, kEmuIp, 5555, kPort, junk, 5), RxDrop::kUnknownSrc);
    inject(rig.rp, good(0x0a4d0063));
    core.poll_once(mono_ns());
    const auto out = drain(rig.rp);
    REQUIRE(out.size() == 1);
    uint32_t dst;
    const auto p = check_reply(out[0], &dst);
    REQUIRE(dst == 0x0a4d0063u);
    fp_reject rej;
    REQUIRE(fp_decode_reject(p.data(), p.size(), &rej) >= 0);
    REQUIRE(rej.code == FP_REJ_UNKNOWN_ENDPOINT);
    REQUIRE(rej.instance == 0xabc);
    REQUIRE(core.stats().rejects_unknown == 1);
  }
  {  // garbage protocol payloads from a known endpoint
    const uint8_t junk[7] = {9, 9, 9, 9, 9, 9, 9};
    expect(udp_frame(core.mac(), kEp0Ip + 1, kEmuIp, 5555, kPort, junk, 7), RxDrop::kProtoDecode);
    auto h = hello;
    h[8] = 0xff;  // header length field: 65535
    h[9] = 0xff;
    expect(udp_frame(core.mac(), kEp0Ip + 1, kEmuIp, 5555, kPort, h.data(), h.size()), RxDrop::kProtoDecode);
    expect(udp_frame(core.mac(), kEp0Ip + 1, kEmuIp, 5555, kPort, nullptr, 0), RxDrop::kProtoDecode);
  }
  {  // REQUESTS of a session the emulator never opened: counted stale, answered with RESET
    uint8_t b[64];
    fp_batch_writer w;
    REQUIRE(fp_batch_begin(&w, b, sizeof b, FP_MSG_REQUESTS, 0x5150, 0, 0, 0, 0) == 0);
    const int n = fp_batch_finish(&w);
    REQUIRE(n > 0);
    expect(udp_frame(core.mac(), kEp0Ip + 2, kEmuIp, 5555, kPort, b, n), RxDrop::kProtoStale, 1);
  }
  REQUIRE(core.stats().requests == 0);

  // Random mutations of a valid frame never crash and are all accounted for.
  std::mt19937 rng(11);
  const uint64_t rx_before = core.stats().rx_frames;
  for (int i = 0; i < 3000; ++i) {
    auto f = good(kEp0Ip + 3);
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) f[rng() % f.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    if (rng() % 4 == 0) f.resize(rng() % f.size());
    if (rng() % 3 == 0) fix_ip_checksum(f);
    if (f.empty()) f.push_back(0);
    inject(rig.rp, f);
    if (i % 32 == 31) core.poll_once(mono_ns());
  }
  while (core.stats().rx_frames - rx_before < 3000) core.poll_once(mono_ns());
  drain(rig.rp);

  // Still serving: a valid HELLO opens a session.
  inject(rig.rp, good(kEp0Ip + 2));
  core.poll_once(mono_ns());
  const auto out = drain(rig.rp);
  REQUIRE(out.size() == 1);
  uint32_t dst;
  const auto p = check_reply(out[0], &dst);
  fp_welcome wel;
  REQUIRE(fp_decode_welcome(p.data(), p.size(), &wel) >= 0);
  REQUIRE(wel.endpoint_id == 2);
  REQUIRE(wel.instance == 0xabc);
  REQUIRE(dst == kEp0Ip + 2);
  rte_eth_dev_stop(rig.rp.port);
}
