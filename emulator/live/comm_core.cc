#include "emulator/live/comm_core.h"

#include <arpa/inet.h>
#include <rte_ethdev.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "api/rng.h"
#include "emulator/live/pending_table.h"

namespace flexplane::live {

namespace {

inline uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 | p[3];
}
inline TraceKey trace_key(uint32_t src, uint32_t flow, uint32_t seq) {
  return TraceKey{(static_cast<uint64_t>(flow) << 32) | seq, static_cast<uint16_t>(src)};
}

inline void wr32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

}  // namespace

struct CommCore::Peer {
  rte_ether_addr mac{};
  uint32_t ip_be = 0;
  uint16_t port_be = 0;
  bool known = false;
};

// --------------------------------------------------------------- core ----

CommCore::CommCore(const CommCoreConfig& cfg, LiveTraffic& traffic, rte_mempool* pool)
    : cfg_(cfg), traffic_(traffic), pool_(pool), pending_(std::make_unique<PendingTable>()), vbuf_(256) {
  // Addresses arrive parsed and checked (emulator/config: parse_live); what
  // the tables below rely on is asserted again for direct users.
  if (net::not_unicast(cfg.emulator_ip))
    throw std::invalid_argument("emulator_ip " + cfg.emulator_ip.str() + " is not a unicast address");
  ip_be_ = cfg.emulator_ip.network_order();
  port_be_ = htons(cfg.udp_port);
  if (cfg.endpoint_ips.empty() || cfg.endpoint_ips.size() > 65535)
    throw std::invalid_argument("need 1..65535 endpoint addresses");
  if (cfg.window < 2 || cfg.window > 32768 || (cfg.window & (cfg.window - 1)))
    throw std::invalid_argument("window must be a power of two in [2, 32768]");
  if (cfg.req_custom_len > kPacketCustomBytes || cfg.verdict_custom_len > kPacketCustomBytes)
    throw std::invalid_argument("custom lengths must be <= " + std::to_string(kPacketCustomBytes) +
                                " (the bytes an abstract packet carries)");
  for (size_t e = 0; e < cfg.endpoint_ips.size(); ++e) {
    if (net::not_unicast(cfg.endpoint_ips[e]) || cfg.endpoint_ips[e] == cfg.emulator_ip)
      throw std::invalid_argument("endpoint " + std::to_string(e) + "'s address " + cfg.endpoint_ips[e].str() +
                                  " is not a unicast address apart from emulator_ip");
    ip_to_ep_.emplace_back(cfg.endpoint_ips[e].host, static_cast<uint16_t>(e));
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
    seed = mix64(rnd ^ (static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec) ^ mono_ns());
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
    const uint64_t s = mix64(seed + e);
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
    if (trace_) now = mono_ns();  // the stage trace stamps when the burst arrived, not when the loop began
    for (uint16_t i = 0; i < n; ++i) {
      if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void*));
      handle_frame(rx[i], now);
    }
  }
  for (int round = 0; round < 8; ++round) {
    const size_t k = traffic_.collect(vbuf_.data(), vbuf_.size());
    if (!k) break;
    busy = true;
    if (trace_) now = mono_ns();
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
  if (trace_ && !trace_tx_.empty()) {
    const uint64_t t = mono_ns();
    for (size_t i : trace_tx_) (*trace_)[i].tx_ns = t;
    trace_tx_.clear();
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
  const FrameFilter us{mac_.addr_bytes, ip_be_, port_be_};
  const ParsedFrame f = parse_frame(eth, rte_pktmbuf_data_len(m), us);
  switch (f.kind) {
    case ParsedFrame::kArpRequest: {
      const uint16_t flen = make_arp_reply(eth, f.arp, mac_.addr_bytes, ip_be_);
      m->data_len = flen;
      m->pkt_len = flen;
      m->ol_flags = 0;
      ++stats_.arp_replies;
      queue_tx(m);  // consumes m
      return;
    }
    case ParsedFrame::kUdp:
      handle_udp(eth, f, now);
      break;
    case ParsedFrame::kDrop:
      drop(f.drop);
      break;
  }
  rte_pktmbuf_free(m);
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
  const uint8_t clen = self->cfg_.req_custom_len;  // <= kPacketCustomBytes (checked at construction)
  uint8_t cb[kPacketCustomBytes] = {};
  std::memcpy(cb, req->custom, clen);
  for (int w = 0; w < 3; ++w) p.custom[w] = rd32(cb + 4 * w);  // big-endian words (protocol §4.6)
  if (!self->traffic_.submit(p)) {
    ++self->stats_.refused_by_engine;
    self->push_local_drop(src, *tok, *req, self->cur_now_);
    return 0;
  }
  ++self->stats_.submitted;
  self->pending_->insert(static_cast<uint16_t>(src), p.flow, p.seq, *tok);
  if (self->trace_) {
    self->trace_index_[trace_key(src, p.flow, p.seq)] = self->trace_->size();
    StageRecord r;
    r.src = static_cast<uint16_t>(src);
    r.flow = p.flow;
    r.seq = p.seq;
    r.rx_ns = self->cur_now_;
    self->trace_->push_back(r);
  }
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

void CommCore::handle_udp(const uint8_t* eth, const ParsedFrame& f, uint64_t now) {
  const uint8_t* ip = f.ip;
  const uint8_t* udp = f.udp;
  const uint8_t* payload = f.payload;
  const uint32_t len = f.payload_len;
  const uint32_t src_ip = rd32(ip + 12);
  const auto it = std::lower_bound(ip_to_ep_.begin(), ip_to_ep_.end(), std::make_pair(src_ip, uint16_t{0}));
  if (it == ip_to_ep_.end() || it->first != src_ip) {
    drop(RxDrop::kUnknownSrc);
    // A HELLO (of any version) gets a stateless REJECT(UNKNOWN_ENDPOINT);
    // anything else from an unknown address is dropped (protocol §1).
    uint32_t inst, att;
    if (fp_peek_hello_ids(payload, len, &inst, &att) < 0) return;
    rte_mbuf* m = new_frame();
    if (!m) return;
    uint8_t* out = rte_pktmbuf_mtod(m, uint8_t*) + kUdpFrameHeaders;
    const int r = fp_emu_reject_unknown(payload, len, out, FP_DEFAULT_MAX_DGRAM);
    if (r <= 0) {
      spare_ = m;
      return;
    }
    const uint8_t* smac = eth + 6;
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
  uint8_t cb[kPacketCustomBytes];
  for (int w = 0; w < 3; ++w) wr32(cb + 4 * w, v.pkt.custom[w]);
  std::memcpy(fv.custom, cb, cfg_.verdict_custom_len);  // <= kPacketCustomBytes
  if (trace_) {
    const auto it = trace_index_.find(trace_key(v.pkt.src, v.pkt.flow, v.pkt.seq));
    if (it != trace_index_.end()) {
      StageRecord& r = (*trace_)[it->second];
      r.collect_ns = now;
      r.verdict_time = v.time;
      r.action = v.action;
      trace_tx_.push_back(it->second);
      trace_index_.erase(it);
    }
  }
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
  if (rte_pktmbuf_tailroom(m) < kUdpFrameHeaders + FP_DEFAULT_MAX_DGRAM) {  // pool with tiny buffers: unusable
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
    uint8_t* out = rte_pktmbuf_mtod(m, uint8_t*) + kUdpFrameHeaders;
    const int n = fp_emu_poll(&conns_[e], now, out, FP_DEFAULT_MAX_DGRAM);
    if (n <= 0) {
      spare_ = m;
      break;
    }
    finish_frame(m, peer.mac.addr_bytes, peer.ip_be, peer.port_be, static_cast<uint16_t>(n));
    queue_tx(m);
  }
  next_timer_ns_ = std::min(next_timer_ns_, fp_emu_next_deadline(&conns_[e]));
}

void CommCore::finish_frame(rte_mbuf* m, const uint8_t* dst_mac, uint32_t dst_ip_be, uint16_t dst_port_be,
                            uint16_t payload_len) {
  const uint16_t flen = build_udp_frame(rte_pktmbuf_mtod(m, uint8_t*), UdpEnds{mac_.addr_bytes, ip_be_, port_be_},
                                        UdpEnds{dst_mac, dst_ip_be, dst_port_be}, ip_id_++, payload_len);
  m->data_len = flen;
  m->pkt_len = flen;
  m->ol_flags = 0;
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

}  // namespace flexplane::live
