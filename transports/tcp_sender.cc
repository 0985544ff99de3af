#include "transports/tcp_sender.h"

#include <algorithm>
#include <cmath>

namespace flexplane {

namespace {
constexpr uint64_t kUnit = TcpSender::kCwndUnit;
constexpr uint64_t kUnlimited = uint64_t{1} << 62;

}  // namespace

TcpSender::TcpSender(const TransportSettings& settings, uint32_t size_pkts, Timeslot base_rtt, Timeslot syn_rtt)
    : s_(settings),
      size_(size_pkts),
      fast_retransmit_(settings.kind != TransportKind::kPfabric),
      alpha_(settings.dctcp_g, settings.dctcp_initial_alpha),
      rtt_(settings.min_rto, settings.max_rto, settings.initial_rto) {
  if (size_pkts == 0) throw ConfigError("transport: a flow carries at least 1 packet");
  uint64_t iw = s_.initial_cwnd_pkts;
  if (s_.kind == TransportKind::kPfabric) {
    iw = s_.pfabric_initial_cwnd_pkts ? s_.pfabric_initial_cwnd_pkts : base_rtt;
    fixed_rto_ = s_.pfabric_rto ? s_.pfabric_rto : 3 * base_rtt;
    if (iw == 0 || fixed_rto_ == 0)
      throw ConfigError("transport pfabric: the path's base RTT is unknown, so pfabric_initial_cwnd_pkts and "
                        "pfabric_rto_us must be set");
  } else if (syn_rtt > 0) {
    rtt_.sample(syn_rtt);  // what the handshake measured
  } else if (base_rtt > 0) {
    rtt_.sample(base_rtt);  // what the handshake would have measured on an idle path
  }
  if (s_.kind == TransportKind::kDcqcn) {
    if (base_rtt == 0) throw ConfigError("transport dcqcn: the path's base RTT is unknown, so there is no window");
    dcqcn_window_ = s_.dcqcn_window ? std::min<uint64_t>(std::max<Timeslot>(base_rtt, 1), s_.max_cwnd_pkts)
                                    : s_.max_cwnd_pkts;
  }
  if (s_.kind == TransportKind::kHpcc) {
    if (base_rtt == 0) throw ConfigError("transport hpcc: the path's base RTT is unknown, so there is no window");
    iw = std::max<Timeslot>(base_rtt, 1);  // W_init: the bandwidth-delay product (line rate: a packet per timeslot)
  }
  if (s_.kind == TransportKind::kSwift) {
    if (base_rtt == 0)
      throw ConfigError("transport swift: the path's base RTT is unknown, so there is no target delay");
    swift_target_ = base_rtt + s_.swift_target_delay;
  }
  cwnd_ = std::min<uint64_t>(std::max<uint64_t>(iw, 1), s_.max_cwnd_pkts) * kUnit;
  hpcc_wc_ = static_cast<double>(cwnd_) / kUnit;
  ssthresh_ = s_.initial_ssthresh_pkts ? uint64_t{s_.initial_ssthresh_pkts} * kUnit : kUnlimited;
  sent_ = SeqRing<Timeslot>(std::min<uint64_t>(size_, std::max<uint64_t>(2 * iw, 16)));
  if (s_.sack_blocks > 0 && fast_retransmit_) sb_.emplace(s_.dupack_threshold, 16, s_.max_reordering_pkts);
}

Timeslot TcpSender::rto() const { return fixed_rto_ ? fixed_rto_ : rtt_.rto(); }

Timeslot TcpSender::paced_until() const {
  return pacing() ? static_cast<Timeslot>(std::ceil(next_pace_)) : 0;
}

Timeslot TcpSender::timer_deadline() const {
  const Timeslot pace = paced_until();
  return pace > 0 && can_send() ? std::min(rto_deadline_, pace) : rto_deadline_;
}

// The gap to the next segment: srtt / (gain x cwnd), fractional timeslots
// carried over so the average rate is exact. No RTT yet (no base RTT
// either): no gap.
void TcpSender::pace_after_send(Timeslot now) {
  if (!pacing()) return;
  double gap = 0;
  if (s_.kind == TransportKind::kDcqcn) {
    gap = 1.0 / dq_.rc;  // one packet per timeslot at line rate
    if (++dq_.sent_since >= s_.dcqcn_byte_counter_pkts) {
      dq_.sent_since = 0;
      ++dq_.byte_events;
      dcqcn_increase();
    }
  } else {
    const double srtt = static_cast<double>(rtt_.srtt_x8()) / 8;
    const double cwnd = static_cast<double>(cwnd_) / kUnit;
    gap = srtt > 0 ? srtt / (s_.pacing_gain * cwnd) : 0;
  }
  next_pace_ = std::max(next_pace_, static_cast<double>(now)) + gap;
}

// DCQCN (Zhu et al. 2015, the reaction point; defaults as htsim's dcqcn.cpp).
// Timers run lazily: the periods that ended by `now` are applied in order
// when an ACK comes (dcqcn_advance), as is a deferred CNP at its interval's
// end. Not exact inside a long pacing gap: the gap was fixed when the last
// segment left, so an increase that fires within it waits for the gap's end
// (docs/design.md, "DCQCN is a rate on the same sender").
void TcpSender::dcqcn_advance(Timeslot now) {
  if (dq_.pending && now - dq_.last_cnp >= s_.dcqcn_cnp_interval) {  // the deferred CNP, at the interval's end
    const Timeslot t = dq_.last_cnp + s_.dcqcn_cnp_interval;
    dcqcn_timers(t);
    dq_.pending = false;
    dcqcn_cut(t);
  }
  dcqcn_timers(now);
}

void TcpSender::dcqcn_timers(Timeslot now) {
  while (now - dq_.alpha_since >= s_.dcqcn_alpha_timer) {
    dq_.alpha *= 1 - s_.dcqcn_g;
    dq_.alpha_since += s_.dcqcn_alpha_timer;
  }
  while (now - dq_.rate_since >= s_.dcqcn_rate_timer) {
    dq_.rate_since += s_.dcqcn_rate_timer;
    ++dq_.timer_events;
    dcqcn_increase();
  }
}

void TcpSender::dcqcn_increase() {
  const uint32_t f = s_.dcqcn_fast_recovery_steps;
  const uint32_t hi = std::max(dq_.timer_events, dq_.byte_events), lo = std::min(dq_.timer_events, dq_.byte_events);
  if (hi > f) {
    if (lo > f)
      dq_.rt += (lo - f) * s_.dcqcn_rhai;  // hyper increase
    else
      dq_.rt += s_.dcqcn_rai;  // additive increase
  }  // else fast recovery: towards the rate before the last cut
  dq_.rt = std::min(dq_.rt, 1.0);
  dq_.rc = std::min((dq_.rt + dq_.rc) / 2, 1.0);
}

void TcpSender::dcqcn_on_cnp(Timeslot now) {
  if (dq_.any_cnp && now - dq_.last_cnp < s_.dcqcn_cnp_interval) {  // the NP's limit
    dq_.pending = dq_.pending || s_.dcqcn_cnp_deferred;
    return;
  }
  dcqcn_cut(now);
}

void TcpSender::dcqcn_cut(Timeslot now) {
  dq_.any_cnp = true;
  dq_.last_cnp = now;
  ++stats_.cnps;
  ++stats_.ecn_reductions;  // flows.csv's ecn_reductions: rate cuts, for dcqcn
  dq_.rt = dq_.rc;
  dq_.rc = std::max(dq_.rc * (1 - dq_.alpha / 2), 1e-6);
  dq_.alpha = (1 - s_.dcqcn_g) * dq_.alpha + s_.dcqcn_g;
  dq_.timer_events = dq_.byte_events = dq_.sent_since = 0;
  dq_.alpha_since = dq_.rate_since = now;
}

bool TcpSender::can_send() const {
  if (done()) return false;
  if (rtx_pending_) return true;
  if (sb_) return sack_can_send();
  if (snd_nxt_ >= size_) return false;
  uint64_t window = window_pkts();
  // RFC 3042 limited transmit: one new segment for each of the first two
  // duplicate ACKs, so a small window still gets to three; never beyond the
  // receive window.
  if (fast_retransmit_ && !in_recovery_ && dupacks_ < s_.dupack_threshold && snd_nxt_ == high_tx_)
    window += std::min<uint32_t>(dupacks_, 2);
  return snd_nxt_ - snd_una_ < std::min<uint64_t>(window, s_.max_cwnd_pkts);
}

bool TcpSender::sack_can_send() const {
  const uint64_t window = std::min<uint64_t>(window_pkts(), s_.max_cwnd_pkts);
  if (sb_->pipe() >= window) return false;
  return sb_->next_lost() || (snd_nxt_ < size_ && high_tx_ - snd_una_ < s_.max_cwnd_pkts) ||
         (in_recovery_ && sb_->next_unsacked());
}

// RFC 6675 NextSeg; a pending resend of the head (recovery's start, a partial ACK) goes first.
Segment TcpSender::sack_next_segment() {
  Segment seg;
  seg.retransmit = true;
  if (rtx_pending_) {
    rtx_pending_ = false;
    seg.seq = snd_una_;
  } else if (auto lost = sb_->next_lost()) {
    seg.seq = *lost;                                                    // rule 1
  } else if (snd_nxt_ < size_ && high_tx_ - snd_una_ < s_.max_cwnd_pkts) {
    seg.seq = snd_nxt_++;                                               // rule 2
    high_tx_ = snd_nxt_;
    seg.retransmit = false;
  } else {
    seg.seq = *sb_->next_unsacked();                                     // rule 3 (in recovery)
  }
  sb_->on_send(seg.seq, seg.retransmit);
  return seg;
}

void TcpSender::sack_maybe_enter_recovery() {
  if (in_recovery_ || snd_una_ < recover_ || high_tx_ == snd_una_) return;
  if (dupacks_ >= sb_->dupthresh() || sb_->is_lost(snd_una_)) enter_fast_recovery();
}

Timeslot TcpSender::quiet_until(Timeslot now, Timeslot earliest_ack) const {
  if (done()) return kNever;
  if (can_send()) return std::max(now, paced_until());
  Timeslot t = rto_deadline_;
  if (high_tx_ > snd_una_) t = std::min(t, earliest_ack);
  return std::max(t, now);
}

uint64_t TcpSender::loss_ssthresh() const {
  const uint64_t flight = uint64_t{high_tx_ - snd_una_} * kUnit;
  return std::max(flight / 2, 2 * kUnit);
}

void TcpSender::grow(uint32_t acked) {
  // Slow start: one packet per packet ACKed, up to ssthresh (the rest counts
  // towards congestion avoidance, as in Linux's tcp_slow_start).
  if (cwnd_ < ssthresh_) {
    const uint64_t room_pkts = (ssthresh_ - cwnd_ + kUnit - 1) / kUnit;
    const uint32_t ss = static_cast<uint32_t>(std::min<uint64_t>(acked, room_pkts));
    cwnd_ = std::min(cwnd_ + uint64_t{ss} * kUnit, ssthresh_);
    acked -= ss;
  }
  // Congestion avoidance: one packet per cwnd packets ACKed.
  if (acked) {
    ca_acked_ += acked;
    const uint64_t w = std::max<uint64_t>(cwnd_ / kUnit, 1);
    if (ca_acked_ >= w) {
      cwnd_ += (ca_acked_ / w) * kUnit;
      ca_acked_ = static_cast<uint32_t>(ca_acked_ % w);
    }
  }
  cwnd_ = std::min(cwnd_, window_cap());
}

void TcpSender::react_to_ece() {
  ++stats_.ecn_reductions;
  const uint64_t target = s_.kind == TransportKind::kDctcp ? alpha_.reduce(cwnd_) : cwnd_ / 2;
  ssthresh_ = std::max(target, 2 * kUnit);
  cwnd_ = std::min(cwnd_, ssthresh_);
  ca_acked_ = 0;
  ecn_recover_ = high_tx_;
  cwr_pending_ = true;
}

void TcpSender::enter_fast_recovery() {
  ++stats_.fast_retransmits;
  ssthresh_ = loss_ssthresh();
  cwnd_ = sb_ ? ssthresh_ : ssthresh_ + 3 * kUnit;  // RFC 6675 (4.2): no inflation, pipe counts
  ca_acked_ = 0;
  if (sb_) sb_->mark_lost_below(snd_una_ + 1);
  in_recovery_ = true;
  first_partial_ = true;
  recover_ = high_tx_;
  rtx_pending_ = true;
  cwr_pending_ = ecn_capable();
}

void TcpSender::handle_dupack() {
  ++stats_.dup_acks;
  ++dupacks_;
  if (in_recovery_) {
    cwnd_ += kUnit;  // each duplicate ACK means a packet has left the network
    return;
  }
  // RFC 6582: no new recovery for duplicates of data sent before the last
  // recovery or timeout began (snd_una below `recover`).
  if (fast_retransmit_ && dupacks_ == s_.dupack_threshold && snd_una_ >= recover_) enter_fast_recovery();
}

Timeslot TcpSender::maybe_sample_rtt(uint32_t trigger, uint32_t cum_ack, Timeslot now) {
  if (fixed_rto_ || trigger < snd_una_ || trigger >= cum_ack) return 0;
  const Timeslot sent = sent_[trigger];
  if (sent & kRetxBit) return 0;  // Karn: ambiguous
  rtt_.sample(now - sent);
  return now - sent;
}

// Swift (SIGCOMM 2020, Algorithm 1, without pacing below one packet or the
// flow- and topology-based target scaling): additive increase while the
// delay is below the target, a multiplicative decrease in proportion to the
// excess otherwise, at most once per RTT (the sample's own).
void TcpSender::swift_adjust(uint32_t acked, Timeslot delay, Timeslot now) {
  if (delay == 0) return;  // no sample on this ACK
  // Below one packet (paced only) the increase is ai per ACK, not per window.
  const uint64_t floor = s_.pacing_gain > 0 ? 1 : kUnit;
  if (delay < swift_target_) {
    const double w = std::max(static_cast<double>(cwnd_) / kUnit, 1.0);
    const double inc = cwnd_ < kUnit ? s_.swift_ai_pkts * acked : s_.swift_ai_pkts * acked / w;
    cwnd_ += static_cast<uint64_t>(inc * kUnit + 0.5);
  } else if (!swift_decreased_ || now - swift_last_decrease_ >= delay) {
    const double excess = static_cast<double>(delay - swift_target_) / static_cast<double>(delay);
    const double factor = std::max(1 - s_.swift_beta * excess, 1 - s_.swift_max_mdf);
    cwnd_ = std::max<uint64_t>(static_cast<uint64_t>(static_cast<double>(cwnd_) * factor), floor);
    swift_last_decrease_ = now;
    swift_decreased_ = true;
    ++stats_.delay_reductions;
  }
  cwnd_ = std::min(cwnd_, window_cap());
}

// HPCC (SIGCOMM 2019, Algorithm 1, with U as the switches computed it:
// schemes/hpcc.cc): a multiplicative update towards eta when the path is at
// or above it (or after max_stage additive steps), else an additive one;
// the reference window Wc moves once per RTT, on the first ACK beyond the
// snd_nxt of the last update.
void TcpSender::hpcc_adjust(uint32_t telemetry) {
  const double u = std::max(telemetry / kTelemetryOne, 1 / kTelemetryOne);
  const bool update = snd_una_ > hpcc_last_update_seq_;
  double w;
  if (u >= s_.hpcc_eta || hpcc_stage_ >= s_.hpcc_max_stage) {
    w = hpcc_wc_ / (u / s_.hpcc_eta) + s_.hpcc_wai_pkts;
    if (update) hpcc_stage_ = 0;
  } else {
    w = hpcc_wc_ + s_.hpcc_wai_pkts;
    if (update) ++hpcc_stage_;
  }
  const double floor = s_.pacing_gain > 0 ? 1.0 / kUnit : 1.0;  // below a packet only when paced, as swift
  w = std::clamp(w, floor, static_cast<double>(window_cap()) / kUnit);
  if (update) {
    hpcc_wc_ = w;
    hpcc_last_update_seq_ = snd_nxt_;
  }
  if (u >= s_.hpcc_eta) ++stats_.delay_reductions;
  cwnd_ = static_cast<uint64_t>(w * kUnit + 0.5);
}

void TcpSender::restart_timer(Timeslot now) {
  rto_deadline_ = snd_una_ == high_tx_ ? kNever : now + rto();
}

void TcpSender::on_ack(const Ack& a, Timeslot now) {
  if (a.cum_ack > high_tx_) {
    ++stats_.invalid_acks;
    return;
  }
  if (a.cum_ack < snd_una_) {
    ++stats_.stale_acks;
    return;
  }
  const uint32_t acked = a.cum_ack - snd_una_;
  if (acked == 0 && high_tx_ == snd_una_) return;  // nothing outstanding: a late duplicate
  if (s_.kind == TransportKind::kDcqcn) {
    dcqcn_advance(now);
    if (a.ece) dcqcn_on_cnp(now);
  }
  if (a.ece) ++stats_.ece_acks;
  Timeslot delay = 0;
  if (acked) {
    delay = maybe_sample_rtt(a.trigger_seq, a.cum_ack, now);
    snd_una_ = a.cum_ack;
    snd_nxt_ = std::max(snd_nxt_, snd_una_);
    consecutive_timeouts_ = 0;
  }
  uint32_t fresh_sacks = 0;
  if (sb_) {
    if (acked) sb_->on_cum_ack(snd_una_);
    if (a.dsack) sb_->on_dsack(a.trigger_seq);
    fresh_sacks = sb_->on_sack(a);
    stats_.sacked_segments += fresh_sacks;
  }
  if (s_.kind == TransportKind::kDctcp) alpha_.on_ack(acked ? acked : 1, a.ece, snd_una_, high_tx_);

  // ECN: at most one reduction per window, none during loss recovery. An ACK
  // that covers only data sent before the last reduction neither reduces nor
  // grows the window (it may still echo the marks that caused the reduction).
  bool reduced = false;
  if (ecn_capable() && a.ece && !in_recovery_ && snd_una_ >= recover_ && snd_una_ > ecn_recover_) {
    react_to_ece();
    reduced = true;
  }

  if (!acked) {
    if (!sb_) {
      handle_dupack();
    } else if (fresh_sacks) {  // RFC 6675: a duplicate ACK is one that SACKs new data
      ++stats_.dup_acks;
      ++dupacks_;
      sack_maybe_enter_recovery();
    }
    return;
  }
  if (in_recovery_) {
    if (snd_una_ >= recover_) {  // full ACK: recovery is over
      cwnd_ = ssthresh_;
      in_recovery_ = false;
      dupacks_ = 0;
      rtx_pending_ = false;  // the hole was filled before the retransmission left
    } else {  // partial ACK (RFC 6582): the next hole is lost too
      ++stats_.partial_acks;
      if (!sb_) {
        rtx_pending_ = true;
        const uint64_t dec = uint64_t{acked} * kUnit;
        cwnd_ = (cwnd_ > dec ? cwnd_ - dec : 0) + kUnit;
      } else if (!sb_->is_resent(snd_una_)) {
        // With SACK, pipe needs no deflation; the new head is resent at
        // once unless it was already (RFC 6582's partial-ACK rule, which
        // ns-3 keeps with SACK; Linux's RACK also deems it lost soon).
        rtx_pending_ = true;
      }
      // RFC 6582 section 4 ("Impatient", its recommendation, and ns-3's):
      // only the first partial ACK restarts the timer, so a recovery that
      // repairs one hole per RTT ends in a timeout and slow start when it
      // would outlast the RTO. `rto_every_partial_ack` restarts it on every
      // partial ACK ("Slow-but-Steady").
      if (!first_partial_ && !s_.rto_every_partial_ack) return;
      first_partial_ = false;
    }
  } else {
    dupacks_ = 0;
    if (s_.kind == TransportKind::kSwift)
      swift_adjust(acked, delay, now);
    else if (s_.kind == TransportKind::kHpcc)
      hpcc_adjust(a.telemetry);
    else if (!reduced && snd_una_ > ecn_recover_)
      grow(acked);
    if (sb_) sack_maybe_enter_recovery();  // the new head may already have enough SACKed above it
  }
  restart_timer(now);
}

void TcpSender::on_timer(Timeslot now) {
  if (rto_deadline_ == kNever || now < rto_deadline_) return;
  ++stats_.timeouts;
  if (consecutive_timeouts_ == 0) ssthresh_ = loss_ssthresh();
  ++consecutive_timeouts_;
  cwnd_ = kUnit;
  ca_acked_ = 0;
  in_recovery_ = false;
  dupacks_ = 0;
  rtx_pending_ = false;
  recover_ = high_tx_;
  if (sb_) sb_->on_timeout();  // resend every unSACKed packet, skipping SACKed ones
  else snd_nxt_ = snd_una_;     // go-back-N from the first unacknowledged packet
  cwr_pending_ = ecn_capable();
  if (!fixed_rto_) rtt_.backoff();
  rto_deadline_ = kNever;  // re-armed when the retransmission leaves (RFC 6298 5.4-5.6)
}

void TcpSender::record_sent(uint32_t seq, Timeslot now, bool retransmit) {
  sent_.fit(snd_una_, high_tx_);  // seq < high_tx
  sent_[seq] = now | (retransmit ? kRetxBit : 0);
  ++stats_.segments_sent;
  if (retransmit) ++stats_.retransmits;
  if (rto_deadline_ == kNever) rto_deadline_ = now + rto();
}

std::optional<Segment> TcpSender::next_send(Timeslot now) {
  if (!can_send() || now < paced_until()) return std::nullopt;
  Segment seg;
  if (sb_) {
    seg = sack_next_segment();
  } else if (rtx_pending_) {
    rtx_pending_ = false;
    seg.seq = snd_una_;
    seg.retransmit = true;
  } else {
    seg.seq = snd_nxt_++;
    seg.retransmit = seg.seq < high_tx_;
    high_tx_ = std::max(high_tx_, snd_nxt_);
  }
  if (cwr_pending_ && !seg.retransmit) {
    seg.cwr = true;
    cwr_pending_ = false;
  }
  // RFC 3168 §6.1.5: retransmissions are not ECT; DCTCP (RFC 8257, Linux) sends all ECT, as RoCE does.
  seg.ect = s_.kind == TransportKind::kDctcp || s_.kind == TransportKind::kDcqcn ||
            (s_.kind == TransportKind::kEcn && !seg.retransmit);
  record_sent(seg.seq, now, seg.retransmit);
  pace_after_send(now);
  return seg;
}

}  // namespace flexplane
