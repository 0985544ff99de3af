// DCTCP's congestion estimate (RFC 8257 §3.3): the fraction F of ACKed
// packets that carried ECE over one window of data, smoothed as
//   alpha = (1 − g) × alpha + g × F
// once per window, and the window cut cwnd × (1 − alpha/2).
//
// A window ends when the cumulative ACK reaches the snd_nxt that was current
// when it began; the first window is everything sent before the first ACK
// (as ns-3's TcpDctcp counts; Linux starts its first window at zero). A
// duplicate ACK counts as one packet ACKed (Linux's dctcp_update_alpha).
// alpha and g are fixed point with 2^20 = 1, so values built from binary
// fractions (g = 1/16, F = 1/2, ...) are exact and hand-derivable.
#pragma once

#include <cmath>
#include <cstdint>

namespace flexplane {

class DctcpAlpha {
 public:
  static constexpr uint32_t kShift = 20;
  static constexpr uint64_t kOne = uint64_t{1} << kShift;

  DctcpAlpha(double g, double initial_alpha)
      : g_(to_fp(g)), alpha_(to_fp(initial_alpha)) {}

  // `pkts` packets were ACKed (1 for a duplicate ACK), with or without ECE;
  // snd_una / snd_nxt after the ACK was applied. Returns true if a window
  // ended and alpha was updated.
  bool on_ack(uint32_t pkts, bool ece, uint32_t snd_una, uint32_t snd_nxt) {
    total_ += pkts;
    if (ece) marked_ += pkts;
    if (!started_) {
      next_seq_ = snd_nxt;
      started_ = true;
    }
    if (snd_una < next_seq_) return false;
    const uint64_t f = total_ ? (marked_ << kShift) / total_ : 0;
    alpha_ = (alpha_ * (kOne - g_) + g_ * f) >> kShift;
    last_fraction_ = f;
    total_ = marked_ = 0;
    next_seq_ = snd_nxt;
    ++windows_;
    return true;
  }

  // cwnd × (1 − alpha/2), in the caller's units (rounded so the cut is never larger).
  uint64_t reduce(uint64_t cwnd) const { return cwnd - ((cwnd * alpha_) >> (kShift + 1)); }

  uint64_t alpha_fp() const { return alpha_; }      // alpha × 2^20
  uint64_t last_fraction_fp() const { return last_fraction_; }
  uint64_t windows() const { return windows_; }
  double alpha() const { return static_cast<double>(alpha_) / kOne; }

  static uint64_t to_fp(double x) { return static_cast<uint64_t>(std::llround(x * kOne)); }

 private:
  uint64_t g_;
  uint64_t alpha_;
  uint64_t total_ = 0, marked_ = 0;
  uint64_t last_fraction_ = 0;
  uint64_t windows_ = 0;
  uint32_t next_seq_ = 0;
  bool started_ = false;
};

}  // namespace flexplane
