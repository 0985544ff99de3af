#include "router/slow_path.h"

#include <netinet/in.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_lpm.h>

#include <algorithm>
#include <cstring>

#include "router/ipv4.h"

namespace flexplane::router {

namespace {

constexpr uint32_t kEth = sizeof(rte_ether_hdr);
constexpr uint8_t kIcmpEchoReply = 0, kIcmpUnreachable = 3, kIcmpEcho = 8, kIcmpTimeExceeded = 11;

ipv4::Header* ip_of(rte_mbuf* m) { return rte_pktmbuf_mtod_offset(m, ipv4::Header*, kEth); }

Mac mac_of(const rte_ether_addr& a) {
  Mac m;
  std::memcpy(m.data(), a.addr_bytes, 6);
  return m;
}

bool icmp_is_error(uint8_t type) { return type == 3 || type == 4 || type == 5 || type == 11 || type == 12; }

}  // namespace

SlowPath::SlowPath(Shared& shared, std::function<void(uint32_t, uint32_t)> on_host)
    : sh_(shared), on_host_(std::move(on_host)), buf_(64), hz_(rte_get_tsc_hz()) {
  icmp_refill_tsc_ = rte_rdtsc();
}

SlowPath::~SlowPath() { release(); }

void SlowPath::release() {
  for (auto& [nb, p] : pending_)
    for (rte_mbuf* m : p.held) rte_pktmbuf_free(m);
  pending_.clear();
}

uint32_t SlowPath::held() const {
  uint32_t n = 0;
  for (const auto& [nb, p] : pending_) n += static_cast<uint32_t>(p.held.size());
  return n;
}

uint32_t SlowPath::poll(uint32_t max) {
  if (buf_.size() < max) buf_.resize(max);
  const uint32_t n = rte_ring_sc_dequeue_burst(sh_.slow, reinterpret_cast<void**>(buf_.data()), max, nullptr);
  for (uint32_t i = 0; i < n; ++i) handle(buf_[i]);
  return n;
}

void SlowPath::handle(rte_mbuf* m) {
  m->l2_len = kEth;
  switch (exception_of(m)) {
    case Exception::kArp:
      arp(m);
      return;
    case Exception::kOptions: {
      bool source_route = false;
      if (!ipv4::parse_options(*ip_of(m), &source_route)) {
        counters_.add(SlowEvent::kBadOptions);
        rte_pktmbuf_free(m);
        return;
      }
      if (source_route) {
        counters_.add(SlowEvent::kSourceRouteDropped);
        rte_pktmbuf_free(m);
        return;
      }
      forward(m);
      return;
    }
    default:  // routed again against the current table: the answer may have changed
      forward(m);
      return;
  }
}

void SlowPath::inject(uint16_t port, rte_mbuf* m) {
  if (rte_ring_sp_enqueue(sh_.inject[port], m) != 0) {
    counters_.add(SlowEvent::kInjectFull);
    rte_pktmbuf_free(m);
  }
}

void SlowPath::forward(rte_mbuf* m) {
  ipv4::Header* h = ip_of(m);
  const uint32_t dst = ipv4::be32(h->dst);
  uint32_t hop;
  if (rte_lpm_lookup(sh_.fib->active(), dst, &hop) != 0) {
    icmp_error(m, kIcmpUnreachable, 0, 0);  // net unreachable
    counters_.add(SlowEvent::kNoRouteDropped);
    rte_pktmbuf_free(m);
    return;
  }
  if (hop == kHopLocal) return local(m);
  if (hop == kHopBlackhole) {
    counters_.add(SlowEvent::kBlackhole);
    rte_pktmbuf_free(m);
    return;
  }
  if (h->ttl <= 1) {
    icmp_error(m, kIcmpTimeExceeded, 0, 0);  // TTL exceeded in transit
    counters_.add(SlowEvent::kTtlDropped);
    rte_pktmbuf_free(m);
    return;
  }
  if (hop >= kHopConnected) {  // a host on a connected subnet: its own neighbour entry
    const uint16_t port = static_cast<uint16_t>(hop - kHopConnected);
    if (sh_.neighbors->find(port, dst) < 0 && sh_.neighbors->size() >= sh_.neighbors->capacity()) {
      counters_.add(SlowEvent::kArpFailed);
      rte_pktmbuf_free(m);
      return;
    }
    hop = sh_.neighbors->by_ip(port, dst);
  }
  const Neighbor& nb = (*sh_.neighbors)[hop];
  const uint64_t mac = nb.mac.load(std::memory_order_acquire);
  if (!(mac & kMacResolved)) return hold(m, hop);
  const PortInfo& out = sh_.ports[nb.port];
  if (ipv4::be16(h->total_length) > out.mtu_bytes) {
    if (ipv4::dont_fragment(*h)) {
      icmp_error(m, kIcmpUnreachable, 4, static_cast<uint16_t>(out.mtu_bytes));  // fragmentation needed
    } else {
      counters_.add(SlowEvent::kTooBigDropped);
    }
    rte_pktmbuf_free(m);
    return;
  }
  if (h->version_ihl != 0x45) counters_.add(SlowEvent::kOptionsForwarded);
  ipv4::decrement_ttl(*h);
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  std::memcpy(&eth->dst_addr, &mac, 6);
  std::memcpy(&eth->src_addr, out.mac.data(), 6);
  inject(nb.port, m);
}

void SlowPath::hold(rte_mbuf* m, uint32_t neighbor) {
  Pending& p = pending_[neighbor];
  if (p.held.size() >= kHoldPackets) {
    counters_.add(SlowEvent::kHeldDropped);
    rte_pktmbuf_free(m);
    return;
  }
  p.held.push_back(m);
  if (p.tries == 0) {  // new: ask now
    if (!send_arp_request(neighbor)) {
      for (rte_mbuf* x : p.held) rte_pktmbuf_free(x);
      counters_.add(SlowEvent::kArpFailed, p.held.size());
      pending_.erase(neighbor);
      return;
    }
    p.tries = 1;
    p.next_try_tsc = rte_rdtsc() + static_cast<uint64_t>(kArpRetrySeconds * hz_);
  }
}

void SlowPath::tick(uint64_t tsc) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = it->second;
    if (tsc < p.next_try_tsc) {
      ++it;
      continue;
    }
    if (p.tries >= kArpTries || !send_arp_request(it->first)) {
      counters_.add(SlowEvent::kArpFailed, p.held.size());
      for (rte_mbuf* m : p.held) rte_pktmbuf_free(m);
      it = pending_.erase(it);
      continue;
    }
    ++p.tries;
    p.next_try_tsc = tsc + static_cast<uint64_t>(kArpRetrySeconds * hz_);
    ++it;
  }
}

