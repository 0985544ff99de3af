#include "emulator/traffic/flow_traffic.h"

#include <algorithm>

#include "api/params.h"
#include "emulator/traffic/closed_loop_internal.h"
#include "emulator/workload/collective.h"

namespace flexplane {

namespace {

class FlowSource final : public TrafficSource {
 public:
  // `own`: the group's flows as a source, in flow order; `groups`: by endpoint, (group, index in it).
  FlowSource(const FlowList& flows, const std::vector<EndpointId>& group, const std::vector<uint32_t>& own,
             const FlowTraffic::Groups& groups, EndpointStamping stamping, std::vector<Timeslot>& first_sent)
      : flows_(flows), stamping_(stamping), first_sent_(first_sent), nics_(group.size()), active_((group.size() + 63) / 64, 0),
        paused_(active_.size(), 0), groups_(groups), group_(groups.group_of[group.front()]) {
    for (uint32_t id : own) {  // flows are sorted by start: keep that order
      const FlowSpec& f = flows[id];
      arrivals_.push_back({f.id, groups.local_of[f.src], !is_local(f.dst)});
    }
    // next_remote_start_[i]: start of the first flow leaving the group at or after arrival i.
    next_remote_start_.assign(arrivals_.size() + 1, kNoRemoteTraffic);
    for (size_t i = arrivals_.size(); i-- > 0;)
      next_remote_start_[i] = arrivals_[i].remote ? flows_[arrivals_[i].flow].start : next_remote_start_[i + 1];
  }

  uint32_t emit(Timeslot now, Packet* out, uint32_t* local) override {
    while (next_arrival_ < arrivals_.size() && flows_[arrivals_[next_arrival_].flow].start <= now) {
      const Arrival a = arrivals_[next_arrival_++];
      Nic& nic = nics_[a.local];
      if (nic.head == nic.queue.size() && nic.head) {  // reuse storage once drained
        nic.queue.clear();
        nic.head = 0;
      }
      if (nic.queue.size() == nic.head) active_[a.local >> 6] |= 1ull << (a.local & 63);
      nic.queue.push_back(a.flow);
      remote_queued_ += a.remote;
    }
    // Busy NICs in endpoint order (the engine's source contract).
    uint32_t n = 0;
    for (size_t w = 0; w < active_.size(); ++w)
      for (uint64_t bits = active_[w] & ~paused_[w]; bits; bits &= bits - 1) {
      const uint32_t l = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
      Nic& nic = nics_[l];
      const FlowSpec& f = flows_[nic.queue[nic.head]];
      Packet& p = out[n];
      p = Packet{};
      p.flow = f.id;
      p.seq = nic.seq;
      p.src = f.src;
      p.dst = f.dst;
      p.size_bytes = stamping_.packet_bytes;
      p.flags = stamping_.ect ? kFlagEct : 0;
      p.priority = stamping_.priority == PriorityStamp::kFlowSize        ? f.size_pkts
                   : stamping_.priority == PriorityStamp::kRemainingSize ? f.size_pkts - nic.seq
                                                                         : 0;
      p.custom[0] = stamping_.slack_ns;
      local[n++] = l;
      if (nic.seq == 0) first_sent_[f.id] = now;
      if (++nic.seq == f.size_pkts) {
        nic.seq = 0;
        remote_queued_ -= !is_local(f.dst);
        if (++nic.head == nic.queue.size()) active_[w] &= ~(1ull << (l & 63));  // NIC idle
      }
    }
    return n;
  }

  // A queued flow to outside the group may send next timeslot (it may be
  // behind others on its NIC, but this stays cheap and safe); otherwise
  // nothing leaves the group before the next such flow starts.
  Timeslot remote_quiet_until(Timeslot now) override {
    if (remote_queued_) return now + 1;
    return std::max(now + 1, next_remote_start_[next_arrival_]);
  }

  // With every NIC idle, nothing happens before the next flow starts.
  Timeslot next_emit(Timeslot now) override {
    for (uint64_t w : active_)
      if (w) return now + 1;
    if (next_arrival_ == arrivals_.size()) return kNoRemoteTraffic;
    return std::max(now + 1, flows_[arrivals_[next_arrival_].flow].start);
  }

  // PFC from the ToR: a paused endpoint's NIC holds its flows (woken by the
  // frames, the engine asks emit() again; next_emit stays now + 1 while any
  // NIC holds something).
  void pause(uint32_t local, uint8_t paused, Timeslot) override {
    if (paused)
      paused_[local >> 6] |= 1ull << (local & 63);
    else
      paused_[local >> 6] &= ~(1ull << (local & 63));
  }

