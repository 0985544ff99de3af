#include "emulator/traffic/live_traffic.h"

#include <algorithm>
#include <deque>
#include <tuple>

namespace flexplane {

namespace {

// Emulated endpoints of one group: each has a FIFO NIC queue of requested
// packets and sends one per timeslot, exactly as in virtual-time flow runs.
class EndpointQueues final : public TrafficSource {
 public:
  EndpointQueues(const std::vector<EndpointId>& group, size_t num_endpoints, uint32_t limit, ArrivalFeed& feed,
                 VerdictOut& refusals)
      : local_of_(num_endpoints, -1), nics_(group.size()), limit_(limit), feed_(feed), refusals_(refusals) {
    for (size_t i = 0; i < group.size(); ++i) local_of_[group[i]] = static_cast<int32_t>(i);
  }

  uint32_t emit(Timeslot now, Packet* out, uint32_t* local) override {
    Packet batch[64];
    size_t n;
    while ((n = feed_.fetch(now, batch, 64)) > 0)
      for (size_t i = 0; i < n; ++i) {
        const int32_t l = batch[i].src < local_of_.size() ? local_of_[batch[i].src] : -1;
        if (l < 0 || nics_[l].size() >= limit_) {  // not ours (never expected) or queue full: refuse, visibly
          refusals_.put(LiveVerdict{batch[i], now, LiveVerdict::kDrop, Reason::kEndpointOverflow});
          continue;
        }
        nics_[l].push_back(batch[i]);
      }
    uint32_t m = 0;
    for (uint32_t l = 0; l < nics_.size(); ++l)
      if (!nics_[l].empty()) {
        out[m] = nics_[l].front();
        nics_[l].pop_front();
        local[m++] = l;
      }
    return m;
  }

 private:
  std::vector<int32_t> local_of_;
  std::vector<std::deque<Packet>> nics_;
  uint32_t limit_;
  ArrivalFeed& feed_;
  VerdictOut& refusals_;
};

class VerdictSink final : public TrafficSink {
 public:
  // `log` (may be null): also record deliveries there if it keeps them (run.packet_log).
  VerdictSink(VerdictOut& out, EventLog* log) : out_(out), log_(log && log->log_deliveries() ? log : nullptr) {}
  void deliver(const Packet* pkts, uint32_t n, Timeslot now) override {
    for (uint32_t i = 0; i < n; ++i) {
      out_.put(LiveVerdict{pkts[i], now, pkts[i].ce() ? LiveVerdict::kMark : LiveVerdict::kRelease, Reason::kCount});
      if (log_) log_->on_deliver(pkts[i], now);
    }
  }

 private:
  VerdictOut& out_;
  EventLog* log_;
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
  SpscRing<LiveVerdict> ring;
};

class VectorOut final : public VerdictOut {
 public:
  void put(const LiveVerdict& v) override { all.push_back(v); }
  std::vector<LiveVerdict> all;
};

}  // namespace

// ----------------------------------------------------------------- live ----

struct LiveTraffic::Group : ArrivalFeed {
  std::vector<EndpointId> endpoints;
  SpscRing<Packet> requests;
  RingOut out;
  bool record;
  std::vector<RecordedArrival> recorded;
  Group(size_t ring, bool rec) : requests(ring), out(ring), record(rec) {}
  size_t fetch(Timeslot now, Packet* pkts, size_t max) override {
    const size_t n = requests.pop(pkts, max);
    if (record)
      for (size_t i = 0; i < n; ++i) recorded.push_back(RecordedArrival{now, pkts[i]});
    return n;
  }
};

LiveTraffic::LiveTraffic(const Topology& topology, uint32_t engine_cores, LiveTrafficOptions options)
    : group_of_(topology.num_endpoints, -1), options_(options) {
  for (uint32_t r = 0; r < topology.routers.size(); ++r) {
    const std::vector<EndpointId> eps = topology.endpoints_of(r);
    if (eps.empty()) continue;
    auto g = std::make_unique<Group>(options.ring_entries, options.record_arrivals);
    g->endpoints = eps;
    for (EndpointId e : eps) group_of_[e] = static_cast<int32_t>(groups_.size());
    groups_.push_back(std::move(g));
  }
  for (uint32_t c = 0; c < engine_cores; ++c) {
    drop_outs_.push_back(std::make_unique<RingOut>(options.ring_entries));
    drop_sinks_.push_back(std::make_unique<DropVerdicts>(*drop_outs_.back()));
  }
}

LiveTraffic::~LiveTraffic() = default;

bool LiveTraffic::submit(const Packet& p) {
  if (p.src >= group_of_.size() || group_of_[p.src] < 0 || !groups_[group_of_[p.src]]->requests.push(p)) {
    ++stats_.refused;
    return false;
  }
  ++stats_.submitted;
  return true;
}

size_t LiveTraffic::collect(LiveVerdict* out, size_t max) {
  size_t n = 0;
  for (auto& g : groups_) n += g->out.ring.pop(out + n, max - n);
  for (auto& d : drop_outs_) n += static_cast<RingOut&>(*d).ring.pop(out + n, max - n);
  stats_.verdicts += n;
  return n;
}

std::vector<RecordedArrival> LiveTraffic::arrivals() const {
  std::vector<RecordedArrival> all;
  for (const auto& g : groups_) all.insert(all.end(), g->recorded.begin(), g->recorded.end());
  std::stable_sort(all.begin(), all.end(), [](const RecordedArrival& a, const RecordedArrival& b) { return a.time < b.time; });
  return all;
}

std::unique_ptr<TrafficSource> LiveTraffic::make_source(const std::vector<EndpointId>& group) {
  Group& g = *groups_[group_of_[group.front()]];
  return std::make_unique<EndpointQueues>(group, group_of_.size(), options_.endpoint_queue_pkts, g, g.out);
}

std::unique_ptr<TrafficSink> LiveTraffic::make_sink(const std::vector<EndpointId>& group, EventLog* log) {
  return std::make_unique<VerdictSink>(groups_[group_of_[group.front()]]->out, log);
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
