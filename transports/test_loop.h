// Test harness: one flow through one bottleneck with a fixed RTT, in timeslots.
//
// Each timeslot t, in this order:
//   1. ACKs due at t reach the sender (on_ack), in the order they were sent;
//   2. the sender's timer runs if due (on_timer);
//   3. the sender's NIC sends at most one segment (next_send); the `drop` hook
//      may lose it, a full bottleneck queue drops it, otherwise it joins the
//      queue, CE-marked if ECT and the `mark` hook says so or it finds more
//      than `mark_above` packets queued (flexplane's DCTCP rule);
//   4. the bottleneck sends its head packet if t is a multiple of service_every;
//      it reaches the receiver forward_delay timeslots later;
//   5. data due at t reaches the receiver, whose ACKs reach the sender
//      reverse_delay timeslots later; then the receiver's timer runs if due.
// An unqueued packet sent at t is ACKed at t + forward_delay + reverse_delay.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "transports/receiver.h"
#include "transports/tcp_sender.h"

namespace flexplane::test {

struct LoopConfig {
  Timeslot forward_delay = 2;
  Timeslot reverse_delay = 2;
  uint32_t service_every = 1;
  size_t queue_capacity = 1 << 20;
  size_t mark_above = ~size_t{0};
};

// The settings reno_test.cc's and sack_test.cc's traces are derived with:
// min and initial RTO 10 timeslots, backed off up to 1000; SACK off unless
// `sack_blocks` is given.
inline TransportSettings reno_settings(uint32_t iw, uint32_t ssthresh = 0, uint32_t sack_blocks = 0) {
  TransportSettings s;
  s.kind = TransportKind::kReno;
  s.initial_cwnd_pkts = iw;
  s.initial_ssthresh_pkts = ssthresh;
  s.min_rto = 10;
  s.initial_rto = 10;
  s.max_rto = 1000;
  s.sack_blocks = sack_blocks;
  return s;
}

struct SentEvent {
  Timeslot t;
  Segment seg;
};
struct AckEvent {
  Timeslot t;
  Ack ack;
  uint64_t cwnd_units;     // after the sender processed it
  uint64_t ssthresh_units;
};

class TestLoop {
 public:
  // Return true to act on this transmission; `tx` = times this seq was sent before.
  using Hook = std::function<bool(const Segment& seg, uint32_t tx)>;

  TestLoop(TcpSender& s, Receiver& r, LoopConfig c = {}) : s_(s), r_(r), c_(c) {}

  Hook drop;
  Hook mark;

  std::vector<SentEvent> sent;
  std::vector<AckEvent> acks;
  std::vector<Timeslot> timeouts;
  std::vector<size_t> queue_len;  // bottleneck backlog at the end of each timeslot

  Timeslot now() const { return t_; }

  void step() {
    const Timeslot t = t_;
    for (auto it = ack_due_.find(t); it != ack_due_.end(); it = ack_due_.find(t)) {
      for (const Ack& a : it->second) {
        s_.on_ack(a, t);
        acks.push_back({t, a, s_.cwnd_units(), s_.ssthresh_units()});
      }
      ack_due_.erase(it);
    }
    if (t >= s_.timer_deadline()) {
      const uint64_t before = s_.stats().timeouts;
      s_.on_timer(t);
      if (s_.stats().timeouts != before) timeouts.push_back(t);
    }
    if (auto seg = s_.next_send(t)) {
      sent.push_back({t, *seg});
      const uint32_t tx = tx_count_[seg->seq]++;
      if (!(drop && drop(*seg, tx)) && queue_.size() < c_.queue_capacity) {
        const bool ce = seg->ect && ((mark && mark(*seg, tx)) || queue_.size() > c_.mark_above);
        queue_.push_back({*seg, ce});
      }
    }
    if (t % c_.service_every == 0 && !queue_.empty()) {
      data_due_[t + c_.forward_delay].push_back(queue_.front());
      queue_.pop_front();
    }
    queue_len.push_back(queue_.size());
    for (auto it = data_due_.find(t); it != data_due_.end(); it = data_due_.find(t)) {
      for (const InFlight& d : it->second) {
        const auto out = r_.on_data(d.seg.seq, d.ce, d.seg.cwr, t);
        for (uint32_t i = 0; i < out.n; ++i) ack_due_[t + c_.reverse_delay].push_back(out.ack[i]);
      }
      data_due_.erase(it);
    }
    if (t >= r_.timer_deadline())
      if (auto a = r_.on_timer(t)) ack_due_[t + c_.reverse_delay].push_back(*a);
    ++t_;
  }

  void run_until(Timeslot end) {
    while (t_ < end) step();
  }
  // Steps until the sender has every packet ACKed; returns the timeslot of
  // the last ACK, or kNever if `limit` came first.
  Timeslot run_until_done(Timeslot limit) {
    while (!s_.done()) {
      if (t_ >= limit) return kNever;
      step();
    }
    return t_ - 1;
  }

  // Timeslots at which `seq` was sent, in order.
  std::vector<Timeslot> send_times(uint32_t seq) const {
    std::vector<Timeslot> out;
    for (const auto& e : sent)
      if (e.seg.seq == seq) out.push_back(e.t);
    return out;
  }
  // The ACK processed at timeslot t (the first, if several).
  const AckEvent* ack_at(Timeslot t) const {
    for (const auto& a : acks)
      if (a.t == t) return &a;
    return nullptr;
  }

 private:
  struct InFlight {
    Segment seg;
    bool ce;
  };
  TcpSender& s_;
  Receiver& r_;
  LoopConfig c_;
  Timeslot t_ = 0;
  std::deque<InFlight> queue_;
  std::map<Timeslot, std::vector<InFlight>> data_due_;
  std::map<Timeslot, std::vector<Ack>> ack_due_;
  std::map<uint32_t, uint32_t> tx_count_;
};

}  // namespace flexplane::test
