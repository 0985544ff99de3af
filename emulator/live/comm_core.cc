#include "emulator/live/comm_core.h"

#include <arpa/inet.h>
#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace flexplane::live {

namespace {

constexpr uint32_t kEthLen = 14;
constexpr uint32_t kIpLen = 20;
constexpr uint32_t kUdpLen = 8;
constexpr uint32_t kHdrs = kEthLen + kIpLen + kUdpLen;  // 42: frames we build

inline uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 | p[3];
}
inline void wr32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

bool parse_ip(const std::string& s, uint32_t* host_order) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *host_order = ntohl(a.s_addr);
  return true;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char* rx_drop_name(RxDrop r) {
  switch (r) {
    case RxDrop::kRunt: return "runt";
    case RxDrop::kMultiSegment: return "multi_segment";
    case RxDrop::kNonIpv4: return "non_ipv4";
    case RxDrop::kArpMalformed: return "arp_malformed";
    case RxDrop::kArpIgnored: return "arp_ignored";
    case RxDrop::kEthWrongDst: return "eth_wrong_dst";
    case RxDrop::kIpTruncated: return "ip_truncated";
    case RxDrop::kIpBadVersion: return "ip_bad_version";
    case RxDrop::kIpBadIhl: return "ip_bad_ihl";
    case RxDrop::kIpBadLength: return "ip_bad_length";
    case RxDrop::kIpBadChecksum: return "ip_bad_checksum";
    case RxDrop::kIpFragment: return "ip_fragment";
    case RxDrop::kIpNotUdp: return "ip_not_udp";
    case RxDrop::kIpWrongDst: return "ip_wrong_dst";
    case RxDrop::kUdpTruncated: return "udp_truncated";
    case RxDrop::kUdpBadLength: return "udp_bad_length";
    case RxDrop::kUdpWrongPort: return "udp_wrong_port";
    case RxDrop::kUnknownSrc: return "unknown_src";
    case RxDrop::kProtoDecode: return "proto_decode";
    case RxDrop::kProtoStale: return "proto_stale";
    case RxDrop::kProtoOther: return "proto_other";
    case RxDrop::kCount: break;
  }
  return "?";
}

bool rx_drop_is_malformed(RxDrop r) { return r != RxDrop::kArpIgnored && r != RxDrop::kProtoStale; }

uint64_t CommStats::malformed() const {
  uint64_t s = 0;
  for (unsigned i = 0; i < kNumRxDrops; ++i)
    if (rx_drop_is_malformed(static_cast<RxDrop>(i))) s += rx_drops[i];
  return s;
}

uint64_t CommStats::rx_dropped() const {
  uint64_t s = 0;
  for (unsigned i = 0; i < kNumRxDrops; ++i) s += rx_drops[i];
  return s;
}

std::string setup_port(uint16_t port, rte_mempool* pool, uint16_t rx_desc, uint16_t tx_desc) {
  if (!rte_eth_dev_is_valid_port(port)) return "port " + std::to_string(port) + " does not exist";
  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof conf);
  int r = rte_eth_dev_configure(port, 1, 1, &conf);
  if (r < 0) return "rte_eth_dev_configure(port " + std::to_string(port) + "): " + rte_strerror(-r);
  r = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rx_desc, &tx_desc);
  if (r < 0) return "rte_eth_dev_adjust_nb_rx_tx_desc: " + std::string(rte_strerror(-r));
  const int socket = rte_eth_dev_socket_id(port);
  r = rte_eth_rx_queue_setup(port, 0, rx_desc, socket < 0 ? SOCKET_ID_ANY : socket, nullptr, pool);
  if (r < 0) return "rte_eth_rx_queue_setup: " + std::string(rte_strerror(-r));
  r = rte_eth_tx_queue_setup(port, 0, tx_desc, socket < 0 ? SOCKET_ID_ANY : socket, nullptr);
  if (r < 0) return "rte_eth_tx_queue_setup: " + std::string(rte_strerror(-r));
  r = rte_eth_dev_start(port);
  if (r < 0) return "rte_eth_dev_start: " + std::string(rte_strerror(-r));
  rte_eth_promiscuous_enable(port);  // not every PMD supports it; harmless
  return "";
}

