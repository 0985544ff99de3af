// Destination-based routing with ECMP, filled in by the topology loader.
//
// For each destination endpoint the table holds a group of candidate output
// ports; a flow hash (salted per router) picks one, so all packets of a flow
// take the same path. route() is a couple of loads: no virtual call.
//
// Two bytes per destination (docs/design.md, "Queue memory on demand"): a
// single-path destination holds its port, an ECMP destination kGroupBase +
// the index of its group, an unknown one kNoRoute. Each distinct list of
// ports is stored once (a fat tree's edge router has one: its uplinks), so
// a k = 64 tree's 5,120 tables of 65,536 destinations take 671 MB, not the
// 3.4 GB of a port and a group reference (10 bytes) per destination.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include "api/packet.h"
#include "api/rng.h"

namespace flexplane {

class RoutingTable {
 public:
  RoutingTable() = default;
  RoutingTable(uint32_t num_endpoints, uint32_t salt) : salt_(salt), entries_(num_endpoints, kNoRoute) {}

  // Replace the candidate ports for `dst` (none: no route).
  void set(EndpointId dst, const std::vector<PortId>& ports) {
    if (dst >= entries_.size()) entries_.resize(size_t{dst} + 1, kNoRoute);
    if (ports.empty()) {
      entries_[dst] = kNoRoute;
    } else if (ports.size() == 1 && ports[0] < kGroupBase) {
      entries_[dst] = ports[0];
    } else {
      entries_[dst] = static_cast<uint16_t>(kGroupBase + group_of(ports));
    }
  }

  // Output port for `p`, or kNoRoute if its destination is unknown.
  PortId route(const Packet& p) const {
    if (p.dst >= entries_.size()) return kNoRoute;
    const uint16_t e = entries_[p.dst];  // one load for single-path destinations
    return is_group(e) ? route_group(e, p) : e;
  }

  // For a loop over a batch (PatternRouter): the table read into locals
  // once. lookup(dst) is the raw entry: a port, kNoRoute, or a group (then
  // route_group(entry, p)); both markers are >= any router's port count.
  struct Direct {
    const uint16_t* entry;
    uint32_t size;
    uint16_t lookup(EndpointId dst) const { return dst < size ? entry[dst] : kNoRoute; }
  };
  Direct direct() const { return Direct{entries_.data(), static_cast<uint32_t>(entries_.size())}; }
  static bool is_group(uint16_t e) { return static_cast<uint16_t>(e - kGroupBase) < kMaxGroups; }
  PortId route_group(uint16_t e, const Packet& p) const {
    const Group g = groups_[e - kGroupBase];
    return ports_[g.first + flow_hash(p.flow, salt_) % g.count];
  }

  uint32_t num_destinations() const { return static_cast<uint32_t>(entries_.size()); }
  // The ports `dst` may leave by (empty: no route), a view valid until the
  // next set(). (Not std::span: validation/ns3_fat_tree.h builds this header
  // as C++17, which ns-3's headers need.)
  struct Ports {
    const PortId* first = nullptr;
    const PortId* last = nullptr;
    const PortId* begin() const { return first; }
    const PortId* end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
    bool empty() const { return first == last; }
  };
  Ports candidates(EndpointId dst) const {
    if (dst >= entries_.size() || entries_[dst] == kNoRoute) return {};
    const uint16_t* e = &entries_[dst];
    if (!is_group(*e)) return {e, e + 1};
    return group_ports(*e);
  }
  // A group entry's ports and index (is_group(e) must hold), for load
  // balancers other than the flow hash (api/load_balancer.h).
  Ports group_ports(uint16_t e) const {
    const Group g = groups_[e - kGroupBase];
    return {ports_.data() + g.first, ports_.data() + g.first + g.count};
  }
  static uint32_t group_index(uint16_t e) { return static_cast<uint32_t>(e - kGroupBase); }
  uint32_t salt() const { return salt_; }
  uint32_t num_groups() const { return static_cast<uint32_t>(groups_.size()); }  // distinct ECMP lists

 private:
  static constexpr uint16_t kGroupBase = 0x8000;                   // ports below it are stored as they are
  static constexpr uint16_t kMaxGroups = kNoRoute - kGroupBase;  // 32,767
  static_assert(sizeof(PortId) == sizeof(uint16_t), "candidates() views a single-port entry as a PortId");

  struct Group {
    uint32_t first = 0;
    uint16_t count = 0;
  };

  // The index of the group holding exactly `ports`, added if new. The group
  // set last is checked first: consecutive destinations mostly share one.
  uint32_t group_of(const std::vector<PortId>& ports) {
    if (!groups_.empty()) {
      const Group& g = groups_[last_];
      if (g.count == ports.size() && std::equal(ports.begin(), ports.end(), ports_.begin() + g.first)) return last_;
    }
    const auto [it, added] = index_.emplace(ports, static_cast<uint32_t>(groups_.size()));
    if (added) {
      if (groups_.size() >= kMaxGroups) {
        index_.erase(it);
        throw std::length_error("routing table: more than 32,767 distinct ECMP port lists at one router");
      }
      groups_.push_back(Group{static_cast<uint32_t>(ports_.size()), static_cast<uint16_t>(ports.size())});
      ports_.insert(ports_.end(), ports.begin(), ports.end());
    }
    last_ = it->second;
    return last_;
  }

  uint32_t salt_ = 0;
  std::vector<uint16_t> entries_;  // by destination: a port, kGroupBase + group, or kNoRoute
  std::vector<Group> groups_;
  std::vector<PortId> ports_;
  uint32_t last_ = 0;                                // the group set last
  std::map<std::vector<PortId>, uint32_t> index_;  // building only: each distinct list's group
};

}  // namespace flexplane
