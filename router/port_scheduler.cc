#include "router/port_scheduler.h"

#include <netinet/in.h>
#include <rte_ethdev.h>
#include <rte_hash_crc.h>

#include <algorithm>
#include <cmath>

#include "router/ipv4.h"

namespace flexplane::router {

void describe_packet(rte_mbuf* m, uint32_t seq, Packet* out) {
  const uint8_t* l3 = rte_pktmbuf_mtod_offset(m, const uint8_t*, m->l2_len);
  const auto& h = *reinterpret_cast<const ipv4::Header*>(l3);
  uint32_t hash = rte_hash_crc_4byte(h.src, h.protocol);
  hash = rte_hash_crc_4byte(h.dst, hash);
  const uint32_t hlen = ipv4::header_bytes(h);
  if (!ipv4::is_fragment(h) && (h.protocol == IPPROTO_TCP || h.protocol == IPPROTO_UDP) &&
      ipv4::be16(h.total_length) >= hlen + 4) {
    uint32_t ports;
    std::memcpy(&ports, l3 + hlen, 4);
    hash = rte_hash_crc_4byte(ports, hash);
  }
  const uint8_t e = ipv4::ecn(h);
  Packet& p = *out;
  p.flow = hash;
  p.seq = seq;
  p.src = static_cast<EndpointId>(ipv4::be32(h.src));
  p.dst = 0;
  p.size_bytes = static_cast<uint16_t>(std::min<uint32_t>(m->pkt_len, 0xFFFF));
  p.flags = static_cast<uint8_t>((e != ipv4::kNotEct ? kFlagEct : 0) | (e == ipv4::kCe ? kFlagCe : 0));
  p.dscp = ipv4::dscp(h);
  p.priority = 0;
  p.custom[2] = 0;
  attach_mbuf(p, m);
}

// Every drop and eviction the scheme reports frees its mbuf (in bulk, after
// the call that reported it).
class PortScheduler::FreeSink final : public EventSink {
 public:
  explicit FreeSink(std::vector<rte_mbuf*>* frees) : frees_(frees) {}
  void on_drop(const Packet& p, uint32_t, PortId, Reason, Timeslot) override { frees_->push_back(mbuf_of(p)); }

