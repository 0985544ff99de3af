// Closed-loop flows: each flow of the list is driven by a transport model
// (transports/: NewReno, ECN, DCTCP, pFabric) instead of being sent once.
//
// Principles (docs/transports.md has the full design)
// - Senders live with the source endpoint's group, receivers with the
//   destination's. A receiver's ACKs travel back on a reverse channel with a
//   fixed latency per flow (`ack_latency`): they do not occupy router ports.
//   With `ack_queueing` an ACK also waits for the backlog it finds in the
//   first port of its reverse path (the destination ToR's port towards the
//   sender), read from the ToR, which runs on the sink's core before it; with
//   `delay_and_loss` it is lost where that port is full.
// - NIC: one FIFO per endpoint. When an ACK, a timer or a flow's start lets a
//   sender send, every segment its window allows joins its endpoint's FIFO at
//   once; the NIC sends one per timeslot (the access link's rate).
// - Order within a timeslot, per group: ACKs due now in (due, flow, then
//   content: ack_less) order, then due timers in (deadline, flow) order,
//   then flow starts in flow order, then the NICs. Nothing depends on which
//   core ran first, so 1 and N cores give identical results.
// - Across groups (possibly cores), ACKs go through one SPSC ring per ordered
//   pair of groups. Group G may take ACKs due at t once every group H that
//   sends it ACKs has finished delivering timeslot t - d(H,G) (d = the
//   smallest ACK latency from H to G, >= 1): each group publishes the first
//   timeslot whose deliveries it has not finished. All waits are on strictly
//   earlier timeslots, so there is no deadlock.
// - Accounting (NicWaitStats, AckQueueStats): each group counts what its own
//   source and sink did, on its own core; FlowTraffic sums the groups after
//   the run.
// - Lookahead: a group with no segment for outside in its NICs promises quiet
//   until the earliest of its next remote flow start, its earliest timer, and
//   the earliest ACK that can still reach it.
#pragma once

#include <algorithm>
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

// Whether an ACK waits behind data in the first port of its reverse path (the
// destination ToR's egress towards the sender; docs/transports.md): the only
// reverse hop whose router runs on the core that produces the ACK. Further
// hops keep the unloaded latency.
enum class AckQueueing : uint8_t {
  kNone,          // the fixed latency only
  kDelay,         // + that port's backlog in packets at the ACK's production, in timeslots (FIFO: one per timeslot)
  kDelayAndLoss,  // the same, and lost where the port was full (a single-queue port that held its capacity this timeslot)
};
AckQueueing parse_ack_queueing(const std::string& s, const std::string& where);
const char* ack_queueing_name(AckQueueing a);

// How a host's NIC serves its flows' segments (closed_loop_nic.h).
enum class NicMode : uint8_t;
NicMode parse_nic_mode(const std::string& s, const std::string& where);
const char* nic_mode_name(NicMode m);

// The `transport:` section of a run, resolved.
struct TransportConfig {
  bool enabled = false;  // kind: none -> open loop (every packet sent once)
  TransportKind kind = TransportKind::kReno;
  TransportParams params;
  AckLatency ack_latency = AckLatency::kDataPath;
  AckQueueing ack_queueing = AckQueueing::kNone;
  bool ack_queueing_nic = true;  // with ack_queueing: the ACK also waits behind its receiver's NIC FIFO
  NicMode nic{};                 // fifo (the default, 0) or round_robin across the host's flows
};

// Waits in timeslots, log-linear: one bin per value below kExact, then
// kSub bins per power of two (a bin spans 1/64 of its value), so its size
// stays bounded (at most ~4500 bins) whatever the waits. Percentiles are
// exact below kExact and the bin's lower bound above it (at most 1.6 %
// low).
struct WaitHistogram {
  static constexpr uint64_t kExact = 1024;  // 2^10
  static constexpr uint64_t kSub = 64;      // bins per power of two above kExact
  std::vector<uint64_t> counts;             // by bin

  static size_t bin(uint64_t w) {
    if (w < kExact) return static_cast<size_t>(w);
    const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(w));  // >= 10
    return static_cast<size_t>(kExact + (e - 10) * kSub + ((w >> (e - 6)) & (kSub - 1)));
  }
  static uint64_t lower_bound(size_t b) {  // the smallest wait in bin b
    if (b < kExact) return b;
    const uint64_t e = 10 + (b - kExact) / kSub;
    return (kSub + (b - kExact) % kSub) << (e - 6);
  }
  void add(uint64_t w) {
    const size_t b = bin(w);
    if (b >= counts.size()) counts.resize(b + 1, 0);
    ++counts[b];
  }
  void merge(const WaitHistogram& o);
  uint64_t total() const;
  uint64_t percentile(double p) const;  // the nearest-rank p-quantile (0 < p <= 1); 0 when empty
};

// What the ACK queueing did, summed over the receivers' groups.
struct AckQueueStats {
  uint64_t acks = 0;        // ACKs produced (lost ones included)
  uint64_t lost = 0;        // lost in a full port (kDelayAndLoss)
  uint64_t waited = 0;      // timeslots of queueing added, summed over the ACKs that went on
  uint64_t waited_nic = 0;  // ... of which in the receivers' NIC FIFOs
  uint64_t max_wait = 0;    // the longest
  uint64_t unqueued = 0;    // ACKs with no route back from their destination's ToR (no port to read): fixed latency
  WaitHistogram nic_waits;   // per ACK that went on: its wait in the receiver's NIC FIFO
  WaitHistogram port_waits;  // ... in its first reverse port

  void merge(const AckQueueStats& o) {  // another group's
    acks += o.acks;
    lost += o.lost;
    waited += o.waited;
    waited_nic += o.waited_nic;
    max_wait = std::max(max_wait, o.max_wait);
    unqueued += o.unqueued;
    nic_waits.merge(o.nic_waits);
    port_waits.merge(o.port_waits);
  }
};

// Data segments' waits in their senders' NIC FIFOs, from joining the FIFO
// to leaving on the access link, summed over the groups (closed loop only).
struct NicWaitStats {
  uint64_t waited = 0;  // timeslots, summed over the segments sent (waits.total(), retransmissions included)
  uint64_t max_wait = 0;
  WaitHistogram waits;
  uint64_t timeouts_with_data_in_nic = 0;  // RTOs that fired while a segment of the flow waited in its NIC

  void merge(const NicWaitStats& o) {  // another group's
    waited += o.waited;
    max_wait = std::max(max_wait, o.max_wait);
    waits.merge(o.waits);
    timeouts_with_data_in_nic += o.timeouts_with_data_in_nic;
  }
};

// Per flow, written by the source's core; read after the run.
struct SenderOutcome {
  uint32_t segments_sent = 0;
  uint32_t retransmits = 0;
  uint32_t timeouts = 0;
  uint32_t ecn_reductions = 0;
};

}  // namespace flexplane
