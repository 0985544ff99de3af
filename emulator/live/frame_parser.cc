#include "emulator/live/frame_parser.h"

#include <netinet/in.h>
#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <cstring>

#include "net/ip_packet.h"

namespace flexplane::live {

namespace {
inline uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

ParsedFrame dropped(RxDrop why) {
  ParsedFrame f;
  f.drop = why;
  return f;
}
}  // namespace

const char* rx_drop_name(RxDrop r) {
  switch (r) {
    case RxDrop::kRunt: return "runt";
    case RxDrop::kMultiSegment: return "multi_segment";
    case RxDrop::kNonIpv4: return "non_ipv4";
    case RxDrop::kArpMalformed: return "arp_malformed";
    case RxDrop::kArpIgnored: return "arp_ignored";
    case RxDrop::kIpv6Ctrl: return "ipv6_ctrl";
    case RxDrop::kEthWrongDst: return "eth_wrong_dst";
    case RxDrop::kIpTruncated: return "ip_truncated";
    case RxDrop::kIpBadVersion: return "ip_bad_version";
    case RxDrop::kIpBadIhl: return "ip_bad_ihl";
    case RxDrop::kIpBadLength: return "ip_bad_length";
    case RxDrop::kIpBadChecksum: return "ip_bad_checksum";
    case RxDrop::kIpFragment: return "ip_fragment";
    case RxDrop::kIpNotUdp: return "ip_not_udp";
    case RxDrop::kIpWrongDst: return "ip_wrong_dst";
    case RxDrop::kUdpTruncated: return "udp_truncated";
    case RxDrop::kUdpBadLength: return "udp_bad_length";
    case RxDrop::kUdpWrongPort: return "udp_wrong_port";
    case RxDrop::kUnknownSrc: return "unknown_src";
    case RxDrop::kProtoDecode: return "proto_decode";
    case RxDrop::kProtoStale: return "proto_stale";
    case RxDrop::kProtoOther: return "proto_other";
    case RxDrop::kCount: break;
  }
  return "?";
}

bool rx_drop_is_malformed(RxDrop r) {
  return r != RxDrop::kArpIgnored && r != RxDrop::kIpv6Ctrl && r != RxDrop::kProtoStale;
}

namespace {
// IPv6 neighbour discovery and multicast listener messages (RFC 4861, 2710,
// 3810: ICMPv6 types 130-137 and 143), the link's own control traffic: every
// IPv6 host on the emulator's segment sends them to multicast groups (so they
// reach us), exactly what the endpoint qdisc bypasses as control. MLD comes
// after a hop-by-hop header (router alert), so extension headers are skipped.
bool ipv6_link_control(const uint8_t* ip6, uint32_t avail) {
  constexpr uint32_t kIp6Len = 40;
  if (avail < kIp6Len || (ip6[0] >> 4) != 6) return false;
  uint8_t next = ip6[6];
  uint32_t off = kIp6Len;
  for (int i = 0; i < 4 && (next == 0 || next == 43 || next == 60); i++) {  // hop-by-hop, routing, dest. options
    if (avail < off + 8) return false;
    next = ip6[off];
    off += (ip6[off + 1] + 1u) * 8u;
  }
  if (next != 58 || avail <= off) return false;  // ICMPv6
  const uint8_t type = ip6[off];
  return (type >= 130 && type <= 137) || type == 143;
}
}  // namespace

ParsedFrame parse_frame(uint8_t* eth, uint32_t len, const FrameFilter& us) {
  if (len < kEthLen) return dropped(RxDrop::kRunt);
  const uint16_t type = rd16(eth + 12);
  if (type == RTE_ETHER_TYPE_ARP) {
    // Ethernet/IPv4 ARP: htype 1, ptype 0x0800, hlen 6, plen 4, op, sha, spa, tha, tpa.
    uint8_t* a = eth + kEthLen;
    if (len - kEthLen < sizeof(rte_arp_hdr) || rd16(a) != RTE_ARP_HRD_ETHER || rd16(a + 2) != RTE_ETHER_TYPE_IPV4 ||
        a[4] != 6 || a[5] != 4)
      return dropped(RxDrop::kArpMalformed);
    uint32_t tip;
    std::memcpy(&tip, &reinterpret_cast<rte_arp_hdr*>(a)->arp_data.arp_tip, 4);
    if (rd16(a + 6) != RTE_ARP_OP_REQUEST || tip != us.ip_be) return dropped(RxDrop::kArpIgnored);
    ParsedFrame f;
    f.kind = ParsedFrame::kArpRequest;
    f.arp = a;
    return f;
  }
  if (type == RTE_ETHER_TYPE_IPV6 && ipv6_link_control(eth + kEthLen, len - kEthLen))
    return dropped(RxDrop::kIpv6Ctrl);
  if (type != RTE_ETHER_TYPE_IPV4) return dropped(RxDrop::kNonIpv4);
  const auto* dst = reinterpret_cast<const rte_ether_addr*>(eth);
  if (!rte_is_broadcast_ether_addr(dst) && std::memcmp(dst, us.mac, 6) != 0) return dropped(RxDrop::kEthWrongDst);
  const uint8_t* ip = eth + kEthLen;
  const uint32_t avail = len - kEthLen;  // may include Ethernet padding
  if (avail < kIpLen) return dropped(RxDrop::kIpTruncated);
  if ((ip[0] >> 4) != 4) return dropped(RxDrop::kIpBadVersion);
  // The project's one IP parser (net/) checks every length; the live
  // protocol then wants an unfragmented IPv4/UDP datagram for us.
  net::PacketInfo pi;
  bool udp_truncated = false;
  switch (net::parse_ip_packet(ip, avail, &pi)) {
    case net::ParseError::kOk: break;
    case net::ParseError::kBadIhl:
      return dropped((ip[0] & 0xfu) * 4u < kIpLen ? RxDrop::kIpBadIhl : RxDrop::kIpTruncated);
    case net::ParseError::kBadLength: return dropped(RxDrop::kIpBadLength);
    case net::ParseError::kL4Truncated:
    case net::ParseError::kBadTcpOffset: udp_truncated = true; break;  // judged after the IP checks below
    default: return dropped(RxDrop::kIpTruncated);
  }
  if (!net::ipv4_header_checksum_ok(ip, avail)) return dropped(RxDrop::kIpBadChecksum);
  if (pi.more_fragments || pi.fragment_offset != 0) return dropped(RxDrop::kIpFragment);  // never fragmented
  if (pi.protocol != net::kProtoUdp) return dropped(RxDrop::kIpNotUdp);
  if (std::memcmp(pi.dst.bytes, &us.ip_be, 4) != 0) return dropped(RxDrop::kIpWrongDst);
  if (udp_truncated) return dropped(RxDrop::kUdpTruncated);
  const uint8_t* udp = ip + pi.l4_offset;
  const uint32_t l4 = pi.ip_length - pi.l4_offset;
  const uint32_t ulen = rd16(udp + 4);
  if (ulen < kUdpLen || ulen > l4) return dropped(RxDrop::kUdpBadLength);
  if (htons(pi.dport) != us.port_be) return dropped(RxDrop::kUdpWrongPort);
  // The UDP checksum is not verified: kernel senders with tx checksum
  // offload (veth) hand over partial checksums; the protocol decoders
  // validate every field instead (docs/live.md).
  ParsedFrame f;
  f.kind = ParsedFrame::kUdp;
  f.ip = ip;
  f.udp = udp;
  f.payload = udp + kUdpLen;
  f.payload_len = ulen - kUdpLen;
  return f;
}

uint16_t make_arp_reply(uint8_t* eth, uint8_t* a, const uint8_t* mac, uint32_t ip_be) {
  auto* arp = reinterpret_cast<rte_arp_hdr*>(a);
  rte_arp_ipv4 d;
  std::memcpy(&d, &arp->arp_data, sizeof d);
  arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
  d.arp_tha = d.arp_sha;
  d.arp_tip = d.arp_sip;
  std::memcpy(&d.arp_sha, mac, 6);
  d.arp_sip = ip_be;
  std::memcpy(&arp->arp_data, &d, sizeof d);
  std::memcpy(eth, &d.arp_tha, 6);  // to the requester
  std::memcpy(eth + 6, mac, 6);
  // A minimal ARP frame (drops any padding / trailer we were given).
  return static_cast<uint16_t>(kEthLen + sizeof(rte_arp_hdr));
}

uint16_t build_udp_frame(uint8_t* f, const UdpEnds& from, const UdpEnds& to, uint16_t ip_id, uint16_t payload_len) {
  auto* eth = reinterpret_cast<rte_ether_hdr*>(f);
  std::memcpy(&eth->dst_addr, to.mac, 6);
  std::memcpy(&eth->src_addr, from.mac, 6);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(f + kEthLen);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->type_of_service = 0;
  ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(kIpLen + kUdpLen + payload_len));
  ip->packet_id = rte_cpu_to_be_16(ip_id);
  ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
  ip->time_to_live = 64;
  ip->next_proto_id = IPPROTO_UDP;
  ip->hdr_checksum = 0;
  ip->src_addr = from.ip_be;
  ip->dst_addr = to.ip_be;
  auto* udp = reinterpret_cast<rte_udp_hdr*>(f + kEthLen + kIpLen);
  udp->src_port = from.port_be;
  udp->dst_port = to.port_be;
  udp->dgram_len = rte_cpu_to_be_16(static_cast<uint16_t>(kUdpLen + payload_len));
  udp->dgram_cksum = 0;
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
  return static_cast<uint16_t>(kUdpFrameHeaders + payload_len);
}

}  // namespace flexplane::live
