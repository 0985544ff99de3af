#include "emulator/traffic/live_traffic.h"

#include <algorithm>
#include <tuple>

#include "emulator/traffic/fifo_ring.h"

namespace flexplane {

namespace {

// Emulated endpoints of one group: each has a FIFO NIC queue of requested
// packets and sends one per timeslot, exactly as in virtual-time flow runs.
class EndpointQueues final : public TrafficSource {
 public:
  EndpointQueues(const std::vector<EndpointId>& group, size_t num_endpoints, uint32_t limit, ArrivalFeed& feed,
                 VerdictOut& refusals)
      : local_of_(num_endpoints, -1),
        nics_(group.size()),
        busy_((group.size() + 63) / 64, 0),
        limit_(limit),
        feed_(feed),
        refusals_(refusals) {
    for (size_t i = 0; i < group.size(); ++i) local_of_[group[i]] = static_cast<int32_t>(i);
  }

  uint32_t emit(Timeslot now, Packet* out, uint32_t* local) override {
    Packet batch[64];
    LiveVerdict* refused = refused_.get();  // a member: a local array would construct 64 verdicts per call
    size_t n;
    while ((n = feed_.fetch(now, batch, 64)) > 0) {
      size_t r = 0;
      for (size_t i = 0; i < n; ++i) {
        const int32_t l = batch[i].src < local_of_.size() ? local_of_[batch[i].src] : -1;
        if (l < 0 || nics_[l].size() >= limit_) {  // not ours (never expected) or queue full: refuse, visibly
          refused[r++] = LiveVerdict{batch[i], now, LiveVerdict::kDrop, Reason::kEndpointOverflow};
          continue;
        }
        nics_[l].push(batch[i]);
        busy_[l / 64] |= uint64_t{1} << (l % 64);
      }
      if (r) refusals_.put(refused, r);
    }
    uint32_t m = 0;
    for (size_t w = 0; w < busy_.size(); ++w)  // the endpoints with a queue, in order
      for (uint64_t bits = busy_[w]; bits; bits &= bits - 1) {
        const uint32_t l = static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
        out[m] = nics_[l].front();
        nics_[l].pop();
        if (nics_[l].empty()) busy_[w] &= ~(uint64_t{1} << (l % 64));
        local[m++] = l;
      }
    return m;
  }

 private:
  std::vector<int32_t> local_of_;
  std::vector<FifoRing<Packet>> nics_;
  std::vector<uint64_t> busy_;  // bit l: nics_[l] holds a packet
  std::unique_ptr<LiveVerdict[]> refused_{new LiveVerdict[64]};
  uint32_t limit_;
  ArrivalFeed& feed_;
  VerdictOut& refusals_;
};

class VerdictSink final : public TrafficSink {
 public:
  // `log` (may be null): also record deliveries there if it keeps them (run.packet_log).
  VerdictSink(VerdictOut& out, EventLog* log) : out_(out), log_(log && log->log_deliveries() ? log : nullptr) {}
  void deliver(const Packet* pkts, uint32_t n, Timeslot now) override {
    // A timeslot's deliveries go out as one burst: one release of the ring's
    // tail per burst, not per verdict (each costs the feeder a cache miss).
    LiveVerdict* burst = burst_.get();
    for (uint32_t i = 0; i < n;) {
      const uint32_t m = std::min<uint32_t>(n - i, 64);
      for (uint32_t j = 0; j < m; ++j) {
        const Packet& p = pkts[i + j];
        burst[j] = LiveVerdict{p, now, p.ce() ? LiveVerdict::kMark : LiveVerdict::kRelease, Reason::kCount};
        if (log_) log_->on_deliver(p, now);
      }
      out_.put(burst, m);
      i += m;
    }
  }

 private:
  VerdictOut& out_;
  EventLog* log_;
  std::unique_ptr<LiveVerdict[]> burst_{new LiveVerdict[64]};  // not a local: that would construct 64 per call
};

class DropVerdicts final : public EventSink {
 public:
  explicit DropVerdicts(VerdictOut& out) : out_(out) {}
  void on_drop(const Packet& p, uint32_t, PortId, Reason reason, Timeslot now) override {
    out_.put(LiveVerdict{p, now, LiveVerdict::kDrop, reason});
  }

