// The heart of the NFQUEUE endpoint: holds real packets while the emulator
// decides their fate, independent of netlink and sockets (unit-tested with
// built packets and a fake emulator).
//
// Principles
//  - Every packet handed in gets exactly one outcome, delivered once to the
//    VerdictSink: accept, accept with CE set (the holder rewrites its copy:
//    ECN bits and, for IPv4, the header checksum incrementally), or drop.
//  - A held packet asks for ceil(ip_length / apkt_bytes) abstract packets;
//    it is decided when the verdict of the last one arrives: any DROP drops
//    it, else any MARK marks it, else it is released.
//  - Nothing is held forever: a packet whose verdicts have not all arrived
//    after `hold_timeout_ns` (emulator unreachable, overload) gets the
//    fallback — accepted unchanged (`open`) or dropped (`closed`) — and is
//    counted; a verdict that arrives later is counted and ignored.
//  - Control traffic is never held: the endpoint's own protocol datagrams,
//    IPv6 neighbour discovery, multicast / broadcast, addresses outside the
//    experiment, and a configurable list (`BypassRule`). Malformed packets
//    are counted and dropped.
//  - Request fields come from the packet: flow id per 5-tuple (flow table,
//    unique per endpoint: endpoint id << 20 | local counter), id = the
//    flow's abstract-packet counter, dst from the address map, size, ECT
//    from the ECN bits, DSCP from the TOS / traffic class, and the priority
//    the scheme asks for (flow size / remaining size from application hints
//    where given; otherwise the flow's attained service, see docs/lab.md).
//
// Counters obey (tested):
//   seen = bypassed + malformed + held
//   held = released + marked + dropped + timeout_{accepted,dropped} + exit_{accepted,dropped} + holding
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/endpoint_contract.h"
#include "endpoint/nfqueue/flow_hints.h"
#include "net/flow_key.h"
#include "net/ip_packet.h"
#include "proto/fp_wire.h"

namespace flexplane::endpoint::nfq {

enum class Fallback : uint8_t { kOpen, kClosed };
enum class Action : uint8_t { kAccept, kAcceptCe, kDrop };
const char* action_name(Action a);

enum class Bypass : uint8_t { kProtocol, kRule, kLinkLocal, kUnknownDst, kSelf };
inline constexpr unsigned kNumBypass = 5;
const char* bypass_name(Bypass b);

// Traffic that is released at once, never emulated. Spec syntax:
//   PROTO            tcp | udp | icmp | icmpv6 | any protocol number
//   PROTO:PORT       matches either port (tcp:22, udp:53)
//   ADDR/LEN         destination prefix (10.0.0.0/8, fd00::/8)
struct BypassRule {
  uint8_t protocol = 0;   // 0 = any
  uint16_t port = 0;      // 0 = any
  net::IpAddress prefix;  // family 0 = any address
  uint8_t prefix_len = 0;
  std::string text;

  static bool parse(const std::string& spec, BypassRule* out, std::string* error);
  bool matches(const net::PacketInfo& p) const;
};

struct HolderConfig {
  uint32_t endpoint_id = 0;
  std::vector<std::pair<net::IpAddress, uint32_t>> peers;  // address -> endpoint id (own addresses too)
  net::IpAddress emulator;                                 // protocol traffic to it is bypassed
  uint16_t emulator_port = FP_DEFAULT_PORT;
  std::vector<BypassRule> bypass;
  uint16_t apkt_bytes = 1500;                              // bytes per abstract packet (WELCOME may update)
  PriorityStamp priority = PriorityStamp::kNone;           // from the endpoint contract
  uint64_t hold_timeout_ns = 3'000'000'000ull;
  Fallback fallback = Fallback::kClosed;
  uint64_t flow_idle_ns = 60'000'000'000ull;               // forget a flow this long after its last packet
  size_t max_flows = 1u << 20;
};

struct HolderCounters {
  uint64_t seen = 0, held = 0, held_bytes = 0, holding = 0, max_holding = 0;
  uint64_t requests = 0, verdicts = 0;
  uint64_t released = 0, marked = 0, dropped = 0;           // decided by the emulator
  uint64_t mark_already_ce = 0, mark_not_ect = 0;           // MARK that changed nothing (packet released as is)
  uint64_t timeout_accepted = 0, timeout_dropped = 0;       // hold time ran out (fallback)
  uint64_t exit_accepted = 0, exit_dropped = 0;             // still held at shutdown / fatal session error
  uint64_t late_verdicts = 0, unknown_cookies = 0;
  uint64_t bypassed[kNumBypass] = {};
  uint64_t malformed[net::kNumParseErrors] = {};
  uint64_t flows_created = 0, flows_evicted = 0;
  uint64_t hints = 0, hints_bad = 0, hinted_requests = 0;

