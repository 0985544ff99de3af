// single_rack: N endpoints on one ToR (ports 0..N-1 face endpoints 0..N-1). Flexplane's rack.
#include "emulator/topology/topology.h"

namespace flexplane {

namespace {
void check(bool ok, const std::string& msg) {
  if (!ok) throw ConfigError(msg);
}
}  // namespace

Topology make_single_rack(uint32_t endpoints, uint32_t latency) {
  check(endpoints >= 2 && endpoints <= 4096, "topology: endpoints must be in [2, 4096], got " + std::to_string(endpoints));
  check(latency >= 1 && latency <= 1024, "topology: link latency must be in [1, 1024] timeslots");
  Topology t;
  t.kind = "single_rack";
  t.num_endpoints = endpoints;
  t.endpoint_latency_timeslots = latency;
  RouterNodeSpec tor{"tor0", "tor", static_cast<uint16_t>(endpoints), RoutingTable(endpoints, 0)};
  for (uint32_t e = 0; e < endpoints; ++e) {
    tor.routes.set(static_cast<EndpointId>(e), {static_cast<PortId>(e)});
    t.endpoint_port.push_back(PortRef{0, static_cast<PortId>(e)});
  }
  t.routers.push_back(std::move(tor));
  t.index_links();
  return t;
}

struct SingleRackParams {
  uint32_t endpoints = 32;              // endpoints on the ToR
  uint32_t link_latency_timeslots = 1;  // every link's latency
};

class SingleRack final : public TopologyKindOf<SingleRackParams> {
 public:
  Topology build() const override { return make_single_rack(params().endpoints, params().link_latency_timeslots); }
};

FLEXPLANE_REGISTER_TOPOLOGY(SingleRack, "single_rack", "N endpoints on one ToR",
    param(&SingleRackParams::endpoints, "endpoints", "endpoints on the ToR", {2, 4096}),
    param(&SingleRackParams::link_latency_timeslots, "link_latency_timeslots", "latency of every link, timeslots",
          {1, 1024}));

}  // namespace flexplane
