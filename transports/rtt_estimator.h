// RFC 6298 retransmission timer: smoothed RTT, RTT variation, RTO with a
// lower and upper bound and exponential backoff.
//
// Kept in integer eighths of a timeslot (as BSD and Linux keep srtt << 3), so
// every value is exact and identical on every machine:
//   first sample R:   SRTT = R,  RTTVAR = R/2
//   later samples R:  RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|  (with the old SRTT)
//                     SRTT   = 7/8 SRTT   + 1/8 R
//   RTO = ceil(SRTT + max(G, 4 RTTVAR)), G = one timeslot (the clock's granularity),
//   clamped to [min_rto, max_rto]; before any sample RTO = initial_rto.
// backoff() doubles the RTO (RFC 6298 5.5); a new sample clears the backoff
// (Karn: the caller only samples segments that were not retransmitted).
#pragma once

#include <algorithm>
#include <cstdint>

#include "api/packet.h"

namespace flexplane {

class RttEstimator {
 public:
  RttEstimator(Timeslot min_rto, Timeslot max_rto, Timeslot initial_rto)
      : min_rto_(min_rto), max_rto_(std::max(max_rto, min_rto)), base_rto_(clamp(initial_rto)) {}

  void sample(Timeslot rtt) {
    const uint64_t r8 = rtt * 8;
    if (!has_sample_) {
      srtt8_ = r8;
      var8_ = r8 / 2;
      has_sample_ = true;
    } else {
      const uint64_t err8 = srtt8_ > r8 ? srtt8_ - r8 : r8 - srtt8_;
      var8_ = (3 * var8_ + err8) / 4;
      srtt8_ = (7 * srtt8_ + r8) / 8;
    }
    const uint64_t rto8 = srtt8_ + std::max<uint64_t>(8, 4 * var8_);
    base_rto_ = clamp((rto8 + 7) / 8);
    backoff_ = 0;
    ++samples_;
  }

  // The timer expired: double the RTO, up to max_rto.
  void backoff() {
    if (rto() < max_rto_) ++backoff_;
  }

  Timeslot rto() const {
    Timeslot r = base_rto_;
    for (uint32_t i = 0; i < backoff_ && r < max_rto_; ++i) r *= 2;
    return std::min(r, max_rto_);
  }
  bool has_sample() const { return has_sample_; }
  uint32_t backoffs() const { return backoff_; }
  uint64_t samples() const { return samples_; }
  // In eighths of a timeslot (exact).
  uint64_t srtt_x8() const { return srtt8_; }
  uint64_t rttvar_x8() const { return var8_; }

 private:
  Timeslot clamp(Timeslot r) const { return std::min(std::max(r, min_rto_), max_rto_); }

  Timeslot min_rto_, max_rto_;
  Timeslot base_rto_;
  uint64_t srtt8_ = 0, var8_ = 0;
  uint32_t backoff_ = 0;
  uint64_t samples_ = 0;
  bool has_sample_ = false;
};

}  // namespace flexplane
