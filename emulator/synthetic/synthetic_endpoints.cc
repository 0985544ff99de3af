#include "emulator/synthetic/synthetic_endpoints.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "emulator/engine/spin_wait.h"

namespace flexplane {

namespace {

constexpr uint32_t kMaxOffersPerLoop = 256;  // then collect: verdicts never wait behind a long burst of offers

}  // namespace

HopTable::HopTable(const Topology& t)
    : routers_(static_cast<uint32_t>(t.routers.size())), router_of_(t.num_endpoints), hops_(size_t{routers_} * routers_, 0) {
  constexpr EndpointId kNone = ~EndpointId{0};
  std::vector<EndpointId> first(routers_, kNone);
  for (EndpointId e = 0; e < t.num_endpoints; ++e) {
    router_of_[e] = t.endpoint_port[e].router;
    if (first[router_of_[e]] == kNone) first[router_of_[e]] = e;
  }
  for (uint32_t a = 0; a < routers_; ++a)
    for (uint32_t b = 0; b < routers_; ++b) {
      if (first[a] == kNone || first[b] == kNone) continue;
      EndpointId src = first[a], dst = first[b];
      if (src == dst) {  // a router with one endpoint: no pair behind it
        if (a != b) continue;
        hops_[a * routers_ + b] = 1;
        continue;
      }
      const uint32_t links = t.path(src, dst).links;  // access link + router links + access link
      hops_[a * routers_ + b] = static_cast<uint8_t>(std::min<uint32_t>(links - 1, 255));
    }
}

void SyntheticStats::merge(const SyntheticStats& o) {
  offered += o.offered;
  submitted += o.submitted;
  refused += o.refused;
  released += o.released;
  marked += o.marked;
  dropped += o.dropped;
  for (unsigned r = 0; r < kNumReasons; ++r) drop_reasons[r] += o.drop_reasons[r];
  offered_bytes += o.offered_bytes;
  window_verdicts += o.window_verdicts;
  window_delivered_bytes += o.window_delivered_bytes;
  window_router_bytes += o.window_router_bytes;
  latency_unmatched += o.latency_unmatched;
  max_offer_lag_ns = std::max(max_offer_lag_ns, o.max_offer_lag_ns);
  latency.merge(o.latency);
}

SyntheticEndpoints::SyntheticEndpoints(LiveTraffic& traffic, uint32_t feeder, const Topology& topology,
                                       const HopTable& hops, SyntheticLoad load, double timeslot_ns,
                                       Timeslot window_begin, Timeslot window_end)
    : traffic_(traffic),
      feeder_(feeder),
      num_endpoints_(topology.num_endpoints),
      hops_(hops),
      load_(load),
      window_begin_(window_begin),
      window_end_(window_end),
      local_of_(topology.num_endpoints, -1),
      rng_(load.seed, 0x5e7d + feeder),
      vbuf_(512) {
  if (num_endpoints_ < 2) throw std::invalid_argument("synthetic endpoints: need at least two endpoints");
  if (load.backlog_pkts == 0 && !(load.load > 0)) throw std::invalid_argument("synthetic endpoints: load must be > 0");
  for (EndpointId e = 0; e < num_endpoints_; ++e)
    if (traffic.feeder_of(e) == static_cast<int32_t>(feeder)) {
      local_of_[e] = static_cast<int32_t>(mine_.size());
      mine_.push_back(e);
    }
  std::vector<int32_t> local_group(traffic.num_groups(), -1);
  for (EndpointId e : mine_) {
    const int32_t g = traffic.group_of(e);
    if (local_group[g] < 0) {
      local_group[g] = static_cast<int32_t>(staged_.size());
      staged_.emplace_back();
      staged_.back().reserve(kMaxOffersPerLoop);
    }
    group_of_local_.push_back(static_cast<uint32_t>(local_group[g]));
  }
  next_seq_.assign(mine_.size(), 0);
  outstanding_.assign(mine_.size(), 0);
  sent_.resize(mine_.size() * size_t{kSentSlots});
  if (!mine_.empty()) mean_gap_ns_ = timeslot_ns / (load.load * static_cast<double>(mine_.size()));
}

// Requests are staged per group and handed over in one burst per group and
// loop (LiveTraffic::submit_burst): a ring's tail then crosses to the engine
// core once per burst, not once per request.
void SyntheticEndpoints::stage(uint32_t local) {
  const EndpointId src = mine_[local];
  EndpointId dst = static_cast<EndpointId>(rng_.below(num_endpoints_ - 1));
  if (dst >= src) ++dst;  // uniform over the others
  Packet p{};
  p.src = src;
  p.dst = dst;
  p.flow = static_cast<uint32_t>(src) * num_endpoints_ + dst;  // < 2^32: topologies have <= 65000 endpoints
  p.seq = next_seq_[local]++;
  p.size_bytes = load_.packet_bytes;
  p.flags = kFlagEct;
  ++stats_.offered;
  stats_.offered_bytes += p.size_bytes;
  ++outstanding_[local];  // until refused below or answered
  staged_[group_of_local_[local]].push_back(p);
}

void SyntheticEndpoints::flush(uint64_t now) {
  for (auto& b : staged_) {
    if (b.empty()) continue;
    const size_t k = traffic_.submit_burst(b.data(), b.size());
    stats_.submitted += k;
    for (size_t i = 0; i < b.size(); ++i) {
      const uint32_t l = static_cast<uint32_t>(local_of_[b[i].src]);
      if (i < k) {
        sent_[size_t{l} * kSentSlots + b[i].seq % kSentSlots] = Sent{b[i].seq, now};
      } else {  // ring full: the comm core would answer DROP at once
        ++stats_.refused;
        ++stats_.dropped;
        --outstanding_[l];
      }
    }
    b.clear();
  }
}

void SyntheticEndpoints::offer_poisson(uint64_t now) {
  const double t = static_cast<double>(now);
  if (next_arrival_ns_ == 0) next_arrival_ns_ = t;
  uint32_t n = 0;
  while (next_arrival_ns_ <= t && n++ < kMaxOffersPerLoop) {
    const uint64_t lag = static_cast<uint64_t>(t - next_arrival_ns_);
    if (lag > stats_.max_offer_lag_ns) stats_.max_offer_lag_ns = lag;
    stage(rng_.below(static_cast<uint32_t>(mine_.size())));
    next_arrival_ns_ += -std::log1p(-rng_.uniform()) * mean_gap_ns_;  // exponential gaps: Poisson arrivals
  }
  flush(now);
}

void SyntheticEndpoints::offer_backlogged(uint64_t now) {
  const uint32_t m = static_cast<uint32_t>(mine_.size());
  uint32_t n = 0;
  for (uint32_t i = 0; i < m && n < kMaxOffersPerLoop; ++i) {
    const uint32_t l = rr_;
    rr_ = rr_ + 1 == m ? 0 : rr_ + 1;
    for (; outstanding_[l] < load_.backlog_pkts && n < kMaxOffersPerLoop; ++n) stage(l);
  }
  flush(now);
}

void SyntheticEndpoints::collect() {
  for (;;) {
    const size_t k = traffic_.collect(vbuf_.data(), vbuf_.size(), feeder_);
    const uint64_t now = k ? static_cast<uint64_t>(clock_.now()) : 0;
    for (size_t i = 0; i < k; ++i) {
      const LiveVerdict& v = vbuf_[i];
      const int32_t l = v.pkt.src < local_of_.size() ? local_of_[v.pkt.src] : -1;
      if (l < 0) throw std::logic_error("synthetic endpoints: a verdict for another feeder's endpoint");
      --outstanding_[l];
      switch (v.action) {
        case LiveVerdict::kRelease:
          ++stats_.released;
          break;
        case LiveVerdict::kMark:
          ++stats_.marked;
          break;
        default:
          ++stats_.dropped;
          if (static_cast<unsigned>(v.reason) < kNumReasons) ++stats_.drop_reasons[static_cast<unsigned>(v.reason)];
          break;
      }
      if (v.time < window_begin_ || v.time >= window_end_) continue;
      ++stats_.window_verdicts;
      if (v.action != LiveVerdict::kDrop) {
        stats_.window_delivered_bytes += v.pkt.size_bytes;
        stats_.window_router_bytes += uint64_t{v.pkt.size_bytes} * hops_.hops(v.pkt.src, v.pkt.dst);
      }
      const Sent& s = sent_[static_cast<size_t>(l) * kSentSlots + v.pkt.seq % kSentSlots];
      if (s.seq == v.pkt.seq && s.at_ns != 0)
        stats_.latency.add(now - s.at_ns);
      else
        ++stats_.latency_unmatched;
    }
    if (k < vbuf_.size()) return;
  }
}

void SyntheticEndpoints::run(const std::atomic<int>& phase) {
  const uint64_t period = load_.poll_ns;
  uint64_t next_loop = 0;
  for (;;) {
    const int ph = phase.load(std::memory_order_acquire);
    if (ph == kQuit) return;
    if (period) {
      uint64_t t;
      while ((t = static_cast<uint64_t>(clock_.now())) < next_loop) spin::cpu_relax();
      next_loop = t + period;
    }
    if (ph == kOffer && !mine_.empty()) {
      const uint64_t now = static_cast<uint64_t>(clock_.now());
      if (load_.backlog_pkts)
        offer_backlogged(now);
      else
        offer_poisson(now);
    }
    collect();
    if (ph == kDrain && !drained_.load(std::memory_order_relaxed) && stats_.outstanding() == 0)
      drained_.store(true, std::memory_order_release);
    if (mine_.empty()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace flexplane
