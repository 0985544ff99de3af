#include "transports/transport.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace flexplane {

TransportKind parse_transport_kind(const std::string& s, const std::string& where) {
  if (s == "reno") return TransportKind::kReno;
  if (s == "ecn") return TransportKind::kEcn;
  if (s == "dctcp") return TransportKind::kDctcp;
  if (s == "pfabric") return TransportKind::kPfabric;
  if (s == "swift") return TransportKind::kSwift;
  if (s == "dcqcn") return TransportKind::kDcqcn;
  if (s == "hpcc") return TransportKind::kHpcc;
  throw ConfigError(where + ": unknown transport '" + s + "' (known: reno, ecn, dctcp, pfabric, swift, dcqcn, hpcc)");
}

const char* transport_kind_name(TransportKind k) {
  switch (k) {
    case TransportKind::kReno: return "reno";
    case TransportKind::kEcn: return "ecn";
    case TransportKind::kDctcp: return "dctcp";
    case TransportKind::kPfabric: return "pfabric";
    case TransportKind::kSwift: return "swift";
    case TransportKind::kDcqcn: return "dcqcn";
    case TransportKind::kHpcc: return "hpcc";
  }
  return "reno";
}

bool ack_less(const Ack& a, const Ack& b) {
  auto key = [](const Ack& x) { return std::tie(x.cum_ack, x.trigger_seq, x.ece, x.sack_count, x.telemetry); };
  if (key(a) != key(b)) return key(a) < key(b);
  for (uint32_t i = 0; i < a.sack_count && i < kMaxSackBlocks; ++i)
    if (a.sack[i].left != b.sack[i].left || a.sack[i].right != b.sack[i].right)
      return std::tie(a.sack[i].left, a.sack[i].right) < std::tie(b.sack[i].left, b.sack[i].right);
  return a.dsack < b.dsack;  // last: ACKs that differ only in it act alike unless the sender learns reordering
}

EcnEcho ecn_echo_for(TransportKind k) {
  switch (k) {
    case TransportKind::kEcn: return EcnEcho::kRfc3168;
    case TransportKind::kDctcp:
    case TransportKind::kDcqcn: return EcnEcho::kPerPacket;
    default: return EcnEcho::kNone;
  }
}

void TransportParams::validate(const std::string& where) const {
  if (initial_cwnd_pkts > max_cwnd_pkts)
    throw ConfigError(where + ": initial_cwnd_pkts " + std::to_string(initial_cwnd_pkts) +
                      " is larger than max_cwnd_pkts " + std::to_string(max_cwnd_pkts));
  if (max_rto_us < min_rto_us)
    throw ConfigError(where + ": max_rto_us is smaller than min_rto_us");
  if (initial_rto_us != 0 && initial_rto_us < min_rto_us)
    throw ConfigError(where + ": initial_rto_us is smaller than min_rto_us (0 means: use min_rto_us)");
  if (max_reordering_pkts != 0 && !sack)
    throw ConfigError(where + ": max_reordering_pkts needs sack: true (reordering is seen in SACK blocks)");
  if (max_reordering_pkts != 0 && max_reordering_pkts < dupack_threshold)
    throw ConfigError(where + ": max_reordering_pkts " + std::to_string(max_reordering_pkts) +
                      " is below dupack_threshold " + std::to_string(dupack_threshold) + " (0 turns learning off)");
}

void TransportParams::validate_for(TransportKind kind, const std::string& where) const {
  if (sack && kind == TransportKind::kPfabric)
    throw ConfigError(where + ": sack applies to reno, ecn and dctcp (pfabric has no fast retransmit)");
}

