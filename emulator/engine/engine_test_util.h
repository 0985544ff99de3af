// Helpers shared by engine-level tests: routers of one scheme for every
// router of a topology, and a reproducible random flow list.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/flow.h"
#include "api/rng.h"
#include "api/router.h"
#include "emulator/config/router_factory.h"
#include "emulator/topology/topology.h"

namespace flexplane::test {

// Every router of `t` runs `scheme`, with these queue-manager parameters.
inline std::vector<std::unique_ptr<Router>> routers_for(const Topology& t, const std::string& scheme,
                                                        std::vector<std::pair<std::string, std::string>> qm_params = {}) {
  std::vector<std::unique_ptr<Router>> out;
  for (size_t i = 0; i < t.routers.size(); ++i) {
    RouterSpec spec;
    spec.where = "test";
    spec.scheme = scheme;
    for (auto& [k, v] : qm_params) spec.queue_manager.params.set(k, v);
    out.push_back(build_router(spec));
  }
  return out;
}

// `count` flows between distinct random endpoints starting in [0, horizon),
// sorted by start with dense ids; a quarter of them up to `big_pkts` packets,
// the rest up to 12.
inline FlowList random_flows(uint32_t endpoints, uint32_t count, Timeslot horizon, uint64_t seed,
                             uint32_t big_pkts = 200) {
  Rng rng(seed);
  FlowList flows;
  for (uint32_t i = 0; i < count; ++i) {
    FlowSpec f;
    f.src = static_cast<EndpointId>(rng.below(endpoints));
    do f.dst = static_cast<EndpointId>(rng.below(endpoints));
    while (f.dst == f.src);
    f.size_pkts = 1 + rng.below(rng.below(4) == 0 ? big_pkts : 12);
    f.start = rng.below(static_cast<uint32_t>(horizon));
    flows.push_back(f);
  }
  std::sort(flows.begin(), flows.end(), [](const FlowSpec& a, const FlowSpec& b) { return a.start < b.start; });
  for (uint32_t i = 0; i < count; ++i) flows[i].id = i;
  return flows;
}

}  // namespace flexplane::test
