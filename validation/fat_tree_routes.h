// flexplane's k-ary fat tree as plain data, for programs that cannot link the
// engine: the ns-3 reference (validation/ns3_star.cc, C++17 because ns-3
// 3.37's headers are) and validation/fat_tree_paths.cc.
//
// Principles:
// - the same router numbering, names, ports and routing-table contents as
//   make_fat_tree (topologies/fat_tree.cc; its header comment has the
//   layout), and flexplane's own RoutingTable (api/routing_table.h) to look
//   them up, salted with the router id + 1 as there: a flow takes the same
//   uplinks in both simulators because the hash and the tables are
//   flexplane's code, not a re-implementation of it;
// - what this header restates of make_fat_tree (which ports go where) is
//   checked against flexplane's own per-port packet counts by
//   tests/test_validation.py (a run's counters.csv against fat_tree_paths).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/packet.h"
#include "api/routing_table.h"

namespace flexplane::validation {

class FatTreeRoutes {
 public:
  // What a router port leads to: an endpoint, or another router's port.
  struct Peer {
    bool endpoint = false;
    uint32_t id = 0;   // the endpoint, or the router
    PortId port = 0;   // the router's port (routers only)
  };

  explicit FatTreeRoutes(uint32_t k) : k_(k), h_(k / 2) {
    const uint32_t n = num_endpoints();
    std::vector<PortId> up;
    for (uint32_t u = 0; u < h_; ++u) up.push_back(static_cast<PortId>(h_ + u));
    peers_.assign(num_routers(), std::vector<Peer>(k_));
    for (uint32_t p = 0; p < k_; ++p)  // edge<p>_<i>: ports 0..h-1 its endpoints, h+j up to agg<p>_<j>
      for (uint32_t i = 0; i < h_; ++i) {
        const uint32_t id = p * h_ + i;
        add("edge" + std::to_string(p) + "_" + std::to_string(i), id);
        for (uint32_t e = 0; e < n; ++e)
          tables_[id].set(static_cast<EndpointId>(e), e / h_ == id ? std::vector<PortId>{static_cast<PortId>(e % h_)} : up);
        for (uint32_t e = 0; e < h_; ++e) peers_[id][e] = Peer{true, id * h_ + e, 0};
      }
    for (uint32_t p = 0; p < k_; ++p)  // agg<p>_<j>: ports 0..h-1 down to edge<p>_<i>, h+c up to core<j>_<c>
      for (uint32_t j = 0; j < h_; ++j) {
        const uint32_t id = first_agg() + p * h_ + j;
        add("agg" + std::to_string(p) + "_" + std::to_string(j), id);
        for (uint32_t e = 0; e < n; ++e)
          tables_[id].set(static_cast<EndpointId>(e),
                          pod_of(e) == p ? std::vector<PortId>{static_cast<PortId>(edge_of(e))} : up);
        for (uint32_t i = 0; i < h_; ++i) link(p * h_ + i, static_cast<PortId>(h_ + j), id, static_cast<PortId>(i));
      }
    for (uint32_t j = 0; j < h_; ++j)  // core<j>_<c>: port p down to agg<p>_<j>
      for (uint32_t c = 0; c < h_; ++c) {
        const uint32_t id = first_core() + j * h_ + c;
        add("core" + std::to_string(j) + "_" + std::to_string(c), id);
        for (uint32_t e = 0; e < n; ++e) tables_[id].set(static_cast<EndpointId>(e), {static_cast<PortId>(pod_of(e))});
        for (uint32_t p = 0; p < k_; ++p)
          link(first_agg() + p * h_ + j, static_cast<PortId>(h_ + c), id, static_cast<PortId>(p));
      }
  }

  uint32_t k() const { return k_; }
  uint32_t num_endpoints() const { return k_ * h_ * h_; }
  uint32_t num_routers() const { return k_ * h_ * 2 + h_ * h_; }
  const std::string& name(uint32_t router) const { return names_[router]; }
  // The router and port endpoint e hangs off (its edge router).
  std::pair<uint32_t, PortId> endpoint_port(uint32_t e) const { return {e / h_, static_cast<PortId>(e % h_)}; }
  const Peer& peer(uint32_t router, PortId port) const { return peers_[router][port]; }

  // The port `router` sends a packet of `flow` towards endpoint `dst` on.
  PortId route(uint32_t router, uint32_t flow, uint32_t dst) const {
    Packet p{};
    p.flow = flow;
    p.dst = static_cast<EndpointId>(dst);
    return tables_[router].route(p);
  }

  // The (router, output port) hops of `flow` from src to dst.
  std::vector<std::pair<uint32_t, PortId>> path(uint32_t src, uint32_t dst, uint32_t flow) const {
    std::vector<std::pair<uint32_t, PortId>> hops;
    uint32_t r = endpoint_port(src).first;
    while (hops.size() <= 2 * 3) {  // at most 5 routers
      const PortId port = route(r, flow, dst);
      hops.emplace_back(r, port);
      const Peer& next = peer(r, port);
      if (next.endpoint) break;
      r = next.id;
    }
    return hops;
  }

 private:
  uint32_t first_agg() const { return k_ * h_; }
  uint32_t first_core() const { return 2 * k_ * h_; }
  uint32_t pod_of(uint32_t e) const { return e / (h_ * h_); }
  uint32_t edge_of(uint32_t e) const { return (e / h_) % h_; }  // within its pod
  void add(std::string name, uint32_t id) {
    names_.push_back(std::move(name));
    tables_.emplace_back(num_endpoints(), id + 1);  // make_fat_tree's salt
  }
  void link(uint32_t a, PortId pa, uint32_t b, PortId pb) {
    peers_[a][pa] = Peer{false, b, pb};
    peers_[b][pb] = Peer{false, a, pa};
  }

  uint32_t k_, h_;
  std::vector<std::string> names_;
  std::vector<RoutingTable> tables_;
  std::vector<std::vector<Peer>> peers_;
};

}  // namespace flexplane::validation
