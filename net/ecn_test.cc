#include "net/ecn.h"

#include <catch2/catch.hpp>

#include "net/ip_packet.h"
#include "net/test_packets.h"

using namespace flexplane::net;
using testing::build_packet;
using testing::PacketSpec;

namespace {
uint8_t ecn_of(const std::vector<uint8_t>& p) {
  PacketInfo i;
  REQUIRE(parse_ip_packet(p.data(), p.size(), &i) == ParseError::kOk);
  return i.ecn();
}
}  // namespace

TEST_CASE("CE marking of IPv4 keeps header and transport checksums right", "[net]") {
  for (uint8_t dscp : {0, 10, 46, 63}) {
    for (uint8_t ect : {1, 2}) {
      PacketSpec s;
      s.tos = static_cast<uint8_t>(dscp << 2 | ect);
      for (uint16_t id : {0, 1, 0xffff, 0x1234}) {
        s.ipv4_id = id;
        auto p = build_packet(s);
        REQUIRE(set_ce(p.data(), p.size()) == MarkResult::kMarked);
        CHECK(ecn_of(p) == 3);
        PacketInfo i;
        REQUIRE(parse_ip_packet(p.data(), p.size(), &i) == ParseError::kOk);
        CHECK(i.dscp() == dscp);
        CHECK(ipv4_header_checksum_ok(p.data(), p.size()));
        CHECK(testing::transport_checksum_ok(p));
        // Same bytes as a packet built with CE from the start.
        PacketSpec ce = s;
        ce.tos = static_cast<uint8_t>(dscp << 2 | 3);
        CHECK(p == build_packet(ce));
      }
    }
  }
}

TEST_CASE("CE marking of IPv6 sets the traffic class ECN bits only", "[net]") {
  PacketSpec s;
  s.src = "fd77::10";
  s.dst = "fd77::11";
  s.protocol = kProtoUdp;
  s.tos = 46 << 2 | 2;
  auto p = build_packet(s);
  REQUIRE(set_ce(p.data(), p.size()) == MarkResult::kMarked);
  PacketSpec ce = s;
  ce.tos = 46 << 2 | 3;
  CHECK(p == build_packet(ce));
  CHECK(testing::transport_checksum_ok(p));
}

TEST_CASE("Not-ECT and CE packets are left alone; garbage is refused", "[net]") {
  PacketSpec s;
  s.tos = 0;
  auto p = build_packet(s);
  const auto copy = p;
  CHECK(set_ce(p.data(), p.size()) == MarkResult::kNotEct);
  CHECK(p == copy);
  s.tos = 3;
  p = build_packet(s);
  CHECK(set_ce(p.data(), p.size()) == MarkResult::kAlreadyCe);
  uint8_t junk[4] = {0x45, 0x02, 0, 0};
  CHECK(set_ce(junk, sizeof junk) == MarkResult::kMalformed);
  uint8_t v5[40] = {0x50};
  CHECK(set_ce(v5, sizeof v5) == MarkResult::kMalformed);
  CHECK(set_ce(junk, 0) == MarkResult::kMalformed);
}
