// The abstract packet: what the emulator moves instead of real bytes.
//
// Every abstract packet stands for the same amount of data (one MTU by default;
// `network.abstract_packet_bytes`). It is 32 bytes so that two fit in a cache
// line and a queue bank of thousands stays in L2. The engine moves packets by
// value: there is no pool, no pointer chasing, nothing to leak.
#pragma once

#include <cstdint>

namespace flexplane {

using Timeslot = uint64_t;    // one abstract packet's transmission time on one link
using EndpointId = uint16_t;  // index into the topology's endpoint list
using PortId = uint16_t;      // router output/input port
using QueueId = uint8_t;      // queue within a port (at most 64 per port)

inline constexpr PortId kNoRoute = 0xFFFF;
inline constexpr unsigned kMaxQueuesPerPort = 64;

// Packet::flags bits.
enum PacketFlag : uint8_t {
  kFlagEct = 1u << 0,  // ECN-capable transport: may be CE-marked instead of dropped
  kFlagCe = 1u << 1,   // congestion experienced (set by mark_ecn)
  kFlagCwr = 1u << 2,  // RFC 3168 CWR from a closed-loop sender (transports/); schemes ignore it
  kFlagSyn = 1u << 3,  // a closed-loop sender's SYN (transport.handshake; seq kSynSeq); schemes ignore it
};
// The seq of a SYN (kFlagSyn): no data packet has it (a flow has < 2^32 - 1 packets).
inline constexpr uint32_t kSynSeq = ~uint32_t{0};

struct Packet {
  uint32_t flow;        // flow id, unique within a run
  uint32_t seq;         // index of this packet within its flow; (flow, seq) is unique
  EndpointId src;
  EndpointId dst;
  uint16_t size_bytes;  // bytes this abstract packet stands for (byte-mode AQMs)
  uint8_t flags;        // PacketFlag bits
  uint8_t dscp;         // DiffServ code point stamped by the endpoint (0..63)
  uint32_t priority;    // endpoint-stamped rank, lower = more urgent (pFabric,
                        // strict priority by size); see docs/config.md `endpoint.priority`
  uint32_t custom[3];   // scheme-defined data, carried untouched by the engine (kPacketCustomBytes)

  bool ect() const { return flags & kFlagEct; }
  bool ce() const { return flags & kFlagCe; }
};

static_assert(sizeof(Packet) == 32, "abstract packet must stay 32 bytes");

// Bytes of scheme data a packet carries (Packet::custom). The wire protocol
// allows more (FP_MAX_CUSTOM, 16); the emulator and the endpoints both refuse
// to agree on more than this.
inline constexpr unsigned kPacketCustomBytes = sizeof(Packet::custom);

}  // namespace flexplane
