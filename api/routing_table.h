// Destination-based routing with ECMP, filled in by the topology loader.
//
// For each destination endpoint the table holds a group of candidate output
// ports; a flow hash (salted per router) picks one, so all packets of a flow
// take the same path. route() is a couple of loads: no virtual call.
#pragma once

#include <cstdint>
#include <vector>

#include "api/packet.h"
#include "api/rng.h"

namespace flexplane {

class RoutingTable {
 public:
  RoutingTable() = default;
  RoutingTable(uint32_t num_endpoints, uint32_t salt) : salt_(salt), groups_(num_endpoints) {}

  // Replace the candidate ports for `dst`.
  void set(EndpointId dst, const std::vector<PortId>& ports) {
    if (dst >= groups_.size()) groups_.resize(dst + 1);
    groups_[dst] = Group{static_cast<uint32_t>(ports_.size()), static_cast<uint16_t>(ports.size())};
    ports_.insert(ports_.end(), ports.begin(), ports.end());
  }

  // Output port for `p`, or kNoRoute if its destination is unknown.
  PortId route(const Packet& p) const {
    if (p.dst >= groups_.size()) return kNoRoute;
    const Group g = groups_[p.dst];
    if (g.count <= 1) return g.count ? ports_[g.first] : kNoRoute;
    return ports_[g.first + flow_hash(p.flow, salt_) % g.count];
  }

  uint32_t num_destinations() const { return static_cast<uint32_t>(groups_.size()); }
  std::vector<PortId> candidates(EndpointId dst) const {
    if (dst >= groups_.size()) return {};
    const Group g = groups_[dst];
    return std::vector<PortId>(ports_.begin() + g.first, ports_.begin() + g.first + g.count);
  }

 private:
  struct Group {
    uint32_t first = 0;
    uint16_t count = 0;
  };
  uint32_t salt_ = 0;
  std::vector<Group> groups_;
  std::vector<PortId> ports_;
};

}  // namespace flexplane
