// A histogram of durations in nanoseconds with ~1.6 % resolution from 1 ns to
// hours in 18 KiB: exact below 64 ns, then 64 buckets per power of two (the
// layout of HdrHistogram at two significant digits). Adding is a shift and an
// increment, so a feeding thread can time every request it makes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace flexplane {

class LatencyHistogram {
 public:
  LatencyHistogram() : counts_(kBuckets, 0) {}

  void add(uint64_t ns) {
    ++counts_[bucket(ns)];
    ++samples_;
    max_ = std::max(max_, ns);
  }
  void merge(const LatencyHistogram& o) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    samples_ += o.samples_;
    max_ = std::max(max_, o.max_);
  }
  uint64_t samples() const { return samples_; }
  uint64_t max_ns() const { return max_; }

  // The nearest-rank q-quantile (0 <= q <= 1), as the middle of its bucket (0 with no samples).
  double quantile_ns(double q) const {
    if (!samples_) return 0;
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(q * static_cast<double>(samples_) + 0.999999));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(middle(i), static_cast<double>(max_));
    }
    return static_cast<double>(max_);
  }

  static size_t bucket(uint64_t ns) {
    if (ns < kSub) return static_cast<size_t>(ns);
    const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(ns));  // 2^e <= ns < 2^(e+1), e >= 6
    const size_t i = kSub + (e - kSubBits) * kSub + ((ns >> (e - kSubBits)) - kSub);
    return std::min(i, kBuckets - 1);
  }
  // The middle of bucket i's range of values.
  static double middle(size_t i) {
    if (i < kSub) return static_cast<double>(i);
    const size_t e = (i - kSub) / kSub + kSubBits, m = (i - kSub) % kSub + kSub;
    const double width = static_cast<double>(uint64_t{1} << (e - kSubBits));
    return static_cast<double>(m) * width + width / 2;
  }

 private:
  static constexpr unsigned kSubBits = 6;
  static constexpr size_t kSub = size_t{1} << kSubBits;
  static constexpr size_t kBuckets = kSub + (44 - kSubBits) * kSub;  // up to 2^44 ns (4.9 hours)
  std::vector<uint64_t> counts_;
  uint64_t samples_ = 0, max_ = 0;
};

}  // namespace flexplane
