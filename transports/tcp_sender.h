// The sending side of one flow: TCP NewReno, ECN, DCTCP or pFabric's rate
// control over abstract packets (see transport.h for the kinds).
//
// Principles
// - Window in 1/1024 packets (kCwndUnit), like ns-3 keeps bytes: DCTCP's
//   fractional cuts persist instead of rounding to whole packets, while the
//   number of packets in flight is the whole part. Growth follows Linux:
//   slow start adds one packet per packet ACKed up to ssthresh; congestion
//   avoidance adds one packet per cwnd packets ACKed (tcp_cong_avoid_ai).
// - Loss recovery is NewReno without SACK (RFC 5681, RFC 6582): fast
//   retransmit on `dupack_threshold` duplicate ACKs, ssthresh = max(flight/2, 2),
//   cwnd = ssthresh + 3 inflated by one per further duplicate, a partial ACK
//   retransmits the next hole and deflates by the data it ACKed (+1), a full
//   ACK sets cwnd = ssthresh. An RTO sets cwnd = 1 and resends from snd_una
//   (go-back-N, as a SACK-less TCP does); ssthresh is halved only on the
//   first of consecutive timeouts; the RTO doubles until a fresh RTT sample.
// - ECN (ecn, dctcp) reacts at most once per window of data: on ECE, unless in
//   loss recovery or within the window of the last reduction, ssthresh = cwnd/2
//   (ecn) or cwnd × (1 − alpha/2) (dctcp), floor 2 packets; cwnd = ssthresh at
//   once (Linux and ns-3 reach the same value over one RTT with PRR); no growth
//   until the window ends; CWR rides on the next new data segment. Losses are
//   handled as in reno (RFC 8257 §3.5: a DCTCP sender halves on loss).
// - With SACK (`sack_blocks` > 0), loss recovery is RFC 6675 as ns-3 runs
//   it with classic recovery (SackScoreboard; Linux adds PRR and RACK, not
//   modelled): a duplicate ACK is one that SACKs new
//   data; recovery starts on `dupack_threshold` of them or once the head is
//   lost (dupack_threshold SACKed packets above it), sets ssthresh as above
//   (with `max_reordering_pkts` the threshold grows to the reordering the
//   SACKs and D-SACKs show, as Linux's tcp_reordering: SackScoreboard);
//   and cwnd = ssthresh (no inflation), resends the head at once and then
//   sends while pipe < cwnd, choosing by NextSeg: lost packets first, then
//   new data, then (in recovery) unSACKed packets not yet resent. A partial
//   ACK does not deflate; it resends the new head at once unless that was
//   resent already (ns-3 does so with SACK). A timeout marks every unSACKed
//   packet lost and resends them in order, skipping SACKed ones, instead of
//   going back N. Outside recovery, pipe (not snd_nxt - snd_una) is what the
//   window limits, so SACKed duplicates give limited transmit (RFC 3042).
// - RTT samples (RFC 6298) come from the ACK's trigger_seq: the sender
//   remembers when it last sent each outstanding seq and skips retransmitted
//   ones (Karn), the information a timestamp echo would give.
// - pfabric: initial window = the path's BDP, no fast retransmit, fixed RTO
//   without backoff, after a timeout slow start from 1 (ssthresh = flight/2).
//   The paper's probe mode (small probes after repeated timeouts) has no
//   counterpart with fixed-size abstract packets: a flow that keeps timing out
//   already sends one packet per RTO.
//
// Cost: on_ack, next_send and on_timer are O(1) (no allocation except when
// the window outgrows the send-time ring, which doubles).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "transports/dctcp_alpha.h"
#include "transports/rtt_estimator.h"
#include "transports/sack_scoreboard.h"
#include "transports/seq_ring.h"
#include "transports/transport.h"

namespace flexplane {

struct SenderStats {
  uint64_t segments_sent = 0;
  uint64_t retransmits = 0;        // segments sent more than once
  uint64_t fast_retransmits = 0;   // recovery episodes entered on duplicate ACKs
  uint64_t partial_acks = 0;
  uint64_t timeouts = 0;
  uint64_t ecn_reductions = 0;     // window cuts on ECE
  uint64_t delay_reductions = 0;   // swift: window cuts on delay above the target; hpcc: ACKs with U >= eta
  uint64_t cnps = 0;               // dcqcn: ECE ACKs taken as congestion notifications
  uint64_t ece_acks = 0;
  uint64_t dup_acks = 0;
  uint64_t stale_acks = 0;         // below snd_una: reordered or duplicated ACKs, ignored
  uint64_t invalid_acks = 0;       // ACK beyond anything sent: ignored
  uint64_t sacked_segments = 0;    // segments SACKed before the cumulative ACK covered them
};

class TcpSender {
 public:
  static constexpr uint64_t kCwndUnit = 1024;  // cwnd units per packet

