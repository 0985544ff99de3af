// A flow: src sends size_pkts abstract packets to dst, starting no earlier
// than `start`. Workloads produce flow lists; traffic sources in the engine
// and the endpoint driver send them.
#pragma once

#include <cstdint>
#include <vector>

#include "api/packet.h"

namespace flexplane {

struct FlowSpec {
  uint32_t id = 0;          // dense: flows[i].id == i after generation
  EndpointId src = 0;
  EndpointId dst = 0;
  uint32_t size_pkts = 1;   // abstract packets (>= 1)
  Timeslot start = 0;       // arrival time at the source endpoint

  bool operator==(const FlowSpec&) const = default;
};

using FlowList = std::vector<FlowSpec>;

}  // namespace flexplane
