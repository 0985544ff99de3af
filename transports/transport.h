// Closed-loop transports in virtual time: what a sender emits, what a receiver
// answers, and how both are configured.
//
// Principles
// - Units are the engine's: a segment is one abstract packet
//   (`network.abstract_packet_bytes`), time is in timeslots. Parameters given
//   in µs are converted once (resolve_transport) with the run's timeslot length.
// - Everything is a plain object driven by calls from its owner (the engine in
//   virtual time, or a test loop): no clock, no global state, no randomness, so
//   a run is a function of its inputs and the call order.
// - A sender never schedules anything itself. It says when it next wants to be
//   woken (timer_deadline) and whether it has a segment ready (can_send); the
//   owner pulls segments with next_send() when the NIC is free and delivers
//   ACKs with on_ack(). That lets the engine keep one NIC per endpoint and
//   promise lookahead from what the sender says (docs/transports.md).
//
// Kinds (TransportKind):
//   reno     TCP NewReno (RFC 5681 + RFC 6582 without SACK), RTO per RFC 6298;
//            with `sack: true`, SACK (RFC 2018) and RFC 6675 loss recovery.
//   ecn      reno + RFC 3168 ECN: ECT data, halve cwnd once per window on ECE, CWR.
//   dctcp    reno + DCTCP (RFC 8257): alpha EWMA with gain g over each window of
//            ACKed data, cwnd × (1 − alpha/2) once per window on ECE.
//   pfabric  pFabric's minimal rate control: start with a BDP window (line rate),
//            no fast retransmit, a small fixed RTO, slow start from 1 after a timeout.
//   swift    Swift's delay-based window (Kumar et al., SIGCOMM 2020): each ACK's
//            RTT sample against a target delay (the path's base RTT + a fabric
//            target): below it, additive increase of swift_ai_pkts per window;
//            above it, a multiplicative decrease by beta x the excess share of the
//            delay (at most max_mdf), at most once per RTT. No slow start, no ECN;
//            losses as reno (fast retransmit, RTO). The window stays >= 1
//            packet unless the sender paces (pacing_gain > 0): then it may fall
//            to 1/1024 packet, one segment every srtt / cwnd, as Swift does.
//   dcqcn    DCQCN's rate control (Zhu et al., SIGCOMM 2015) on a paced sender:
//            the rate Rc starts at line rate; an ECE ACK, at most one per
//            dcqcn_cnp_interval_us (the notification point's CNP limit, applied
//            where the echo arrives), is a CNP: Rt = Rc, Rc x (1 - alpha/2), alpha
//            += g(1 - alpha); alpha decays by (1 - g) per alpha timer without a
//            CNP; the rate timer and the byte counter raise Rc towards Rt (fast
//            recovery for F events, then additive Rt += R_AI, then hyper Rt +=
//            R_HAI). Segments leave 1 / Rc timeslots apart, at most the path's
//            bandwidth-delay product in flight (as RDMA simulations cap DCQCN);
//            losses as reno's recovery, the window never cut. Without PFC (not
//            modelled yet), an incast can lose packets before the first CNP.
//   hpcc     HPCC's window (Li et al., SIGCOMM 2019, Algorithm 1) from in-band
//            telemetry: switches running a telemetry queue manager (schemes/
//            hpcc.cc) stamp the largest normalised inflight U of the path into
//            Packet::custom[2] (kTelemetryWord); the receiver echoes it on the
//            ACK (Ack::telemetry). Per ACK: if U >= eta or the increase stage
//            reached max_stage, W = Wc / (U / eta) + W_AI, else W = Wc + W_AI;
//            Wc takes W once per RTT (the first ACK beyond the last update's
//            snd_nxt), which also advances or resets the stage. W starts at the
//            path's bandwidth-delay product; no slow start, no ECN; losses as
//            reno. Pace it with pacing_gain (HPCC's rate is W / T).
//
// Pacing (pacing_gain > 0, any kind): a segment leaves no sooner than
// srtt / (gain x cwnd) timeslots after the previous one (srtt: the smoothed
// RTT; the path's base RTT until the first sample). The window still caps
// what is in flight; pacing spreads it over the RTT instead of a burst.
#pragma once

#include <cstdint>
#include <string>

#include "api/packet.h"
#include "api/params.h"

