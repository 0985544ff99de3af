// Destination-based routing with ECMP, filled in by the topology loader.
//
// For each destination endpoint the table holds a group of candidate output
// ports; a flow hash (salted per router) picks one, so all packets of a flow
// take the same path. route() is a couple of loads: no virtual call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "api/packet.h"
#include "api/rng.h"

namespace flexplane {

class RoutingTable {
 public:
  RoutingTable() = default;
  RoutingTable(uint32_t num_endpoints, uint32_t salt)
      : salt_(salt), direct_(num_endpoints, kNoRoute), groups_(num_endpoints) {}

  // Replace the candidate ports for `dst`.
  void set(EndpointId dst, const std::vector<PortId>& ports) {
    if (dst >= groups_.size()) {
      groups_.resize(dst + 1);
      direct_.resize(dst + 1, kNoRoute);
    }
    // Destinations set one after another mostly share a group (a fat tree's
    // edge router sends every other pod's endpoints up the same k/2 ports):
    // such a group is stored once, so a k = 32 tree's tables take megabytes,
    // not 600 MB (docs/design.md, "Queue memory on demand (issue 24)").
    const bool same = last_.count == ports.size() && last_.count > 0 &&
                      std::equal(ports.begin(), ports.end(), ports_.begin() + last_.first);
    if (!same) {
      last_ = Group{static_cast<uint32_t>(ports_.size()), static_cast<uint16_t>(ports.size())};
      ports_.insert(ports_.end(), ports.begin(), ports.end());
    }
    groups_[dst] = last_;
    direct_[dst] = ports.size() == 1 ? ports[0] : kEcmp;
  }

  // Output port for `p`, or kNoRoute if its destination is unknown.
  PortId route(const Packet& p) const {
    if (p.dst >= direct_.size()) return kNoRoute;
    const PortId direct = direct_[p.dst];  // one load for single-path destinations
    if (direct != kEcmp) return direct;
    return route_ecmp(p);
  }

  // For a loop over a batch (PatternRouter): the direct table, read into
  // locals once. lookup(dst) is the port, kNoRoute, or kEcmp (then
  // route_ecmp(p)); both markers are >= any router's port count.
  struct Direct {
    const PortId* port;
    uint32_t size;
    PortId lookup(EndpointId dst) const { return dst < size ? port[dst] : kNoRoute; }
  };
  Direct direct() const { return Direct{direct_.data(), static_cast<uint32_t>(direct_.size())}; }
  PortId route_ecmp(const Packet& p) const {
    const Group g = groups_[p.dst];
    return ports_[g.first + flow_hash(p.flow, salt_) % g.count];
  }
  static constexpr PortId kEcmp = 0xFFFE;  // marker in direct_: hash over the group

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
  std::vector<PortId> direct_;  // the port, kEcmp, or kNoRoute
  std::vector<Group> groups_;
  std::vector<PortId> ports_;
  Group last_;  // the group set last (its ports end ports_)
};

}  // namespace flexplane