  // size_pkts >= 1. base_rtt: the path's unloaded round-trip time in
  // timeslots (0 = unknown). If known it seeds the RTT estimator, as the
  // handshake's SYN/SYN-ACK sample does in a real stack, and gives pfabric
  // its BDP window and RTO. pfabric needs it unless both pfabric values are
  // set explicitly (ConfigError otherwise). syn_rtt: the handshake's own
  // sample when one was taken (transport.handshake; 0 = none): it seeds the
  // estimator instead of base_rtt.
  TcpSender(const TransportSettings& settings, uint32_t size_pkts, Timeslot base_rtt = 0, Timeslot syn_rtt = 0);

  // An ACK arrived at `now`.
  void on_ack(const Ack& ack, Timeslot now);
  // The next segment to put on the wire at `now`, if the window allows one:
  // a pending retransmission first, then new data (or go-back-N resends).
  std::optional<Segment> next_send(Timeslot now);
  // Call at or after timer_deadline(); does nothing if the timer is not due.
  void on_timer(Timeslot now);

  // The RTO's deadline, or the next paced send's when that is sooner and a
  // segment waits for it; kNever when neither.
  Timeslot timer_deadline() const;
  bool can_send() const;
  // Lookahead: the sender will not send before the returned timeslot, given
  // that no ACK reaches it before `earliest_ack` (the owner's bound: now + the
  // shortest reverse delay if packets are in flight). `now` if it can send now.
  Timeslot quiet_until(Timeslot now, Timeslot earliest_ack) const;
  bool done() const { return snd_una_ == size_; }

  // State, for tests, stats and traces.
  TransportKind kind() const { return s_.kind; }
  uint32_t size_pkts() const { return size_; }
  uint64_t cwnd_units() const { return cwnd_; }
  uint32_t cwnd_pkts() const { return static_cast<uint32_t>(cwnd_ / kCwndUnit); }
  uint64_t ssthresh_units() const { return ssthresh_; }
  Timeslot swift_target() const { return swift_target_; }
  double dcqcn_rate() const { return dq_.rc; }  // dcqcn: current rate, a fraction of line rate
  double dcqcn_target_rate() const { return dq_.rt; }
  double dcqcn_alpha() const { return dq_.alpha; }
  uint32_t snd_una() const { return snd_una_; }
  uint32_t snd_nxt() const { return snd_nxt_; }
  uint32_t high_tx() const { return high_tx_; }
  uint32_t in_flight() const { return snd_nxt_ - snd_una_; }
  bool sack() const { return sb_.has_value(); }
  // What the window limits: RFC 6675's pipe with SACK, snd_nxt - snd_una without.
  uint32_t pipe() const { return sb_ ? sb_->pipe() : in_flight(); }
  const SackScoreboard& scoreboard() const { return *sb_; }  // with SACK only
  bool in_fast_recovery() const { return in_recovery_; }
  uint32_t dup_acks() const { return dupacks_; }
  Timeslot rto() const;
  const RttEstimator& rtt() const { return rtt_; }
  const DctcpAlpha& dctcp() const { return alpha_; }
  uint32_t consecutive_timeouts() const { return consecutive_timeouts_; }
  const SenderStats& stats() const { return stats_; }

