// Single-producer single-consumer lock-free ring (bounded, power-of-two).
//
// Used between the communication core and engine cores in live mode. The same
// shape as rte_ring in SP/SC mode, but header-only so virtual-time tests and
// sanitizer builds need no EAL. Head and tail live on their own cache lines;
// each side caches the other's index and reloads it only when it looks
// full/empty, so an uncontended burst costs one acquire load.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace flexplane {

template <class T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity_pow2 = 1024) : mask_(round_up(capacity_pow2) - 1), slots_(new T[mask_ + 1]) {}

  size_t capacity() const { return mask_ + 1; }

  // Producer side. Enqueue up to n items; returns how many went in.
  size_t push(const T* items, size_t n) {
    const size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail + n - cached_head_ > capacity()) cached_head_ = head_.load(std::memory_order_acquire);
    const size_t room = capacity() - (tail - cached_head_);
    if (n > room) n = room;
    for (size_t i = 0; i < n; ++i) slots_[(tail + i) & mask_] = items[i];
    tail_.store(tail + n, std::memory_order_release);
    return n;
  }
  bool push(const T& item) { return push(&item, 1) == 1; }

  // Consumer side. Dequeue up to n items; returns how many came out.
  size_t pop(T* items, size_t n) {
    const size_t head = head_.load(std::memory_order_relaxed);
    if (cached_tail_ - head < n) cached_tail_ = tail_.load(std::memory_order_acquire);
    const size_t avail = cached_tail_ - head;
    if (n > avail) n = avail;
    for (size_t i = 0; i < n; ++i) items[i] = slots_[(head + i) & mask_];
    head_.store(head + n, std::memory_order_release);
    return n;
  }
  bool pop(T& item) { return pop(&item, 1) == 1; }

  // Approximate (exact when called by one side while the other is idle).
  size_t size() const { return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire); }

 private:
  static size_t round_up(size_t x) {
    size_t p = 1;
    while (p < x) p <<= 1;
    return p;
  }
  const size_t mask_;
  std::unique_ptr<T[]> slots_;
  alignas(64) std::atomic<size_t> head_{0};  // consumer-owned
  size_t cached_tail_ = 0;                   // consumer's view of tail
  alignas(64) std::atomic<size_t> tail_{0};  // producer-owned
  size_t cached_head_ = 0;                   // producer's view of head
};

}  // namespace flexplane
