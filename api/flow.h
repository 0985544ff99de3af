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

  // Spelled out rather than defaulted: validation/ns3_star.cc compiles this
  // header as C++17 (ns-3 3.37's headers do not build as C++20).
  bool operator==(const FlowSpec& o) const {
    return id == o.id && src == o.src && dst == o.dst && size_pkts == o.size_pkts && start == o.start;
  }
};

using FlowList = std::vector<FlowSpec>;

}  // namespace flexplane
