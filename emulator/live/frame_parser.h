// Ethernet / ARP / IPv4 / UDP framing of the live protocol's datagrams: what
// the communication core receives (parse_frame: every field bounds-checked,
// a bad frame gets a reason, never a crash) and what it sends (ARP replies,
// UDP datagrams with both checksums computed in software).
//
// Kept apart from the protocol glue (comm_core.cc). The IPv4 / UDP headers
// are parsed by the project's one IP parser (net/ip_packet.h); this file adds
// Ethernet, ARP and what the live protocol requires of a datagram.
#pragma once

#include <cstdint>

namespace flexplane::live {

inline constexpr uint32_t kEthLen = 14;
inline constexpr uint32_t kIpLen = 20;
inline constexpr uint32_t kUdpLen = 8;
inline constexpr uint32_t kUdpFrameHeaders = kEthLen + kIpLen + kUdpLen;  // 42: frames we build

// Why a received frame was dropped before reaching a protocol connection (or
// by it). Names are the CSV / console names.
enum class RxDrop : uint8_t {
  kRunt,             // shorter than an Ethernet header
  kMultiSegment,     // chained mbuf (jumbo frame); never expected
  kNonIpv4,          // ethertype neither IPv4 nor ARP (IPv6, VLAN, LLDP, ...)
  kArpMalformed,     // ARP too short, or not Ethernet/IPv4 ARP
  kArpIgnored,       // well-formed ARP that is not a request for our address
  kIpv6Ctrl,         // IPv6 neighbour discovery / multicast listener message (link control, not for us)
  kEthWrongDst,      // unicast frame to another MAC
  kIpTruncated,      // shorter than the IPv4 header (incl. options)
  kIpBadVersion,     // version != 4
  kIpBadIhl,         // header length < 20
  kIpBadLength,      // total_length < header or > frame
  kIpBadChecksum,    // header checksum wrong
  kIpFragment,       // MF set or fragment offset != 0 (the protocol never fragments)
  kIpNotUdp,         // ICMP, TCP, ...
  kIpWrongDst,       // not addressed to live.emulator_ip
  kUdpTruncated,     // IP payload shorter than a UDP header
  kUdpBadLength,     // UDP length < 8 or > IP payload
  kUdpWrongPort,     // not live.udp_port
  kUnknownSrc,       // source address not in live.endpoint_ips (HELLOs get REJECT)
  kProtoDecode,      // fp_emu_rx: undecodable datagram (ETRUNC, EMAGIC, ELEN, EFIELD, ...)
  kProtoStale,       // fp_emu_rx: well-formed, wrong session/state (answered with RESET)
  kProtoOther,       // fp_emu_rx: any other refusal
  kCount
};
inline constexpr unsigned kNumRxDrops = static_cast<unsigned>(RxDrop::kCount);
const char* rx_drop_name(RxDrop r);
bool rx_drop_is_malformed(RxDrop r);  // kArpIgnored, kIpv6Ctrl, kProtoStale: not malformed, just not for us

// Where we listen: frames for other MACs, addresses or ports are dropped.
struct FrameFilter {
  const uint8_t* mac = nullptr;  // 6 bytes
  uint32_t ip_be = 0;
  uint16_t port_be = 0;
};

struct ParsedFrame {
  enum Kind : uint8_t { kDrop, kArpRequest, kUdp } kind = kDrop;
  RxDrop drop = RxDrop::kCount;  // kDrop: why
  uint8_t* arp = nullptr;        // kArpRequest: the ARP header (a request for our address)
  const uint8_t* ip = nullptr;   // kUdp: IPv4 header, UDP header and payload
  const uint8_t* udp = nullptr;
  const uint8_t* payload = nullptr;
  uint32_t payload_len = 0;
};

// Classify one single-segment frame of `len` bytes.
ParsedFrame parse_frame(uint8_t* frame, uint32_t len, const FrameFilter& us);

// Turn the frame holding `arp` (a request for `ip_be`, from parse_frame) into
// our reply in place; returns the reply's length.
uint16_t make_arp_reply(uint8_t* frame, uint8_t* arp, const uint8_t* mac, uint32_t ip_be);

// Write Ethernet, IPv4 and UDP headers in front of a payload of
// `payload_len` bytes that already sits at frame + kUdpFrameHeaders, with
// both checksums computed here (no offload is assumed of any PMD). Returns
// the frame's length.
struct UdpEnds {
  const uint8_t* mac;  // 6 bytes
  uint32_t ip_be;
  uint16_t port_be;
};
uint16_t build_udp_frame(uint8_t* frame, const UdpEnds& from, const UdpEnds& to, uint16_t ip_id,
                         uint16_t payload_len);

}  // namespace flexplane::live
