// One value per outstanding seq of a flow's window [una, end), in a
// power-of-two ring indexed by seq & mask. fit() doubles it, keeping the
// window's values, when the window outgrows it. Used by TcpSender (send
// times) and SackScoreboard (flags).
#pragma once

#include <cstdint>
#include <vector>

namespace flexplane {

template <class T>
class SeqRing {
 public:
  explicit SeqRing(uint64_t min_size = 16) {
    uint32_t size = 16;
    while (size < min_size) size *= 2;
    v_.assign(size, T{});
    mask_ = size - 1;
  }

  T& operator[](uint32_t seq) { return v_[seq & mask_]; }
  const T& operator[](uint32_t seq) const { return v_[seq & mask_]; }
  size_t size() const { return v_.size(); }

  // Room for every seq in [una, end); the values of that window are kept
  // (a slot past the old window holds whatever it held: the caller sets it).
  void fit(uint32_t una, uint32_t end) {
    if (uint64_t{end} - una <= v_.size()) return;
    uint32_t size = static_cast<uint32_t>(v_.size());
    while (uint64_t{end} - una > size) size *= 2;
    std::vector<T> bigger(size, T{});
    for (uint32_t s = una; s != end; ++s) bigger[s & (size - 1)] = v_[s & mask_];
    v_.swap(bigger);
    mask_ = size - 1;
  }

 private:
  std::vector<T> v_;
  uint32_t mask_;
};

}  // namespace flexplane
