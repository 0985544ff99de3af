// PacketHolder on built packets: the requests it makes, the outcome of each
// verdict (release, CE mark with correct checksums, drop), multi-request
// packets, bypass, malformed input, the hold timeout's fallback, priorities
// and the counter invariants. The netns integration tests (tests/lab/) run
// the same code on real packets from the kernel.
#include "endpoint/nfqueue/packet_holder.h"

#include <catch2/catch.hpp>

#include <map>

#include "net/ecn.h"
#include "net/test_packets.h"

using namespace flexplane;
using namespace flexplane::endpoint;
using namespace flexplane::endpoint::nfq;
using net::testing::build_packet;
using net::testing::PacketSpec;

namespace {

struct Outcome {
  Action action;
  std::vector<uint8_t> payload;
};

struct Sink : VerdictSink {
  std::map<uint32_t, Outcome> got;
  int duplicates = 0;
  void verdict(uint32_t id, Action a, const uint8_t* p, size_t len) override {
    if (got.count(id)) ++duplicates;
    got[id] = {a, p ? std::vector<uint8_t>(p, p + len) : std::vector<uint8_t>{}};
  }
};

net::IpAddress ip(const char* s) {
  net::IpAddress a;
  REQUIRE(net::IpAddress::parse(s, &a));
  return a;
}

HolderConfig config() {
  HolderConfig c;
  c.endpoint_id = 1;
  c.peers = {{ip("10.77.0.10"), 0}, {ip("10.77.0.11"), 1}, {ip("10.77.0.12"), 2}, {ip("fd77::12"), 2}};
  c.emulator = ip("10.77.0.2");
  c.emulator_port = 9977;
  c.apkt_bytes = 1500;
  c.hold_timeout_ns = 1'000'000;
  return c;
}

PacketSpec from_1_to_2() {
  PacketSpec s;
  s.src = "10.77.0.11";
  s.dst = "10.77.0.12";
  s.sport = 40000;
  s.dport = 5001;
  return s;
}

void check_invariants(const PacketHolder& h) {
  const HolderCounters& k = h.counters();
  REQUIRE(k.seen == k.bypassed_total() + k.malformed_total() + k.held);
  REQUIRE(k.held == k.released + k.marked + k.dropped + k.timeout_accepted + k.timeout_dropped + k.exit_accepted +
                        k.exit_dropped + k.holding);
}

}  // namespace

TEST_CASE("holder: a held packet's request fields, and release", "[nfq]") {
  Sink sink;
  PacketHolder h(config(), &sink);
  PacketSpec s = from_1_to_2();
  s.tos = 10 << 2 | 2;  // AF11, ECT(0)
  s.payload = 1000;
  const auto p = build_packet(s);
  std::deque<OutRequest> out;
  h.on_packet(7, p.data(), p.size(), 0, &out);
  REQUIRE(out.size() == 1);
  REQUIRE(sink.got.empty());  // held, not decided
  const fp_request& q = out[0].req;
  CHECK(q.dst == 2);
  CHECK(q.size_bytes == p.size());
  CHECK(q.flags == FP_REQ_ECT);
  CHECK(q.dscp == 10);
  CHECK(q.id == 0);
  CHECK(q.flow >> 20 == 1);  // the endpoint id in the flow id's top bits
  CHECK(q.priority == 0);    // no stamping asked for
  // A second packet of the flow: same flow id, next id.
  std::deque<OutRequest> out2;
  h.on_packet(8, p.data(), p.size(), 0, &out2);
  CHECK(out2[0].req.flow == q.flow);
  CHECK(out2[0].req.id == 1);
  h.on_verdict(out[0].cookie, FP_ACT_RELEASE, 10);
  REQUIRE(sink.got.at(7).action == Action::kAccept);
  CHECK(sink.got.at(7).payload.empty());  // unchanged: no payload handed back
  CHECK(h.counters().holding == 1);
  h.on_verdict(out2[0].cookie, FP_ACT_DROP, 10);
  REQUIRE(sink.got.at(8).action == Action::kDrop);
  CHECK(h.counters().released == 1);
  CHECK(h.counters().dropped == 1);
  CHECK(sink.duplicates == 0);
  check_invariants(h);
}

