#include "net/ip_packet.h"

#include <catch2/catch.hpp>

#include "net/flow_key.h"
#include "net/test_packets.h"

using namespace flexplane::net;
using testing::build_packet;
using testing::PacketSpec;

TEST_CASE("IPv4 TCP: addresses, ports, flags, ECN, DSCP and payload", "[net]") {
  PacketSpec s;
  s.tos = 46 << 2 | 2;  // EF, ECT(0)
  s.payload = 1448;
  s.tcp_seq = 0x01020304;
  s.tcp_flags = kTcpAck | kTcpPsh;
  const auto p = build_packet(s);
  PacketInfo i;
  REQUIRE(parse_ip_packet(p.data(), p.size(), &i) == ParseError::kOk);
  CHECK(i.ip_version == 4);
  CHECK(i.ip_length == 1488);
  CHECK(i.ip_header_len == 20);
  CHECK(i.protocol == kProtoTcp);
  CHECK(i.src.to_string() == "10.0.0.1");
  CHECK(i.dst.to_string() == "10.0.0.2");
  CHECK(i.sport == 40000);
  CHECK(i.dport == 80);
  CHECK(i.tcp_seq == 0x01020304);
  CHECK(i.tcp_flags == (kTcpAck | kTcpPsh));
  CHECK(i.dscp() == 46);
  CHECK(i.ecn() == 2);
  CHECK(i.payload_offset == 40);
  CHECK(i.payload_len == 1448);
  CHECK(ipv4_header_checksum_ok(p.data(), p.size()));
  CHECK(testing::transport_checksum_ok(p));
}

TEST_CASE("IPv6 UDP: traffic class, addresses, payload", "[net]") {
  PacketSpec s;
  s.src = "fd77::10";
  s.dst = "fd77::11";
  s.protocol = kProtoUdp;
  s.tos = 10 << 2 | 1;  // AF11, ECT(1)
  s.payload = 33;
  const auto p = build_packet(s);
  PacketInfo i;
  REQUIRE(parse_ip_packet(p.data(), p.size(), &i) == ParseError::kOk);
  CHECK(i.ip_version == 6);
  CHECK(i.ip_length == 40 + 8 + 33);
  CHECK(i.protocol == kProtoUdp);
  CHECK(i.src.to_string() == "fd77::10");
  CHECK(i.dscp() == 10);
  CHECK(i.ecn() == 1);
  CHECK(i.payload_len == 33);
  CHECK(testing::transport_checksum_ok(p));
}

TEST_CASE("IPv6 extension headers are walked to the transport header", "[net]") {
  PacketSpec s;
  s.src = "fd77::1";
  s.dst = "fd77::2";
  s.payload = 10;
  auto p = build_packet(s);
  // Insert an 8-byte destination-options header before TCP.
  std::vector<uint8_t> ext = {kProtoTcp, 0, 1, 4, 0, 0, 0, 0};  // next = TCP, len 0 (8 bytes), PadN
  p.insert(p.begin() + 40, ext.begin(), ext.end());
  p[6] = 60;
  store_be16(&p[4], static_cast<uint16_t>(load_be16(&p[4]) + 8));
  PacketInfo i;
  REQUIRE(parse_ip_packet(p.data(), p.size(), &i) == ParseError::kOk);
  CHECK(i.protocol == kProtoTcp);
  CHECK(i.l4_offset == 48);
  CHECK(i.dport == 80);
  CHECK(i.payload_len == 10);

  // Truncate inside the extension header.
  std::vector<uint8_t> cut(p.begin(), p.begin() + 44);
  store_be16(&cut[4], 4);
  CHECK(parse_ip_packet(cut.data(), cut.size(), &i) == ParseError::kExtTruncated);
}

