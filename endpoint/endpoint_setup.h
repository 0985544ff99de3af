// What every endpoint program derives from the emulator's config file: the
// run it plays (a variant), the endpoint contract of its schemes (priority
// stamping, custom-data sizes: the same function the emulator uses, so both
// sides of the handshake agree), and the emulator's and its own addresses.
#pragma once

#include <stdexcept>
#include <string>

#include "emulator/config/config.h"
#include "emulator/config/endpoint_contract.h"
#include "endpoint/protocol_session.h"
#include "endpoint/udp_socket.h"

namespace flexplane::endpoint {

struct EndpointSetup {
  RunConfig run;
  EndpointContract contract;
  sockaddr_in emulator{};  // live.emulator_ip:live.udp_port, or the override
  sockaddr_in bind{};      // live.endpoint_ips[id], or the override
};

// Loads `config`, picks `variant` (default: the first run) and checks `id`.
// emulator_override / bind_override: "" = from the config's live: section.
// Throws std::invalid_argument for a user error (bad variant, id, address),
// ConfigError for a bad config.
inline EndpointSetup endpoint_setup(const std::string& config, const std::string& variant, uint32_t id,
                                    const std::string& emulator_override, const std::string& bind_override) {
  Experiment ex = load_experiment(config);
  if (ex.runs.empty()) throw std::invalid_argument(config + ": no run");
  const RunConfig* pick = &ex.runs.front();
  if (!variant.empty()) {
    pick = nullptr;
    for (const auto& r : ex.runs)
      if (r.variant == variant) pick = &r;
    if (!pick) throw std::invalid_argument(config + ": no variant '" + variant + "'");
  }
  EndpointSetup s;
  s.run = *pick;
  const uint32_t n = s.run.topology.num_endpoints;
  if (id >= n) throw std::invalid_argument("--id " + std::to_string(id) + ": the topology has " + std::to_string(n) + " endpoints");
  s.contract = endpoint_contract(s.run);
  // The config's addresses arrive parsed and checked; overrides are parsed
  // here with the same parser.
  s.emulator = socket_addr(s.run.live.emulator_ip, s.run.live.udp_port);
  if (!emulator_override.empty() && !parse_addr(emulator_override, s.run.live.udp_port, &s.emulator))
    throw std::invalid_argument("--emulator '" + emulator_override +
                                "': expected IPv4[:PORT] (a.b.c.d, each 0..255 without leading zeros)");
  s.bind = socket_addr(s.run.live.endpoint_ips.at(id), 0);
  if (!bind_override.empty() && !parse_addr(bind_override, 0, &s.bind))
    throw std::invalid_argument("--bind '" + bind_override +
                                "': expected IPv4[:PORT] (a.b.c.d, each 0..255 without leading zeros)");
  return s;
}

// The session offers what the contract says: PRIO when the schemes want a
// stamped priority, and their custom-data sizes.
inline void apply_contract(const EndpointContract& c, SessionOptions* o) {
  o->features = c.priority != PriorityStamp::kNone ? FP_FEAT_PRIO : 0;
  o->req_custom_len = c.request_custom_bytes;
  o->verdict_custom_len = c.verdict_custom_bytes;
}

}  // namespace flexplane::endpoint