// ------------------------------------------------------------ pending ----
// Requests in the engine: (src, flow, seq) -> protocol token. Open
// addressing, linear probing, backward-shift deletion; duplicate keys are
// allowed (an endpoint that re-opened its session may re-send a request
// whose old copy is still in the engine: either copy's verdict answers the
// new token, the other finds a stale token).
class CommCore::PendingTable {
 public:
  PendingTable() : slots_(1024) {}
  void insert(uint16_t src, uint32_t flow, uint32_t seq, const fp_emu_token& tok) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(Entry{src, 1, flow, seq, tok.session, tok.rseq});
    ++size_;
  }
  bool take(uint16_t src, uint32_t flow, uint32_t seq, fp_emu_token* tok) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(src, flow, seq);; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (!e.used) return false;
      if (e.src == src && e.flow == flow && e.seq == seq) {
        tok->session = e.session;
        tok->rseq = e.rseq;
        erase(i);
        --size_;
        return true;
      }
    }
  }
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint16_t src;
    uint8_t used;
    uint32_t flow, seq, session, rseq;
  };
  size_t home(uint16_t src, uint32_t flow, uint32_t seq) const {
    return splitmix((static_cast<uint64_t>(flow) << 32 | seq) ^ (static_cast<uint64_t>(src) << 17)) &
           (slots_.size() - 1);
  }
  void place(const Entry& e) {
    const size_t mask = slots_.size() - 1;
    size_t i = home(e.src, e.flow, e.seq);
    while (slots_[i].used) i = (i + 1) & mask;
    slots_[i] = e;
  }
  void grow() {
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Entry& e : old)
      if (e.used) place(e);
  }
  void erase(size_t i) {
    const size_t mask = slots_.size() - 1;
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (!slots_[j].used) break;
      const size_t k = home(slots_[j].src, slots_[j].flow, slots_[j].seq);
      // Move j into the hole at i unless its home lies cyclically in (i, j].
      const bool in_between = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
      if (!in_between) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].used = 0;
  }
  std::vector<Entry> slots_;
  size_t size_ = 0;
};

struct CommCore::Peer {
  rte_ether_addr mac{};
  uint32_t ip_be = 0;
  uint16_t port_be = 0;
  bool known = false;
};

// --------------------------------------------------------------- core ----

