// Header arithmetic of the fast path against full recomputation.
#include "router/ipv4.h"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <random>

using namespace flexplane::router::ipv4;

namespace {

std::array<uint8_t, 20> header(uint8_t ttl, uint8_t tos, uint32_t src = 0x0A010002, uint32_t dst = 0x0A020002) {
  Header h{};
  h.version_ihl = 0x45;
  h.tos = tos;
  h.total_length = be16(40);
  h.id = be16(0x1234);
  h.ttl = ttl;
  h.protocol = 17;
  h.src = be32(src);
  h.dst = be32(dst);
  h.checksum = 0;
  h.checksum = checksum(&h, 20);
  std::array<uint8_t, 20> out;
  std::memcpy(out.data(), &h, 20);
  return out;
}

Header& as_header(std::array<uint8_t, 20>& b) { return *reinterpret_cast<Header*>(b.data()); }

// Equal as one's-complement numbers: 0x0000 and 0xFFFF are both zero.
bool same_checksum(uint16_t a, uint16_t b) { return a == b || ((a == 0 || a == 0xFFFF) && (b == 0 || b == 0xFFFF)); }

uint16_t recomputed(Header h) {
  h.checksum = 0;
  return checksum(&h, 20);
}

}  // namespace

TEST_CASE("ipv4 checksum: the RFC 1071 worked header", "[router][ipv4]") {
  // 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7 (a commonly quoted capture)
  const uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                         0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  const uint16_t c = checksum(h, 20);
  CHECK(be16(c) == 0xb861);
  uint8_t with[20];
  std::memcpy(with, h, 20);
  std::memcpy(with + 10, &c, 2);
  CHECK(checksum_ok(with, 20));
  with[19] ^= 1;
  CHECK_FALSE(checksum_ok(with, 20));
  // Odd lengths: the last byte is the high byte of a zero-padded word.
  const uint8_t odd[3] = {0x12, 0x34, 0x56};
  CHECK(be16(static_cast<uint16_t>(~checksum(odd, 3))) == ((0x1234 + 0x5600) & 0xFFFF));
}

TEST_CASE("ipv4 decrement_ttl: RFC 1624 incremental update equals recomputation", "[router][ipv4]") {
  std::mt19937 rng(7);
  int edge = 0;
  for (int i = 0; i < 200000; ++i) {
    auto b = header(static_cast<uint8_t>(2 + rng() % 254), static_cast<uint8_t>(rng()), rng(), rng());
    Header& h = as_header(b);
    h.id = static_cast<uint16_t>(rng());  // vary the covered data, then make it valid again
    h.checksum = 0;
    h.checksum = checksum(&h, 20);
    edge += h.checksum == 0 || h.checksum == 0xFFFF;
    const uint8_t ttl = h.ttl;
    decrement_ttl(h);
    REQUIRE(h.ttl == ttl - 1);
    REQUIRE(checksum_ok(&h, 20));
    REQUIRE(same_checksum(h.checksum, recomputed(h)));
  }
  INFO("headers whose checksum was +0/-0 before the update: " << edge);
  CHECK(edge > 0);  // the edge case of RFC 1624 section 3 was exercised
}

TEST_CASE("ipv4 mark_ce: ECT becomes CE with a valid checksum; Not-ECT is refused", "[router][ipv4]") {
  for (uint8_t dscp = 0; dscp < 64; ++dscp) {
    for (uint8_t e : {kNotEct, kEct1, kEct0, kCe}) {
      auto b = header(64, static_cast<uint8_t>(dscp << 2 | e));
      Header& h = as_header(b);
      const auto before = b;
      const bool marked = mark_ce(h);
      CHECK(marked == (e != kNotEct));
      if (e == kNotEct || e == kCe) {
        CHECK(b == before);  // untouched
      } else {
        CHECK(ecn(h) == kCe);
        CHECK(flexplane::router::ipv4::dscp(h) == dscp);
        CHECK(checksum_ok(&h, 20));
        CHECK(same_checksum(h.checksum, recomputed(h)));
      }
    }
  }
}

