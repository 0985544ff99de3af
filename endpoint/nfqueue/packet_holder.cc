#include "endpoint/nfqueue/packet_holder.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "net/ecn.h"

namespace flexplane::endpoint::nfq {

using net::IpAddress;
using net::PacketInfo;
using net::ParseError;

const char* action_name(Action a) {
  switch (a) {
    case Action::kAccept: return "accept";
    case Action::kAcceptCe: return "accept_ce";
    case Action::kDrop: return "drop";
  }
  return "invalid";
}

const char* bypass_name(Bypass b) {
  switch (b) {
    case Bypass::kProtocol: return "protocol";
    case Bypass::kRule: return "rule";
    case Bypass::kLinkLocal: return "link_local";
    case Bypass::kUnknownDst: return "unknown_dst";
    case Bypass::kSelf: return "self";
  }
  return "invalid";
}

uint64_t HolderCounters::bypassed_total() const {
  uint64_t s = 0;
  for (uint64_t v : bypassed) s += v;
  return s;
}

uint64_t HolderCounters::malformed_total() const {
  uint64_t s = 0;
  for (uint64_t v : malformed) s += v;
  return s;
}

// ------------------------------------------------------------- bypass rules

namespace {

bool parse_protocol(const std::string& s, uint8_t* out) {
  if (s == "tcp") *out = net::kProtoTcp;
  else if (s == "udp") *out = net::kProtoUdp;
  else if (s == "icmp") *out = net::kProtoIcmp;
  else if (s == "icmpv6") *out = net::kProtoIcmpv6;
  else {
    if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    const unsigned long v = std::stoul(s);
    if (v == 0 || v > 255) return false;
    *out = static_cast<uint8_t>(v);
  }
  return true;
}

bool prefix_match(const IpAddress& a, const IpAddress& prefix, unsigned len) {
  if (a.family != prefix.family) return false;
  const unsigned full = len / 8, rest = len % 8;
  if (std::memcmp(a.bytes, prefix.bytes, full) != 0) return false;
  if (!rest) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (prefix.bytes[full] & mask);
}

}  // namespace

bool BypassRule::parse(const std::string& spec, BypassRule* out, std::string* error) {
  BypassRule r;
  r.text = spec;
  const auto slash = spec.find('/');
  if (slash != std::string::npos) {
    const std::string len = spec.substr(slash + 1);
    if (!IpAddress::parse(spec.substr(0, slash), &r.prefix) || len.empty() || len.size() > 3 ||
        len.find_first_not_of("0123456789") != std::string::npos) {
      *error = "bypass '" + spec + "': expected ADDRESS/LENGTH";
      return false;
    }
    const unsigned long n = std::stoul(len);
    if (n > (r.prefix.family == 4 ? 32u : 128u)) {
      *error = "bypass '" + spec + "': prefix length " + len + " too long";
      return false;
    }
    r.prefix_len = static_cast<uint8_t>(n);
    *out = r;
    return true;
  }
  const auto colon = spec.find(':');
  if (!parse_protocol(spec.substr(0, colon), &r.protocol)) {
    *error = "bypass '" + spec + "': unknown protocol (tcp, udp, icmp, icmpv6 or a number 1-255)";
    return false;
  }
  if (colon != std::string::npos) {
    const std::string p = spec.substr(colon + 1);
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(p) == 0 || std::stoul(p) > 65535 || (r.protocol != net::kProtoTcp && r.protocol != net::kProtoUdp)) {
      *error = "bypass '" + spec + "': expected tcp:PORT or udp:PORT with PORT 1-65535";
      return false;
    }
    r.port = static_cast<uint16_t>(std::stoul(p));
  }
  *out = r;
  return true;
}

bool BypassRule::matches(const PacketInfo& p) const {
  if (prefix.family) return prefix_match(p.dst, prefix, prefix_len);
  if (protocol && p.protocol != protocol) return false;
  if (port && !(p.has_ports() && (p.sport == port || p.dport == port))) return false;
  return true;
}

// ------------------------------------------------------------------- holder

size_t PacketHolder::AddressHash::operator()(const IpAddress& a) const {
  uint64_t h = 1469598103934665603ull ^ a.family;
  for (uint8_t b : a.bytes) h = (h ^ b) * 1099511628211ull;
  return static_cast<size_t>(h);
}