int SlowPath::address_port(uint16_t preferred) const {
  if (preferred < sh_.ports.size() && sh_.ports[preferred].addr.has_ip) return preferred;
  for (const PortInfo& p : sh_.ports)
    if (p.addr.has_ip) return p.id;
  return -1;
}

bool SlowPath::send_arp_request(uint32_t neighbor) {
  const Neighbor& nb = (*sh_.neighbors)[neighbor];
  const PortInfo& port = sh_.ports[nb.port];
  if (!port.addr.has_ip || nb.ip == 0) {
    counters_.add(SlowEvent::kNoAddress);
    return false;
  }
  rte_mbuf* m = rte_pktmbuf_alloc(sh_.pool);
  if (!m) return false;
  auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(m, kEth + sizeof(rte_arp_hdr)));
  if (!eth) {
    rte_pktmbuf_free(m);
    return false;
  }
  std::memset(&eth->dst_addr, 0xFF, 6);
  std::memcpy(&eth->src_addr, port.mac.data(), 6);
  eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
  auto* arp = reinterpret_cast<rte_arp_hdr*>(eth + 1);
  arp->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
  arp->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
  arp->arp_hlen = 6;
  arp->arp_plen = 4;
  arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REQUEST);
  std::memcpy(&arp->arp_data.arp_sha, port.mac.data(), 6);
  arp->arp_data.arp_sip = ipv4::be32(port.addr.ip);
  std::memset(&arp->arp_data.arp_tha, 0, 6);
  arp->arp_data.arp_tip = ipv4::be32(nb.ip);
  m->l2_len = kEth;
  counters_.add(SlowEvent::kArpRequested);
  inject(nb.port, m);
  return true;
}

