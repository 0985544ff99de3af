// ECN codepoints (RFC 3168) and CE marking of IPv4 / IPv6 packets in place.
//
// The ECN field is the low two bits of the IPv4 TOS byte / IPv6 traffic
// class. Marking sets it to CE (11) only on ECN-capable packets (ECT(0) 10,
// ECT(1) 01); a Not-ECT packet must be dropped instead, which is the
// caller's decision. IPv4's header checksum is fixed incrementally
// (RFC 1624) from the one 16-bit word that changed; IPv6 has no header
// checksum, and the transport checksums do not cover either field.
#pragma once

#include <cstddef>
#include <cstdint>

#include "net/checksum.h"

namespace flexplane::net {

enum class Ecn : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

inline bool ecn_capable(uint8_t ecn_bits) { return ecn_bits != static_cast<uint8_t>(Ecn::kNotEct); }

enum class MarkResult : uint8_t {
  kMarked,      // was ECT(0) / ECT(1), now CE
  kAlreadyCe,   // was CE already: unchanged
  kNotEct,      // Not-ECT: unchanged (drop it instead)
  kMalformed,   // too short / not IPv4 or IPv6: unchanged
};

// Sets CE on the IP packet at `pkt` (len bytes) if it is ECN-capable.
inline MarkResult set_ce(uint8_t* pkt, size_t len) {
  if (len < 1) return MarkResult::kMalformed;
  const unsigned version = pkt[0] >> 4;
  if (version == 4) {
    if (len < 20 || (pkt[0] & 0x0f) < 5) return MarkResult::kMalformed;
    const uint8_t ecn = pkt[1] & 3;
    if (ecn == static_cast<uint8_t>(Ecn::kCe)) return MarkResult::kAlreadyCe;
    if (ecn == static_cast<uint8_t>(Ecn::kNotEct)) return MarkResult::kNotEct;
    const uint16_t old_word = load_be16(pkt);  // version/IHL and TOS share a word
    pkt[1] |= 3;
    const uint16_t new_word = load_be16(pkt);
    store_be16(pkt + 10, checksum_update16(load_be16(pkt + 10), old_word, new_word));
    return MarkResult::kMarked;
  }
  if (version == 6) {
    if (len < 40) return MarkResult::kMalformed;
    const uint8_t ecn = (pkt[1] >> 4) & 3;  // traffic class bits 1..0 sit at bits 5..4 of byte 1
    if (ecn == static_cast<uint8_t>(Ecn::kCe)) return MarkResult::kAlreadyCe;
    if (ecn == static_cast<uint8_t>(Ecn::kNotEct)) return MarkResult::kNotEct;
    pkt[1] |= 0x30;
    return MarkResult::kMarked;
  }
  return MarkResult::kMalformed;
}

}  // namespace flexplane::net