 private:
  VerdictOut& out_;
};

// Ring-backed output: the engine core waits (never drops a verdict) if the
// comm core has fallen a whole ring behind.
class RingOut final : public VerdictOut {
 public:
  explicit RingOut(size_t entries) : ring(entries) {}
  void put(const LiveVerdict& v) override {
    while (!ring.push(v)) {
    }
  }
  void put(const LiveVerdict* v, size_t n) override {
    while (n) {
      const size_t k = ring.push(v, n);
      v += k;
      n -= k;
    }
  }
  SpscRing<LiveVerdict> ring;
};

class VectorOut final : public VerdictOut {
 public:
  void put(const LiveVerdict& v) override { all.push_back(v); }
  void put(const LiveVerdict* v, size_t n) override { all.insert(all.end(), v, v + n); }
  std::vector<LiveVerdict> all;
};

// Several feeders: the verdicts of one producer (a group's core, or an engine
// core's routers) to the ring of each request's feeder -- that of its source's
// group -- one burst per feeder.
class FeederRouter final : public VerdictOut {
 public:
  FeederRouter(std::vector<RingOut*> rings, const std::vector<int32_t>& group_of)
      : rings_(std::move(rings)), group_of_(group_of) {}
  void put(const LiveVerdict& v) override { rings_[feeder(v)]->put(v); }
  void put(const LiveVerdict* v, size_t n) override {
    LiveVerdict* mine = mine_.get();
    for (size_t f = 0; f < rings_.size(); ++f)
      for (size_t i = 0; i < n;) {
        size_t m = 0;
        for (; i < n && m < 64; ++i)
          if (feeder(v[i]) == f) mine[m++] = v[i];
        if (m) rings_[f]->put(mine, m);
      }
  }

