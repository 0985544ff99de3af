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

}  // namespace flexplane
