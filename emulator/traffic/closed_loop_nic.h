// A closed-loop source's NIC FIFO (closed_loop.cc): the segments its senders
// queued, in the order they joined; one leaves per timeslot.
//
// Principles
// - Memory follows what is queued now, not what was ever queued. A vector
//   popped from the front and cleared only when empty grew by one entry per
//   segment for as long as its host never drained (a busy sender clocked by
//   its ACKs): hundreds of MB over a 10 ms k = 32 run. Here a power-of-two
//   ring doubles when full, reuses its slots while it cycles, and gives its
//   storage back when it empties while holding more than kKeepSlots, so a
//   host that sent a burst of a thousand segments keeps nothing afterwards.
// - An entry is 16 bytes: the flow's arrival index at the source, the seq,
//   the ECN flags and the low 32 bits of the timeslot the segment joined.
//   Waits are taken modulo 2^32, exact below 2^32 timeslots (85 minutes of
//   1.2 µs timeslots), far beyond anything a FIFO fed by windows can hold.
#pragma once

#include <cstdint>
#include <memory>

#include "api/packet.h"

namespace flexplane {

struct NicSlot {
  static constexpr uint8_t kEct = 1, kCwr = 2;
  uint32_t arrival = 0;  // the flow's index in its source's arrivals
  uint32_t seq = 0;
  uint32_t queued = 0;   // low 32 bits of the timeslot it joined
  uint8_t flags = 0;     // kEct | kCwr

  // Timeslots from joining to `now` (modulo 2^32, see above).
  Timeslot wait(Timeslot now) const { return static_cast<uint32_t>(static_cast<uint32_t>(now) - queued); }
};
static_assert(sizeof(NicSlot) == 16);

class NicFifo {
 public:
  static constexpr uint32_t kFirstSlots = 16;  // an initial window of 10 fits
  static constexpr uint32_t kKeepSlots = 64;   // storage kept by an empty FIFO, at most

  bool empty() const { return size_ == 0; }
  uint32_t size() const { return size_; }
  uint32_t slots() const { return cap_; }  // allocated entries
  const NicSlot& front() const { return buf_[head_]; }

  void push(const NicSlot& s) {
    if (size_ == cap_) grow();
    buf_[(head_ + size_) & (cap_ - 1)] = s;
    ++size_;
  }
  void pop() {
    head_ = (head_ + 1) & (cap_ - 1);
    if (--size_) return;
    head_ = 0;
    if (cap_ > kKeepSlots) {
      buf_.reset();
      cap_ = 0;
    }
  }

 private:
  void grow() {
    const uint32_t cap = cap_ ? 2 * cap_ : kFirstSlots;
    std::unique_ptr<NicSlot[]> bigger(new NicSlot[cap]);
    for (uint32_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & (cap_ - 1)];
    buf_ = std::move(bigger);
    cap_ = cap;
    head_ = 0;
  }

  std::unique_ptr<NicSlot[]> buf_;
  uint32_t cap_ = 0, head_ = 0, size_ = 0;
};

}  // namespace flexplane