CommCore::CommCore(const CommCoreConfig& cfg, LiveTraffic& traffic, rte_mempool* pool)
    : cfg_(cfg), traffic_(traffic), pool_(pool), pending_(std::make_unique<PendingTable>()), vbuf_(256) {
  uint32_t ip;
  if (!parse_ip(cfg.emulator_ip, &ip)) throw std::invalid_argument("emulator_ip '" + cfg.emulator_ip + "' is not IPv4");
  ip_be_ = htonl(ip);
  port_be_ = htons(cfg.udp_port);
  if (cfg.endpoint_ips.empty() || cfg.endpoint_ips.size() > 65535)
    throw std::invalid_argument("need 1..65535 endpoint addresses");
  if (cfg.window < 2 || cfg.window > 32768 || (cfg.window & (cfg.window - 1)))
    throw std::invalid_argument("window must be a power of two in [2, 32768]");
  if (cfg.req_custom_len > FP_MAX_CUSTOM || cfg.verdict_custom_len > FP_MAX_CUSTOM)
    throw std::invalid_argument("custom lengths must be <= 16");
  for (size_t e = 0; e < cfg.endpoint_ips.size(); ++e) {
    if (!parse_ip(cfg.endpoint_ips[e], &ip))
      throw std::invalid_argument("endpoint address '" + cfg.endpoint_ips[e] + "' is not IPv4");
    ip_to_ep_.emplace_back(ip, static_cast<uint16_t>(e));
  }
  std::sort(ip_to_ep_.begin(), ip_to_ep_.end());
  for (size_t i = 1; i < ip_to_ep_.size(); ++i)
    if (ip_to_ep_[i].first == ip_to_ep_[i - 1].first) throw std::invalid_argument("endpoint address used twice");
  if (rte_eth_macaddr_get(cfg.port_id, &mac_) != 0)
    throw std::invalid_argument("cannot read the MAC address of port " + std::to_string(cfg.port_id));

  uint64_t seed = cfg.epoch_seed;
  if (!seed) {  // differ on every start, so endpoints notice a restart (protocol §6.1)
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd) rnd = 0;
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = splitmix(rnd ^ (static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec) ^ mono_ns());
  }
  const size_t n = cfg.endpoint_ips.size();
  conns_.resize(n);
  rings_.resize(n);
  peers_.resize(n);
  is_dirty_.assign(n, 0);
  const uint64_t now = mono_ns();
  for (size_t e = 0; e < n; ++e) {
    fp_emu_config c;
    fp_emu_config_default(&c);
    c.endpoint_id = static_cast<uint16_t>(e);
    c.apkt_bytes = cfg.apkt_bytes;
    c.req_custom_len = cfg.req_custom_len;
    c.verdict_custom_len = cfg.verdict_custom_len;
    c.features = cfg.features;
    std::snprintf(c.scheme, sizeof c.scheme, "%s", cfg.scheme.c_str());
    const uint64_t s = splitmix(seed + e);
    c.epoch_seed = static_cast<uint32_t>(s) | 1u;  // != 0
    c.initial_vseq = static_cast<uint32_t>(s >> 32);
    if (cfg.rto_ns) c.rto_ns = cfg.rto_ns;
    if (cfg.rto_max_ns) c.rto_max_ns = cfg.rto_max_ns;
    if (cfg.ack_delay_ns) c.ack_delay_ns = cfg.ack_delay_ns;
    rings_[e].resize(cfg.window);
    const int rc = fp_emu_conn_init(&conns_[e], &c, rings_[e].data(), cfg.window, now);
    if (rc < 0) throw std::invalid_argument(std::string("fp_emu_conn_init: ") + fp_strerror(rc));
  }
  next_timer_ns_ = now;
}

CommCore::~CommCore() {
  for (uint16_t i = 0; i < ntx_; ++i) rte_pktmbuf_free(tx_[i]);
  if (spare_) rte_pktmbuf_free(spare_);
}

uint64_t CommCore::pending() const { return pending_->size(); }

bool CommCore::poll_once(uint64_t now) {
  ++stats_.loops;
  bool busy = false;
  rte_mbuf* rx[kBurst];
  const uint16_t n = rte_eth_rx_burst(cfg_.port_id, 0, rx, kBurst);
  if (n) {
    busy = true;
    for (uint16_t i = 0; i < n; ++i) {
      if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void*));
      handle_frame(rx[i], now);
    }
  }
  for (int round = 0; round < 8; ++round) {
    const size_t k = traffic_.collect(vbuf_.data(), vbuf_.size());
    if (!k) break;
    busy = true;
    stats_.verdicts_collected += k;
    for (size_t i = 0; i < k; ++i) handle_verdict(vbuf_[i], now);
  }
  for (uint32_t e : dirty_) {
    is_dirty_[e] = 0;
    send_conn(e, now);
  }
  dirty_.clear();
  if (now >= next_timer_ns_) {
    uint64_t next = FP_TIME_NEVER;
    for (uint32_t e = 0; e < conns_.size(); ++e) {
      if (fp_emu_next_deadline(&conns_[e]) <= now) send_conn(e, now);
      next = std::min(next, fp_emu_next_deadline(&conns_[e]));
    }
    next_timer_ns_ = next;
  }
  if (ntx_) {
    busy = true;
    flush_tx();
  }
  if (busy) ++stats_.busy_loops;
  return busy;
}

void CommCore::mark_dirty(uint32_t e) {
  if (!is_dirty_[e]) {
    is_dirty_[e] = 1;
    dirty_.push_back(e);
  }
}