namespace flexplane {

enum class TransportKind : uint8_t { kReno, kEcn, kDctcp, kPfabric, kSwift, kDcqcn, kHpcc };

// The Packet::custom word in-band telemetry travels in (HPCC): custom[0]
// carries the endpoints' slack (LSTF) and, in router mode, custom[0..1] the
// frame's buffer, so telemetry takes the last word. Fixed point: U x 65536.
inline constexpr unsigned kTelemetryWord = 2;
inline constexpr double kTelemetryOne = 65536.0;
TransportKind parse_transport_kind(const std::string& s, const std::string& where);
const char* transport_kind_name(TransportKind k);
inline bool transport_uses_ecn(TransportKind k) { return k == TransportKind::kEcn || k == TransportKind::kDctcp; }

// "Not armed" / "never" for timers and deadlines.
inline constexpr Timeslot kNever = ~Timeslot{0};

// One data segment the sender hands to its NIC.
struct Segment {
  uint32_t seq = 0;         // index of the abstract packet within the flow
  bool retransmit = false;  // sent before (fast retransmit, partial ACK or after an RTO)
  bool ect = false;         // ECN-capable transport: routers may CE-mark it instead of dropping
  bool cwr = false;         // RFC 3168 CWR: first new data after a window reduction
};

// RFC 2018 SACK: the receiver holds [left, right) beyond a hole.
struct SackBlock {
  uint32_t left = 0, right = 0;
  bool operator==(const SackBlock& o) const { return left == o.left && right == o.right; }
};
// At most this many blocks per ACK: what a TCP option fits without
// timestamps (ns-3's case); with timestamps it is 3 (Linux's usual case).
inline constexpr uint32_t kMaxSackBlocks = 4;

// One cumulative acknowledgement, receiver -> sender.
struct Ack {
  Ack() = default;
  Ack(uint32_t cum, uint32_t trigger, bool echo = false) : cum_ack(cum), trigger_seq(trigger), ece(echo) {}

  uint32_t cum_ack = 0;      // next expected seq: every seq below it has arrived
  uint32_t trigger_seq = 0;  // the data seq whose arrival produced this ACK (RTT sample, like
                             // an echoed timestamp: the sender knows when it sent it)
  bool ece = false;          // ECN echo
  bool dsack = false;        // with SACK: trigger_seq had arrived before (RFC 2883's D-SACK, as a flag)
  uint32_t telemetry = 0;    // the data packet's custom[kTelemetryWord], echoed (hpcc: the path's max U)
  uint8_t sack_count = 0;    // blocks in use (0 unless the transport has `sack: true`)
  SackBlock sack[kMaxSackBlocks];  // first: the block holding trigger_seq, then the most recently reported
};
// A total order on ACK contents (deterministic tie-breaks between equal due times).
bool ack_less(const Ack& a, const Ack& b);

// How a receiver echoes CE marks.
enum class EcnEcho : uint8_t {
  kNone,       // never sets ECE (reno, pfabric)
  kRfc3168,    // ECE on every ACK from a CE arrival until a CWR arrival
  kPerPacket,  // DCTCP: ECE says whether the packets this ACK covers were CE-marked
};
EcnEcho ecn_echo_for(TransportKind k);

// User-facing parameters (config `transport:` section), with units in the names.
struct TransportParams {
  uint32_t initial_cwnd_pkts = 10;      // IW10 (RFC 6928; Linux and ns-3 default)
  uint32_t initial_ssthresh_pkts = 0;   // 0 = unlimited (slow start until the first loss or mark)
  uint32_t max_cwnd_pkts = 65535;       // receive-window cap
  uint32_t dupack_threshold = 3;        // fast retransmit after this many duplicate ACKs
  double min_rto_us = 1000;             // RFC 6298 lower bound (Linux: 200 ms; data-centre stacks use less)
  double max_rto_us = 60e6;             // RFC 6298 upper bound for the backed-off RTO
  double initial_rto_us = 0;            // RTO before the first RTT sample; 0 = min_rto_us
  double dctcp_g = 1.0 / 16;            // DCTCP EWMA gain g
  double dctcp_initial_alpha = 1.0;     // RFC 8257 and Linux start at 1 (conservative)
  uint32_t ack_every_pkts = 1;          // 1 = ACK every packet; 2 = delayed ACKs (DCTCP state machine)
  double delayed_ack_us = 40;           // flush a delayed ACK after this long (ack_every_pkts > 1)
  uint32_t pfabric_initial_cwnd_pkts = 0;  // 0 = the path's bandwidth-delay product (base RTT in timeslots)
  double pfabric_rto_us = 0;               // 0 = 3 × the path's base RTT (the paper's choice)
  bool rto_every_partial_ack = false;      // NewReno: restart the timer on every partial ACK, not the first only
  bool sack = false;                       // SACK (RFC 2018) with RFC 6675 loss recovery (reno, ecn, dctcp)
  uint32_t sack_blocks = 3;                // SACK blocks per ACK (3: Linux with timestamps; 4: without)
  uint32_t max_reordering_pkts = 0;        // with sack: learn reordering up to this (Linux: 300); 0 = fixed dupack_threshold
  double pacing_gain = 0;                  // 0 = off; else segments leave at gain x cwnd / srtt (all kinds)
  double dcqcn_g = 1.0 / 256;              // dcqcn: alpha's gain
  double dcqcn_alpha_timer_us = 55;        // dcqcn: alpha decays once per this without a CNP
  double dcqcn_rate_timer_us = 55;         // dcqcn: a rate-increase event per this
  uint32_t dcqcn_byte_counter_pkts = 6667; // dcqcn: and one per this many packets sent (10 MB of 1500 B)
  uint32_t dcqcn_fast_recovery_steps = 5;  // dcqcn: F
  double dcqcn_rai = 0.05;                 // dcqcn: additive increase, a fraction of line rate (htsim: line/20)
  double dcqcn_rhai = 0.1;                 // dcqcn: hyper increase, a fraction of line rate (htsim: line/10)
  double dcqcn_cnp_interval_us = 50;       // dcqcn: at most one CNP per this
  bool dcqcn_window = true;                // dcqcn: at most the path's BDP in flight (false: no window, as htsim)
  bool dcqcn_cnp_deferred = true;          // dcqcn: an echo inside the CNP interval makes one CNP at its end (the paper's NP, htsim)
  double swift_target_delay_us = 10;       // swift: queueing delay aimed for above the path's base RTT
  double swift_ai_pkts = 1;                // swift: additive increase per window of ACKs below the target
  double swift_beta = 0.8;                 // swift: multiplicative decrease per share of delay above the target
  double swift_max_mdf = 0.5;              // swift: largest decrease at once (cwnd x (1 - max_mdf))
  bool handshake = false;                  // a SYN / SYN-ACK exchange before the data (closed loop; SYN RTO: initial_rto_us)
  double hpcc_eta = 0.95;                  // hpcc: target utilisation
  uint32_t hpcc_max_stage = 5;             // hpcc: additive increases before a multiplicative update is forced
  double hpcc_wai_pkts = 1;                // hpcc: W_AI, the additive increase, packets

