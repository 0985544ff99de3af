// Closed-loop traffic's shared state, set up before the run: the settings'
// names, the groups and their ACK channels, and the dependencies between
// flows (closed_loop_internal.h). The source and sink are closed_loop.cc.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "api/params.h"
#include "emulator/traffic/closed_loop_internal.h"
#include "emulator/traffic/closed_loop_nic.h"
#include "emulator/workload/collective.h"

namespace flexplane {

AckLatency parse_ack_latency(const std::string& s, const std::string& where) {
  if (s == "data_path") return AckLatency::kDataPath;
  if (s == "propagation") return AckLatency::kPropagation;
  throw ConfigError(where + ": unknown ack_latency '" + s + "' (known: data_path, propagation)");
}

const char* ack_latency_name(AckLatency a) { return a == AckLatency::kDataPath ? "data_path" : "propagation"; }

AckQueueing parse_ack_queueing(const std::string& s, const std::string& where) {
  if (s == "none") return AckQueueing::kNone;
  if (s == "delay") return AckQueueing::kDelay;
  if (s == "delay_and_loss") return AckQueueing::kDelayAndLoss;
  throw ConfigError(where + ": unknown ack_queueing '" + s + "' (known: none, delay, delay_and_loss)");
}

NicMode parse_nic_mode(const std::string& s, const std::string& where) {
  if (s == "fifo") return NicMode::kFifo;
  if (s == "round_robin") return NicMode::kRoundRobin;
  throw ConfigError(where + ": unknown nic '" + s + "' (known: fifo, round_robin)");
}

const char* nic_mode_name(NicMode m) { return m == NicMode::kFifo ? "fifo" : "round_robin"; }

void WaitHistogram::merge(const WaitHistogram& o) {
  if (o.counts.size() > counts.size()) counts.resize(o.counts.size(), 0);
  for (size_t w = 0; w < o.counts.size(); ++w) counts[w] += o.counts[w];
}

uint64_t WaitHistogram::total() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

uint64_t WaitHistogram::percentile(double p) const {
  const uint64_t n = total();
  if (n == 0) return 0;
  // Nearest rank: the first bin holding the ceil(p * n)-th smallest wait.
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p * static_cast<double>(n))));
  uint64_t seen = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    seen += counts[b];
    if (seen >= rank) return lower_bound(b);
  }
  return lower_bound(counts.size() - 1);
}

const char* ack_queueing_name(AckQueueing a) {
  return a == AckQueueing::kNone ? "none" : a == AckQueueing::kDelay ? "delay" : "delay_and_loss";
}