void CommCore::handle_frame(rte_mbuf* m, uint64_t now) {
  ++stats_.rx_frames;
  stats_.rx_bytes += rte_pktmbuf_pkt_len(m);
  if (m->nb_segs != 1 || rte_pktmbuf_data_len(m) != rte_pktmbuf_pkt_len(m)) {
    drop(RxDrop::kMultiSegment);
    rte_pktmbuf_free(m);
    return;
  }
  uint8_t* eth = rte_pktmbuf_mtod(m, uint8_t*);
  const uint32_t len = rte_pktmbuf_data_len(m);
  if (len < kEthLen) {
    drop(RxDrop::kRunt);
    rte_pktmbuf_free(m);
    return;
  }
  const uint16_t type = rd16(eth + 12);
  if (type == RTE_ETHER_TYPE_ARP) {
    handle_arp(m, eth + kEthLen, len - kEthLen);  // consumes m
    return;
  }
  if (type != RTE_ETHER_TYPE_IPV4) {
    drop(RxDrop::kNonIpv4);
    rte_pktmbuf_free(m);
    return;
  }
  do {
    const auto* dst = reinterpret_cast<const rte_ether_addr*>(eth);
    if (!rte_is_broadcast_ether_addr(dst) && !rte_is_same_ether_addr(dst, &mac_)) {
      drop(RxDrop::kEthWrongDst);
      break;
    }
    const uint8_t* ip = eth + kEthLen;
    const uint32_t avail = len - kEthLen;  // may include Ethernet padding
    if (avail < kIpLen) {
      drop(RxDrop::kIpTruncated);
      break;
    }
    if ((ip[0] >> 4) != 4) {
      drop(RxDrop::kIpBadVersion);
      break;
    }
    const uint32_t ihl = (ip[0] & 0xfu) * 4u;
    if (ihl < kIpLen) {
      drop(RxDrop::kIpBadIhl);
      break;
    }
    if (avail < ihl) {
      drop(RxDrop::kIpTruncated);
      break;
    }
    const uint32_t total = rd16(ip + 2);
    if (total < ihl || total > avail) {
      drop(RxDrop::kIpBadLength);
      break;
    }
    if (rte_raw_cksum(ip, ihl) != 0xffff) {
      drop(RxDrop::kIpBadChecksum);
      break;
    }
    if (rd16(ip + 6) & 0x3fffu) {  // MF or a fragment offset
      drop(RxDrop::kIpFragment);
      break;
    }
    if (ip[9] != IPPROTO_UDP) {
      drop(RxDrop::kIpNotUdp);
      break;
    }
    uint32_t dst_ip_be;
    std::memcpy(&dst_ip_be, ip + 16, 4);
    if (dst_ip_be != ip_be_) {
      drop(RxDrop::kIpWrongDst);
      break;
    }
    const uint8_t* udp = ip + ihl;
    const uint32_t l4 = total - ihl;
    if (l4 < kUdpLen) {
      drop(RxDrop::kUdpTruncated);
      break;
    }
    const uint32_t ulen = rd16(udp + 4);
    if (ulen < kUdpLen || ulen > l4) {
      drop(RxDrop::kUdpBadLength);
      break;
    }
    uint16_t dport_be;
    std::memcpy(&dport_be, udp + 2, 2);
    if (dport_be != port_be_) {
      drop(RxDrop::kUdpWrongPort);
      break;
    }
    // The UDP checksum is not verified: kernel senders with tx checksum
    // offload (veth) hand over partial checksums; the protocol decoders
    // validate every field instead (docs/live.md).
    handle_udp(m, eth, ip, udp + kUdpLen, ulen - kUdpLen, now);
  } while (false);
  rte_pktmbuf_free(m);
}

