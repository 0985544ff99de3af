// A closed-loop source's NIC FIFO (closed_loop.cc): the segments its senders
// queued, in the order they joined; one leaves per timeslot.
//
// Principles
// - Memory follows what is queued now, not what was ever queued. A vector
//   popped from the front and cleared only when empty grew by one entry per
//   segment for as long as its host never drained (a busy sender clocked by
//   its ACKs): hundreds of MB over a 10 ms k = 32 run. The FifoRing
//   (fifo_ring.h) gives its storage back when it empties, so a host that
//   sent a burst of a thousand segments keeps nothing afterwards.
// - An entry is 16 bytes: the flow's arrival index at the source, the seq,
//   the ECN flags and the low 32 bits of the timeslot the segment joined.
//   Waits are taken modulo 2^32, exact below 2^32 timeslots (85 minutes of
//   1.2 µs timeslots), far beyond anything a FIFO fed by windows can hold.
#pragma once

#include <cstdint>
#include <vector>

#include "api/packet.h"
#include "emulator/traffic/fifo_ring.h"

namespace flexplane {

struct NicSlot {
  static constexpr uint8_t kEct = 1, kCwr = 2, kSyn = 4;  // kSyn: the flow's SYN (seq kSynSeq), not data
  uint32_t arrival = 0;  // the flow's index in its source's arrivals
  uint32_t seq = 0;
  uint32_t queued = 0;   // low 32 bits of the timeslot it joined
  uint8_t flags = 0;     // kEct | kCwr | kSyn

  // Timeslots from joining to `now` (modulo 2^32, see above).
  Timeslot wait(Timeslot now) const { return static_cast<uint32_t>(static_cast<uint32_t>(now) - queued); }
};
static_assert(sizeof(NicSlot) == 16);

// Memory on demand (fifo_ring.h); 16 slots hold an initial window of 10.
using NicFifo = FifoRing<NicSlot, 16, 64>;

// How a host's NIC serves the segments its flows queued (transport.nic).
enum class NicMode : uint8_t {
  kFifo,        // one FIFO per host, in the order segments joined (ns-3's host queue)
  kRoundRobin,  // one FIFO per flow, served one segment per turn (Linux's fq qdisc, RDMA NICs' queue pairs)
};

// The NICs of a source's endpoints, in either mode. Round robin keeps a
// FIFO per flow (freed when it empties: no memory for idle flows) and per
// endpoint the flows with segments queued, in turn order: a flow that sent
// goes to the back if it has more.
class NicQueues {
 public:
  NicQueues(NicMode mode, uint32_t endpoints, uint32_t flows) : mode_(mode), fifo_(endpoints) {
    if (mode_ == NicMode::kRoundRobin) {
      turns_.resize(endpoints);
      per_flow_.resize(flows);
      count_.assign(endpoints, 0);
    }
  }
  // Endpoint l's NIC queues slot s (of flow s.arrival).
  void push(uint32_t l, const NicSlot& s) {
    if (mode_ == NicMode::kFifo) return fifo_[l].push(s);
    FlowFifo& q = per_flow_[s.arrival];
    if (q.empty()) turns_[l].push(s.arrival);
    q.push(s);
    ++count_[l];
  }
  bool empty(uint32_t l) const { return size(l) == 0; }
  uint32_t size(uint32_t l) const { return mode_ == NicMode::kFifo ? fifo_[l].size() : count_[l]; }
  // The segment endpoint l sends next; the NIC must not be empty.
  const NicSlot& front(uint32_t l) const {
    return mode_ == NicMode::kFifo ? fifo_[l].front() : per_flow_[turns_[l].front()].front();
  }
  void pop(uint32_t l) {
    if (mode_ == NicMode::kFifo) return fifo_[l].pop();
    const uint32_t a = turns_[l].front();
    turns_[l].pop();
    per_flow_[a].pop();
    if (!per_flow_[a].empty()) turns_[l].push(a);
    --count_[l];
  }

 private:
  using FlowFifo = FifoRing<NicSlot, 4, 0>;  // a flow's: storage freed whenever it empties
  NicMode mode_;
  std::vector<NicFifo> fifo_;                  // kFifo: by endpoint
  std::vector<FifoRing<uint32_t>> turns_;      // kRoundRobin: by endpoint, flows (arrivals) with segments queued
  std::vector<FlowFifo> per_flow_;             // kRoundRobin: by arrival
  std::vector<uint32_t> count_;                // kRoundRobin: by endpoint, segments queued
};

}  // namespace flexplane