const ParamSchema<TransportParams>& transport_param_schema() {
  using P = TransportParams;
  static const ParamSchema<P> schema({
      param(&P::initial_cwnd_pkts, "initial_cwnd_pkts", "initial congestion window (reno, ecn, dctcp)", {1, 1 << 20}),
      param(&P::initial_ssthresh_pkts, "initial_ssthresh_pkts", "initial slow-start threshold; 0 = unlimited",
            {0, 1 << 20}),
      param(&P::max_cwnd_pkts, "max_cwnd_pkts", "largest congestion window (the receive window)", {2, 1 << 24}),
      param(&P::dupack_threshold, "dupack_threshold", "duplicate ACKs that trigger fast retransmit", {1, 1000}),
      param(&P::min_rto_us, "min_rto_us", "smallest retransmission timeout (RFC 6298 lower bound)", {0.001, 1e9}),
      param(&P::max_rto_us, "max_rto_us", "largest backed-off retransmission timeout", {0.001, 1e10}),
      param(&P::initial_rto_us, "initial_rto_us", "timeout before the first RTT sample; 0 = min_rto_us",
            {0, 1e10}),
      param(&P::dctcp_g, "dctcp_g", "DCTCP: EWMA gain for alpha", {1e-6, 1}),
      param(&P::dctcp_initial_alpha, "dctcp_initial_alpha", "DCTCP: alpha before the first window", {0, 1}),
      param(&P::ack_every_pkts, "ack_every_pkts", "receiver ACKs every N in-order packets (1 = no delayed ACKs)",
            {1, 64}),
      param(&P::delayed_ack_us, "delayed_ack_us", "delayed-ACK timeout when ack_every_pkts > 1", {0.001, 1e9}),
      param(&P::pfabric_initial_cwnd_pkts, "pfabric_initial_cwnd_pkts",
            "pfabric: initial window; 0 = the path's bandwidth-delay product", {0, 1 << 20}),
      param(&P::pfabric_rto_us, "pfabric_rto_us", "pfabric: fixed retransmission timeout; 0 = 3 x base RTT",
            {0, 1e9}),
      param(&P::rto_every_partial_ack, "rto_every_partial_ack",
            "fast recovery: restart the timer on every partial ACK (RFC 6582 Slow-but-Steady), not only the "
            "first (Impatient, the RFC's recommendation and ns-3's)"),
      param(&P::sack, "sack",
            "SACK blocks on ACKs and RFC 6675 loss recovery (scoreboard, pipe, NextSeg) instead of NewReno's "
            "(reno, ecn, dctcp)"),
      param(&P::sack_blocks, "sack_blocks",
            "SACK blocks per ACK when sack is on (3: Linux with timestamps; 4: without, as in ns-3 here)",
            {1, kMaxSackBlocks}),
      param(&P::pacing_gain, "pacing_gain",
            "pace segments at gain x cwnd / srtt (0 = off: a window's worth leaves at once); lets swift's window "
            "fall below one packet",
            {0, 100}),
      param(&P::dcqcn_g, "dcqcn_g", "dcqcn: alpha's gain", {1e-6, 1}),
      param(&P::dcqcn_alpha_timer_us, "dcqcn_alpha_timer_us", "dcqcn: alpha decays once per this without a CNP",
            {0.001, 1e9}),
      param(&P::dcqcn_rate_timer_us, "dcqcn_rate_timer_us", "dcqcn: one rate-increase event per this", {0.001, 1e9}),
      param(&P::dcqcn_byte_counter_pkts, "dcqcn_byte_counter_pkts",
            "dcqcn: one rate-increase event per this many packets sent", {1, 1u << 30}),
      param(&P::dcqcn_fast_recovery_steps, "dcqcn_fast_recovery_steps", "dcqcn: F, events of fast recovery",
            {1, 1000}),
      param(&P::dcqcn_rai, "dcqcn_rai", "dcqcn: additive increase, a fraction of line rate", {1e-6, 1}),
      param(&P::dcqcn_rhai, "dcqcn_rhai", "dcqcn: hyper increase, a fraction of line rate", {1e-6, 1}),
      param(&P::dcqcn_cnp_interval_us, "dcqcn_cnp_interval_us", "dcqcn: at most one CNP per this", {0.001, 1e9}),
      param(&P::dcqcn_window, "dcqcn_window", "dcqcn: at most the path's bandwidth-delay product in flight"),
      param(&P::dcqcn_cnp_deferred, "dcqcn_cnp_deferred",
            "dcqcn: an echo inside the CNP interval makes one more CNP when the interval ends"),
      param(&P::swift_target_delay_us, "swift_target_delay_us",
            "swift: queueing delay the window aims for, above the path's base RTT", {0.001, 1e9}),
      param(&P::swift_ai_pkts, "swift_ai_pkts", "swift: additive increase per window of ACKs below the target",
            {1e-3, 1000}),
      param(&P::swift_beta, "swift_beta", "swift: decrease factor per share of the delay above the target",
            {1e-3, 1}),
      param(&P::swift_max_mdf, "swift_max_mdf", "swift: largest multiplicative decrease at once", {1e-3, 1}),
      param(&P::handshake, "handshake",
            "open each flow with a SYN / SYN-ACK exchange that waits in the same NIC and switch queues as data "
            "(FCT then includes it, like ns-3's and real stacks'); a lost SYN is resent after initial_rto_us, doubling"),
      param(&P::hpcc_eta, "hpcc_eta", "hpcc: target utilisation eta", {0.01, 1}),
      param(&P::hpcc_max_stage, "hpcc_max_stage", "hpcc: additive-increase stages before a multiplicative update",
            {0, 1000}),
      param(&P::hpcc_wai_pkts, "hpcc_wai_pkts", "hpcc: W_AI, the additive increase per update, packets", {1e-3, 1000}),
      param(&P::max_reordering_pkts, "max_reordering_pkts",
            "with sack: raise the loss threshold to the reordering seen in SACKs and D-SACKs, up to this many packets "
            "(Linux's tcp_max_reordering is 300); 0 = dupack_threshold stays fixed",
            {0, 1 << 20}),
  });
  return schema;
}

