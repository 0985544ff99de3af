// The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//
// Principles
//  - Sums are kept unfolded in 32 bits while data is added (16-bit words,
//    big-endian, an odd last byte padded with zero) and folded to 16 bits
//    once, at the end: `fold(sum(data))` is the one's-complement sum, and a
//    header's checksum field holds its complement (`checksum(data)`).
//  - A header whose checksum field is right sums to 0xffff over the whole
//    header (`checksum(header) == 0`).
//  - Changing one 16-bit word m to m' updates a stored checksum HC without
//    re-reading the header: HC' = ~(~HC + ~m + m') (RFC 1624, eqn. 3). That
//    form never produces the 0x0000 / 0xffff ambiguity of RFC 1141's.
// Pure functions on bytes: no allocation, no alignment assumptions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flexplane::net {

// Adds `len` bytes as big-endian 16-bit words to `sum` (unfolded). Safe
// without folding for len <= 65534 and sum < 2^16 (checksum() chunks longer
// inputs).
inline uint32_t sum_bytes(const uint8_t* data, size_t len, uint32_t sum = 0) {
  size_t i = 0;
  for (; i + 1 < len; i += 2) sum += uint32_t(data[i]) << 8 | data[i + 1];
  if (i < len) sum += uint32_t(data[i]) << 8;
  return sum;
}

// Folds a 32-bit sum to the 16-bit one's-complement sum.
inline uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// The value to store in a checksum field that covers `data` (with that field
// zero), or 0 when the stored checksum is already right.
inline uint16_t checksum(const uint8_t* data, size_t len, uint32_t sum = 0) {
  // Sum in chunks so the 32-bit accumulator never overflows (2^15 words max).
  while (len > 65534) {
    sum = fold(sum_bytes(data, 65534, sum));
    data += 65534;
    len -= 65534;
  }
  return static_cast<uint16_t>(~fold(sum_bytes(data, len, sum)));
}

// RFC 1624 eqn. 3: the checksum after one 16-bit word of the covered data
// changed from `old_word` to `new_word` (all values in host order).
inline uint16_t checksum_update16(uint16_t check, uint16_t old_word, uint16_t new_word) {
  uint32_t sum = uint32_t(static_cast<uint16_t>(~check)) + static_cast<uint16_t>(~old_word) + new_word;
  return static_cast<uint16_t>(~fold(sum));
}

inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t load_be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  store_be16(p, static_cast<uint16_t>(v >> 16));
  store_be16(p + 2, static_cast<uint16_t>(v));
}

}  // namespace flexplane::net
