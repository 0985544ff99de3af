#include "emulator/live/frame_parser.h"

#include <netinet/in.h>
#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <cstring>

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

bool rx_drop_is_malformed(RxDrop r) { return r != RxDrop::kArpIgnored && r != RxDrop::kProtoStale; }

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
  if (type != RTE_ETHER_TYPE_IPV4) return dropped(RxDrop::kNonIpv4);
  const auto* dst = reinterpret_cast<const rte_ether_addr*>(eth);
  if (!rte_is_broadcast_ether_addr(dst) && std::memcmp(dst, us.mac, 6) != 0) return dropped(RxDrop::kEthWrongDst);
  const uint8_t* ip = eth + kEthLen;
  const uint32_t avail = len - kEthLen;  // may include Ethernet padding
  if (avail < kIpLen) return dropped(RxDrop::kIpTruncated);
  if ((ip[0] >> 4) != 4) return dropped(RxDrop::kIpBadVersion);
  const uint32_t ihl = (ip[0] & 0xfu) * 4u;
  if (ihl < kIpLen) return dropped(RxDrop::kIpBadIhl);
  if (avail < ihl) return dropped(RxDrop::kIpTruncated);
  const uint32_t total = rd16(ip + 2);
  if (total < ihl || total > avail) return dropped(RxDrop::kIpBadLength);
  if (rte_raw_cksum(ip, ihl) != 0xffff) return dropped(RxDrop::kIpBadChecksum);
  if (rd16(ip + 6) & 0x3fffu) return dropped(RxDrop::kIpFragment);  // MF or a fragment offset
  if (ip[9] != IPPROTO_UDP) return dropped(RxDrop::kIpNotUdp);
  uint32_t dst_ip_be;
  std::memcpy(&dst_ip_be, ip + 16, 4);
  if (dst_ip_be != us.ip_be) return dropped(RxDrop::kIpWrongDst);
  const uint8_t* udp = ip + ihl;
  const uint32_t l4 = total - ihl;
  if (l4 < kUdpLen) return dropped(RxDrop::kUdpTruncated);
  const uint32_t ulen = rd16(udp + 4);
  if (ulen < kUdpLen || ulen > l4) return dropped(RxDrop::kUdpBadLength);
  uint16_t dport_be;
  std::memcpy(&dport_be, udp + 2, 2);
  if (dport_be != us.port_be) return dropped(RxDrop::kUdpWrongPort);
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