PacketHolder::PacketHolder(HolderConfig config, VerdictSink* sink) : cfg_(std::move(config)), sink_(sink) {
  for (const auto& [addr, id] : cfg_.peers) peers_[addr] = id;
  if (cfg_.apkt_bytes == 0) cfg_.apkt_bytes = 1500;
}

bool PacketHolder::bypass(const PacketInfo& p, Bypass* why) const {
  if (p.dst == cfg_.emulator && p.protocol == net::kProtoUdp && p.has_ports() && p.dport == cfg_.emulator_port) {
    *why = Bypass::kProtocol;
    return true;
  }
  for (const auto& r : cfg_.bypass)
    if (r.matches(p)) {
      *why = Bypass::kRule;
      return true;
    }
  // Link-local control: IPv6 neighbour discovery and router messages
  // (ICMPv6 133-137, like ARP for IPv4), multicast, broadcast.
  const bool nd = p.protocol == net::kProtoIcmpv6 && p.l4_offset && p.icmp_type >= 133 && p.icmp_type <= 137;
  if (nd || (p.dst.family == 6 && p.dst.bytes[0] == 0xff) || (p.dst.family == 4 && p.dst.bytes[0] >= 224)) {
    *why = Bypass::kLinkLocal;
    return true;
  }
  const auto it = peers_.find(p.dst);
  if (it == peers_.end()) {
    *why = Bypass::kUnknownDst;
    return true;
  }
  if (it->second == cfg_.endpoint_id) {
    *why = Bypass::kSelf;
    return true;
  }
  return false;
}

uint32_t PacketHolder::new_flow_id() {
  ++ctr_.flows_created;
  return cfg_.endpoint_id << 20 | (next_flow_++ & 0xfffff);
}

PacketHolder::Flow& PacketHolder::find_or_add_flow(const net::FlowKey& key, uint64_t now) {
  auto it = flows_.find(key);
  if (it == flows_.end()) {
    if (flows_.size() >= cfg_.max_flows) sweep_flows(now);
    it = flows_.emplace(key, Flow{}).first;
    it->second.id = new_flow_id();
  }
  return it->second;
}

PacketHolder::Flow& PacketHolder::flow_for(const PacketInfo& p, uint64_t now) {
  Flow& f = find_or_add_flow(net::FlowKey::of(p), now);
  // A new TCP connection on a reused 5-tuple (SYN, or SYN-ACK on the
  // passive side) starts a new flow; a hint given since the last packet
  // belongs to it.
  if (p.protocol == net::kProtoTcp && (p.tcp_flags & net::kTcpSyn)) {
    if (f.next_seq != 0 && !(f.have_isn && f.isn == p.tcp_seq)) {
      f.id = new_flow_id();
      f.next_seq = 0;
      f.payload_bytes = 0;
      if (f.packets_since_hint) f.hint_bytes = 0;
    }
    f.isn = p.tcp_seq;
    f.have_isn = true;
  }
  f.last_ns = now;
  return f;
}

uint32_t PacketHolder::priority_of(const Flow& f, const PacketInfo& p) const {
  const uint64_t apkt = cfg_.apkt_bytes;
  auto pkts = [apkt](uint64_t bytes) { return static_cast<uint32_t>(std::min<uint64_t>((bytes + apkt - 1) / apkt, UINT32_MAX)); };
  if (cfg_.priority == PriorityStamp::kNone) return 0;
  if (f.hint_bytes) {
    if (cfg_.priority == PriorityStamp::kFlowSize) return std::max<uint32_t>(1, pkts(f.hint_bytes));
    // Remaining size: the hint minus the payload before this packet (by TCP
    // sequence number when the SYN was seen, so retransmissions rank as
    // what they carry).
    uint64_t offset = f.payload_bytes;
    if (p.protocol == net::kProtoTcp && f.have_isn) offset = uint32_t(p.tcp_seq - f.isn - 1);
    const uint64_t remaining = f.hint_bytes > offset ? f.hint_bytes - offset : 0;
    return std::max<uint32_t>(1, pkts(remaining));
  }
  // No hint: packets without payload (SYN, pure ACK, FIN) are most urgent;
  // data ranks by the flow's attained service (least attained first).
  if (p.payload_len == 0) return 1;
  return 1 + static_cast<uint32_t>(std::min<uint64_t>(f.payload_bytes / apkt, UINT32_MAX - 1));
}