 private:
  bool ecn_capable() const { return transport_uses_ecn(s_.kind); }
  uint64_t window_cap() const { return uint64_t{s_.max_cwnd_pkts} * kCwndUnit; }
  // What may be in flight, in packets: cwnd (at least 1: a paced swift
  // window below one packet keeps one in flight); dcqcn, whose rate is its
  // control, the receive window.
  uint64_t window_pkts() const {
    return s_.kind == TransportKind::kDcqcn ? dcqcn_window_ : std::max<uint64_t>(cwnd_ / kCwndUnit, 1);
  }
  uint64_t loss_ssthresh() const;  // max(flight/2, 2) packets, in units
  void grow(uint32_t acked);
  void react_to_ece();
  void enter_fast_recovery();
  void handle_dupack();
  void restart_timer(Timeslot now);
  void record_sent(uint32_t seq, Timeslot now, bool retransmit);
  // The ACK's RTT sample (0 if it has none: a retransmission, or pfabric).
  Timeslot maybe_sample_rtt(uint32_t trigger_seq, uint32_t cum_ack, Timeslot now);
  void swift_adjust(uint32_t acked, Timeslot delay, Timeslot now);
  void hpcc_adjust(uint32_t telemetry);
  bool sack_can_send() const;
  Segment sack_next_segment();
  void sack_maybe_enter_recovery();

  TransportSettings s_;
  uint32_t size_;
  bool fast_retransmit_;     // false for pfabric
  Timeslot fixed_rto_ = 0;   // pfabric: no estimator, no backoff
  // DCQCN's reaction point (rates in packets per timeslot: line rate = 1).
  struct Dcqcn {
    double rc = 1, rt = 1, alpha = 1;
    Timeslot alpha_since = 0, rate_since = 0;  // the timers' current periods began
    Timeslot last_cnp = 0;
    bool any_cnp = false;
    bool pending = false;  // dcqcn_cnp_deferred: an echo arrived inside the interval
    uint32_t timer_events = 0, byte_events = 0;  // T and BC since the last CNP
    uint32_t sent_since = 0;                     // packets towards the byte counter
  };
  Dcqcn dq_;
  uint64_t dcqcn_window_ = 0;  // the path's bandwidth-delay product, at most max_cwnd_pkts
  void dcqcn_advance(Timeslot now);   // the timers' events due by `now`
  void dcqcn_increase();
  void dcqcn_on_cnp(Timeslot now);
  void dcqcn_timers(Timeslot now);
  void dcqcn_cut(Timeslot now);
  bool pacing() const { return s_.pacing_gain > 0 || s_.kind == TransportKind::kDcqcn; }
  double next_pace_ = 0;               // pacing: the next segment leaves at or after this timeslot
  Timeslot paced_until() const;        // pacing: the first timeslot the next segment may leave (0: now)
  void pace_after_send(Timeslot now);
  Timeslot swift_target_ = 0;          // swift: base RTT + target delay
  Timeslot swift_last_decrease_ = 0;   // swift: at most one decrease per RTT
  bool swift_decreased_ = false;
  double hpcc_wc_ = 0;                 // hpcc: the reference window Wc, packets
  uint32_t hpcc_stage_ = 0;            // hpcc: additive steps since the last multiplicative one
  uint32_t hpcc_last_update_seq_ = 0;  // hpcc: snd_nxt when Wc last moved

  // Sequence space (packets): [snd_una, snd_nxt) in flight, high_tx = highest sent + 1.
  uint32_t snd_una_ = 0, snd_nxt_ = 0, high_tx_ = 0;
  uint64_t cwnd_;            // units
  uint64_t ssthresh_;        // units
  uint32_t ca_acked_ = 0;    // packets ACKed towards the next congestion-avoidance increment

  // Loss recovery.
  uint32_t dupacks_ = 0;
  bool in_recovery_ = false;  // NewReno fast recovery
  uint32_t recover_ = 0;      // RFC 6582 "recover": high_tx when recovery or the last RTO began
  bool rtx_pending_ = false;  // retransmit snd_una at the next send opportunity
  bool first_partial_ = false;  // no partial ACK yet in this recovery (RFC 6582 section 4: it alone restarts the timer)

  // ECN.
  uint32_t ecn_recover_ = 0;  // no ECE reaction until snd_una reaches this
  bool cwr_pending_ = false;
  DctcpAlpha alpha_;

  // Timer.
  RttEstimator rtt_;
  Timeslot rto_deadline_ = kNever;
  uint32_t consecutive_timeouts_ = 0;

  // Send time of each outstanding seq; top bit = retransmitted.
  static constexpr Timeslot kRetxBit = Timeslot{1} << 63;
  SeqRing<Timeslot> sent_;

  std::optional<SackScoreboard> sb_;  // SACK and RFC 6675 recovery; none without SACK

  SenderStats stats_;
};

}  // namespace flexplane