  // Open loop: busy until every flow has arrived and left its NIC in full
  // (a dropped packet is never resent: its flow is done here too).
  bool busy_after(Timeslot, int64_t*) override {
    if (next_arrival_ < arrivals_.size()) return true;
    for (uint64_t w : active_)
      if (w) return true;
    return false;
  }

 private:
  struct Arrival {
    uint32_t flow;
    uint32_t local;
    bool remote;  // destination outside the group
  };
  bool is_local(EndpointId e) const { return groups_.group_of[e] == group_; }
  struct Nic {
    std::vector<uint32_t> queue;  // flow ids, FIFO from head
    size_t head = 0;
    uint32_t seq = 0;             // next packet of the head flow
  };
  const FlowList& flows_;
  EndpointStamping stamping_;
  std::vector<Timeslot>& first_sent_;
  std::vector<Arrival> arrivals_;
  size_t next_arrival_ = 0;
  std::vector<Nic> nics_;
  std::vector<uint64_t> active_;  // bit l: NIC l has something to send
  std::vector<uint64_t> paused_;  // bit l: NIC l is paused by its ToR (PFC)
  const FlowTraffic::Groups& groups_;
  uint32_t group_;
  std::vector<Timeslot> next_remote_start_;
  uint32_t remote_queued_ = 0;    // flows to outside the group queued on NICs, not fully sent
};

class FlowSink final : public TrafficSink {
 public:
  FlowSink(const FlowList& flows, std::vector<FlowState>& states, const std::vector<EndpointId>& group,
           const FlowTraffic::Groups& groups, EventLog* log, uint64_t* unexpected)
      : flows_(flows), states_(states), group_of_(groups.group_of), group_(groups.group_of[group.front()]),
        log_(log), unexpected_(unexpected) {}

  void deliver(const Packet* pkts, uint32_t n, Timeslot now) override {
    for (uint32_t i = 0; i < n; ++i) {
      const Packet& p = pkts[i];
      if (__builtin_expect(p.flow >= states_.size() || p.dst >= group_of_.size() || group_of_[p.dst] != group_ ||
                               flows_[p.flow].dst != p.dst || states_[p.flow].delivered >= flows_[p.flow].size_pkts,
                           0)) {
        ++*unexpected_;
        continue;
      }
      FlowState& s = states_[p.flow];
      if (p.ce()) ++s.marked;
      if (++s.delivered == flows_[p.flow].size_pkts) s.finish = now;
      if (log_ && log_->log_deliveries()) log_->on_deliver(p, now);
    }
  }

 private:
  const FlowList& flows_;
  std::vector<FlowState>& states_;
  const std::vector<uint32_t>& group_of_;  // by endpoint
  uint32_t group_;                          // this sink's
  EventLog* log_;
  uint64_t* unexpected_;
};

}  // namespace

FlowTraffic::FlowTraffic(const FlowList& flows, uint32_t num_endpoints, EndpointStamping stamping)
    : flows_(flows),
      num_endpoints_(num_endpoints),
      stamping_(stamping),
      states_(flows.size()),
      first_sent_(flows.size(), kNotSent),
      release_(flows.size()) {
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    if (f.id != i) throw ConfigError("flows: ids must be dense and in order (flow at index " + std::to_string(i) +
                                     " has id " + std::to_string(f.id) + ")");
    if (f.src >= num_endpoints || f.dst >= num_endpoints || f.src == f.dst || f.size_pkts == 0)
      throw ConfigError("flows: flow " + std::to_string(i) + " has a bad source, destination or size");
    if (i && flows[i - 1].start > f.start) throw ConfigError("flows: flows must be sorted by start time");
    release_[i] = f.start;
  }
  groups_.group_of.assign(num_endpoints, Groups::kNone);
  groups_.local_of.assign(num_endpoints, 0);
  src_begin_.assign(size_t{num_endpoints} + 1, 0);  // flows by source endpoint, in flow order
  for (const FlowSpec& f : flows) ++src_begin_[size_t{f.src} + 1];
  for (uint32_t e = 0; e < num_endpoints; ++e) src_begin_[e + 1] += src_begin_[e];
  src_flows_.resize(flows.size());
  std::vector<uint32_t> fill(src_begin_.begin(), src_begin_.end() - 1);
  for (const FlowSpec& f : flows) src_flows_[fill[f.src]++] = f.id;
}