Timeslot us_to_timeslots(double us, double timeslot_ns) {
  const double t = std::ceil(us * 1000.0 / timeslot_ns - 1e-9);
  if (t >= static_cast<double>(kNever >> 1)) return kNever >> 1;
  return std::max<Timeslot>(1, static_cast<Timeslot>(t));
}

TransportSettings resolve_transport(TransportKind kind, const TransportParams& p, double timeslot_ns) {
  if (!(timeslot_ns > 0)) throw ConfigError("transport: timeslot length must be positive");
  TransportSettings s;
  s.kind = kind;
  s.initial_cwnd_pkts = p.initial_cwnd_pkts;
  s.initial_ssthresh_pkts = p.initial_ssthresh_pkts;
  s.max_cwnd_pkts = p.max_cwnd_pkts;
  s.dupack_threshold = p.dupack_threshold;
  s.min_rto = us_to_timeslots(p.min_rto_us, timeslot_ns);
  s.max_rto = us_to_timeslots(p.max_rto_us, timeslot_ns);
  s.initial_rto = p.initial_rto_us > 0 ? us_to_timeslots(p.initial_rto_us, timeslot_ns) : s.min_rto;
  s.dctcp_g = p.dctcp_g;
  s.dctcp_initial_alpha = p.dctcp_initial_alpha;
  s.ack_every_pkts = p.ack_every_pkts;
  s.delayed_ack = us_to_timeslots(p.delayed_ack_us, timeslot_ns);
  s.pfabric_initial_cwnd_pkts = p.pfabric_initial_cwnd_pkts;
  s.pfabric_rto = p.pfabric_rto_us > 0 ? us_to_timeslots(p.pfabric_rto_us, timeslot_ns) : 0;
  s.rto_every_partial_ack = p.rto_every_partial_ack;
  p.validate_for(kind, std::string("transport ") + transport_kind_name(kind) + ": sack");
  s.sack_blocks = p.sack ? p.sack_blocks : 0;
  s.max_reordering_pkts = p.sack ? p.max_reordering_pkts : 0;
  s.pacing_gain = p.pacing_gain;
  s.dcqcn_g = p.dcqcn_g;
  s.dcqcn_alpha_timer = us_to_timeslots(p.dcqcn_alpha_timer_us, timeslot_ns);
  s.dcqcn_rate_timer = us_to_timeslots(p.dcqcn_rate_timer_us, timeslot_ns);
  s.dcqcn_cnp_interval = us_to_timeslots(p.dcqcn_cnp_interval_us, timeslot_ns);
  s.dcqcn_byte_counter_pkts = p.dcqcn_byte_counter_pkts;
  s.dcqcn_fast_recovery_steps = p.dcqcn_fast_recovery_steps;
  s.dcqcn_rai = p.dcqcn_rai;
  s.dcqcn_rhai = p.dcqcn_rhai;
  s.dcqcn_window = p.dcqcn_window;
  s.dcqcn_cnp_deferred = p.dcqcn_cnp_deferred;
  s.swift_target_delay = us_to_timeslots(p.swift_target_delay_us, timeslot_ns);
  s.swift_ai_pkts = p.swift_ai_pkts;
  s.swift_beta = p.swift_beta;
  s.swift_max_mdf = p.swift_max_mdf;
  s.handshake = p.handshake;
  s.hpcc_eta = p.hpcc_eta;
  s.hpcc_max_stage = p.hpcc_max_stage;
  s.hpcc_wai_pkts = p.hpcc_wai_pkts;
  return s;
}

}  // namespace flexplane
