// A one-way link as a timeslot wheel.
//
// A link carries at most one abstract packet per timeslot, so instead of a
// queue with head/tail atomics it is an array indexed by arrival timeslot:
// the sender writes slot[(t + latency) % W] stamped with the arrival time and
// the receiver at timeslot t reads slot[t % W] and checks the stamp. Links
// between cores need no atomics of their own: the per-core watermarks
// (release/acquire, see engine.cc) order the writes before the reads, and the
// engine keeps sender and receiver within W - latency timeslots of each other
// so a slot is never overwritten before it is read.
#pragma once

#include <cstdint>
#include <vector>

#include "api/cache_aligned.h"
#include "api/packet.h"

namespace flexplane {

class alignas(kCacheLine) Link {
 public:
  struct Slot {
    Timeslot stamp = ~Timeslot{0};
    Packet pkt{};
  };
  // The control lane (PFC pause frames, api/pfc.h): beside the packets, only
  // on links whose sender pauses. A frame does not take the packet's slot
  // (64 bytes against an MTU: the timeslot's packet still goes).
  struct CtrlSlot {
    Timeslot stamp = ~Timeslot{0};
    uint8_t paused = 0;
  };
  // The link's wheel as its sender and receiver use it, copied into their
  // own per-port arrays: a hop then touches the slot, not the Link object
  // as well (one dependent cache miss less per put and per take).
  struct View {
    Slot* slots = nullptr;
    uint64_t mask = 0;
    uint32_t latency = 1;
    CtrlSlot* ctrl = nullptr;  // null: no control lane
    bool put(Timeslot now, const Packet& p) const {
      Slot& s = slots[(now + latency) & mask];
      if (s.stamp == now + latency) return false;
      s.stamp = now + latency;
      s.pkt = p;
      return true;
    }
    bool take(Timeslot now, Packet& out) const {
      const Slot& s = slots[now & mask];
      if (s.stamp != now) return false;
      out = s.pkt;
      return true;
    }
    void put_ctrl(Timeslot now, uint8_t paused) const {
      CtrlSlot& s = ctrl[(now + latency) & mask];
      s.stamp = now + latency;
      s.paused = paused;
    }
    bool take_ctrl(Timeslot now, uint8_t& paused) const {
      const CtrlSlot& s = ctrl[now & mask];
      if (s.stamp != now) return false;
      paused = s.paused;
      return true;
    }
  };
  // Valid for the link's lifetime (init() and enable_ctrl() are called before).
  View view() { return View{slots_.data(), mask_, latency_, ctrl_.empty() ? nullptr : ctrl_.data()}; }
  void enable_ctrl() { ctrl_.assign(slots_.size(), CtrlSlot{}); }
  bool has_ctrl() const { return !ctrl_.empty(); }

  void init(uint32_t latency, uint32_t window_pow2) {
    latency_ = latency;
    mask_ = window_pow2 - 1;
    slots_.assign(window_pow2, Slot{});
  }

  // Send `p` at timeslot `now`. Returns false if the link already carries a
  // packet sent at `now` (a router broke the one-per-port rule): the caller
  // counts and drops it.
  bool put(Timeslot now, const Packet& p) { return view().put(now, p); }

  // The packet arriving at `now`, if any.
  bool take(Timeslot now, Packet& out) const {
    return View{const_cast<Slot*>(slots_.data()), mask_, latency_, nullptr}.take(now, out);  // take() only reads
  }

  // The first arrival timeslot in [from, until) that carries a packet, or
  // `none`: what is in flight, for lookahead. The caller must know those
  // slots are written (its own link, or before another core's watermark).
  Timeslot first_arrival(Timeslot from, Timeslot until, Timeslot none) const {
    for (Timeslot t = from; t < until; ++t)
      if (slots_[t & mask_].stamp == t) return t;
    return none;
  }

  uint32_t latency() const { return latency_; }

 private:
  // The slot array is cache-line aligned and padded (cache_vector), so links
  // owned by different cores never share a line.
  cache_vector<Slot> slots_;
  cache_vector<CtrlSlot> ctrl_;  // empty: no control lane
  uint64_t mask_ = 0;
  uint32_t latency_ = 1;
};

}  // namespace flexplane
