// Named counters of the fast path (per worker) and the slow path (control
// thread). Each is written by one thread only, as a relaxed atomic so the
// live display may read it meanwhile; on x86 an increment is a plain add.
// Formatted only when dumped (metadata.yaml, stats lines).
#pragma once

#include <atomic>
#include <cstdint>

#include "router/ipv4.h"

namespace flexplane::router {

// Why the fast path dropped a frame outright (beyond ipv4::Verdict failures).
enum class FastDrop : uint8_t {
  kRuntFrame = 0,   // shorter than an Ethernet header
  kNotOurMac,       // unicast to another station, or IP in a link-layer broadcast (RFC 1812 5.3.4)
  kIpv6,            // IPv6: not routed by this version
  kOtherEthertype,  // neither IPv4, ARP nor IPv6 (VLAN tags included)
  kMultiSegment,    // chained mbufs: not supported on the fast path
  kBlackhole,       // a blackhole route
  kHandoffFull,     // the ring to the worker owning the output port was full
  kSlowPathFull,    // the ring to the slow path was full
  kCount
};

inline const char* fast_drop_name(FastDrop d) {
  switch (d) {
    case FastDrop::kRuntFrame: return "runt_frame";
    case FastDrop::kNotOurMac: return "not_our_mac";
    case FastDrop::kIpv6: return "ipv6";
    case FastDrop::kOtherEthertype: return "other_ethertype";
    case FastDrop::kMultiSegment: return "multi_segment";
    case FastDrop::kBlackhole: return "blackhole";
    case FastDrop::kHandoffFull: return "handoff_full";
    case FastDrop::kSlowPathFull: return "slow_path_full";
    case FastDrop::kCount: break;
  }
  return "unknown";
}

// Why a frame was diverted to the slow path (drop-out batching: it leaves the
// burst, the rest of the burst carries on).
enum class Exception : uint8_t {
  kArp = 0,     // ARP request or reply
  kOptions,     // IPv4 with options
  kNoRoute,     // no matching route
  kTtlExpired,  // TTL <= 1 on a packet to forward
  kLocal,       // addressed to the router (or a directed broadcast)
  kUnresolved,  // next hop without a MAC yet (ARP)
  kTooBig,      // longer than the output port's MTU
  kCount
};

inline const char* exception_name(Exception e) {
  switch (e) {
    case Exception::kArp: return "arp";
    case Exception::kOptions: return "ip_options";
    case Exception::kNoRoute: return "no_route";
    case Exception::kTtlExpired: return "ttl_expired";
    case Exception::kLocal: return "local";
    case Exception::kUnresolved: return "unresolved_next_hop";
    case Exception::kTooBig: return "too_big";
    case Exception::kCount: break;
  }
  return "unknown";
}

// What the slow path did.
enum class SlowEvent : uint8_t {
  kArpReplied = 0,      // answered a request for one of our addresses
  kArpLearned,          // a neighbour's MAC learned or refreshed
  kArpRequested,        // sent a request for a next hop
  kArpIgnored,          // not for us, or nothing to learn
  kArpMalformed,        // too short or not Ethernet/IPv4
  kArpFailed,           // no answer after the retries: held packets dropped
  kHeldDropped,         // a packet waiting for ARP found the hold queue full
  kHeldSent,            // a held packet sent once its next hop resolved
  kIcmpTimeExceeded,    // sent type 11
  kIcmpUnreachable,     // sent type 3 code 0 (net unreachable)
  kIcmpFragNeeded,      // sent type 3 code 4 (DF set, too big)
  kIcmpEchoReplied,     // answered a ping to one of our addresses
  kIcmpRateLimited,     // an ICMP error not sent: over the rate limit
  kIcmpSuppressed,      // no error about an ICMP error, a fragment, a broadcast... (RFC 1812 4.3.2.7)
  kLocalDropped,        // other traffic for the router: no services here
  kOptionsForwarded,    // forwarded by the slow path (options not processed)
  kSourceRouteDropped,  // LSRR/SSRR (RFC 7126)
  kBadOptions,          // malformed options
  kTooBigDropped,       // too big without DF: this router does not fragment
  kNoAddress,           // an ICMP error was due but the port has no address
  kInjectFull,          // the ring to the output port's worker was full
  kNoRouteDropped,      // no route (after the ICMP, if any)
  kTtlDropped,          // TTL expired (after the ICMP, if any)
  kBlackhole,           // slow-path forwarding hit a blackhole route
  kCount
};

inline const char* slow_event_name(SlowEvent e) {
  static const char* const names[] = {
      "arp_replied", "arp_learned", "arp_requested", "arp_ignored", "arp_malformed", "arp_failed",
      "held_dropped", "held_sent", "icmp_time_exceeded", "icmp_unreachable", "icmp_frag_needed",
      "icmp_echo_replied", "icmp_rate_limited", "icmp_suppressed", "local_dropped", "options_forwarded",
      "source_route_dropped", "bad_options", "too_big_dropped", "no_address", "inject_full", "no_route_dropped",
      "ttl_dropped", "blackhole"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(SlowEvent::kCount));
  return names[static_cast<unsigned>(e)];
}

struct Counter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

struct alignas(64) FastPathCounters {
  Counter rx_packets, rx_bytes;
  Counter forwarded;  // left the fast path for an output port
  Counter ipv4[static_cast<unsigned>(ipv4::Verdict::kCount)];  // validation outcomes
  Counter drops[static_cast<unsigned>(FastDrop::kCount)];
  Counter exceptions[static_cast<unsigned>(Exception::kCount)];
  Counter fragments;  // forwarded fragments (RFC 1812: routed like any packet)
  // Cycle accounting, rte_rdtsc at the phase boundaries of each loop
  // iteration that did work: rx = inside rte_eth_rx_burst; process = fast
  // path, hand-offs and the schemes' enqueue; drain = the schemes' schedule,
  // CE marking and rte_eth_tx_burst.
  Counter busy_cycles, busy_loops, loops, rx_cycles, process_cycles, drain_cycles;
  // Longest gap between two loop iterations (a stall: preemption, page
  // faults, a sleep); a port owned here sends nothing meanwhile.
  Counter max_gap_cycles;
  Counter rx_paused;  // iterations that skipped RX: a hand-off ring was nearly full
};

struct SlowPathCounters {
  Counter events[static_cast<unsigned>(SlowEvent::kCount)];
  void add(SlowEvent e, uint64_t n = 1) { events[static_cast<unsigned>(e)].add(n); }
};

}  // namespace flexplane::router
