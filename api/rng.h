// The project's one source of random numbers and hashes. Each component
// (router, endpoint group, workload) derives its own stream from (run seed,
// component id), so results do not depend on the order in which cores run
// components; hash tables and seeds use the same splitmix64 mix.
#pragma once

#include <cstdint>

namespace flexplane {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The same mix as a pure function of `x` (hash tables, seeds derived from a seed).
inline uint64_t mix64(uint64_t x) { return splitmix64(x); }

// xoshiro256** (Blackman & Vigna): fast, 256-bit state, good statistical quality.
class Rng {
 public:
  explicit Rng(uint64_t seed = 1, uint64_t stream = 0) { reseed(seed, stream); }

  void reseed(uint64_t seed, uint64_t stream) {
    uint64_t sm = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (auto& w : s_) w = splitmix64(sm);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n); n > 0. Lemire's multiply-shift (tiny bias is fine here).
  uint32_t below(uint32_t n) {
    return static_cast<uint32_t>(((next() >> 32) * static_cast<uint64_t>(n)) >> 32);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Stateless flow hash for ECMP; `salt` differs per router to avoid polarisation.
inline uint32_t flow_hash(uint32_t flow, uint32_t salt) {
  uint64_t x = (static_cast<uint64_t>(salt) << 32) | flow;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

}  // namespace flexplane
