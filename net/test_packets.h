// Test helper: builds well-formed IPv4 / IPv6 TCP and UDP packets with
// correct checksums (IPv4 header, TCP / UDP over the pseudo-header), for the
// net/ and endpoint tests. Not used by production code.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "net/checksum.h"
#include "net/ip_packet.h"

namespace flexplane::net::testing {

struct PacketSpec {
  std::string src = "10.0.0.1", dst = "10.0.0.2";
  uint8_t protocol = kProtoTcp;
  uint16_t sport = 40000, dport = 80;
  uint8_t tos = 0;               // DSCP << 2 | ECN
  uint32_t payload = 100;        // bytes of transport payload
  uint32_t tcp_seq = 1000;
  uint8_t tcp_flags = kTcpAck;
  uint16_t ipv4_id = 7;
};

inline uint32_t pseudo_sum(const IpAddress& s, const IpAddress& d, uint8_t proto, uint32_t l4len) {
  uint32_t sum = sum_bytes(s.bytes, s.family == 4 ? 4 : 16);
  sum = sum_bytes(d.bytes, d.family == 4 ? 4 : 16, sum);
  return sum + proto + (l4len >> 16) + (l4len & 0xffff);
}

inline std::vector<uint8_t> build_packet(const PacketSpec& s) {
  IpAddress src, dst;
  if (!IpAddress::parse(s.src, &src) || !IpAddress::parse(s.dst, &dst)) return {};
  const uint32_t l4h = s.protocol == kProtoTcp ? 20 : 8;
  const uint32_t l4len = l4h + s.payload;
  const uint32_t iph = src.family == 4 ? 20 : 40;
  std::vector<uint8_t> p(iph + l4len, 0);
  if (src.family == 4) {
    p[0] = 0x45;
    p[1] = s.tos;
    store_be16(&p[2], static_cast<uint16_t>(p.size()));
    store_be16(&p[4], s.ipv4_id);
    p[6] = 0x40;  // DF
    p[8] = 64;
    p[9] = s.protocol;
    std::memcpy(&p[12], src.bytes, 4);
    std::memcpy(&p[16], dst.bytes, 4);
    store_be16(&p[10], checksum(p.data(), 20));
  } else {
    p[0] = static_cast<uint8_t>(0x60 | s.tos >> 4);
    p[1] = static_cast<uint8_t>(s.tos << 4);
    store_be16(&p[4], static_cast<uint16_t>(l4len));
    p[6] = s.protocol;
    p[7] = 64;
    std::memcpy(&p[8], src.bytes, 16);
    std::memcpy(&p[24], dst.bytes, 16);
  }
  uint8_t* l4 = &p[iph];
  store_be16(l4, s.sport);
  store_be16(l4 + 2, s.dport);
  for (uint32_t i = 0; i < s.payload; ++i) l4[l4h + i] = static_cast<uint8_t>(i * 7 + 3);
  if (s.protocol == kProtoTcp) {
    store_be32(l4 + 4, s.tcp_seq);
    l4[12] = 5 << 4;
    l4[13] = s.tcp_flags;
    store_be16(l4 + 14, 65535);
    store_be16(l4 + 16, checksum(l4, l4len, pseudo_sum(src, dst, kProtoTcp, l4len)));
  } else {
    store_be16(l4 + 4, static_cast<uint16_t>(l4len));
    uint16_t c = checksum(l4, l4len, pseudo_sum(src, dst, kProtoUdp, l4len));
    store_be16(l4 + 6, c == 0 ? 0xffff : c);
  }
  return p;
}

// True when the transport checksum of a packet built above is right.
inline bool transport_checksum_ok(const std::vector<uint8_t>& p) {
  PacketInfo info;
  if (parse_ip_packet(p.data(), p.size(), &info) != ParseError::kOk || !info.l4_offset) return false;
  const uint32_t l4len = info.ip_length - info.l4_offset;
  return checksum(&p[info.l4_offset], l4len, pseudo_sum(info.src, info.dst, info.protocol, l4len)) == 0;
}

}  // namespace flexplane::net::testing