  uint64_t bypassed_total() const;
  uint64_t malformed_total() const;
};

// Where outcomes go: the netlink verdict batch, or a test's list. `payload`
// is the rewritten packet for kAcceptCe (valid during the call only), else null.
class VerdictSink {
 public:
  virtual ~VerdictSink() = default;
  virtual void verdict(uint32_t packet_id, Action action, const uint8_t* payload, size_t len) = 0;
};

// A request for the protocol session; cookie names the held packet.
struct OutRequest {
  fp_request req;
  uint64_t cookie;
};

class PacketHolder {
 public:
  PacketHolder(HolderConfig config, VerdictSink* sink);

  // A packet from the queue (`data` starts at its IP header). Either decided
  // at once (bypass, malformed: sink called) or held, with its requests
  // appended to *out.
  void on_packet(uint32_t packet_id, const uint8_t* data, size_t len, uint64_t now, std::deque<OutRequest>* out);
  // One request's verdict (FP_ACT_*).
  void on_verdict(uint64_t cookie, uint8_t action, uint64_t now);
  // Applies the fallback to packets held longer than the hold timeout.
  void expire(uint64_t now);
  // Decides every held packet with the fallback (shutdown, fatal session error).
  void release_all(uint64_t now);
  void on_hint(const FlowHint& hint, uint64_t now);
  // Forgets flows idle for flow_idle_ns.
  void sweep_flows(uint64_t now);

  void set_apkt_bytes(uint16_t b) { cfg_.apkt_bytes = b ? b : cfg_.apkt_bytes; }
  // False once the packet a cookie names has been decided (its requests
  // need not be sent any more).
  bool live(uint64_t cookie) const {
    const uint32_t slot = static_cast<uint32_t>(cookie);
    return slot < slots_.size() && slots_[slot].in_use && slots_[slot].generation == uint32_t(cookie >> 32);
  }
  uint64_t next_expiry() const;  // UINT64_MAX when nothing is held
  const HolderCounters& counters() const { return ctr_; }
  const HolderConfig& config() const { return cfg_; }
  size_t flows() const { return flows_.size(); }

  // The counters as "counter,value" rows.
  void write_counter_rows(FILE* f) const;

 private:
  struct Flow {
    uint32_t id = 0;
    uint32_t next_seq = 0;       // abstract packets requested so far
    uint64_t payload_bytes = 0;  // transport payload seen so far (attained service)
    uint64_t hint_bytes = 0;     // application hint (0 = none)
    uint32_t isn = 0;            // TCP initial sequence number of this direction
    bool have_isn = false;
    uint64_t packets_since_hint = 0;
    uint64_t last_ns = 0;
  };
  struct Held {
    uint32_t packet_id = 0;
    uint32_t generation = 0;
    bool in_use = false;
    uint16_t outstanding = 0;
    uint8_t worst = FP_ACT_RELEASE;  // DROP > MARK > RELEASE
    uint64_t deadline = 0;
    std::vector<uint8_t> data;       // the packet, rewritten in place when marked
  };
  struct AddressHash {
    size_t operator()(const net::IpAddress& a) const;
  };

  void decide(uint32_t slot, Action action);
  void fall_back(uint32_t slot, uint64_t* accepted, uint64_t* dropped);
  uint32_t new_flow_id();
  Flow& find_or_add_flow(const net::FlowKey& key, uint64_t now);
  Flow& flow_for(const net::PacketInfo& p, uint64_t now);
  uint32_t priority_of(const Flow& f, const net::PacketInfo& p) const;
  bool bypass(const net::PacketInfo& p, Bypass* why) const;

  HolderConfig cfg_;
  VerdictSink* sink_;
  std::unordered_map<net::IpAddress, uint32_t, AddressHash> peers_;
  std::unordered_map<net::FlowKey, Flow, net::FlowKeyHash> flows_;
  uint32_t next_flow_ = 0;
  std::vector<Held> slots_;
  std::vector<uint32_t> free_;
  std::deque<std::pair<uint32_t, uint32_t>> by_age_;  // (slot, generation), oldest first
  HolderCounters ctr_;
};

}  // namespace flexplane::endpoint::nfq
