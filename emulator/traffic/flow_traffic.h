// Traffic from a flow list (workload generator or trace): each source endpoint
// has one FIFO NIC queue that sends its flows, in arrival order, at line rate
// (one abstract packet per timeslot). Open loop: nothing reacts to drops or
// marks, and a dropped packet is never resent, so its flow never finishes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/endpoint_contract.h"
#include "api/flow.h"
#include "emulator/traffic/traffic.h"

namespace flexplane {

// Outcome of one flow, written only by the core of its destination endpoint.
struct FlowState {
  uint32_t delivered = 0;
  uint32_t marked = 0;
  Timeslot finish = 0;  // timeslot its last packet arrived (valid when delivered == size)
};

class FlowTraffic final : public Traffic {
 public:
  FlowTraffic(const FlowList& flows, uint32_t num_endpoints, EndpointStamping stamping);
  std::unique_ptr<TrafficSource> make_source(const std::vector<EndpointId>& group) override;
  std::unique_ptr<TrafficSink> make_sink(const std::vector<EndpointId>& group, EventLog* log) override;

  const FlowList& flows() const { return flows_; }
  const std::vector<FlowState>& states() const { return states_; }
  // Timeslot each flow's first packet left its source NIC (written by the
  // source's core only); kNotSent if it never did.
  static constexpr Timeslot kNotSent = ~Timeslot{0};
  const std::vector<Timeslot>& first_sent() const { return first_sent_; }
  bool finished(uint32_t flow) const { return states_[flow].delivered == flows_[flow].size_pkts; }
  // Packets that reached an endpoint where no flow expected them: an unknown
  // flow id, a destination outside the receiving group, or more packets than
  // the flow has. Never expected of a correct router; counted, not trusted.
  uint64_t unexpected_arrivals() const;

 private:
  const FlowList& flows_;
  uint32_t num_endpoints_;
  EndpointStamping stamping_;
  std::vector<FlowState> states_;
  std::vector<Timeslot> first_sent_;
  std::vector<std::unique_ptr<uint64_t>> unexpected_;  // one counter per sink (each on its own core)
};

}  // namespace flexplane
