#include "net/checksum.h"

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace flexplane::net;

TEST_CASE("RFC 1071 example sums to 0xddf2", "[net]") {
  const uint8_t data[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  CHECK(fold(sum_bytes(data, sizeof data)) == 0xddf2);
  CHECK(checksum(data, sizeof data) == 0x220d);
}

TEST_CASE("a textbook IPv4 header checks out and its checksum recomputes", "[net]") {
  // 192.168.0.1 -> 192.168.0.199, UDP, checksum 0xb861.
  uint8_t h[] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  CHECK(checksum(h, sizeof h) == 0);
  h[10] = h[11] = 0;
  CHECK(checksum(h, sizeof h) == 0xb861);
}

TEST_CASE("odd length pads the last byte with zero", "[net]") {
  const uint8_t odd[] = {0x12, 0x34, 0x56};
  const uint8_t even[] = {0x12, 0x34, 0x56, 0x00};
  CHECK(checksum(odd, 3) == checksum(even, 4));
}

TEST_CASE("long inputs are summed in chunks without overflow", "[net]") {
  std::vector<uint8_t> big(200000, 0xff);
  // 100000 words of 0xffff: the one's-complement sum is 0xffff, checksum 0.
  CHECK(checksum(big.data(), big.size()) == 0);
  big[0] = 0xfe;  // subtract 0x100 from one word
  CHECK(checksum(big.data(), big.size()) == 0x0100);
}

TEST_CASE("RFC 1624 incremental update equals a full recomputation", "[net]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20000; ++trial) {
    uint8_t h[20];
    for (auto& b : h) b = static_cast<uint8_t>(rng());
    h[10] = h[11] = 0;
    const uint16_t before = checksum(h, sizeof h);
    store_be16(h + 10, before);
    REQUIRE(checksum(h, sizeof h) == 0);
    const size_t word = (rng() % 10) * 2;
    if (word == 10) continue;  // the checksum field itself
    const uint16_t old_word = load_be16(h + word);
    const uint16_t new_word = static_cast<uint16_t>(rng());
    store_be16(h + word, new_word);
    const uint16_t updated = checksum_update16(before, old_word, new_word);
    store_be16(h + 10, updated);
    REQUIRE(checksum(h, sizeof h) == 0);
    h[10] = h[11] = 0;
    // Equal to the recomputed value (RFC 1624 eqn. 3 has no +0/-0 ambiguity
    // unless the covered data is all zeros, which random headers are not).
    REQUIRE(updated == checksum(h, sizeof h));
  }
}