TEST_CASE("holder: MARK sets CE with correct checksums (IPv4 and IPv6)", "[nfq]") {
  for (const char* dst : {"10.77.0.12", "fd77::12"}) {
    for (uint8_t ect : {1, 2}) {
      Sink sink;
      PacketHolder h(config(), &sink);
      PacketSpec s = from_1_to_2();
      s.dst = dst;
      s.src = std::string(dst).find(':') != std::string::npos ? "fd77::11" : "10.77.0.11";
      s.tos = static_cast<uint8_t>(46 << 2 | ect);
      s.protocol = net::kProtoUdp;
      const auto p = build_packet(s);
      std::deque<OutRequest> out;
      h.on_packet(1, p.data(), p.size(), 0, &out);
      REQUIRE(out.size() == 1);
      h.on_verdict(out[0].cookie, FP_ACT_MARK, 5);
      const Outcome& o = sink.got.at(1);
      REQUIRE(o.action == Action::kAcceptCe);
      PacketSpec ce = s;
      ce.tos = 46 << 2 | 3;
      CHECK(o.payload == build_packet(ce));  // byte for byte what a CE packet looks like
      net::PacketInfo info;
      REQUIRE(net::parse_ip_packet(o.payload.data(), o.payload.size(), &info) == net::ParseError::kOk);
      CHECK(info.ecn() == 3);
      if (info.ip_version == 4) CHECK(net::ipv4_header_checksum_ok(o.payload.data(), o.payload.size()));
      CHECK(net::testing::transport_checksum_ok(o.payload));
      CHECK(h.counters().marked == 1);
      check_invariants(h);
    }
  }
}

TEST_CASE("holder: a MARK for a packet that is not ECT, or already CE, releases it unchanged", "[nfq]") {
  Sink sink;
  PacketHolder h(config(), &sink);
  PacketSpec s = from_1_to_2();
  s.tos = 0;
  auto p = build_packet(s);
  std::deque<OutRequest> out;
  h.on_packet(1, p.data(), p.size(), 0, &out);
  CHECK(out[0].req.flags == 0);
  h.on_verdict(out[0].cookie, FP_ACT_MARK, 1);
  CHECK(sink.got.at(1).action == Action::kAccept);
  CHECK(h.counters().mark_not_ect == 1);
  s.tos = 3;
  p = build_packet(s);
  out.clear();
  h.on_packet(2, p.data(), p.size(), 0, &out);
  h.on_verdict(out[0].cookie, FP_ACT_MARK, 1);
  CHECK(sink.got.at(2).action == Action::kAccept);
  CHECK(h.counters().mark_already_ce == 1);
  check_invariants(h);
}

TEST_CASE("holder: a packet bigger than an abstract packet asks for several; any DROP drops it", "[nfq]") {
  HolderConfig c = config();
  c.apkt_bytes = 1500;
  Sink sink;
  PacketHolder h(c, &sink);
  PacketSpec s = from_1_to_2();
  s.payload = 4000 - 40;  // IP length 4000: 1500 + 1500 + 1000
  s.tos = 2;
  const auto p = build_packet(s);
  std::deque<OutRequest> out;
  h.on_packet(1, p.data(), p.size(), 0, &out);
  REQUIRE(out.size() == 3);
  CHECK(out[0].req.size_bytes == 1500);
  CHECK(out[1].req.size_bytes == 1500);
  CHECK(out[2].req.size_bytes == 1000);
  CHECK(out[0].req.id == 0);
  CHECK(out[2].req.id == 2);
  h.on_verdict(out[0].cookie, FP_ACT_RELEASE, 1);
  h.on_verdict(out[1].cookie, FP_ACT_MARK, 1);
  CHECK(sink.got.empty());  // not yet: one verdict missing
  h.on_verdict(out[2].cookie, FP_ACT_RELEASE, 1);
  CHECK(sink.got.at(1).action == Action::kAcceptCe);
  // Any DROP drops the packet, whatever the order.
  out.clear();
  h.on_packet(2, p.data(), p.size(), 0, &out);
  h.on_verdict(out[0].cookie, FP_ACT_MARK, 1);
  h.on_verdict(out[1].cookie, FP_ACT_DROP, 1);
  h.on_verdict(out[2].cookie, FP_ACT_MARK, 1);
  CHECK(sink.got.at(2).action == Action::kDrop);
  CHECK(h.counters().requests == 6);
  CHECK(h.counters().verdicts == 6);
  check_invariants(h);
}

