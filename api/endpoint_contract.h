// The contract between the routers' schemes and the endpoints: what an
// endpoint stamps into each packet (Packet::priority, ECT, custom data) and
// how many bytes of scheme data travel with each request and verdict of the
// wire protocol. The emulator's flow sources, the live emulator and the
// endpoint driver all use these types; emulator/config/endpoint_contract.h
// derives the contract of a run from its config and the scheme registry.
#pragma once

#include <cstdint>
#include <string>

#include "api/packet.h"
#include "api/params.h"

namespace flexplane {

// What the endpoint stamps into Packet::priority (see docs/config.md).
enum class PriorityStamp { kNone, kFlowSize, kRemainingSize };

inline PriorityStamp parse_priority_stamp(const std::string& s, const std::string& where) {
  if (s == "none") return PriorityStamp::kNone;
  if (s == "flow_size") return PriorityStamp::kFlowSize;
  if (s == "remaining_size") return PriorityStamp::kRemainingSize;
  throw ConfigError(where + ": unknown priority stamp '" + s + "' (known: none, flow_size, remaining_size)");
}

inline const char* priority_stamp_name(PriorityStamp s) {
  switch (s) {
    case PriorityStamp::kNone: return "none";
    case PriorityStamp::kFlowSize: return "flow_size";
    case PriorityStamp::kRemainingSize: return "remaining_size";
  }
  return "none";
}

// How an endpoint fills in each packet it sends.
struct EndpointStamping {
  PriorityStamp priority = PriorityStamp::kNone;
  bool ect = true;               // mark packets ECN-capable
  uint16_t packet_bytes = 1500;  // Packet::size_bytes
  uint32_t slack_ns = 0;         // Packet::custom[0] when > 0: the slack LSTF schedules by
};

// What the schemes ask of the endpoints, and the custom bytes each request
// and verdict carries (at most kPacketCustomBytes; both sides refuse more).
struct EndpointContract {
  PriorityStamp priority = PriorityStamp::kNone;
  uint8_t request_custom_bytes = 0;
  uint8_t verdict_custom_bytes = 0;
};

// Throws ConfigError unless `bytes` of custom data fit in a packet; `what`
// names the setting (a flag, a scheme).
inline void check_custom_bytes(unsigned bytes, const std::string& what) {
  if (bytes > kPacketCustomBytes)
    throw ConfigError(what + ": " + std::to_string(bytes) + " bytes of custom data, but an abstract packet carries " +
                      std::to_string(kPacketCustomBytes) + " (Packet::custom)");
}

}  // namespace flexplane