 private:
  size_t feeder(const LiveVerdict& v) const {
    const int32_t g = v.pkt.src < group_of_.size() ? group_of_[v.pkt.src] : -1;
    return g < 0 ? 0 : static_cast<size_t>(g) % rings_.size();  // -1: never expected (the comm core checks)
  }
  std::vector<RingOut*> rings_;  // per feeder
  const std::vector<int32_t>& group_of_;
  std::unique_ptr<LiveVerdict[]> mine_{new LiveVerdict[64]};
};

}  // namespace

// ----------------------------------------------------------------- live ----

// The rings of one producer, one per feeder, and where it puts its verdicts.
struct FeederRings {
  std::vector<std::unique_ptr<RingOut>> rings;  // per feeder
  std::unique_ptr<FeederRouter> router;         // several feeders only
  FeederRings(uint32_t feeders, size_t entries, const std::vector<int32_t>& group_of) {
    std::vector<RingOut*> raw;
    for (uint32_t f = 0; f < feeders; ++f) {
      rings.push_back(std::make_unique<RingOut>(entries));
      raw.push_back(rings.back().get());
    }
    if (feeders > 1) router = std::make_unique<FeederRouter>(std::move(raw), group_of);
  }
  VerdictOut& out() { return router ? static_cast<VerdictOut&>(*router) : *rings[0]; }
};


struct LiveTraffic::Group : ArrivalFeed {
  std::vector<EndpointId> endpoints;
  SpscRing<Packet> requests;
  FeederRings out;  // deliveries at this group's sink, refusals at its source
  bool record;
  std::vector<RecordedArrival> recorded;
  Group(size_t ring, uint32_t feeders, const std::vector<int32_t>& group_of, bool rec)
      : requests(ring), out(feeders, verdict_ring_entries(ring, feeders), group_of), record(rec) {}
  // Each of F feeders' rings holds 1/F of the entries (at least 1024): memory stays that of one feeder.
  static size_t verdict_ring_entries(size_t ring, uint32_t feeders) { return std::max<size_t>(1024, ring / feeders); }
  size_t fetch(Timeslot now, Packet* pkts, size_t max) override {
    const size_t n = requests.pop(pkts, max);
    if (record)
      for (size_t i = 0; i < n; ++i) recorded.push_back(RecordedArrival{now, pkts[i]});
    return n;
  }
};

LiveTraffic::LiveTraffic(const Topology& topology, uint32_t engine_cores, LiveTrafficOptions options)
    : group_of_(topology.num_endpoints, -1), options_(options) {
  if (options_.feeders < 1) options_.feeders = 1;
  stats_.resize(options_.feeders);
  for (uint32_t r = 0; r < topology.routers.size(); ++r) {
    const std::vector<EndpointId> eps = topology.endpoints_of(r);
    if (eps.empty()) continue;
    auto g = std::make_unique<Group>(options.ring_entries, options_.feeders, group_of_, options.record_arrivals);
    g->endpoints = eps;
    for (EndpointId e : eps) group_of_[e] = static_cast<int32_t>(groups_.size());
    groups_.push_back(std::move(g));
  }
  for (uint32_t c = 0; c < engine_cores; ++c) {
    drop_rings_.push_back(std::make_unique<FeederRings>(
        options_.feeders, Group::verdict_ring_entries(options.ring_entries, options_.feeders), group_of_));
    drop_sinks_.push_back(std::make_unique<DropVerdicts>(drop_rings_.back()->out()));
  }
}

LiveTraffic::~LiveTraffic() = default;

size_t LiveTraffic::submit_burst(const Packet* p, size_t n) {
  if (!n) return 0;
  const int32_t g = p[0].src < group_of_.size() ? group_of_[p[0].src] : -1;
  if (g < 0) {
    stats_[0].refused += n;
    return 0;
  }
  Stats& s = stats_[static_cast<uint32_t>(g) % options_.feeders];
  const size_t k = groups_[g]->requests.push(p, n);
  s.submitted += k;
  s.refused += n - k;
  return k;
}

bool LiveTraffic::submit(const Packet& p) { return submit_burst(&p, 1) == 1; }

size_t LiveTraffic::collect(LiveVerdict* out, size_t max, uint32_t feeder) {
  const uint32_t f = options_.feeders;
  if (feeder >= f) return 0;
  size_t n = 0;
  for (size_t g = 0; g < groups_.size() && n < max; ++g) n += groups_[g]->out.rings[feeder]->ring.pop(out + n, max - n);
  for (size_t c = 0; c < drop_rings_.size() && n < max; ++c) n += drop_rings_[c]->rings[feeder]->ring.pop(out + n, max - n);
  stats_[feeder].verdicts += n;
  return n;
}

LiveTraffic::Stats LiveTraffic::stats() const {
  Stats sum;
  for (const Stats& s : stats_) {
    sum.submitted += s.submitted;
    sum.refused += s.refused;
    sum.verdicts += s.verdicts;
  }
  return sum;
}

std::vector<RecordedArrival> LiveTraffic::arrivals() const {
  std::vector<RecordedArrival> all;
  for (const auto& g : groups_) all.insert(all.end(), g->recorded.begin(), g->recorded.end());
  std::stable_sort(all.begin(), all.end(), [](const RecordedArrival& a, const RecordedArrival& b) { return a.time < b.time; });
  return all;
}

std::unique_ptr<TrafficSource> LiveTraffic::make_source(const std::vector<EndpointId>& group) {
  Group& g = *groups_[group_of_[group.front()]];
  return std::make_unique<EndpointQueues>(group, group_of_.size(), options_.endpoint_queue_pkts, g, g.out.out());
}

std::unique_ptr<TrafficSink> LiveTraffic::make_sink(const std::vector<EndpointId>& group, EventLog* log) {
  return std::make_unique<VerdictSink>(groups_[group_of_[group.front()]]->out.out(), log);
}

EventSink* LiveTraffic::drop_sink(uint32_t core) { return core < drop_sinks_.size() ? drop_sinks_[core].get() : nullptr; }

// --------------------------------------------------------------- replay ----

struct ReplayTraffic::Group : ArrivalFeed {
  std::vector<RecordedArrival> arrivals;  // this group's, in recorded order
  size_t next = 0;
  VectorOut out;
  size_t fetch(Timeslot now, Packet* pkts, size_t max) override {
    size_t n = 0;
    while (n < max && next < arrivals.size() && arrivals[next].time <= now) pkts[n++] = arrivals[next++].pkt;
    return n;
  }
};

ReplayTraffic::ReplayTraffic(const Topology& topology, std::vector<RecordedArrival> arrivals,
                             uint32_t endpoint_queue_pkts, uint32_t engine_cores)
    : topology_(topology), arrivals_(std::move(arrivals)), queue_limit_(endpoint_queue_pkts) {
  for (uint32_t c = 0; c < engine_cores; ++c) {
    drop_outs_.push_back(std::make_unique<VectorOut>());
    drop_sinks_.push_back(std::make_unique<DropVerdicts>(*drop_outs_.back()));
  }
}

ReplayTraffic::~ReplayTraffic() = default;

std::unique_ptr<TrafficSource> ReplayTraffic::make_source(const std::vector<EndpointId>& group) {
  auto g = std::make_unique<Group>();
  for (const auto& a : arrivals_)
    if (std::find(group.begin(), group.end(), a.pkt.src) != group.end()) g->arrivals.push_back(a);
  groups_.push_back(std::move(g));
  Group& ref = *groups_.back();
  return std::make_unique<EndpointQueues>(group, topology_.num_endpoints, queue_limit_, ref, ref.out);
}

std::unique_ptr<TrafficSink> ReplayTraffic::make_sink(const std::vector<EndpointId>&, EventLog* log) {
  return std::make_unique<VerdictSink>(groups_.back()->out, log);  // built right after its source
}

EventSink* ReplayTraffic::drop_sink(uint32_t core) {
  return core < drop_sinks_.size() ? drop_sinks_[core].get() : nullptr;
}

std::vector<LiveVerdict> ReplayTraffic::verdicts() const {
  std::vector<LiveVerdict> all;
  for (const auto& g : groups_) all.insert(all.end(), g->out.all.begin(), g->out.all.end());
  for (const auto& d : drop_outs_) {
    const auto& v = static_cast<const VectorOut&>(*d).all;
    all.insert(all.end(), v.begin(), v.end());
  }
  sort_verdicts(all);
  return all;
}

void sort_verdicts(std::vector<LiveVerdict>& v) {
  std::sort(v.begin(), v.end(), [](const LiveVerdict& a, const LiveVerdict& b) {
    return std::tie(a.time, a.action, a.pkt.src, a.pkt.flow, a.pkt.seq) <
           std::tie(b.time, b.action, b.pkt.src, b.pkt.flow, b.pkt.seq);
  });
}

}  // namespace flexplane