ClosedLoopShared::ClosedLoopShared(const FlowList& f, const Topology& topology, const TransportConfig& config,
                                   double timeslot_ns)
    : flows(f), settings(resolve_transport(config.kind, config.params, timeslot_ns)) {
  if (config.params.ack_every_pkts != 1)
    throw ConfigError("transport.ack_every_pkts: delayed ACKs are modelled (transports/receiver.h) but not yet "
                      "driven by the engine; use 1");
  // Groups: the endpoints of each router that has endpoints, in router order (as the engine groups them).
  std::vector<int32_t> group_of_router(topology.routers.size(), -1);
  group_of.resize(topology.num_endpoints);
  for (uint32_t e = 0; e < topology.num_endpoints; ++e) {  // not EndpointId: 65,536 endpoints at k = 64
    int32_t& g = group_of_router[topology.endpoint_port[e].router];
    if (g < 0) g = 0;  // numbered below, in router order
  }
  num_groups = 0;
  for (auto& g : group_of_router)
    if (g >= 0) g = static_cast<int32_t>(num_groups++);
  for (uint32_t e = 0; e < topology.num_endpoints; ++e)
    group_of[e] = static_cast<uint32_t>(group_of_router[topology.endpoint_port[e].router]);
  local_index.resize(topology.num_endpoints);
  {
    std::vector<uint32_t> count(num_groups, 0);
    for (uint32_t e = 0; e < topology.num_endpoints; ++e) local_index[e] = count[group_of[e]]++;
  }

  progress.reset(new GroupProgress[num_groups]);
  core_finished.assign(num_groups, nullptr);
  ack_stats.reset(new GroupAckStats[num_groups]);
  nic_stats.reset(new GroupNicStats[num_groups]);
  ack_queueing = config.ack_queueing;
  tor.assign(num_groups, nullptr);
  arrival_index.assign(flows.size(), 0);
  group_flow_begin.assign(num_groups + 1, 0);
  for (const FlowSpec& fl : flows) ++group_flow_begin[group_of[fl.src] + 1];
  for (uint32_t g = 0; g < num_groups; ++g) group_flow_begin[g + 1] += group_flow_begin[g];
  group_flows.resize(flows.size());
  {
    std::vector<uint32_t> fill(group_flow_begin.begin(), group_flow_begin.end() - 1);
    for (const FlowSpec& fl : flows) {  // flows are in start order: the source's arrival order
      const uint32_t g = group_of[fl.src];
      arrival_index[fl.id] = fill[g] - group_flow_begin[g];
      group_flows[fill[g]++] = fl.id;
    }
  }
  local.resize(num_groups);
  mail_words = (num_groups + 63) / 64;
  mail.reset(new std::atomic<uint64_t>[size_t{num_groups} * mail_words]);
  for (size_t i = 0; i < size_t{num_groups} * mail_words; ++i) mail[i].store(0, std::memory_order_relaxed);
  ack_delay.resize(flows.size());
  ack_port.assign(flows.size(), kNoRoute);
  ack_wait_nic = config.ack_queueing_nic;
  nic_mode = config.nic;
  nics.assign(num_groups, nullptr);
  base_rtt.resize(flows.size());
  receivers.resize(flows.size());
  complete_ece.assign(flows.size(), 0);
  outcomes.resize(flows.size());
  struct Pair {
    uint32_t writer, reader;
    Timeslot d;
  };
  std::vector<Pair> pairs;  // (the receivers' group, the senders' group, ACK latency), one per flow between groups
  for (const FlowSpec& fl : flows) {
    Topology::Path fwd, rev;
    const bool ok_fwd = topology.find_path(fl.src, fl.dst, fl.id, &fwd);
    const bool ok_rev = topology.find_path(fl.dst, fl.src, fl.id, &rev);
    Timeslot d = 1;
    if (ok_rev)
      d = config.ack_latency == AckLatency::kDataPath ? rev.latency : rev.latency - rev.links + 1;
    else if (ok_fwd)
      d = fwd.latency;
    d = std::max<Timeslot>(d, 1);
    ack_delay[fl.id] = d;
    base_rtt[fl.id] = ok_fwd ? fwd.latency + d : 0;
    if (ok_rev) {  // the port the ACK leaves the destination's ToR by (as the reverse path takes it)
      Packet a{};
      a.flow = fl.id;
      a.src = fl.dst;
      a.dst = fl.src;
      ack_port[fl.id] = topology.routers[topology.endpoint_port[fl.dst].router].routes.route(a);
    }
    const uint32_t g = group_of[fl.src], h = group_of[fl.dst];
    if (g != h) pairs.push_back({h, g, d});
  }
  // One channel per pair, with the smallest latency of its flows; listed by
  // writer (pairs sorted so) and by reader (counted into place).
  std::sort(pairs.begin(), pairs.end(),
            [](const Pair& a, const Pair& b) { return std::tie(a.writer, a.reader) < std::tie(b.writer, b.reader); });
  out_begin.assign(num_groups + 1, 0);
  in_begin.assign(num_groups + 1, 0);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    if (i == 0 || p.writer != pairs[i - 1].writer || p.reader != pairs[i - 1].reader) {
      channels.push_back(std::make_unique<AckChannel>());
      out_refs.push_back({p.reader, channels.back().get()});
      ++out_begin[p.writer + 1];
      ++in_begin[p.reader + 1];
    }
    channels.back()->d_min = std::min(channels.back()->d_min, p.d);
  }
  for (uint32_t g = 0; g < num_groups; ++g) {
    out_begin[g + 1] += out_begin[g];
    in_begin[g + 1] += in_begin[g];
  }
  in_refs.resize(out_refs.size());
  std::vector<uint32_t> fill(in_begin.begin(), in_begin.end() - 1);
  for (uint32_t w = 0; w < num_groups; ++w)  // writers in order: each reader's list comes out sorted by writer
    for (uint32_t i = out_begin[w]; i < out_begin[w + 1]; ++i)
      in_refs[fill[out_refs[i].group]++] = {w, out_refs[i].channel};
}

void ClosedLoopShared::set_group_clock(uint32_t g, const std::atomic<Timeslot>* finished) {
  core_finished.at(g) = finished;
  // Each channel is marked when the second of its ends is told (both before the run).
  for (uint32_t i = out_begin[g]; i < out_begin[g + 1]; ++i)
    out_refs[i].channel->same_core = finished && core_finished[out_refs[i].group] == finished;
  for (uint32_t i = in_begin[g]; i < in_begin[g + 1]; ++i)
    in_refs[i].channel->same_core = finished && core_finished[in_refs[i].group] == finished;
}

void ClosedLoopShared::set_dependencies(const FlowDeps& d, std::vector<Timeslot>& release_out) {
  deps = &d;
  release = &release_out;
  received.assign(num_groups, {});
  // Waiters by the flow they wait for, each list in flow order (CSR).
  const size_t n = flows.size();
  rx_begin.assign(n + 1, 0);
  tx_begin.assign(n + 1, 0);
  auto for_each_edge = [&](auto&& fn) {
    for (uint32_t f = 0; f < n; ++f)
      for (uint32_t j = d.after_begin[f]; j < d.after_begin[f + 1]; ++j) {
        const uint32_t w = d.after[j];  // f waits for w
        if (flows[w].dst == flows[f].src)
          fn(true, w, f);
        else if (flows[w].src == flows[f].src)
          fn(false, w, f);
        else
          throw ConfigError("workload: flow " + std::to_string(f) + " waits for flow " + std::to_string(w) +
                            ", neither a send nor a receive of its source endpoint");
      }
  };
  for_each_edge([&](bool rx, uint32_t w, uint32_t) { ++(rx ? rx_begin : tx_begin)[w + 1]; });
  for (size_t f = 0; f < n; ++f) {
    rx_begin[f + 1] += rx_begin[f];
    tx_begin[f + 1] += tx_begin[f];
  }
  rx_waiters.resize(rx_begin[n]);
  tx_waiters.resize(tx_begin[n]);
  std::vector<uint32_t> rx_fill(rx_begin.begin(), rx_begin.end() - 1), tx_fill(tx_begin.begin(), tx_begin.end() - 1);
  for_each_edge([&](bool rx, uint32_t w, uint32_t f) {
    if (rx)
      rx_waiters[rx_fill[w]++] = f;
    else
      tx_waiters[tx_fill[w]++] = f;
  });
}

}  // namespace flexplane