TEST_CASE("holder: control traffic and addresses outside the experiment are never held", "[nfq]") {
  HolderConfig c = config();
  std::string err;
  BypassRule rule;
  REQUIRE(BypassRule::parse("tcp:22", &rule, &err));
  c.bypass.push_back(rule);
  REQUIRE(BypassRule::parse("192.168.0.0/16", &rule, &err));
  c.bypass.push_back(rule);
  Sink sink;
  PacketHolder h(c, &sink);
  std::deque<OutRequest> out;
  auto offer = [&](uint32_t id, PacketSpec s) {
    const auto p = build_packet(s);
    h.on_packet(id, p.data(), p.size(), 0, &out);
    REQUIRE(sink.got.count(id));
    return sink.got.at(id).action;
  };
  PacketSpec proto = from_1_to_2();
  proto.dst = "10.77.0.2";
  proto.protocol = net::kProtoUdp;
  proto.dport = 9977;
  CHECK(offer(1, proto) == Action::kAccept);
  PacketSpec ssh = from_1_to_2();
  ssh.dport = 22;
  CHECK(offer(2, ssh) == Action::kAccept);
  PacketSpec lan = from_1_to_2();
  lan.dst = "192.168.1.1";
  CHECK(offer(3, lan) == Action::kAccept);
  PacketSpec outside = from_1_to_2();
  outside.dst = "10.99.0.1";
  CHECK(offer(4, outside) == Action::kAccept);
  PacketSpec mcast = from_1_to_2();
  mcast.dst = "224.0.0.251";
  mcast.protocol = net::kProtoUdp;
  CHECK(offer(5, mcast) == Action::kAccept);
  PacketSpec self = from_1_to_2();
  self.dst = "10.77.0.11";
  CHECK(offer(6, self) == Action::kAccept);
  // IPv6 neighbour solicitation (ICMPv6 135) to a peer's address: ND, like ARP.
  PacketSpec ns = from_1_to_2();
  ns.src = "fd77::11";
  ns.dst = "fd77::12";
  ns.protocol = net::kProtoUdp;  // built as UDP, then turned into ICMPv6 type 135
  auto nd = build_packet(ns);
  nd[6] = net::kProtoIcmpv6;
  nd[40] = 135;
  h.on_packet(7, nd.data(), nd.size(), 0, &out);
  CHECK(sink.got.at(7).action == Action::kAccept);
  CHECK(out.empty());
  const HolderCounters& k = h.counters();
  CHECK(k.bypassed[unsigned(Bypass::kProtocol)] == 1);
  CHECK(k.bypassed[unsigned(Bypass::kRule)] == 2);
  CHECK(k.bypassed[unsigned(Bypass::kUnknownDst)] == 1);
  CHECK(k.bypassed[unsigned(Bypass::kLinkLocal)] == 2);
  CHECK(k.bypassed[unsigned(Bypass::kSelf)] == 1);
  check_invariants(h);
  // The same ports to a peer are held.
  PacketSpec data = from_1_to_2();
  h.on_packet(8, build_packet(data).data(), build_packet(data).size(), 0, &out);
  CHECK(out.size() == 1);
}

TEST_CASE("holder: bypass rules parse strictly", "[nfq]") {
  BypassRule r;
  std::string err;
  CHECK(BypassRule::parse("udp:53", &r, &err));
  CHECK(BypassRule::parse("icmp", &r, &err));
  CHECK(BypassRule::parse("47", &r, &err));
  CHECK(BypassRule::parse("fd00::/8", &r, &err));
  for (const char* bad : {"", "tcp:", "tcp:0", "tcp:70000", "icmp:5", "foo", "300", "10.0.0.0/33", "10.0.0/8", "x/8"}) {
    INFO(bad);
    CHECK_FALSE(BypassRule::parse(bad, &r, &err));
    CHECK_FALSE(err.empty());
  }
}

TEST_CASE("holder: malformed packets are counted and dropped", "[nfq]") {
  Sink sink;
  PacketHolder h(config(), &sink);
  std::deque<OutRequest> out;
  const uint8_t junk[] = {0x45, 0, 0, 50, 0, 0, 0, 0, 64, 6};
  h.on_packet(1, junk, sizeof junk, 0, &out);
  h.on_packet(2, junk, 0, 0, &out);
  CHECK(sink.got.at(1).action == Action::kDrop);
  CHECK(sink.got.at(2).action == Action::kDrop);
  CHECK(out.empty());
  CHECK(h.counters().malformed_total() == 2);
  check_invariants(h);
}

TEST_CASE("holder: the hold timeout applies the fallback; a late verdict is ignored", "[nfq]") {
  for (Fallback fb : {Fallback::kClosed, Fallback::kOpen}) {
    HolderConfig c = config();
    c.fallback = fb;
    c.hold_timeout_ns = 1000;
    Sink sink;
    PacketHolder h(c, &sink);
    const auto p = build_packet(from_1_to_2());
    std::deque<OutRequest> out;
    h.on_packet(1, p.data(), p.size(), 100, &out);
    h.on_packet(2, p.data(), p.size(), 600, &out);
    CHECK(h.next_expiry() == 1100);
    h.expire(1099);
    CHECK(sink.got.empty());
    h.expire(1100);  // packet 1 times out, packet 2 not yet
    REQUIRE(sink.got.size() == 1);
    CHECK(sink.got.at(1).action == (fb == Fallback::kOpen ? Action::kAccept : Action::kDrop));
    CHECK_FALSE(h.live(out[0].cookie));
    CHECK(h.live(out[1].cookie));
    h.on_verdict(out[0].cookie, FP_ACT_RELEASE, 1200);  // too late
    CHECK(h.counters().late_verdicts == 1);
    CHECK(sink.duplicates == 0);
    // A new packet reuses the slot; the stale cookie still does not touch it.
    std::deque<OutRequest> out3;
    h.on_packet(3, p.data(), p.size(), 1200, &out3);
    h.on_verdict(out[0].cookie, FP_ACT_DROP, 1201);
    CHECK(h.counters().late_verdicts == 2);
    CHECK_FALSE(sink.got.count(3));
    h.release_all(1300);  // shutdown: 2 and 3 get the fallback
    CHECK(sink.got.size() == 3);
    const HolderCounters& k = h.counters();
    CHECK(k.timeout_accepted + k.timeout_dropped == 1);
    CHECK(k.exit_accepted + k.exit_dropped == 2);
    CHECK(k.holding == 0);
    CHECK(h.next_expiry() == UINT64_MAX);
    check_invariants(h);
  }
}

