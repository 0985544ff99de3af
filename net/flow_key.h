// A transport flow's identity: the 5-tuple (addresses, protocol, ports) as
// parsed by ip_packet.h, hashable for flow tables.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>

#include "net/ip_packet.h"

namespace flexplane::net {

struct FlowKey {
  IpAddress src, dst;
  uint16_t sport = 0, dport = 0;  // 0 for protocols without ports
  uint8_t protocol = 0;

  static FlowKey of(const PacketInfo& p) {
    FlowKey k;
    k.src = p.src;
    k.dst = p.dst;
    k.protocol = p.protocol;
    if (p.has_ports()) {
      k.sport = p.sport;
      k.dport = p.dport;
    }
    return k;
  }
  // The same flow seen from the other side.
  FlowKey reversed() const {
    FlowKey k = *this;
    std::swap(k.src, k.dst);
    std::swap(k.sport, k.dport);
    return k;
  }
  bool operator==(const FlowKey& o) const {
    return src == o.src && dst == o.dst && sport == o.sport && dport == o.dport && protocol == o.protocol;
  }
};

// FNV-1a over the tuple's bytes, then a murmur-style finaliser.
inline uint64_t hash_flow(const FlowKey& k) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  mix(&k.src.family, 1);
  mix(k.src.bytes, 16);
  mix(k.dst.bytes, 16);
  const uint8_t rest[5] = {uint8_t(k.sport >> 8), uint8_t(k.sport), uint8_t(k.dport >> 8), uint8_t(k.dport), k.protocol};
  mix(rest, 5);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

struct FlowKeyHash {
  size_t operator()(const FlowKey& k) const { return static_cast<size_t>(hash_flow(k)); }
};

}  // namespace flexplane::net
