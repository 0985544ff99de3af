// A FIFO of small trivially-copyable entries for a per-endpoint NIC queue of
// the emulated endpoints (closed_loop_nic.h, live_traffic.cc): a power-of-two
// ring that doubles when full, reuses its slots while it cycles, and gives
// its storage back when it empties while holding more than `KeepSlots`.
// Memory follows what is queued now, not what was ever queued (a vector
// popped from the front grew without end while its host never drained; a
// deque allocated and freed a block every few dozen packets, which was 5 % of
// a live engine core).
#pragma once

#include <cstdint>
#include <memory>

namespace flexplane {

template <class T, uint32_t FirstSlots = 16, uint32_t KeepSlots = 64>
class FifoRing {
 public:
  static constexpr uint32_t kFirstSlots = FirstSlots;
  static constexpr uint32_t kKeepSlots = KeepSlots;

  bool empty() const { return size_ == 0; }
  uint32_t size() const { return size_; }
  uint32_t slots() const { return cap_; }  // allocated entries
  const T& front() const { return buf_[head_]; }

  void push(const T& s) {
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
    std::unique_ptr<T[]> bigger(new T[cap]);
    for (uint32_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & (cap_ - 1)];
    buf_ = std::move(bigger);
    cap_ = cap;
    head_ = 0;
  }

  std::unique_ptr<T[]> buf_;
  uint32_t cap_ = 0, head_ = 0, size_ = 0;
};

}  // namespace flexplane
