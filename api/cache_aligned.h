// Cache-line-aligned, cache-line-padded storage for data one core writes on
// the fast path. Engine cores run different routers and endpoint groups whose
// small buffers would otherwise be heap neighbours: a line shared by two cores'
// hot data ping-pongs between them every timeslot (measured: the 2-core
// engine ran each core at ~60% of the 1-core speed until this was fixed).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace flexplane {

inline constexpr size_t kCacheLine = 64;

template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  CacheAlignedAllocator() = default;
  template <class U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}
  T* allocate(size_t n) {
    const size_t bytes = (n * sizeof(T) + kCacheLine - 1) & ~(kCacheLine - 1);
    return static_cast<T*>(::operator new(bytes, std::align_val_t(kCacheLine)));
  }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(kCacheLine)); }
  template <class U>
  bool operator==(const CacheAlignedAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const CacheAlignedAllocator<U>&) const { return false; }
};

// A std::vector whose buffer starts on a cache line and owns whole lines.
template <class T>
using cache_vector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace flexplane