void PacketHolder::on_packet(uint32_t packet_id, const uint8_t* data, size_t len, uint64_t now,
                             std::deque<OutRequest>* out) {
  ++ctr_.seen;
  PacketInfo p;
  const ParseError err = net::parse_ip_packet(data, len, &p);
  if (err != ParseError::kOk) {
    ++ctr_.malformed[static_cast<unsigned>(err)];
    sink_->verdict(packet_id, Action::kDrop, nullptr, 0);
    return;
  }
  Bypass why;
  if (bypass(p, &why)) {
    ++ctr_.bypassed[static_cast<unsigned>(why)];
    sink_->verdict(packet_id, Action::kAccept, nullptr, 0);
    return;
  }
  const uint32_t dst = peers_.find(p.dst)->second;
  Flow& f = flow_for(p, now);

  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Held& h = slots_[slot];
  h.in_use = true;
  ++h.generation;
  h.packet_id = packet_id;
  h.worst = FP_ACT_RELEASE;
  h.deadline = now + cfg_.hold_timeout_ns;
  h.data.assign(data, data + p.ip_length);
  const uint32_t chunks = std::max<uint32_t>(1, (p.ip_length + cfg_.apkt_bytes - 1) / cfg_.apkt_bytes);
  h.outstanding = static_cast<uint16_t>(std::min<uint32_t>(chunks, UINT16_MAX));
  by_age_.emplace_back(slot, h.generation);

  fp_request q;
  std::memset(&q, 0, sizeof q);
  q.flow = f.id;
  q.dst = static_cast<uint16_t>(dst);
  q.flags = net::ecn_capable(p.ecn()) ? FP_REQ_ECT : 0;
  q.dscp = p.dscp();
  q.priority = priority_of(f, p);
  const uint64_t cookie = uint64_t(h.generation) << 32 | slot;
  uint32_t left = p.ip_length;
  for (uint32_t i = 0; i < h.outstanding; ++i) {
    q.id = f.next_seq++;
    q.size_bytes = static_cast<uint16_t>(std::min<uint32_t>(left, cfg_.apkt_bytes));
    left -= std::min<uint32_t>(left, cfg_.apkt_bytes);
    out->push_back({q, cookie});
  }
  if (f.hint_bytes) ctr_.hinted_requests += h.outstanding;
  f.payload_bytes += p.payload_len;
  ++f.packets_since_hint;

  ++ctr_.held;
  ctr_.held_bytes += p.ip_length;
  ctr_.requests += h.outstanding;
  ctr_.max_holding = std::max(++ctr_.holding, ctr_.max_holding);
}

void PacketHolder::on_verdict(uint64_t cookie, uint8_t action, uint64_t now) {
  ++ctr_.verdicts;
  const uint32_t slot = static_cast<uint32_t>(cookie);
  const uint32_t gen = static_cast<uint32_t>(cookie >> 32);
  if (slot >= slots_.size()) {
    ++ctr_.unknown_cookies;
    return;
  }
  Held& h = slots_[slot];
  if (!h.in_use || h.generation != gen) {
    ++ctr_.late_verdicts;  // decided by the fallback already
    return;
  }
  if (action == FP_ACT_DROP || (action == FP_ACT_MARK && h.worst != FP_ACT_DROP)) h.worst = action;
  if (--h.outstanding > 0) return;
  switch (h.worst) {
    case FP_ACT_DROP:
      ++ctr_.dropped;
      decide(slot, Action::kDrop);
      break;
    case FP_ACT_MARK: {
      const net::MarkResult r = net::set_ce(h.data.data(), h.data.size());
      if (r == net::MarkResult::kMarked) {
        ++ctr_.marked;
        decide(slot, Action::kAcceptCe);
      } else {
        (r == net::MarkResult::kAlreadyCe ? ctr_.mark_already_ce : ctr_.mark_not_ect)++;
        ++ctr_.released;
        decide(slot, Action::kAccept);
      }
      break;
    }
    default:
      ++ctr_.released;
      decide(slot, Action::kAccept);
  }
}

void PacketHolder::decide(uint32_t slot, Action action) {
  Held& h = slots_[slot];
  if (action == Action::kAcceptCe)
    sink_->verdict(h.packet_id, action, h.data.data(), h.data.size());
  else
    sink_->verdict(h.packet_id, action, nullptr, 0);
  h.in_use = false;
  free_.push_back(slot);
  --ctr_.holding;
}