void CommCore::handle_arp(rte_mbuf* m, uint8_t* a, uint32_t len) {
  // Ethernet/IPv4 ARP: htype 1, ptype 0x0800, hlen 6, plen 4, op, sha, spa, tha, tpa.
  if (len < sizeof(rte_arp_hdr) || rd16(a) != RTE_ARP_HRD_ETHER || rd16(a + 2) != RTE_ETHER_TYPE_IPV4 || a[4] != 6 ||
      a[5] != 4) {
    drop(RxDrop::kArpMalformed);
    rte_pktmbuf_free(m);
    return;
  }
  auto* arp = reinterpret_cast<rte_arp_hdr*>(a);
  uint32_t tip;
  std::memcpy(&tip, &arp->arp_data.arp_tip, 4);
  if (rd16(a + 6) != RTE_ARP_OP_REQUEST || tip != ip_be_) {
    drop(RxDrop::kArpIgnored);
    rte_pktmbuf_free(m);
    return;
  }
  uint8_t* eth = rte_pktmbuf_mtod(m, uint8_t*);
  rte_arp_ipv4 d;
  std::memcpy(&d, &arp->arp_data, sizeof d);
  arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
  d.arp_tha = d.arp_sha;
  d.arp_tip = d.arp_sip;
  d.arp_sha = mac_;
  d.arp_sip = ip_be_;
  std::memcpy(&arp->arp_data, &d, sizeof d);
  std::memcpy(eth, &d.arp_tha, 6);  // to the requester
  std::memcpy(eth + 6, &mac_, 6);
  // Trim to a minimal ARP frame (drops any padding / trailer we were given).
  const uint16_t flen = static_cast<uint16_t>(kEthLen + sizeof(rte_arp_hdr));
  m->data_len = flen;
  m->pkt_len = flen;
  m->ol_flags = 0;
  ++stats_.arp_replies;
  queue_tx(m);
}

int CommCore::on_request(void* ctx, const fp_emu_token* tok, const fp_request* req) {
  auto* self = static_cast<CommCore*>(ctx);
  const uint32_t src = self->cur_ep_;
  ++self->stats_.requests;
  if (req->dst >= self->conns_.size() || req->dst == src) {
    ++self->stats_.bad_dst;
    self->push_local_drop(src, *tok, *req, self->cur_now_);
    return 0;
  }
  if (self->engine_stopped_) {
    ++self->stats_.refused_after_stop;
    self->push_local_drop(src, *tok, *req, self->cur_now_);
    return 0;
  }
  Packet p{};
  p.src = static_cast<EndpointId>(src);
  p.dst = req->dst;
  p.flow = req->flow;
  p.seq = req->id;
  p.size_bytes = req->size_bytes;
  p.flags = (req->flags & FP_REQ_ECT) ? kFlagEct : 0;
  p.dscp = req->dscp;
  p.priority = req->priority;
  const uint8_t clen = std::min<uint8_t>(self->cfg_.req_custom_len, 12);
  uint8_t cb[12] = {};
  std::memcpy(cb, req->custom, clen);
  for (int w = 0; w < 3; ++w) p.custom[w] = rd32(cb + 4 * w);  // big-endian words (protocol §4.6)
  if (!self->traffic_.submit(p)) {
    ++self->stats_.refused_by_engine;
    self->push_local_drop(src, *tok, *req, self->cur_now_);
    return 0;
  }
  ++self->stats_.submitted;
  self->pending_->insert(static_cast<uint16_t>(src), p.flow, p.seq, *tok);
  return 0;
}

void CommCore::push_local_drop(uint32_t e, const fp_emu_token& tok, const fp_request& req, uint64_t now) {
  fp_verdict v{};
  v.flow = req.flow;
  v.id = req.id;
  v.action = FP_ACT_DROP;
  if (fp_emu_push_verdict(&conns_[e], &tok, &v, now) == 0)
    ++stats_.verdicts_pushed;
  else
    ++stats_.verdicts_stale;
  mark_dirty(e);
}

