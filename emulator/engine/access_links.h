// The access links of one rack in one direction (endpoints -> ToR, or
// ToR -> endpoints) as a single timeslot wheel of packet batches.
//
// Why: a rack's access links always share a latency and live on one core, so
// instead of one wheel per link (a copy in, a copy out and a stamp check per
// link per timeslot) the sender writes its whole timeslot's batch straight
// into the wheel slot where it will arrive, and the receiver hands that slot
// to the router or sink as it is. A packet crossing an access link is copied
// once (by whoever produces it) instead of three times.
//
// Each slot holds one timeslot's batch, up to `capacity` packets, and the
// arrival timeslot it was written for. Sender and receiver run on the same
// core, and the wheel has more slots than the latency, so a slot is always
// read before it is reused.
#pragma once

#include <cstdint>

#include "api/cache_aligned.h"
#include "api/packet.h"

namespace flexplane {

class AccessLinks {
 public:
  void init(uint32_t latency, uint32_t capacity) {
    uint32_t w = 1;
    while (w < latency + 1) w <<= 1;
    latency_ = latency;
    mask_ = w - 1;
    capacity_ = capacity;
    packets_.assign(static_cast<size_t>(w) * capacity, Packet{});
    slots_.assign(w, Slot{});
  }

  // Where the batch sent at `now` goes: room for capacity() packets.
  Packet* send_buffer(Timeslot now) { return &packets_[index(now + latency_) * capacity_]; }
  // Publish the first `n` packets written for `now`.
  void commit(Timeslot now, uint32_t n) { slots_[index(now + latency_)] = Slot{now + latency_, n}; }

  // The batch arriving at `now` (count 0 if nothing was sent for it).
  // The receiver may reorder or overwrite the packets: the slot is its now.
  uint32_t arriving(Timeslot now, Packet** packets) {
    const Slot& s = slots_[index(now)];
    if (s.arrival != now) return 0;
    *packets = &packets_[index(now) * capacity_];
    return s.count;
  }

  // Whether a batch sent at or before `now` is still to arrive (stop when done).
  bool in_flight_after(Timeslot now) const {
    for (Timeslot t = now + 1; t <= now + latency_; ++t) {
      const Slot& s = slots_[index(t)];
      if (s.arrival == t && s.count) return true;
    }
    return false;
  }

  uint32_t capacity() const { return capacity_; }
  uint32_t latency() const { return latency_; }

 private:
  struct Slot {
    Timeslot arrival = ~Timeslot{0};
    uint32_t count = 0;
  };
  size_t index(Timeslot t) const { return static_cast<size_t>(t & mask_); }

  cache_vector<Packet> packets_;
  cache_vector<Slot> slots_;
  uint64_t mask_ = 0;
  uint32_t capacity_ = 0;
  uint32_t latency_ = 1;
};

}  // namespace flexplane
