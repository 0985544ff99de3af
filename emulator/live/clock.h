// The live emulator's clock: CLOCK_MONOTONIC in nanoseconds (protocol timers,
// statistics intervals).
#pragma once

#include <cstdint>
#include <ctime>

namespace flexplane::live {

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace flexplane::live
