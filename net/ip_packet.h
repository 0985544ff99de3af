// One parser for IPv4 / IPv6 packets and their TCP / UDP headers.
//
// Principles
//  - Input is a packet starting at its IP header (what NFQUEUE, a tap or a
//    DPDK mbuf past Ethernet hands over). Every length is checked against
//    the buffer before a byte is read; the parser never writes.
//  - The result says why a packet is unusable (`ParseError`, named for
//    counters), never throws and never allocates.
//  - IPv6 extension headers (hop-by-hop, routing, destination options,
//    fragment, AH) are walked to find the transport header. A fragment
//    other than the first has no transport header (`fragment_offset != 0`).
//  - The IPv4 header checksum is not verified here (packets from the local
//    stack carry a valid one); `ipv4_header_checksum_ok()` does that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "net/checksum.h"

namespace flexplane::net {

inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoIcmpv6 = 58;

inline constexpr uint8_t kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04, kTcpPsh = 0x08, kTcpAck = 0x10;

// An IPv4 or IPv6 address; IPv4 uses the first 4 bytes (the rest zero).
struct IpAddress {
  uint8_t family = 0;  // 4 or 6; 0 = none
  uint8_t bytes[16] = {};

  static IpAddress v4(uint32_t host_order);
  static IpAddress from_bytes(uint8_t family, const uint8_t* b);
  // "10.0.0.1" or "fd00::1"; false if neither.
  static bool parse(const std::string& text, IpAddress* out);
  std::string to_string() const;
  bool operator==(const IpAddress& o) const { return family == o.family && std::memcmp(bytes, o.bytes, 16) == 0; }
  bool operator!=(const IpAddress& o) const { return !(*this == o); }
};

enum class ParseError : uint8_t {
  kOk = 0,
  kEmpty,            // zero bytes
  kBadVersion,       // neither 4 nor 6
  kIpTruncated,      // shorter than the IP header
  kBadIhl,           // IPv4 IHL < 5 or beyond the buffer
  kBadLength,        // IP length field smaller than the header or larger than the buffer
  kExtTruncated,     // IPv6 extension header runs past the packet
  kL4Truncated,      // TCP / UDP header runs past the packet
  kBadTcpOffset,     // TCP data offset < 5 or beyond the packet
};
inline constexpr unsigned kNumParseErrors = 9;
const char* parse_error_name(ParseError e);

struct PacketInfo {
  uint8_t ip_version = 0;       // 4 or 6
  uint8_t ip_header_len = 0;    // IPv4 IHL x 4; IPv6 40 (fixed header only)
  uint32_t ip_length = 0;       // bytes of the IP packet per its header (<= buffer; padding after it is ignored)
  uint8_t tos = 0;              // IPv4 TOS / IPv6 traffic class: DSCP << 2 | ECN
  uint8_t protocol = 0;         // transport protocol (after IPv6 extension headers)
  uint8_t ttl = 0;              // TTL / hop limit
  IpAddress src, dst;
  bool more_fragments = false;  // IPv4 MF / IPv6 fragment header M flag
  uint16_t fragment_offset = 0; // in 8-byte units; != 0: no transport header here
  uint32_t l4_offset = 0;       // transport header offset; 0 = none parsed (other protocol or later fragment)
  uint16_t sport = 0, dport = 0;  // TCP / UDP ports
  uint8_t tcp_flags = 0;
  uint32_t tcp_seq = 0, tcp_ack = 0;
  uint8_t icmp_type = 0;        // ICMP / ICMPv6 type (first byte of its header)
  uint32_t payload_offset = 0;  // transport payload (TCP / UDP); for others: after the IP headers
  uint32_t payload_len = 0;

  uint8_t dscp() const { return tos >> 2; }
  uint8_t ecn() const { return tos & 3; }
  bool has_ports() const { return l4_offset != 0 && (protocol == kProtoTcp || protocol == kProtoUdp); }
};

ParseError parse_ip_packet(const uint8_t* pkt, size_t len, PacketInfo* out);

// True when the IPv4 header at `pkt` (IHL x 4 bytes, within len) sums right.
bool ipv4_header_checksum_ok(const uint8_t* pkt, size_t len);

}  // namespace flexplane::net
