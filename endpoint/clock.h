// Clocks of the endpoint side: the protocol runs on CLOCK_MONOTONIC (ns);
// CLOCK_REALTIME (ns) is what separate processes share for start times and
// what result files carry.
#pragma once

#include <cstdint>
#include <ctime>

namespace flexplane::endpoint {

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

inline uint64_t real_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

}  // namespace flexplane::endpoint
