#include "net/ip_packet.h"

#include <arpa/inet.h>

namespace flexplane::net {

IpAddress IpAddress::v4(uint32_t host_order) {
  IpAddress a;
  a.family = 4;
  a.bytes[0] = static_cast<uint8_t>(host_order >> 24);
  a.bytes[1] = static_cast<uint8_t>(host_order >> 16);
  a.bytes[2] = static_cast<uint8_t>(host_order >> 8);
  a.bytes[3] = static_cast<uint8_t>(host_order);
  return a;
}

IpAddress IpAddress::from_bytes(uint8_t family, const uint8_t* b) {
  IpAddress a;
  a.family = family;
  std::memcpy(a.bytes, b, family == 4 ? 4 : 16);
  return a;
}

bool IpAddress::parse(const std::string& text, IpAddress* out) {
  IpAddress a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes) == 1) {
    a.family = 4;
  } else if (inet_pton(AF_INET6, text.c_str(), a.bytes) == 1) {
    a.family = 6;
  } else {
    return false;
  }
  *out = a;
  return true;
}

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN] = "-";
  if (family == 4) inet_ntop(AF_INET, bytes, buf, sizeof buf);
  if (family == 6) inet_ntop(AF_INET6, bytes, buf, sizeof buf);
  return buf;
}

const char* parse_error_name(ParseError e) {
  switch (e) {
    case ParseError::kOk: return "ok";
    case ParseError::kEmpty: return "empty";
    case ParseError::kBadVersion: return "bad_version";
    case ParseError::kIpTruncated: return "ip_truncated";
    case ParseError::kBadIhl: return "bad_ihl";
    case ParseError::kBadLength: return "bad_length";
    case ParseError::kExtTruncated: return "ext_truncated";
    case ParseError::kL4Truncated: return "l4_truncated";
    case ParseError::kBadTcpOffset: return "bad_tcp_offset";
  }
  return "unknown";
}

namespace {

// TCP / UDP header at info->l4_offset (already set); the IP packet ends at `end`.
ParseError parse_transport(const uint8_t* pkt, uint32_t end, PacketInfo* info) {
  const uint32_t off = info->l4_offset;
  if (info->protocol == kProtoTcp) {
    if (end < off + 20) return ParseError::kL4Truncated;
    const uint8_t* t = pkt + off;
    info->sport = load_be16(t);
    info->dport = load_be16(t + 2);
    info->tcp_seq = load_be32(t + 4);
    info->tcp_ack = load_be32(t + 8);
    const uint32_t doff = uint32_t(t[12] >> 4) * 4;
    info->tcp_flags = t[13];
    if (doff < 20 || off + doff > end) return ParseError::kBadTcpOffset;
    info->payload_offset = off + doff;
  } else if (info->protocol == kProtoUdp) {
    if (end < off + 8) return ParseError::kL4Truncated;
    info->sport = load_be16(pkt + off);
    info->dport = load_be16(pkt + off + 2);
    info->payload_offset = off + 8;
  } else if (info->protocol == kProtoIcmp || info->protocol == kProtoIcmpv6) {
    if (end < off + 4) return ParseError::kL4Truncated;
    info->icmp_type = pkt[off];
    info->payload_offset = off;
  } else {
    info->payload_offset = off;
  }
  info->payload_len = end - info->payload_offset;
  return ParseError::kOk;
}

ParseError parse_v4(const uint8_t* pkt, size_t len, PacketInfo* info) {
  if (len < 20) return ParseError::kIpTruncated;
  const uint32_t ihl = uint32_t(pkt[0] & 0x0f) * 4;
  if (ihl < 20 || ihl > len) return ParseError::kBadIhl;
  const uint32_t total = load_be16(pkt + 2);
  if (total < ihl || total > len) return ParseError::kBadLength;
  info->ip_version = 4;
  info->ip_header_len = static_cast<uint8_t>(ihl);
  info->ip_length = total;
  info->tos = pkt[1];
  const uint16_t frag = load_be16(pkt + 6);
  info->more_fragments = frag & 0x2000;
  info->fragment_offset = frag & 0x1fff;
  info->ttl = pkt[8];
  info->protocol = pkt[9];
  info->src = IpAddress::from_bytes(4, pkt + 12);
  info->dst = IpAddress::from_bytes(4, pkt + 16);
  info->payload_offset = ihl;
  info->payload_len = total - ihl;
  if (info->fragment_offset != 0) return ParseError::kOk;  // no transport header in later fragments
  info->l4_offset = ihl;
  return parse_transport(pkt, total, info);
}

ParseError parse_v6(const uint8_t* pkt, size_t len, PacketInfo* info) {
  if (len < 40) return ParseError::kIpTruncated;
  const uint32_t total = 40 + uint32_t(load_be16(pkt + 4));  // jumbograms (payload length 0) are not supported
  if (total > len) return ParseError::kBadLength;
  info->ip_version = 6;
  info->ip_header_len = 40;
  info->ip_length = total;
  info->tos = static_cast<uint8_t>((pkt[0] & 0x0f) << 4 | pkt[1] >> 4);
  info->ttl = pkt[7];
  info->src = IpAddress::from_bytes(6, pkt + 8);
  info->dst = IpAddress::from_bytes(6, pkt + 24);
  uint8_t next = pkt[6];
  uint32_t off = 40;
  for (;;) {
    if (next == 0 || next == 43 || next == 60) {  // hop-by-hop, routing, destination options
      if (total < off + 8) return ParseError::kExtTruncated;
      const uint32_t ext = (uint32_t(pkt[off + 1]) + 1) * 8;
      if (total < off + ext) return ParseError::kExtTruncated;
      next = pkt[off];
      off += ext;
    } else if (next == 44) {  // fragment
      if (total < off + 8) return ParseError::kExtTruncated;
      const uint16_t fo = load_be16(pkt + off + 2);
      info->fragment_offset = fo >> 3;
      info->more_fragments = fo & 1;
      next = pkt[off];
      off += 8;
    } else if (next == 51) {  // authentication header: length in 4-byte units, minus 2
      if (total < off + 8) return ParseError::kExtTruncated;
      const uint32_t ext = (uint32_t(pkt[off + 1]) + 2) * 4;
      if (total < off + ext) return ParseError::kExtTruncated;
      next = pkt[off];
      off += ext;
    } else {
      break;
    }
  }
  info->protocol = next;
  info->payload_offset = off;
  info->payload_len = total - off;
  if (info->fragment_offset != 0) return ParseError::kOk;
  info->l4_offset = off;
  return parse_transport(pkt, total, info);
}

}  // namespace

ParseError parse_ip_packet(const uint8_t* pkt, size_t len, PacketInfo* out) {
  *out = PacketInfo{};
  if (len == 0) return ParseError::kEmpty;
  switch (pkt[0] >> 4) {
    case 4: return parse_v4(pkt, len, out);
    case 6: return parse_v6(pkt, len, out);
    default: return ParseError::kBadVersion;
  }
}

bool ipv4_header_checksum_ok(const uint8_t* pkt, size_t len) {
  if (len < 20 || (pkt[0] >> 4) != 4) return false;
  const size_t ihl = size_t(pkt[0] & 0x0f) * 4;
  if (ihl < 20 || ihl > len) return false;
  return checksum(pkt, ihl) == 0;
}

}  // namespace flexplane::net