TEST_CASE("a later IPv4 fragment has no transport header", "[net]") {
  auto p = build_packet(PacketSpec{});
  store_be16(&p[6], 0x2000 | 185);  // MF, offset 1480 bytes
  PacketInfo i;
  REQUIRE(parse_ip_packet(p.data(), p.size(), &i) == ParseError::kOk);
  CHECK(i.fragment_offset == 185);
  CHECK(i.more_fragments);
  CHECK(i.l4_offset == 0);
  CHECK_FALSE(i.has_ports());
  CHECK(i.payload_len == p.size() - 20);
}

TEST_CASE("malformed packets are named, never read past the buffer", "[net]") {
  PacketInfo i;
  const auto good = build_packet(PacketSpec{});
  CHECK(parse_ip_packet(good.data(), 0, &i) == ParseError::kEmpty);
  CHECK(parse_ip_packet(good.data(), 19, &i) == ParseError::kIpTruncated);
  auto bad = good;
  bad[0] = 0x55;
  CHECK(parse_ip_packet(bad.data(), bad.size(), &i) == ParseError::kBadVersion);
  bad = good;
  bad[0] = 0x44;
  CHECK(parse_ip_packet(bad.data(), bad.size(), &i) == ParseError::kBadIhl);
  bad = good;
  store_be16(&bad[2], static_cast<uint16_t>(bad.size() + 1));
  CHECK(parse_ip_packet(bad.data(), bad.size(), &i) == ParseError::kBadLength);
  bad = good;
  bad[32] = 0x20;  // TCP data offset 2 words
  CHECK(parse_ip_packet(bad.data(), bad.size(), &i) == ParseError::kBadTcpOffset);
  // IPv4 total length shorter than the TCP header.
  bad = good;
  store_be16(&bad[2], 30);
  CHECK(parse_ip_packet(bad.data(), bad.size(), &i) == ParseError::kL4Truncated);
  // Ethernet padding after the IP packet is ignored.
  auto padded = good;
  padded.resize(padded.size() + 6, 0);
  REQUIRE(parse_ip_packet(padded.data(), padded.size(), &i) == ParseError::kOk);
  CHECK(i.ip_length == good.size());
  // Every prefix of a valid packet parses or fails cleanly.
  for (size_t n = 0; n <= good.size(); ++n) parse_ip_packet(good.data(), n, &i);
  for (unsigned e = 0; e < kNumParseErrors; ++e) CHECK(std::string(parse_error_name(ParseError(e))) != "unknown");
}

TEST_CASE("flow keys: equal for one flow, reversed for the other direction", "[net]") {
  PacketSpec a;
  PacketSpec b = a;
  b.payload = 5;
  PacketSpec back = a;
  std::swap(back.src, back.dst);
  std::swap(back.sport, back.dport);
  PacketInfo ia, ib, ic;
  const auto pa = build_packet(a), pb = build_packet(b), pc = build_packet(back);
  REQUIRE(parse_ip_packet(pa.data(), pa.size(), &ia) == ParseError::kOk);
  REQUIRE(parse_ip_packet(pb.data(), pb.size(), &ib) == ParseError::kOk);
  REQUIRE(parse_ip_packet(pc.data(), pc.size(), &ic) == ParseError::kOk);
  CHECK(FlowKey::of(ia) == FlowKey::of(ib));
  CHECK(hash_flow(FlowKey::of(ia)) == hash_flow(FlowKey::of(ib)));
  CHECK_FALSE(FlowKey::of(ia) == FlowKey::of(ic));
  CHECK(FlowKey::of(ia).reversed() == FlowKey::of(ic));
}

TEST_CASE("addresses parse and print", "[net]") {
  IpAddress a;
  REQUIRE(IpAddress::parse("10.77.0.10", &a));
  CHECK(a.family == 4);
  CHECK(a == IpAddress::v4(0x0a4d000a));
  REQUIRE(IpAddress::parse("fd77::a", &a));
  CHECK(a.family == 6);
  CHECK(a.to_string() == "fd77::a");
  CHECK_FALSE(IpAddress::parse("10.77.0", &a));
}
