#include "emulator/config/endpoint_contract.h"

#include <algorithm>

namespace flexplane {

EndpointContract endpoint_contract(const RunConfig& c, const std::vector<ResolvedRouter>& routers) {
  EndpointContract out;
  const std::string where = c.file + ": endpoint.priority";
  std::string wanted = "none";
  for (const auto& r : routers) {
    out.request_custom_bytes = std::max(out.request_custom_bytes, r.request_custom_bytes);
    out.verdict_custom_bytes = std::max(out.verdict_custom_bytes, r.verdict_custom_bytes);
    if (r.endpoint_priority == "none") continue;
    if (wanted != "none" && wanted != r.endpoint_priority && c.endpoint_priority == "auto")
      throw ConfigError(where + ": routers' schemes want different endpoint stamping ('" + wanted + "' and '" +
                        r.endpoint_priority + "'); set endpoint.priority explicitly");
    wanted = r.endpoint_priority;
  }
  out.priority = parse_priority_stamp(c.endpoint_priority != "auto" ? c.endpoint_priority : wanted, where);
  return out;
}

EndpointStamping endpoint_stamping(const RunConfig& c, const EndpointContract& contract) {
  EndpointStamping s;
  s.priority = contract.priority;
  s.ect = c.endpoint_ect;
  s.packet_bytes = static_cast<uint16_t>(c.network.abstract_packet_bytes);
  s.slack_ns = c.endpoint_slack_ns;
  return s;
}

EndpointContract endpoint_contract(const RunConfig& c) {
  std::vector<ResolvedRouter> routers(c.router_specs.size());
  for (size_t i = 0; i < c.router_specs.size(); ++i) build_router(c.router_specs[i], &routers[i]);
  return endpoint_contract(c, routers);
}

}  // namespace flexplane