void PacketHolder::fall_back(uint32_t slot, uint64_t* accepted, uint64_t* dropped) {
  const bool open = cfg_.fallback == Fallback::kOpen;
  ++*(open ? accepted : dropped);
  decide(slot, open ? Action::kAccept : Action::kDrop);
}

void PacketHolder::expire(uint64_t now) {
  while (!by_age_.empty()) {
    const auto [slot, gen] = by_age_.front();
    const Held& h = slots_[slot];
    if (h.in_use && h.generation == gen) {
      if (h.deadline > now) return;
      fall_back(slot, &ctr_.timeout_accepted, &ctr_.timeout_dropped);
    }
    by_age_.pop_front();
  }
}

void PacketHolder::release_all(uint64_t now) {
  for (uint32_t slot = 0; slot < slots_.size(); ++slot)
    if (slots_[slot].in_use) fall_back(slot, &ctr_.exit_accepted, &ctr_.exit_dropped);
  by_age_.clear();
}

uint64_t PacketHolder::next_expiry() const {
  for (const auto& [slot, gen] : by_age_) {
    const Held& h = slots_[slot];
    if (h.in_use && h.generation == gen) return h.deadline;
  }
  return std::numeric_limits<uint64_t>::max();
}

void PacketHolder::on_hint(const FlowHint& hint, uint64_t now) {
  if ((hint.src.family != 4 && hint.src.family != 6) || hint.src.family != hint.dst.family || hint.size_bytes == 0) {
    ++ctr_.hints_bad;
    return;
  }
  ++ctr_.hints;
  net::FlowKey key;
  key.src = hint.src;
  key.dst = hint.dst;
  key.protocol = hint.protocol;
  key.sport = hint.sport;
  key.dport = hint.dport;
  Flow& f = find_or_add_flow(key, now);
  f.hint_bytes = hint.size_bytes;
  f.packets_since_hint = 0;
  f.last_ns = now;
}

void PacketHolder::sweep_flows(uint64_t now) {
  for (auto it = flows_.begin(); it != flows_.end();) {
    if (now - it->second.last_ns >= cfg_.flow_idle_ns || flows_.size() >= cfg_.max_flows) {
      it = flows_.erase(it);
      ++ctr_.flows_evicted;
    } else {
      ++it;
    }
  }
}

void PacketHolder::write_counter_rows(FILE* f) const {
  auto row = [f](const std::string& k, uint64_t v) { std::fprintf(f, "%s,%llu\n", k.c_str(), (unsigned long long)v); };
  row("packets_seen", ctr_.seen);
  row("packets_held", ctr_.held);
  row("bytes_held", ctr_.held_bytes);
  row("packets_holding", ctr_.holding);
  row("max_holding", ctr_.max_holding);
  row("requests", ctr_.requests);
  row("verdicts", ctr_.verdicts);
  row("packets_released", ctr_.released);
  row("packets_marked", ctr_.marked);
  row("packets_dropped", ctr_.dropped);
  row("mark_already_ce", ctr_.mark_already_ce);
  row("mark_not_ect", ctr_.mark_not_ect);
  row("timeout_accepted", ctr_.timeout_accepted);
  row("timeout_dropped", ctr_.timeout_dropped);
  row("exit_accepted", ctr_.exit_accepted);
  row("exit_dropped", ctr_.exit_dropped);
  row("late_verdicts", ctr_.late_verdicts);
  row("unknown_cookies", ctr_.unknown_cookies);
  row("bypassed", ctr_.bypassed_total());
  for (unsigned i = 0; i < kNumBypass; ++i) row(std::string("bypass_") + bypass_name(Bypass(i)), ctr_.bypassed[i]);
  row("malformed", ctr_.malformed_total());
  for (unsigned i = 1; i < net::kNumParseErrors; ++i)
    row(std::string("malformed_") + net::parse_error_name(net::ParseError(i)), ctr_.malformed[i]);
  row("flows_created", ctr_.flows_created);
  row("flows_evicted", ctr_.flows_evicted);
  row("flows_active", flows_.size());
  row("hints", ctr_.hints);
  row("hints_bad", ctr_.hints_bad);
  row("hinted_requests", ctr_.hinted_requests);
}

}  // namespace flexplane::endpoint::nfq