void SlowPath::learn(uint16_t port, uint32_t ip, const Mac& mac, bool create) {
  int64_t idx = sh_.neighbors->find(port, ip);
  if (idx < 0) {
    if (!create || sh_.neighbors->size() >= sh_.neighbors->capacity()) {
      counters_.add(SlowEvent::kArpIgnored);
      return;
    }
    idx = sh_.neighbors->by_ip(port, ip);
  }
  const uint32_t i = static_cast<uint32_t>(idx);
  const bool was_resolved = (*sh_.neighbors)[i].mac.load() & kMacResolved;
  sh_.neighbors->set_mac(i, mac, false);
  counters_.add(SlowEvent::kArpLearned);
  const PortAddress& a = sh_.ports[port].addr;
  if (!was_resolved && a.has_ip && on_host_) {
    const uint32_t mask = ~0u << (32 - a.prefix_length);
    if ((a.ip & mask) == (ip & mask)) on_host_(ip, i);
  }
  resolved(i);
}

void SlowPath::resolved(uint32_t neighbor) {
  auto it = pending_.find(neighbor);
  if (it == pending_.end()) return;
  std::deque<rte_mbuf*> held = std::move(it->second.held);
  pending_.erase(it);
  for (rte_mbuf* m : held) {
    counters_.add(SlowEvent::kHeldSent);
    forward(m);
  }
}

void SlowPath::arp(rte_mbuf* m) {
  if (m->data_len < kEth + sizeof(rte_arp_hdr)) {
    counters_.add(SlowEvent::kArpMalformed);
    rte_pktmbuf_free(m);
    return;
  }
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  auto* arp = reinterpret_cast<rte_arp_hdr*>(eth + 1);
  if (arp->arp_hardware != RTE_BE16(RTE_ARP_HRD_ETHER) || arp->arp_protocol != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
      arp->arp_hlen != 6 || arp->arp_plen != 4) {
    counters_.add(SlowEvent::kArpMalformed);
    rte_pktmbuf_free(m);
    return;
  }
  const uint16_t port = m->port;
  const PortInfo& pi = sh_.ports[port];
  const uint32_t sip = ipv4::be32(arp->arp_data.arp_sip), tip = ipv4::be32(arp->arp_data.arp_tip);
  const Mac sha = mac_of(arp->arp_data.arp_sha);
  const bool for_us = pi.addr.has_ip && tip == pi.addr.ip;
  const bool sane_sender = !(sha[0] & 1) && sip != 0 && !ipv4::martian_source(sip);
  if (sane_sender && sip != pi.addr.ip) learn(port, sip, sha, for_us);  // RFC 826: merge, or add if for us
  if (for_us && arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REQUEST) && sane_sender) {
    arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
    arp->arp_data.arp_tha = arp->arp_data.arp_sha;
    arp->arp_data.arp_tip = arp->arp_data.arp_sip;
    std::memcpy(&arp->arp_data.arp_sha, pi.mac.data(), 6);
    arp->arp_data.arp_sip = ipv4::be32(pi.addr.ip);
    eth->dst_addr = eth->src_addr;
    std::memcpy(&eth->src_addr, pi.mac.data(), 6);
    counters_.add(SlowEvent::kArpReplied);
    inject(port, m);
    return;
  }
  if (!for_us) counters_.add(SlowEvent::kArpIgnored);
  rte_pktmbuf_free(m);
}

void SlowPath::local(rte_mbuf* m) {
  ipv4::Header* h = ip_of(m);
  const uint32_t hlen = ipv4::header_bytes(*h);
  const uint32_t total = ipv4::be16(h->total_length);
  const uint32_t dst = ipv4::be32(h->dst);
  bool ours = false;  // a port address, not a directed broadcast
  for (const PortInfo& p : sh_.ports) ours = ours || (p.addr.has_ip && p.addr.ip == dst);
  if (ours && h->protocol == IPPROTO_ICMP && !ipv4::is_fragment(*h) && total >= hlen + 8) {
    auto* icmp = reinterpret_cast<uint8_t*>(h) + hlen;
    if (icmp[0] == kIcmpEcho && ipv4::checksum_ok(icmp, total - hlen)) {
      icmp[0] = kIcmpEchoReply;
      icmp[2] = icmp[3] = 0;
      const uint16_t c = ipv4::checksum(icmp, total - hlen);
      std::memcpy(icmp + 2, &c, 2);
      const uint32_t src = h->src;  // packed fields: no references
      h->src = h->dst;
      h->dst = src;
      h->ttl = 64;
      h->checksum = 0;
      h->checksum = ipv4::checksum(h, hlen);
      auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
      eth->dst_addr = eth->src_addr;
      std::memcpy(&eth->src_addr, sh_.ports[m->port].mac.data(), 6);
      counters_.add(SlowEvent::kIcmpEchoReplied);
      inject(m->port, m);
      return;
    }
  }
  counters_.add(SlowEvent::kLocalDropped);
  rte_pktmbuf_free(m);
}

