// The slow path, on the control thread: everything the fast path diverts.
//
//  - ARP (RFC 826): requests for our addresses answered; senders on our
//    subnets learned; next hops resolved with up to 3 requests a second
//    apart while up to kHoldPackets packets wait (then dropped, counted).
//  - Forwarding of the exceptions that may still leave: packets with IPv4
//    options (forwarded, options not processed; LSRR/SSRR dropped per RFC
//    7126; malformed options dropped), packets that waited for ARP. Each is
//    routed again against the current table.
//  - ICMP errors (RFC 792, RFC 1812 4.3): time exceeded, net unreachable,
//    fragmentation needed (DF set and longer than the port MTU; without DF
//    the packet is dropped: this router does not fragment), sent back out of
//    the arrival port to the previous hop, from that port's address, quoting
//    up to 576 bytes, rate limited (token bucket), never about an ICMP
//    error, a non-first fragment or a non-unicast source.
//  - Packets for the router: ICMP echo answered; the rest counted and dropped.
// Replies and forwarded packets join their output port's scheme through the
// owner's inject ring, like any other packet leaving on that port.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "router/context.h"

namespace flexplane::router {

class SlowPath {
 public:
  static constexpr uint32_t kHoldPackets = 64;      // per unresolved next hop
  static constexpr uint32_t kArpTries = 3;
  static constexpr double kArpRetrySeconds = 1.0;
  static constexpr double kIcmpPerSecond = 1000;    // ICMP error token bucket: rate
  static constexpr double kIcmpBurst = 100;         // and depth
  static constexpr uint32_t kIcmpQuoteBytes = 576;  // RFC 1812 4.3.2.3: the error, at most 576 bytes

  // `on_host`: a host on a connected subnet resolved (ip, neighbour index);
  // the owner installs a /32 for it so the fast path finds it.
  SlowPath(Shared& shared, std::function<void(uint32_t, uint32_t)> on_host);
  ~SlowPath();

  // Handle up to `max` diverted packets; returns how many.
  uint32_t poll(uint32_t max = 64);
  // ARP retries and timeouts.
  void tick(uint64_t tsc);
  // Handle one packet (what poll() does per packet; for tests).
  void handle(rte_mbuf* m);
  // Free everything held (at exit).
  void release();

  const SlowPathCounters& counters() const { return counters_; }
  uint32_t held() const;

 private:
  struct Pending {
    std::deque<rte_mbuf*> held;
    uint32_t tries = 0;
    uint64_t next_try_tsc = 0;
  };

  void arp(rte_mbuf* m);
  void forward(rte_mbuf* m);
  void local(rte_mbuf* m);
  void hold(rte_mbuf* m, uint32_t neighbor);
  void resolved(uint32_t neighbor);
  bool send_arp_request(uint32_t neighbor);
  void icmp_error(rte_mbuf* m, uint8_t type, uint8_t code, uint16_t mtu);
  bool icmp_tokens();
  void inject(uint16_t port, rte_mbuf* m);
  void learn(uint16_t port, uint32_t ip, const Mac& mac, bool create);
  int address_port(uint16_t preferred) const;  // a port with an address, preferring `preferred`

  Shared& sh_;
  std::function<void(uint32_t, uint32_t)> on_host_;
  SlowPathCounters counters_;
  std::unordered_map<uint32_t, Pending> pending_;  // by neighbour index
  std::vector<rte_mbuf*> buf_;
  uint64_t hz_;
  double icmp_tokens_ = kIcmpBurst;
  uint64_t icmp_refill_tsc_ = 0;
};

}  // namespace flexplane::router
