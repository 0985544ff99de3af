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
#include <memory>
#include <new>
#include <vector>

#include "api/cache_aligned.h"
#include "api/packet.h"

namespace flexplane {

class alignas(kCacheLine) Link {
 public:
  Link() = default;
  Link(const Link&) = delete;  // the wheel may be its own: not shared by copies
  Link& operator=(const Link&) = delete;

  // A slot holds the packet arriving at timeslot t when code == ~t. All
  // zero bytes are an empty slot, so a wheel in fresh zero pages is empty
  // and costs memory only where packets are written (Engine: the wheels of
  // links between cores).
  struct Slot {
    Timeslot code = 0;
    Packet pkt{};
    bool holds(Timeslot t) const { return code == ~t; }
    void set(Timeslot t) { code = ~t; }
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
      const Timeslot at = now + latency;
      Slot& s = slots[at & mask];
      if (s.holds(at)) return false;
      s.set(at);
      s.pkt = p;
      return true;
    }
    bool take(Timeslot now, Packet& out) const {
      const Slot& s = slots[now & mask];
      if (!s.holds(now)) return false;
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
  View view() { return View{slots_, mask_, latency_, ctrl_.empty() ? nullptr : ctrl_.data()}; }
  void enable_ctrl() { ctrl_.assign(mask_ + 1, CtrlSlot{}); }
  bool has_ctrl() const { return !ctrl_.empty(); }

  // A link this process never reads or writes (across processes: between
  // two routers others run): its latency, no wheel (view() has no slots).
  void init_untouched(uint32_t latency) {
    latency_ = latency;
    mask_ = 0;
    own_.reset();
    slots_ = nullptr;
  }
  // `storage` (optional): window_pow2 zeroed slots, cache-line aligned, that
  // outlive the link; else the link allocates its own.
  void init(uint32_t latency, uint32_t window_pow2, Slot* storage = nullptr) {
    latency_ = latency;
    mask_ = window_pow2 - 1;
    if (storage) {
      own_.reset();
      slots_ = storage;
    } else {
      own_.reset(new (std::align_val_t{kCacheLine}) Slot[window_pow2]());
      slots_ = own_.get();
    }
  }

  // Send `p` at timeslot `now`. Returns false if the link already carries a
  // packet sent at `now` (a router broke the one-per-port rule): the caller
  // counts and drops it.
  bool put(Timeslot now, const Packet& p) { return view().put(now, p); }

  // The packet arriving at `now`, if any.
  bool take(Timeslot now, Packet& out) const {
    return View{slots_, mask_, latency_, nullptr}.take(now, out);
  }

  // The first arrival timeslot in [from, until) that carries a packet, or
  // `none`: what is in flight, for lookahead. The caller must know those
  // slots are written (its own link, or before another core's watermark).
  Timeslot first_arrival(Timeslot from, Timeslot until, Timeslot none) const {
    for (Timeslot t = from; t < until; ++t)
      if (slots_[t & mask_].holds(t)) return t;
    return none;
  }

  uint32_t latency() const { return latency_; }

 private:
  // The slot array is cache-line aligned and padded (own_, or the storage
  // given to init()), so links owned by different cores never share a line.
  // A Link is one cache line: the engine holds one per direction of every
  // router link (262,144 at k = 64), and their wheels apart (Engine:
  // WheelArena).
  struct AlignedDelete {
    void operator()(Slot* p) const { ::operator delete[](p, std::align_val_t{kCacheLine}); }
  };
  Slot* slots_ = nullptr;  // own_, or storage given to init()
  std::unique_ptr<Slot[], AlignedDelete> own_;
  cache_vector<CtrlSlot> ctrl_;  // empty: no control lane
  uint64_t mask_ = 0;
  uint32_t latency_ = 1;
};
static_assert(sizeof(Link) == kCacheLine, "a Link is one cache line");

}  // namespace flexplane