bool SlowPath::icmp_tokens() {
  const uint64_t now = rte_rdtsc();
  icmp_tokens_ = std::min(kIcmpBurst, icmp_tokens_ + (now - icmp_refill_tsc_) * kIcmpPerSecond / hz_);
  icmp_refill_tsc_ = now;
  if (icmp_tokens_ < 1) return false;
  icmp_tokens_ -= 1;
  return true;
}

// Builds the error in a new mbuf; `m` (the offending packet, unmodified) stays the caller's.
void SlowPath::icmp_error(rte_mbuf* m, uint8_t type, uint8_t code, uint16_t mtu) {
  const ipv4::Header* h = ip_of(m);
  const uint32_t hlen = ipv4::header_bytes(*h);
  const uint32_t src = ipv4::be32(h->src);
  const uint8_t* l4 = reinterpret_cast<const uint8_t*>(h) + hlen;
  const uint32_t avail = std::min<uint32_t>(ipv4::be16(h->total_length), m->data_len - kEth);
  if ((ipv4::be16(h->fragment) & 0x1FFF) != 0 || ipv4::martian_source(src) ||
      (h->protocol == IPPROTO_ICMP && (avail < hlen + 1 || icmp_is_error(l4[0])))) {
    counters_.add(SlowEvent::kIcmpSuppressed);
    return;
  }
  const int from = address_port(m->port);
  if (from < 0) {
    counters_.add(SlowEvent::kNoAddress);
    return;
  }
  if (!icmp_tokens()) {
    counters_.add(SlowEvent::kIcmpRateLimited);
    return;
  }
  const uint32_t quote = std::min<uint32_t>(avail, kIcmpQuoteBytes - 20 - 8);
  rte_mbuf* r = rte_pktmbuf_alloc(sh_.pool);
  if (!r) return;
  auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(r, kEth + 20 + 8 + quote));
  if (!eth) {
    rte_pktmbuf_free(r);
    return;
  }
  const auto* in_eth = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
  eth->dst_addr = in_eth->src_addr;  // straight back to the previous hop
  std::memcpy(&eth->src_addr, sh_.ports[m->port].mac.data(), 6);
  eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<ipv4::Header*>(eth + 1);
  ip->version_ihl = 0x45;
  ip->tos = 0xC0;  // precedence 6, internetwork control (RFC 1812 4.3.2.5)
  ip->total_length = ipv4::be16(static_cast<uint16_t>(20 + 8 + quote));
  ip->id = 0;
  ip->fragment = 0;
  ip->ttl = 64;
  ip->protocol = IPPROTO_ICMP;
  ip->src = ipv4::be32(sh_.ports[from].addr.ip);
  ip->dst = h->src;
  ip->checksum = 0;
  ip->checksum = ipv4::checksum(ip, 20);
  auto* icmp = reinterpret_cast<uint8_t*>(ip + 1);
  icmp[0] = type;
  icmp[1] = code;
  icmp[2] = icmp[3] = icmp[4] = icmp[5] = 0;
  const uint16_t mtu_be = ipv4::be16(mtu);  // RFC 1191: next-hop MTU for code 4, else unused (0)
  std::memcpy(icmp + 6, &mtu_be, 2);
  std::memcpy(icmp + 8, h, quote);
  const uint16_t c = ipv4::checksum(icmp, 8 + quote);
  std::memcpy(icmp + 2, &c, 2);
  r->l2_len = kEth;
  counters_.add(type == kIcmpTimeExceeded ? SlowEvent::kIcmpTimeExceeded
                : code == 4               ? SlowEvent::kIcmpFragNeeded
                                          : SlowEvent::kIcmpUnreachable);
  inject(m->port, r);
}

}  // namespace flexplane::router