TEST_CASE("ipv4 validate: RFC 1812 5.2.2 checks and martians", "[router][ipv4]") {
  auto ok = header(64, 0);
  CHECK(validate(ok.data(), 40) == Verdict::kForward);
  CHECK(validate(ok.data(), 19) == Verdict::kTooShort);
  CHECK(validate(ok.data(), 60) == Verdict::kForward);  // Ethernet padding after the datagram is fine

  auto fix = [](std::array<uint8_t, 20>& b) {
    Header& h = as_header(b);
    h.checksum = 0;
    h.checksum = checksum(&h, 20);
  };
  {
    auto b = ok;
    b[0] = 0x65;  // version 6
    fix(b);
    CHECK(validate(b.data(), 20) == Verdict::kBadVersion);
  }
  {
    auto b = ok;
    b[0] = 0x44;  // IHL 4
    fix(b);
    CHECK(validate(b.data(), 20) == Verdict::kBadHeaderLength);
    b[0] = 0x46;  // IHL 6 but only 20 bytes there
    fix(b);
    CHECK(validate(b.data(), 20) == Verdict::kBadHeaderLength);
  }
  {
    auto b = ok;
    as_header(b).total_length = be16(19);
    fix(b);
    CHECK(validate(b.data(), 40) == Verdict::kBadTotalLength);
    as_header(b).total_length = be16(41);  // longer than what arrived
    fix(b);
    CHECK(validate(b.data(), 40) == Verdict::kBadTotalLength);
  }
  {
    auto b = ok;
    b[11] ^= 0x40;
    CHECK(validate(b.data(), 40) == Verdict::kBadChecksum);
  }
  for (uint32_t src : {0x00000001u, 0x7F000001u, 0xE0000001u, 0xF0000001u, 0xFFFFFFFFu}) {
    auto b = header(64, 0, src);
    CHECK(validate(b.data(), 40) == Verdict::kMartianSource);
  }
  for (uint32_t dst : {0x00000001u, 0x7F000001u, 0xF0000001u, 0xFFFFFFFFu}) {
    auto b = header(64, 0, 0x0A000001, dst);
    CHECK(validate(b.data(), 40) == Verdict::kMartianDest);
  }
  {
    auto b = header(64, 0, 0x0A000001, 0xE0000005);
    CHECK(validate(b.data(), 40) == Verdict::kMulticastDest);
  }
  {  // a valid header with 4 bytes of options
    uint8_t b[24];
    auto base = ok;
    std::memcpy(b, base.data(), 20);
    b[0] = 0x46;
    b[20] = kNoOp;
    b[21] = kNoOp;
    b[22] = kNoOp;
    b[23] = kEndOfOptions;
    Header& h = *reinterpret_cast<Header*>(b);
    h.total_length = be16(44);
    h.checksum = 0;
    h.checksum = checksum(b, 24);
    CHECK(validate(b, 44) == Verdict::kOptions);
    bool sr = true;
    CHECK(parse_options(h, &sr));
    CHECK_FALSE(sr);
    b[20] = kLooseSourceRoute;  // LSRR, length 3 (fits in the 4 bytes)
    b[21] = 3;
    b[22] = 4;
    CHECK(parse_options(h, &sr));
    CHECK(sr);
    b[21] = 9;  // runs past the header
    CHECK_FALSE(parse_options(h, &sr));
    b[21] = 1;  // shorter than its own kind + length
    CHECK_FALSE(parse_options(h, &sr));
  }
}

TEST_CASE("ipv4 fragments are recognised by MF or offset, not DF", "[router][ipv4]") {
  auto b = header(64, 0);
  Header& h = as_header(b);
  CHECK_FALSE(is_fragment(h));
  h.fragment = be16(0x4000);  // DF only
  CHECK_FALSE(is_fragment(h));
  CHECK(dont_fragment(h));
  h.fragment = be16(0x2000);  // MF: first fragment
  CHECK(is_fragment(h));
  h.fragment = be16(0x0010);  // offset 128 bytes, last fragment
  CHECK(is_fragment(h));
}