 private:
  std::vector<rte_mbuf*>* frees_;
};

PortScheduler::PortScheduler(uint16_t port, uint16_t tx_queue, const PortSettings& settings, const RunSettings& run,
                             const PortTiming& timing, uint64_t seed)
    : port_(port),
      tx_queue_(tx_queue),
      settings_(settings),
      run_(run),
      timing_(timing),
      table_(1, 0),
      sink_(std::make_unique<FreeSink>(&frees_)) {
  const double rate_mbps = settings.rate_mbps > 0 ? settings.rate_mbps : timing.nominal_rate_mbps;
  // One tick = one nanosecond of the TSC clock (api/time.h: schemes convert
  // their parameters with from_us() and derive rates from link_bytes_per_tick).
  ticks_per_cycle_ = 1e9 / static_cast<double>(timing.tsc_hz);
  if (settings.rate_mbps > 0) {
    cycles_per_byte_ = 8.0 * static_cast<double>(timing.tsc_hz) / (settings.rate_mbps * 1e6);
    slack_cycles_ = run.pacing_slack_us * 1e-6 * static_cast<double>(timing.tsc_hz);
  }
  if (run.queueing) {
    router_ = build_router(settings.scheme, &resolved_);
    check_router_mode(settings, resolved_);  // validate() refused it already; kept for direct users
    table_.set(0, {0});
    RouterEnv env;
    env.router_id = port;
    env.num_ports = 1;
    env.mtu_bytes = settings.mtu_bytes;
    env.time.ns_per_tick = 1;
    env.time.link_bytes_per_tick = rate_mbps * 1e6 / 8 / 1e9;
    env.routes = &table_;
    env.sink = sink_.get();
    env.seed = seed;
    router_->bind(env);
    has_stats_ = !router_->stat_descs().empty();
  }
  pkts_.resize(run.burst);
  tx_.resize(run.burst);
  tx_len_.resize(std::max<uint32_t>(run.burst, 512));
  frees_.reserve(4 * run.burst + 64);
  if (run.occupancy_interval_us > 0) {
    sample_every_ = std::max<uint64_t>(1, static_cast<uint64_t>(run.occupancy_interval_us * 1e-6 * timing.tsc_hz));
    next_sample_ = timing.tsc_start;
    occupancy_.reserve(1 << 16);
  }
}

PortScheduler::~PortScheduler() = default;

void PortScheduler::flush_frees() {
  if (frees_.empty()) return;
  rte_pktmbuf_free_bulk(frees_.data(), static_cast<unsigned>(frees_.size()));
  frees_.clear();
}

void PortScheduler::enqueue(rte_mbuf** m, uint32_t n, uint64_t tsc) {
  if (__builtin_expect(!router_, 0)) {  // baseline: straight to the device
    // Lengths are read before the device owns (and may free) the mbufs.
    for (uint32_t i = 0; i < n; ++i) tx_len_[i] = m[i]->pkt_len;
    const uint16_t sent = rte_eth_tx_burst(port_, tx_queue_, m, static_cast<uint16_t>(n));
    for (uint16_t i = 0; i < sent; ++i) tx_bytes_ += tx_len_[i];
    tx_packets_ += sent;
    if (sent < n) {
      tx_refused_ += n - sent;
      rte_pktmbuf_free_bulk(m + sent, n - sent);
    }
    return;
  }
  while (n > 0) {
    const uint32_t k = std::min<uint32_t>(n, run_.burst);
    for (uint32_t i = 0; i < k; ++i) {
      describe_packet(m[i], seq_++, &pkts_[i]);
      max_frame_ = std::max<uint32_t>(max_frame_, m[i]->pkt_len);
    }
    if (cycles_per_byte_ > 0)  // +1 byte: rounding never lets a burst overshoot the credit
      max_frame_cycles_ = (max_frame_ + run_.wire_overhead_bytes + 1) * cycles_per_byte_;
    router_->input_in_order(pkts_.data(), k, ticks(tsc));  // a burst is a sequence, not simultaneous arrivals
    flush_frees();
    m += k;
    n -= k;
  }
}

uint32_t PortScheduler::drain(uint64_t tsc) {
  if (!router_) return 0;
  if (__builtin_expect(sample_every_ != 0 && tsc >= next_sample_, 0)) sample(tsc);
  uint32_t n = pending_;
  if (n == 0) {
    const QueueBank& bank = router_->bank();
    if (bank.port_packets(0) == 0) return 0;
    const double now_cycles = static_cast<double>(tsc);
    if (cycles_per_byte_ > 0) {
      if (next_free_ > now_cycles) return 0;
      // An idle (or late) link may catch up on at most pacing_slack_us.
      next_free_ = std::max(next_free_, now_cycles - slack_cycles_);
    }
    const Timeslot now = ticks(tsc);
    // Burst dequeue (Router::dequeue_burst): one call per burst, not per
    // packet. Paced, a burst is the packets sure to start while the link has
    // credit (all but the last leave it some, even at the largest frame
    // queued) plus one; then the link is checked again. So exactly the
    // packets a one-at-a-time loop would take leave, in the same order.
    while (n < run_.burst && bank.port_packets(0) > 0) {
      uint32_t want = run_.burst - n;
      if (cycles_per_byte_ > 0)
        want = static_cast<uint32_t>(
            std::min<double>(want, 1 + std::floor((now_cycles - next_free_) / max_frame_cycles_)));
      const uint32_t got = router_->dequeue_burst(0, now, want, pkts_.data());
      for (uint32_t i = 0; i < got; ++i) {
        const Packet& p = pkts_[i];
        rte_mbuf* m = mbuf_of(p);
        if (p.ce()) ipv4::mark_ce(*rte_pktmbuf_mtod_offset(m, ipv4::Header*, m->l2_len));
        tx_len_[n] = m->pkt_len;
        tx_[n++] = m;
        if (cycles_per_byte_ > 0) next_free_ += (tx_len_[n - 1] + run_.wire_overhead_bytes) * cycles_per_byte_;
      }
      if (got < want) break;  // the port ran dry, or a non-work-conserving scheduler idles it
      if (cycles_per_byte_ > 0 && next_free_ > now_cycles) break;
    }
    flush_frees();  // a queue manager acting at dequeue (CoDel) may have dropped heads
    if (n == 0) return 0;
  }
  // Once sent, an mbuf belongs to the device (net_null frees it at once):
  // the byte count uses the lengths read while it was still ours.
  const uint16_t sent = rte_eth_tx_burst(port_, tx_queue_, tx_.data(), static_cast<uint16_t>(n));
  for (uint16_t i = 0; i < sent; ++i) tx_bytes_ += tx_len_[i];
  tx_packets_ += sent;
  pending_ = n - sent;
  // The device took part of the burst: keep the rest, in order, for next time.
  if (pending_ && sent) {
    std::memmove(tx_.data(), tx_.data() + sent, pending_ * sizeof(rte_mbuf*));
    std::memmove(tx_len_.data(), tx_len_.data() + sent, pending_ * sizeof(uint32_t));
  }
  return sent;
}

void PortScheduler::sample(uint64_t tsc) {
  const QueueBank& b = router_->bank();
  uint64_t bytes = 0;
  for (QueueId q = 0; q < b.queues_per_port(); ++q) bytes += b.bytes(0, q);
  occupancy_.push_back({ticks(tsc), (tsc - timing_.tsc_start) * 1e6 / timing_.tsc_hz, b.port_packets(0), bytes});
  if (has_stats_) {  // the scheme's own state, at the same instants (scheme_stats.csv)
    struct Out final : StatsOut {
      std::vector<SchemeStatSample>* v;
      uint32_t sample;
      void put(unsigned stat, QueueId queue, double value) override {
        v->push_back({sample, static_cast<uint16_t>(stat), static_cast<uint16_t>(queue), value});
      }
    } out;
    out.v = &stats_;
    out.sample = static_cast<uint32_t>(occupancy_.size() - 1);
    router_->sample_stats(0, out);
  }
  next_sample_ += sample_every_;
  if (next_sample_ <= tsc) next_sample_ = tsc + sample_every_;  // skipped samples stay skipped
}

void PortScheduler::publish_snapshot() {
  uint64_t arrived = 0, dropped = 0, marked = 0, bytes = 0, pkts = 0;
  if (router_) {
    const QueueBank& b = router_->bank();
    for (QueueId q = 0; q < b.queues_per_port(); ++q) {
      const QueueCounters& c = b.counters(0, q);
      arrived += c.arrived;
      dropped += c.dropped();
      marked += c.marked;
      bytes += b.bytes(0, q);
    }
    pkts = b.port_packets(0);
  } else {
    arrived = tx_packets_ + tx_refused_;
    dropped = tx_refused_;
  }
  auto put = [](std::atomic<uint64_t>& a, uint64_t v) { a.store(v, std::memory_order_relaxed); };
  put(snapshot_.arrived, arrived);
  put(snapshot_.sent, tx_packets_);
  put(snapshot_.sent_bytes, tx_bytes_);
  put(snapshot_.dropped, dropped);
  put(snapshot_.marked, marked);
  put(snapshot_.backlog_pkts, pkts + pending_);
  put(snapshot_.backlog_bytes, bytes);
}

void PortScheduler::release_backlog() {
  if (pending_) rte_pktmbuf_free_bulk(tx_.data(), pending_);
  pending_ = 0;
  if (!router_) return;
  const QueueBank& b = router_->bank();
  for (QueueId q = 0; q < b.queues_per_port(); ++q)
    for (uint32_t i = 0; i < b.packets(0, q); ++i) rte_pktmbuf_free(mbuf_of(b.peek(0, q, i)));
}

}  // namespace flexplane::router