void FlowTraffic::add_group(const std::vector<EndpointId>& group) {
  if (group.empty() || groups_.group_of.at(group.front()) != Groups::kNone) return;
  for (uint32_t i = 0; i < group.size(); ++i) {
    groups_.group_of.at(group[i]) = num_groups_;
    groups_.local_of[group[i]] = i;
  }
  ++num_groups_;
}

FlowTraffic::~FlowTraffic() = default;

void FlowTraffic::enable_transport(const Topology& topology, const TransportConfig& config, double timeslot_ns) {
  if (topology.num_endpoints != num_endpoints_) throw ConfigError("transport: topology and flow list disagree");
  const bool deps = deps_ && !deps_->empty();
  if (deps && !config.enabled)
    throw ConfigError("transport.kind: a collective's sends start when others complete, which only closed-loop "
                      "flows drive: give a transport (e.g. transport: {kind: dctcp})");
  closed_loop_ = config.enabled ? std::make_unique<ClosedLoopShared>(flows_, topology, config, timeslot_ns) : nullptr;
  if (deps) closed_loop_->set_dependencies(*deps_, release_);
}

const std::vector<SenderOutcome>& FlowTraffic::sender_outcomes() const {
  static const std::vector<SenderOutcome> none;
  return closed_loop_ ? closed_loop_->outcomes : none;
}

void FlowTraffic::set_group_router(const std::vector<EndpointId>& group, const Router& tor) {
  if (closed_loop_ && !group.empty()) closed_loop_->tor.at(closed_loop_->group_of.at(group.front())) = &tor;
}

void FlowTraffic::set_group_clock(const std::vector<EndpointId>& group, const std::atomic<Timeslot>* finished) {
  if (closed_loop_ && !group.empty()) closed_loop_->set_group_clock(closed_loop_->group_of.at(group.front()), finished);
}

namespace {
// One per-group statistic summed over the groups (zeros when open loop).
template <class Group>
auto sum_groups(const ClosedLoopShared* cl, std::unique_ptr<Group[]> ClosedLoopShared::*per_group) {
  decltype(Group::s) sum;
  if (!cl) return sum;
  for (uint32_t g = 0; g < cl->num_groups; ++g) sum.merge((cl->*per_group)[g].s);
  return sum;
}
}  // namespace

AckQueueStats FlowTraffic::ack_queue_stats() const {
  return sum_groups(closed_loop_.get(), &ClosedLoopShared::ack_stats);
}

NicWaitStats FlowTraffic::nic_wait_stats() const {
  return sum_groups(closed_loop_.get(), &ClosedLoopShared::nic_stats);
}

std::unique_ptr<TrafficSource> FlowTraffic::make_source(const std::vector<EndpointId>& group) {
  if (closed_loop_) return make_closed_loop_source(*closed_loop_, group, stamping_, first_sent_);
  add_group(group);
  std::vector<uint32_t> own;  // the group's flows, in flow order
  for (EndpointId e : group) own.insert(own.end(), src_flows_.begin() + src_begin_[e], src_flows_.begin() + src_begin_[e + 1]);
  std::sort(own.begin(), own.end());
  return std::make_unique<FlowSource>(flows_, group, own, groups_, stamping_, first_sent_);
}

std::unique_ptr<TrafficSink> FlowTraffic::make_sink(const std::vector<EndpointId>& group, EventLog* log) {
  unexpected_.push_back(std::make_unique<uint64_t>(0));
  if (closed_loop_) return make_closed_loop_sink(*closed_loop_, states_, group, log, unexpected_.back().get());
  add_group(group);
  return std::make_unique<FlowSink>(flows_, states_, group, groups_, log, unexpected_.back().get());
}

FlowTraffic::LiveFlowState FlowTraffic::live_flow_state() const {
  LiveFlowState live;
  if (!closed_loop_) return live;
  for (uint32_t g = 0; g < closed_loop_->num_groups; ++g) {
    live.senders += closed_loop_->nic_stats[g].senders;
    live.receivers += closed_loop_->ack_stats[g].receivers;
  }
  return live;
}

uint64_t FlowTraffic::unexpected_arrivals() const {
  uint64_t sum = 0;
  for (const auto& s : unexpected_) sum += *s;
  return sum;
}

}  // namespace flexplane