  void validate(const std::string& where) const;
  // What depends on the kind too (sack: not for pfabric); `where` names the field.
  void validate_for(TransportKind kind, const std::string& where) const;
};
const ParamSchema<TransportParams>& transport_param_schema();

// The same parameters in timeslots, ready for TcpSender / Receiver.
struct TransportSettings {
  TransportKind kind = TransportKind::kReno;
  uint32_t initial_cwnd_pkts = 10;
  uint32_t initial_ssthresh_pkts = 0;
  uint32_t max_cwnd_pkts = 65535;
  uint32_t dupack_threshold = 3;
  Timeslot min_rto = 1;
  Timeslot max_rto = kNever;
  Timeslot initial_rto = 1;
  double dctcp_g = 1.0 / 16;
  double dctcp_initial_alpha = 1.0;
  uint32_t ack_every_pkts = 1;
  Timeslot delayed_ack = 1;
  uint32_t pfabric_initial_cwnd_pkts = 0;  // 0 = base RTT
  Timeslot pfabric_rto = 0;                // 0 = 3 × base RTT
  bool rto_every_partial_ack = false;
  uint32_t sack_blocks = 0;                // 0 = no SACK
  uint32_t max_reordering_pkts = 0;        // 0 = fixed dupack_threshold (SackScoreboard)
  double pacing_gain = 0;                  // 0 = no pacing
  double dcqcn_g = 1.0 / 256;
  Timeslot dcqcn_alpha_timer = 1, dcqcn_rate_timer = 1, dcqcn_cnp_interval = 1;
  uint32_t dcqcn_byte_counter_pkts = 6667;
  uint32_t dcqcn_fast_recovery_steps = 5;
  double dcqcn_rai = 0.05, dcqcn_rhai = 0.1;
  bool dcqcn_window = true, dcqcn_cnp_deferred = true;
  Timeslot swift_target_delay = 1;         // above the base RTT
  double swift_ai_pkts = 1;
  double swift_beta = 0.8;
  double swift_max_mdf = 0.5;
  bool handshake = false;  // SYN before data; a lost SYN is resent after initial_rto, doubling up to max_rto
  double hpcc_eta = 0.95;
  uint32_t hpcc_max_stage = 5;
  double hpcc_wai_pkts = 1;
};

// µs -> whole timeslots, rounded up, at least 1.
Timeslot us_to_timeslots(double us, double timeslot_ns);
TransportSettings resolve_transport(TransportKind kind, const TransportParams& p, double timeslot_ns);

}  // namespace flexplane
