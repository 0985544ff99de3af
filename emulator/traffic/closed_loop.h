// Closed-loop flows: each flow of the list is driven by a transport model
// (transports/: NewReno, ECN, DCTCP, pFabric) instead of being sent once.
//
// Principles (docs/transports.md has the full design)
// - Senders live with the source endpoint's group, receivers with the
//   destination's. A receiver's ACKs travel back on a reverse channel with a
//   fixed latency per flow (`ack_latency`): they do not occupy router ports.
// - NIC: one FIFO per endpoint. When an ACK, a timer or a flow's start lets a
//   sender send, every segment its window allows joins its endpoint's FIFO at
//   once; the NIC sends one per timeslot (the access link's rate).
// - Order within a timeslot, per group: ACKs due now in (due, flow, cum_ack,
//   trigger, ece) order, then due timers in (deadline, flow) order, then flow
//   starts in flow order, then the NICs. Nothing depends on which core ran
//   first, so 1 and N cores give identical results.
// - Across groups (possibly cores), ACKs go through one SPSC ring per ordered
//   pair of groups. Group G may take ACKs due at t once every group H that
//   sends it ACKs has finished delivering timeslot t - d(H,G) (d = the
//   smallest ACK latency from H to G, >= 1): each group publishes the first
//   timeslot whose deliveries it has not finished. All waits are on strictly
//   earlier timeslots, so there is no deadlock.
// - Lookahead: a group with no segment for outside in its NICs promises quiet
//   until the earliest of its next remote flow start, its earliest timer, and
//   the earliest ACK that can still reach it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/topology/topology.h"
#include "transports/transport.h"

namespace flexplane {

// How long an ACK takes from the receiver back to the sender.
enum class AckLatency : uint8_t {
  kDataPath,     // the reverse path's latency, as a data packet would see it unloaded
  kPropagation,  // sum over the reverse hops of (latency - 1) + 1: propagation only, ACK serialisation ~0
};
AckLatency parse_ack_latency(const std::string& s, const std::string& where);
const char* ack_latency_name(AckLatency a);

// The `transport:` section of a run, resolved.
struct TransportConfig {
  bool enabled = false;  // kind: none -> open loop (every packet sent once)
  TransportKind kind = TransportKind::kReno;
  TransportParams params;
  AckLatency ack_latency = AckLatency::kDataPath;
};

// Per flow, written by the source's core; read after the run.
struct SenderOutcome {
  uint32_t segments_sent = 0;
  uint32_t retransmits = 0;
  uint32_t timeouts = 0;
  uint32_t ecn_reductions = 0;
};

}  // namespace flexplane