void CommCore::handle_udp(rte_mbuf*, const uint8_t* eth, const uint8_t* ip, const uint8_t* payload, uint32_t len,
                          uint64_t now) {
  const uint32_t src_ip = rd32(ip + 12);
  const auto it = std::lower_bound(ip_to_ep_.begin(), ip_to_ep_.end(), std::make_pair(src_ip, uint16_t{0}));
  const uint8_t* udp = payload - kUdpLen;
  if (it == ip_to_ep_.end() || it->first != src_ip) {
    drop(RxDrop::kUnknownSrc);
    // A HELLO (of any version) gets a stateless REJECT(UNKNOWN_ENDPOINT);
    // anything else from an unknown address is dropped (protocol §1).
    uint32_t inst, att;
    if (fp_peek_hello_ids(payload, len, &inst, &att) < 0) return;
    rte_mbuf* m = new_frame();
    if (!m) return;
    uint8_t* out = rte_pktmbuf_mtod(m, uint8_t*) + kHdrs;
    const int r = fp_emu_reject_unknown(payload, len, out, FP_DEFAULT_MAX_DGRAM);
    if (r <= 0) {
      spare_ = m;
      return;
    }
    rte_ether_addr smac;
    std::memcpy(&smac, eth + 6, 6);
    uint32_t sip_be;
    uint16_t sport_be;
    std::memcpy(&sip_be, ip + 12, 4);
    std::memcpy(&sport_be, udp, 2);
    finish_frame(m, smac, sip_be, sport_be, static_cast<uint16_t>(r));
    ++stats_.rejects_unknown;
    queue_tx(m);
    return;
  }
  const uint32_t e = it->second;
  cur_ep_ = e;
  cur_now_ = now;
  const int rc = fp_emu_rx(&conns_[e], payload, len, now, &CommCore::on_request, this);
  if (rc < 0) {
    if (rc == -FP_ESTALE)
      drop(RxDrop::kProtoStale);
    else if (rc >= -FP_EFIELD)
      drop(RxDrop::kProtoDecode);
    else
      drop(RxDrop::kProtoOther);
  }
  // Remember where the endpoint speaks from: after a datagram the protocol
  // used, or one it answers (RESET for a stale session, REJECT for a HELLO of
  // another version); not after undecodable junk.
  if (rc == 0 || rc == -FP_ESTALE || rc == -FP_EVERSION) {
    Peer& p = peers_[e];
    std::memcpy(&p.mac, eth + 6, 6);
    std::memcpy(&p.ip_be, ip + 12, 4);
    std::memcpy(&p.port_be, udp, 2);
    p.known = true;
  }
  mark_dirty(e);
}

void CommCore::handle_verdict(const LiveVerdict& v, uint64_t now) {
  if (record_) record_->push_back(v);
  fp_verdict fv{};
  switch (v.action) {
    case LiveVerdict::kRelease:
      ++stats_.releases;
      fv.action = FP_ACT_RELEASE;
      break;
    case LiveVerdict::kMark:
      ++stats_.marks;
      fv.action = FP_ACT_MARK;
      break;
    default:
      ++stats_.drops;
      if (static_cast<unsigned>(v.reason) < kNumReasons) ++stats_.drop_reasons[static_cast<unsigned>(v.reason)];
      fv.action = FP_ACT_DROP;
      break;
  }
  fp_emu_token tok;
  if (v.pkt.src >= conns_.size() || !pending_->take(v.pkt.src, v.pkt.flow, v.pkt.seq, &tok)) {
    ++stats_.verdicts_orphan;
    return;
  }
  fv.flow = v.pkt.flow;
  fv.id = v.pkt.seq;
  uint8_t cb[12];
  for (int w = 0; w < 3; ++w) wr32(cb + 4 * w, v.pkt.custom[w]);
  std::memcpy(fv.custom, cb, std::min<uint8_t>(cfg_.verdict_custom_len, 12));
  if (fp_emu_push_verdict(&conns_[v.pkt.src], &tok, &fv, now) == 0) {
    ++stats_.verdicts_pushed;
    mark_dirty(v.pkt.src);
  } else {
    ++stats_.verdicts_stale;
  }
}

