// Traffic from a flow list (workload generator or trace): each source endpoint
// has one FIFO NIC queue that sends its flows, in arrival order, at line rate
// (one abstract packet per timeslot). Open loop by default: nothing reacts to
// drops or marks, and a dropped packet is never resent, so its flow never
// finishes. With enable_transport() each flow is a closed-loop transport
// instead (closed_loop.h): senders react to ACKs, marks and losses, and
// retransmit until every packet has arrived.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/endpoint_contract.h"
#include "api/flow.h"
#include "emulator/topology/topology.h"
#include "emulator/traffic/closed_loop.h"
#include "emulator/traffic/traffic.h"

namespace flexplane {

// Outcome of one flow, written only by the core of its destination endpoint.
struct FlowState {
  uint32_t delivered = 0;
  uint32_t marked = 0;
  Timeslot finish = 0;  // timeslot its last packet arrived (valid when delivered == size)
};

struct ClosedLoopShared;
struct FlowDeps;

class FlowTraffic final : public Traffic {
 public:
  FlowTraffic(const FlowList& flows, uint32_t num_endpoints, EndpointStamping stamping);
  ~FlowTraffic() override;
  // Flows that wait for others (a collective, emulator/workload/collective.h),
  // before enable_transport; `deps` must outlive the traffic. Only closed
  // loop drives them: enable_transport refuses them without a transport.
  void set_dependencies(const FlowDeps* deps) { deps_ = deps; }
  const FlowDeps* dependencies() const { return deps_; }
  // Drive every flow with a transport (before the engine is built). Throws
  // ConfigError for settings the engine cannot drive.
  void enable_transport(const Topology& topology, const TransportConfig& config, double timeslot_ns);
  bool closed_loop() const { return closed_loop_ != nullptr; }
  // Per flow, closed loop only (empty otherwise): what its sender did.
  const std::vector<SenderOutcome>& sender_outcomes() const;
  std::unique_ptr<TrafficSource> make_source(const std::vector<EndpointId>& group) override;
  std::unique_ptr<TrafficSink> make_sink(const std::vector<EndpointId>& group, EventLog* log) override;
  // Closed loop: the group's sink reads its ToR's port backlogs (transport.ack_queueing).
  void set_group_router(const std::vector<EndpointId>& group, const Router& tor) override;
  // Closed loop: the group's core's progress, which its peers read for a sleeping source's.
  void set_group_clock(const std::vector<EndpointId>& group, const std::atomic<Timeslot>* finished) override;
  // Closed loop with ack_queueing (zeros otherwise), summed over groups; read after the run.
  AckQueueStats ack_queue_stats() const;
  NicWaitStats nic_wait_stats() const;  // closed loop; zeros otherwise
  // Closed loop (zeros otherwise), summed over the groups, read after the
  // run: per-flow transport state allocated now. A sender lives from its
  // flow's start until every packet is acknowledged, a receiver from the
  // flow's first packet to its last; then only the flow's record is kept.
  struct LiveFlowState {
    uint64_t senders = 0;
    uint64_t receivers = 0;
  };
  LiveFlowState live_flow_state() const;

  // Open loop: endpoint groups as the engine hands them over (make_source /
  // make_sink), numbered in that order. Per endpoint, not per group x
  // endpoint: 4 bytes each, not 2,048 x 65,536 at k = 64.
  struct Groups {
    static constexpr uint32_t kNone = ~0u;
    std::vector<uint32_t> group_of;  // by endpoint: its group, or kNone
    std::vector<uint32_t> local_of;  // by endpoint: its index in its group
  };

  const FlowList& flows() const { return flows_; }
  const std::vector<FlowState>& states() const { return states_; }
  // Timeslot each flow's first packet left its source NIC (written by the
  // source's core only); kNotSent if it never did.
  static constexpr Timeslot kNotSent = ~Timeslot{0};
  const std::vector<Timeslot>& first_sent() const { return first_sent_; }
  // Timeslot each flow arrived at its source: its start, or for a flow with
  // dependencies the timeslot they released it (written by the source's
  // core; its start, a lower bound, if never released).
  const std::vector<Timeslot>& release() const { return release_; }
  bool finished(uint32_t flow) const { return states_[flow].delivered == flows_[flow].size_pkts; }
  // Packets that reached an endpoint where no flow expected them: an unknown
  // flow id, a destination outside the receiving group, or more packets than
  // the flow has. Never expected of a correct router; counted, not trusted.
  uint64_t unexpected_arrivals() const;
  // Runs across processes (flow_traffic_partition.cc).
  std::vector<MirroredState*> mirrored_state() override;
  void pack_results(const std::vector<bool>& local_endpoint, std::string& out) const override;
  void unpack_results(const std::string& in) override;

 private:
  const FlowList& flows_;
  uint32_t num_endpoints_;
  EndpointStamping stamping_;
  std::vector<FlowState> states_;
  std::vector<Timeslot> first_sent_;
  std::vector<Timeslot> release_;
  const FlowDeps* deps_ = nullptr;
  std::vector<std::unique_ptr<uint64_t>> unexpected_;  // one counter per sink (each on its own core)
  std::unique_ptr<ClosedLoopShared> closed_loop_;
  std::vector<std::unique_ptr<MirroredState>> mirrors_;  // closed loop across processes
  void add_group(const std::vector<EndpointId>& group);  // open loop; no-op if known
  Groups groups_;
  uint32_t num_groups_ = 0;
  std::vector<uint32_t> src_begin_;  // num_endpoints + 1, into src_flows_
  std::vector<uint32_t> src_flows_;  // flow ids by source endpoint, in flow order
};

}  // namespace flexplane