TEST_CASE("holder: priorities from hints (flow size, remaining size) and attained service", "[nfq]") {
  for (PriorityStamp stamp : {PriorityStamp::kFlowSize, PriorityStamp::kRemainingSize}) {
    HolderConfig c = config();
    c.priority = stamp;
    c.apkt_bytes = 1000;
    Sink sink;
    PacketHolder h(c, &sink);
    PacketSpec s = from_1_to_2();
    // Passive side: the SYN-ACK (ISN 5000) goes first, then the hint, then data.
    s.tcp_flags = net::kTcpSyn | net::kTcpAck;
    s.tcp_seq = 5000;
    s.payload = 0;
    std::deque<OutRequest> out;
    h.on_packet(1, build_packet(s).data(), build_packet(s).size(), 0, &out);
    CHECK(out.back().req.priority == 1);  // no payload, no hint: most urgent
    FlowHint hint;
    hint.src = ip("10.77.0.11");
    hint.dst = ip("10.77.0.12");
    hint.sport = 40000;
    hint.dport = 5001;
    hint.protocol = net::kProtoTcp;
    hint.size_bytes = 10'000;
    h.on_hint(hint, 1);
    s.tcp_flags = net::kTcpAck;
    s.payload = 500;   // IP length 540: one abstract packet each
    s.tcp_seq = 5001;  // first byte
    h.on_packet(2, build_packet(s).data(), build_packet(s).size(), 2, &out);
    s.tcp_seq = 5001 + 9500;  // last 500 bytes
    h.on_packet(3, build_packet(s).data(), build_packet(s).size(), 3, &out);
    if (stamp == PriorityStamp::kFlowSize) {
      CHECK(out[1].req.priority == 10);
      CHECK(out[2].req.priority == 10);
    } else {
      CHECK(out[1].req.priority == 10);  // 10 000 bytes left = 10 abstract packets
      CHECK(out[2].req.priority == 1);
    }
    CHECK(out[1].req.flow == out[0].req.flow);
    CHECK(h.counters().hints == 1);
    CHECK(h.counters().hinted_requests == 2);
    // Unhinted data ranks by attained service: 1 + whole abstract packets
    // of payload sent before it (960 B each here: 0, 960, 1920 bytes before).
    PacketSpec u = from_1_to_2();
    u.sport = 40001;
    u.payload = 960;
    std::deque<OutRequest> out2;
    for (uint32_t i = 0; i < 3; ++i) h.on_packet(10 + i, build_packet(u).data(), build_packet(u).size(), 5, &out2);
    REQUIRE(out2.size() == 3);
    CHECK(out2[0].req.priority == 1);
    CHECK(out2[1].req.priority == 1);
    CHECK(out2[2].req.priority == 2);
  }
}

TEST_CASE("holder: a new connection on a reused 5-tuple is a new flow", "[nfq]") {
  Sink sink;
  PacketHolder h(config(), &sink);
  PacketSpec s = from_1_to_2();
  s.tcp_flags = net::kTcpSyn;
  s.tcp_seq = 100;
  s.payload = 0;
  std::deque<OutRequest> out;
  h.on_packet(1, build_packet(s).data(), build_packet(s).size(), 0, &out);
  h.on_packet(2, build_packet(s).data(), build_packet(s).size(), 0, &out);  // SYN retransmission: same flow
  s.tcp_seq = 900000;                                                          // a new SYN: new connection
  h.on_packet(3, build_packet(s).data(), build_packet(s).size(), 0, &out);
  CHECK(out[0].req.flow == out[1].req.flow);
  CHECK(out[1].req.id == 1);
  CHECK(out[2].req.flow != out[0].req.flow);
  CHECK(out[2].req.id == 0);
  CHECK(h.counters().flows_created == 2);
  h.sweep_flows(uint64_t(1) << 62);  // everything idle: forgotten
  CHECK(h.flows() == 0);
}