rte_mbuf* CommCore::new_frame() {
  rte_mbuf* m = spare_;
  spare_ = nullptr;
  if (!m) m = rte_pktmbuf_alloc(pool_);
  if (!m) {
    ++stats_.mbuf_alloc_failed;
    return nullptr;
  }
  if (rte_pktmbuf_tailroom(m) < kHdrs + FP_DEFAULT_MAX_DGRAM) {  // pool with tiny buffers: unusable
    rte_pktmbuf_free(m);
    ++stats_.mbuf_alloc_failed;
    return nullptr;
  }
  return m;
}

void CommCore::send_conn(uint32_t e, uint64_t now) {
  if (!peers_[e].known) return;  // nothing to say before the endpoint spoke
  const Peer& peer = peers_[e];
  for (;;) {
    rte_mbuf* m = new_frame();
    if (!m) return;  // retried on the next loop (timers stay due)
    uint8_t* out = rte_pktmbuf_mtod(m, uint8_t*) + kHdrs;
    const int n = fp_emu_poll(&conns_[e], now, out, FP_DEFAULT_MAX_DGRAM);
    if (n <= 0) {
      spare_ = m;
      break;
    }
    finish_frame(m, peer.mac, peer.ip_be, peer.port_be, static_cast<uint16_t>(n));
    queue_tx(m);
  }
  next_timer_ns_ = std::min(next_timer_ns_, fp_emu_next_deadline(&conns_[e]));
}

void CommCore::finish_frame(rte_mbuf* m, const rte_ether_addr& dst_mac, uint32_t dst_ip_be, uint16_t dst_port_be,
                            uint16_t payload_len) {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(f);
  eth->dst_addr = dst_mac;
  eth->src_addr = mac_;
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(f + kEthLen);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->type_of_service = 0;
  ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(kIpLen + kUdpLen + payload_len));
  ip->packet_id = rte_cpu_to_be_16(ip_id_++);
  ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
  ip->time_to_live = 64;
  ip->next_proto_id = IPPROTO_UDP;
  ip->hdr_checksum = 0;
  ip->src_addr = ip_be_;
  ip->dst_addr = dst_ip_be;
  auto* udp = reinterpret_cast<rte_udp_hdr*>(f + kEthLen + kIpLen);
  udp->src_port = port_be_;
  udp->dst_port = dst_port_be;
  udp->dgram_len = rte_cpu_to_be_16(static_cast<uint16_t>(kUdpLen + payload_len));
  udp->dgram_cksum = 0;
  const uint16_t flen = static_cast<uint16_t>(kHdrs + payload_len);
  m->data_len = flen;
  m->pkt_len = flen;
  m->ol_flags = 0;
  // Both checksums in software: no offload is assumed of any PMD.
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
}

void CommCore::queue_tx(rte_mbuf* m) {
  tx_len_[ntx_] = rte_pktmbuf_pkt_len(m);
  tx_[ntx_++] = m;
  if (ntx_ == kBurst) flush_tx();
}

void CommCore::flush_tx() {
  uint16_t sent = 0;
  for (int tries = 0; tries < 4 && sent < ntx_; ++tries)
    sent += rte_eth_tx_burst(cfg_.port_id, 0, tx_ + sent, static_cast<uint16_t>(ntx_ - sent));
  for (uint16_t i = 0; i < sent; ++i) stats_.tx_bytes += tx_len_[i];
  stats_.tx_frames += sent;
  for (uint16_t i = sent; i < ntx_; ++i) {
    ++stats_.tx_failed;
    rte_pktmbuf_free(tx_[i]);
  }
  ntx_ = 0;
}

