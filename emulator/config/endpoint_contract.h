// The endpoint contract (api/endpoint_contract.h) of a run: which rank
// endpoints stamp into Packet::priority and how many bytes of scheme data
// travel with each request and verdict. Virtual-time runs, the live emulator
// and the endpoint driver all derive it here, from the config and the scheme
// registry, so both sides of the wire protocol agree by construction (and the
// handshake catches it if not).
#pragma once

#include <cstdint>
#include <vector>

#include "api/endpoint_contract.h"
#include "emulator/config/config.h"
#include "emulator/config/router_factory.h"

namespace flexplane {

// `endpoint.priority` if set, else what the schemes ask for; custom sizes are
// the largest any router's scheme declares. Throws ConfigError if schemes ask
// for different stamping and the config does not choose.
EndpointContract endpoint_contract(const RunConfig& c, const std::vector<ResolvedRouter>& routers);
// The same, building the routers' descriptions from the config.
EndpointContract endpoint_contract(const RunConfig& c);
// How the run's endpoints stamp their packets under `contract`.
EndpointStamping endpoint_stamping(const RunConfig& c, const EndpointContract& contract);

}  // namespace flexplane