fp_emu_stats CommCore::proto_stats() const {
  fp_emu_stats s{};
  for (const auto& c : conns_) {
    s.tx_dgrams += c.stats.tx_dgrams;
    s.rx_dgrams += c.stats.rx_dgrams;
    s.rx_bad += c.stats.rx_bad;
    s.rx_stale += c.stats.rx_stale;
    s.sessions += c.stats.sessions;
    s.welcomes_sent += c.stats.welcomes_sent;
    s.rejects_sent += c.stats.rejects_sent;
    s.resets_sent += c.stats.resets_sent;
    s.requests += c.stats.requests;
    s.request_dups += c.stats.request_dups;
    s.request_gaps += c.stats.request_gaps;
    s.request_full += c.stats.request_full;
    s.request_refused += c.stats.request_refused;
    s.verdicts += c.stats.verdicts;
    s.verdicts_stale += c.stats.verdicts_stale;
    s.verdicts_sent += c.stats.verdicts_sent;
    s.verdicts_resent += c.stats.verdicts_resent;
    s.timeouts += c.stats.timeouts;
    s.naks += c.stats.naks;
    s.acks_sent += c.stats.acks_sent;
  }
  return s;
}

std::vector<std::pair<std::string, uint64_t>> CommCore::counters() const {
  const CommStats& s = stats_;
  std::vector<std::pair<std::string, uint64_t>> v = {
      {"loops", s.loops},
      {"busy_loops", s.busy_loops},
      {"rx_frames", s.rx_frames},
      {"rx_bytes", s.rx_bytes},
      {"tx_frames", s.tx_frames},
      {"tx_bytes", s.tx_bytes},
      {"tx_failed", s.tx_failed},
      {"mbuf_alloc_failed", s.mbuf_alloc_failed},
      {"arp_replies", s.arp_replies},
      {"rejects_unknown", s.rejects_unknown},
      {"rx_dropped", s.rx_dropped()},
      {"malformed", s.malformed()},
  };
  for (unsigned i = 0; i < kNumRxDrops; ++i)
    v.emplace_back(std::string("rx_drop_") + rx_drop_name(static_cast<RxDrop>(i)), s.rx_drops[i]);
  const std::vector<std::pair<std::string, uint64_t>> more = {
      {"requests", s.requests},
      {"submitted", s.submitted},
      {"refused_by_engine", s.refused_by_engine},
      {"bad_dst", s.bad_dst},
      {"refused_after_stop", s.refused_after_stop},
      {"verdicts_collected", s.verdicts_collected},
      {"verdicts_pushed", s.verdicts_pushed},
      {"verdicts_stale", s.verdicts_stale},
      {"verdicts_orphan", s.verdicts_orphan},
      {"pending_in_engine", pending()},
      {"releases", s.releases},
      {"marks", s.marks},
      {"drops", s.drops},
  };
  v.insert(v.end(), more.begin(), more.end());
  for (unsigned r = 0; r < kNumReasons; ++r)
    v.emplace_back(std::string("drop_") + reason_name(static_cast<Reason>(r)), s.drop_reasons[r]);
  const fp_emu_stats p = proto_stats();
  const std::vector<std::pair<std::string, uint64_t>> proto = {
      {"proto_tx_dgrams", p.tx_dgrams},         {"proto_rx_dgrams", p.rx_dgrams},
      {"proto_rx_bad", p.rx_bad},               {"proto_rx_stale", p.rx_stale},
      {"proto_sessions", p.sessions},           {"proto_welcomes_sent", p.welcomes_sent},
      {"proto_rejects_sent", p.rejects_sent},   {"proto_resets_sent", p.resets_sent},
      {"proto_requests", p.requests},           {"proto_request_dups", p.request_dups},
      {"proto_request_gaps", p.request_gaps},   {"proto_request_full", p.request_full},
      {"proto_request_refused", p.request_refused}, {"proto_verdicts", p.verdicts},
      {"proto_verdicts_stale", p.verdicts_stale}, {"proto_verdicts_sent", p.verdicts_sent},
      {"proto_verdicts_resent", p.verdicts_resent}, {"proto_timeouts", p.timeouts},
      {"proto_naks", p.naks},                   {"proto_acks_sent", p.acks_sent},
  };
  v.insert(v.end(), proto.begin(), proto.end());
  return v;
}

void CommCore::write_counters_csv(const std::string& path) const {
  std::ofstream out(path);
  out << "counter,value\n";
  for (const auto& [k, val] : counters()) out << k << ',' << val << '\n';
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace flexplane::live
